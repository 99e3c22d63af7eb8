#!/usr/bin/env bash
# What tracing real VM exits costs, measured in the KVM lab (docs/kvmlab.md),
# where kvm_entry/kvm_exit fire: microvm's exits per second with
#   none       nothing attached
#   live       `vcpustat -j -d 1` (the live view: maps only, no ring buffer)
#   record     `vcpustat record` (level vcpu: every transition to the ring buffer and the file)
#   full       `vcpustat record --level full` (also every switch and wakeup; only if MODES names it)
#   perf       `perf kvm stat record` (a perf ring buffer of kvm:* tracepoints, written to a file)
#   perf-live  `perf kvm stat live -d 1` (perf's live view: the same events, read and aggregated each second)
#   bpftrace   `bpftrace` counting kvm:kvm_exit by exit reason in a BPF map
# in one lab session, the modes alternated round by round (their order rotates,
# so none is first or last more often than another).
#
# Workload: `microvm --vcpus 1 --pin 0 --mix all --idle-us 0 --duration SEC`:
# one vCPU, never halted, causing io, cpuid, msr and npf exits back to back
# (the exit-bound extreme: every exit pays the tracer). The vCPU is pinned to
# the lab's CPU 0; the tools' user space runs on CPU 1 (as on a real host,
# where the vCPU's core is not the one the tracer's daemon runs on).
# exits/s = KVM's own exits counter (KVM_GET_STATS_FD) / the VM's running
# time, so a tool that slows the vCPU down shows as fewer exits/s. A mode's
# loss in a round is 1 - its exits/s / that round's untraced exits/s.
#
# The lab's emulation stalls or freezes now and then (docs/kvmlab.md, Known
# problems): a lab session that ends before its rounds are done is started
# again, fresh, from the first round it did not finish (that round's lines are
# dropped, and the retry is said), up to ROUNDS + 3 sessions in all; a tool
# that fails to start ends the bench. The table
# is printed whatever happened, from the rounds that were complete.
#
# usage: bench/kvmlab-overhead.sh [BUILD_DIR] [ROUNDS] [SEC]   (default build 10 3; root)
#   MODES="none live ..." chooses the modes (default: none live record perf perf-live bpftrace)
# The lab is slow (QEMU TCG): absolute rates are ~100x below hardware; the
# ratios are what this measures.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --inside ]; then
	shift
	build=$1 rounds=$2 secs=$3 first=$4
	read -r -a modes <<< "$5"
	out=$KVMLAB_SCRATCH
	cd /tmp # perf writes files in its working directory; the lab's root is read-only
	# wait_for FILE PID [PATTERN]: until FILE exists (and holds PATTERN), or PID ended
	wait_for() {
		while [ ! -s "$1" ] || { [ -n "${3:-}" ] && ! grep -q "$3" "$1"; }; do
			kill -0 "$2" 2> /dev/null || return 1
			sleep 0.1
		done
	}
	start_mode() { # $1 mode, $2 tag: starts the tool, waits until it is attached, echoes its pid
		local p
		case $1 in
		none | perf) return 0 ;; # perf: run_microvm runs microvm under it
		live)
			taskset -c 1 "$build/bin/vcpustat" -j -d 1 > "/tmp/$2.live" 2> /dev/null &
			p=$!
			wait_for "/tmp/$2.live" $p || return 1 ;;
		record | full)
			local lvl=vcpu
			[ "$1" = full ] && lvl=full
			taskset -c 1 "$build/bin/vcpustat" record -q --level $lvl -o "/tmp/$2.sht" > /dev/null &
			p=$!
			while [ ! -e "/tmp/$2.sht" ]; do kill -0 $p || return 1; sleep 0.1; done ;;
		perf-live)
			# its first display comes a second after it is attached
			taskset -c 1 perf kvm stat live -d 1 > "/tmp/$2.perflive" 2>&1 &
			p=$!
			wait_for "/tmp/$2.perflive" $p 'Analyze events' || return 1 ;;
		bpftrace)
			taskset -c 1 bpftrace -e 'tracepoint:kvm:kvm_exit { @exits[args->exit_reason] = count(); }' \
				> "/tmp/$2.bt" 2>&1 &
			p=$!
			wait_for "/tmp/$2.bt" $p 'Attaching' || return 1 ;;
		*) echo "kvmlab-overhead: unknown mode $1" >&2; return 1 ;;
		esac
		echo $p
	}
	run_microvm() { # $1 mode, $2 tag
		local vm=("$build/bin/microvm" --vcpus 1 --pin 0 --mix all --idle-us 0 --duration "$secs"
			-name "guest=b$2" --json "$out/$2.json")
		if [ "$1" = perf ]; then
			# perf's user space on CPU 1, microvm free to pin its vCPU to CPU 0 as in the other modes
			taskset -c 1 perf kvm stat record -q -o "/tmp/$2.perf" -- taskset -c 0,1 "${vm[@]}" > /dev/null 2>&1
		else
			"${vm[@]}" > /dev/null
		fi
	}
	rate() { # exits and seconds of a microvm report
		python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
vm = m["vms"][0]
exits = sum(v["kvm_stats"]["exits"] for v in vm["vcpus"])
print("%d %.6f" % (exits, vm["running_ns"] / 1e9))' "$1"
	}
	n=${#modes[@]}
	for r in $(seq "$first" "$rounds"); do
		for i in $(seq 0 $((n - 1))); do
			m=${modes[$(((i + r - 1) % n))]}
			tag=$m-$r
			pid=$(start_mode "$m" "$tag") || { echo "kvmlab-overhead: $m did not start" >&2; exit 1; }
			run_microvm "$m" "$tag"
			if [ -n "$pid" ]; then
				kill -INT "$pid"
				while kill -0 "$pid" 2> /dev/null; do sleep 0.1; done
			fi
			rm -f "/tmp/$tag".*
			res=$(rate "$out/$tag.json") # (no <(...): the lab has no /dev/fd)
			exits=${res% *} s=${res#* }
			echo "$m $r $exits $s $(awk -v e="$exits" -v s="$s" 'BEGIN { printf "%.1f", e / s }')" |
				tee -a "$out/runs.txt" >&2
		done
	done
	exit 0
fi

build=${1:-build}
rounds=${2:-10}
secs=${3:-3}
modes=${MODES:-none live record perf perf-live bpftrace}
[ -x "$build/bin/vcpustat" ] || ./build.sh build
tools/kvmlab/run --check
for m in $modes; do
	case $m in
	perf | perf-live) command -v perf > /dev/null || { echo "kvmlab-overhead: perf is missing (Debian package linux-perf)" >&2; exit 1; } ;;
	bpftrace) command -v bpftrace > /dev/null || { echo "kvmlab-overhead: bpftrace is missing (Debian package bpftrace)" >&2; exit 1; } ;;
	none | live | record | full) ;;
	*) echo "kvmlab-overhead: unknown mode $m" >&2; exit 2 ;;
	esac
done
case " $modes " in *" none "*) ;; *) echo "kvmlab-overhead: MODES must include none (the baseline)" >&2; exit 2 ;; esac
scratch=$(mktemp -d /tmp/vcpustat-kvmlab-bench.XXXXXX)
nmodes=$(wc -w <<< "$modes")

# first_incomplete: the number of the first round that is not complete, after dropping
# the lines of rounds that are not (a session that ended in the middle of one)
first_incomplete() {
	touch "$scratch/runs.txt"
	awk -v n="$nmodes" '{ c[$2]++ } END { r = 1; while (c[r] == n) r++; print r }' "$scratch/runs.txt"
}

table() {
	echo "# microvm --vcpus 1 --pin 0 --mix all --idle-us 0 --duration $secs; modes alternated; $sessions lab session(s)"
	python3 - "$scratch/runs.txt" "$modes" << 'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
modes = sys.argv[2].split()
rate = {(m, int(r)): float(x) for m, r, _, _, x in rows}
rounds = sorted({r for _, r in rate})
if not rounds:
    print("no round was complete: no table")
    sys.exit(0)
def loss(m):
    return [100 * (1 - rate[m, r] / rate["none", r]) for r in rounds if (m, r) in rate]
print("%-10s %5s %16s %18s %13s %18s" % ("mode", "runs", "exits/s median", "min..max", "loss median", "loss min..max"))
for m in modes:
    v = [rate[m, r] for r in rounds if (m, r) in rate]
    if not v:
        continue
    l = loss(m)
    print("%-10s %5d %16.1f %8.0f..%-9.0f %12.1f%% %8.1f..%-8.1f" % (m, len(v), statistics.median(v), min(v), max(v),
          statistics.median(l), min(l), max(l)))
if "perf" in modes:
    p = loss("perf")
    pm = statistics.median(p)
    for m in ("live", "record"):
        if m not in modes:
            continue
        l = loss(m)
        met = statistics.median(l) <= pm / 2
        beyond = max(l) < min(p) / 2 if met else min(l) > max(p) / 2
        print("%s: median loss %.1f%% against half of perf kvm stat record's %.1f%%: target %s; %s" % (
            m, statistics.median(l), pm / 2, "met" if met else "not met",
            "beyond the spread (every round on the same side)" if beyond else "within the spread (rounds on both sides)"))
EOF
}
sessions=0
trap 'table; rm -rf "$scratch"' EXIT
echo "# $(date -u +%FT%TZ); host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, kernel $(uname -r); /dev/kvm: $([ -c /dev/kvm ] && echo yes || echo no)"
first=$(first_incomplete)
while [ "$first" -le "$rounds" ] && [ "$sessions" -lt $((rounds + 3)) ]; do
	sessions=$((sessions + 1))
	rc=0
	tools/kvmlab/run --tcg-threads multi --scratch "$scratch" -- bash -c \
		'echo "# lab guest: kernel $(uname -r), $(nproc) CPUs, $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed "s/^ //"); perf $(perf version | cut -d" " -f3)"; exec "$0" --inside "$@"' \
		"$PWD/bench/kvmlab-overhead.sh" "$PWD/$build" "$rounds" "$secs" "$first" "$modes" || rc=$?
	# keep the complete rounds only
	next=$(first_incomplete)
	awk -v r="$next" '$2 < r' "$scratch/runs.txt" > "$scratch/runs.new" && mv "$scratch/runs.new" "$scratch/runs.txt"
	if [ "$next" -le "$rounds" ]; then
		case $rc in
		124 | 125 | 126) ;; # timed out, did not boot, stalled or froze: the lab's, not the tools'
		*)
			echo "# lab session $sessions failed (exit $rc) in round $next: not a stall of the lab, not retried" >&2
			break ;;
		esac
		echo "# lab session $sessions ended (exit $rc: the lab timed out, failed or stalled) in round $next: its lines dropped, the round retried in a fresh lab" >&2
	elif [ "$rc" -ne 0 ]; then
		echo "# lab session $sessions ended with exit $rc after the last round" >&2
	fi
	first=$next
done
[ "$first" -gt "$rounds" ] || echo "# only $((first - 1)) of $rounds rounds were complete after $sessions lab sessions" >&2
