#!/usr/bin/env bash
# A long run: `vcpustat serve` and `vcpustat record --rotate-every ROTATE` attached while VMs are
# created and destroyed all along: LIVE VMs of 4 vCPUs at any time, RATE of them replaced every
# second, each vCPU running exits, userspace exits and preemptions by a host thread of its VM
# 5 times a second. The VMs are simulated (build/bin/inject-vms churn: events injected into
# both processes' BPF maps and ring buffers through their injection programs), also where
# /dev/kvm exists: tools/microvm is not driven by this script yet. serve is scraped every
# INTERVAL seconds, as Prometheus would.
#
# Every INTERVAL seconds, one row: the entries of the BPF hash maps of serve and of record
# (vcpus, vms, hists, dead_vcpus, culprits), RSS and open file descriptors of both, and the
# recording's files (number, total size, size of the largest). At the end:
#   - flat: for each column, the mean of the last third of the rows is at most
#     1.5 x the mean of the first third + SLACK (SLACK: 64 entries for a map, 8 MiB of RSS),
#     and open fds at most 4 more than in the first third; the SHT columns grow by design and are not judged, except the largest file,
#     which must stay below 2 x the largest of the first third + 1 MiB: rotation works);
#     a map that grows with every VM created (1,000s of VMs in a 2-minute run) fails it;
#   - nothing lost uncounted: every file passes `vcpustat check`; serve's exit counters
#     (vcpustat_vcpu_exits_total, summed) equal the exits injected unless serve counted lost
#     records (runs up to 4 min: serve forgets a VM's series 5 min after it exited); every
#     VM created is in the recording unless /meta/lost or record's own count says records
#     were lost;
#   - serve and record stop cleanly on SIGTERM and inject-vms stops by itself.
# Prints "soak: PASS" or "soak: FAIL: reasons" and exits 0 or 1 (2: cannot run: not root, no BPF).
#
# usage: bench/soak.sh [--duration D] [--build DIR] [--dir DIR] [--interval S] [--rotate D]
#                      [--live N] [--rate N]
#   D: 1h (default), 2m, 90s, ...; DIR: where the recording goes (default: a new directory in
#   /tmp, removed at the end unless the run failed)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=1h build=build dir= interval=10 rotate=1m live=10 rate=2
while [ $# -gt 0 ]; do
	case $1 in
	--duration) duration=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--interval) interval=$2; shift 2 ;;
	--rotate) rotate=$2; shift 2 ;;
	--live) live=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	*) echo "usage: bench/soak.sh [--duration D] [--build DIR] [--dir DIR] [--interval S] [--rotate D] [--live N] [--rate N]" >&2; exit 2 ;;
	esac
done
seconds() { # 90, 90s, 2m, 1h
	case $1 in
	*h) echo $((${1%h} * 3600)) ;; *m) echo $((${1%m} * 60)) ;; *s) echo "${1%s}" ;; *) echo "$1" ;;
	esac
}
secs=$(seconds "$duration")
[ "$secs" -ge $((3 * interval)) ] || { echo "soak: --duration must be at least 3 intervals" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "soak: SKIP: needs root (BPF programs)" >&2; exit 2; }
for b in vcpustat inject-vms; do
	[ -x "$build/bin/$b" ] || { echo "soak: $build/bin/$b missing (./build.sh build)" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "soak: SKIP: curl missing" >&2; exit 2; }
keep_dir=false
if [ -z "$dir" ]; then dir=$(mktemp -d /tmp/soak.XXXXXX); else mkdir -p "$dir"; keep_dir=true; fi
v=$build/bin/vcpustat
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/metrics
serve= record= churn=
cleanup() {
	for p in $churn $record $serve; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

"$v" serve --listen "127.0.0.1:$port" 2>"$dir/serve.err" &
serve=$!
"$v" record -o "$dir/soak.sht" --rotate-every "$rotate" 2>"$dir/record.err" &
record=$!
# both attached: their injection programs are loaded (a BPF-less host fails here)
for _ in $(seq 100); do
	"$build/bin/inject-vms" maps -p "$serve" -p "$record" >/dev/null 2>&1 && curl -sf -o /dev/null "$url" && break
	if ! kill -0 "$serve" 2>/dev/null || ! kill -0 "$record" 2>/dev/null; then
		echo "soak: SKIP: serve or record could not start (no BPF?):" >&2
		cat "$dir/serve.err" "$dir/record.err" >&2
		exit 2
	fi
	sleep 0.1
done
"$build/bin/inject-vms" maps -p "$serve" -p "$record" >/dev/null

echo "# soak: $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
	"kernel $(uname -r), $([ -e /dev/kvm ] && echo with || echo without) /dev/kvm; VMs simulated by injection"
echo "# $secs s, $live VMs x 4 vCPUs live, $rate replaced per second, a row every $interval s, record --rotate-every $rotate"
"$build/bin/inject-vms" churn -p "$serve" -p "$record" -n "$live" -c 4 -r "$rate" -t "$secs" >"$dir/churn.out" 2>&1 &
churn=$!

status() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
nfds() { ls "/proc/$1/fd" | wc -l; }
cols="t s.vcpus s.vms s.hists s.dead s.culprits s.rss_kib s.fds r.vcpus r.vms r.hists r.dead r.culprits r.rss_kib r.fds sht.files sht.kib sht.max_kib"
echo "$cols" | tr ' ' '\t' | tee "$dir/rows.tsv"
t0=$(date +%s)
next=$t0
while :; do
	next=$((next + interval))
	sleep $((next - $(date +%s) > 0 ? next - $(date +%s) : 0))
	kill -0 "$churn" 2>/dev/null || break
	curl -sf -o /dev/null "$url" || echo "# scrape failed at $(($(date +%s) - t0)) s"
	# pid P vcpus N vms N hists N dead_vcpus N culprits N, one line per process
	read -r -a m <<<"$("$build/bin/inject-vms" maps -p "$serve" -p "$record" | awk '{printf "%s %s %s %s %s ", $4, $6, $8, $10, $12}')"
	shopt -s nullglob
	files=("$dir"/soak-*.sht)
	shopt -u nullglob
	kib=0 max=0
	for f in "${files[@]}"; do
		k=$(($(stat -c %s "$f") / 1024))
		kib=$((kib + k))
		[ "$k" -gt "$max" ] && max=$k
	done
	printf '%s\t' "$(($(date +%s) - t0))" "${m[@]:0:5}" "$(status "$serve" VmRSS)" "$(nfds "$serve")" \
		"${m[@]:5:5}" "$(status "$record" VmRSS)" "$(nfds "$record")" "${#files[@]}" "$kib" | tee -a "$dir/rows.tsv"
	printf '%s\n' "$max" | tee -a "$dir/rows.tsv"
done
fail=()
wait "$churn" || fail+=("inject-vms failed: $(cat "$dir/churn.out")")
churn=
cat "$dir/churn.out"
sleep 1 # serve's last scrape and record's last drain see the last VMs go
final=$(curl -sf "$url") || fail+=("the last scrape failed")
kill -TERM "$serve" "$record"
wait "$serve" || fail+=("serve exited $? on SIGTERM: $(cat "$dir/serve.err")")
serve=
wait "$record" || fail+=("record exited $? on SIGTERM: $(cat "$dir/record.err")")
record=
tail -1 "$dir/record.err"

# flat: last third against first third (see the header)
verdict=$(awk -F'\t' '
	NR == 1 { for (i = 1; i <= NF; i++) name[i] = $i; next }
	{ n++; for (i = 2; i <= NF; i++) v[n, i] = $i; nf = NF }
	END {
		if (n < 3) { print "FAIL: fewer than 3 rows"; exit }
		third = int(n / 3)
		for (i = 2; i <= nf; i++) {
			if (name[i] == "sht.files" || name[i] == "sht.kib") continue
			a = 0; b = 0
			for (r = 1; r <= third; r++) a += v[r, i]
			for (r = n - third + 1; r <= n; r++) b += v[r, i]
			a /= third; b /= third
			slack = (name[i] ~ /rss/) ? 8192 : (name[i] ~ /fds/) ? 4 : 64
			if (name[i] == "sht.max_kib") {
				for (r = 1; r <= third; r++) if (v[r, i] > m) m = v[r, i]
				lim = 2 * m + 1024; b = 0
				for (r = 1; r <= n; r++) if (v[r, i] > b) b = v[r, i]
			} else if (name[i] ~ /fds/) lim = a + slack
			else lim = 1.5 * a + slack
			printf "%s %.0f -> %.0f (limit %.0f)%s\n", name[i], a, b, lim, (b > lim ? " GROWS" : "")
		}
	}' "$dir/rows.tsv")
echo "# first third -> last third (means; sht.max_kib: largest file, first third -> whole run)"
echo "$verdict" | sed 's/^/#   /'
grows=$(grep -c 'GROWS\|^FAIL' <<<"$verdict" || true)
[ "$grows" = 0 ] || fail+=("not flat: $(grep 'GROWS\|^FAIL' <<<"$verdict" | cut -d' ' -f1 | xargs)")

# nothing lost uncounted
bad=0
for f in "$dir"/soak-*.sht; do
	"$v" check "$f" >"$dir/check.out" 2>&1 || { fail+=("check $f: $(tail -1 "$dir/check.out")"); bad=1; }
done
[ "$bad" = 0 ] && echo "# check: all $(ls "$dir"/soak-*.sht | wc -l) files good"
created=$(awk '/VMs created/ {print $2}' "$dir/churn.out")
exits=$(awk '/VMs created/ {for (i = 1; i < NF; i++) if ($(i + 1) ~ /^exits/) print $i}' "$dir/churn.out")
s_lost=$(awk '/^vcpustat_lost_records_total/ {s += $NF} END {print s + 0}' <<<"$final")
s_exits=$(awk '/^vcpustat_vcpu_exits_total/ {s += $NF} END {printf "%.0f", s}' <<<"$final")
if [ "$secs" -le 240 ]; then
	echo "# serve: $s_exits exits counted of $exits injected; lost $s_lost"
	[ "$s_exits" = "$exits" ] || [ "$s_lost" != 0 ] || fail+=("serve: $s_exits exits of $exits injected, none counted lost")
else
	echo "# serve: lost $s_lost (exit totals not compared: a run over 4 min outlives the series of its first VMs)"
fi
r_lost=$(sed -n 's/.* lost \([0-9]*\).*/\1/p' "$dir/record.err" | tail -1)
r_vms=$(for f in "$dir"/soak-*.sht; do "$v" query "$f" --path '/vms/*' --json 2>/dev/null; done |
	grep -o '"/vms/pid [0-9]*' | sort -u | wc -l)
echo "# record: $r_vms VMs in the files of $created created; lost ${r_lost:-?}"
[ "$r_vms" -ge "$created" ] || [ "${r_lost:-0}" != 0 ] || fail+=("record: $r_vms VMs in the files of $created created, none counted lost")

if [ ${#fail[@]} = 0 ]; then
	echo "soak: PASS"
	$keep_dir || rm -rf "$dir"
	exit 0
fi
echo "soak: FAIL: $(printf '%s; ' "${fail[@]}")(files in $dir)"
exit 1
