#!/usr/bin/env bash
# A scrape storm: the real `vcpustat serve` with 1,000 simulated vCPUs (50 VMs x 20, injected
# into its own BPF maps by build/bin/inject-vms) under wrk on loopback, CONNECTIONS connections
# for SECONDS seconds, next to the baseline in the same run: one connection for as long.
# Reported for each: requests/s, p50/p99 latency, errors (socket errors, non-2xx), map reads
# (vcpustat_map_reads_total before and after: with the default --cache-ms 250 at most one
# per 250 ms however many clients ask), RSS and open file descriptors of serve before and
# after. The storm's connections come from 10 loopback addresses (build/bin/spread-src.so:
# serve allows 16 connections per address); a last run shows what 100 connections from one
# address get. Warm-up runs come first: RSS is compared after the allocator has grown to
# what the runs need (each connection being answered holds a copy of the 2 MB body).
# Exits 1 if a check fails.
# usage: bench/scrape-storm.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]     (as root; installs wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
secs=${2:-30}
conns=${3:-100}
cache_ms=250
[ "$(id -u)" = 0 ] || { echo "scrape-storm: needs root (BPF)" >&2; exit 1; }
[ -x "$build/bin/inject-vms" ] && [ -f "$build/bin/spread-src.so" ] || ./build.sh build
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
command -v curl >/dev/null || apt-get install -y curl >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/metrics
tmp=$(mktemp -d)
"$build/bin/vcpustat" serve --listen "127.0.0.1:$port" --cache-ms "$cache_ms" 2>"$tmp/serve.err" &
serve=$!
trap 'kill $serve 2>/dev/null; wait $serve 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
"$build/bin/inject-vms" fill -p "$serve" -v 50 -c 20
sleep 0.3
curl -sf -o /dev/null "$url" # the first sample after the injection: every later one has as much to read

echo "# scrape-storm: $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
	"kernel $(uname -r), $([ -e /dev/kvm ] && echo with || echo without) /dev/kvm, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# serve --cache-ms $cache_ms; $("$build/bin/inject-vms" maps -p "$serve" | cut -d' ' -f3-); $(curl -sf "$url" | wc -c) bytes per scrape"

rss() { awk '/^VmRSS/ {print $2}' "/proc/$serve/status"; }
fds() { ls "/proc/$serve/fd" | wc -l; }
reads() { curl -sf "$url" | awk '$1 == "vcpustat_map_reads_total" {print $2}'; }
fail=0

# run NAME CONNECTIONS [PRELOAD]: wrk, then the figures and the checks
run() {
	local name=$1 c=$2 preload=${3:-} r0 r1 rss0 rss1 fd0 fd1 t=$(($2 < 2 ? 1 : 2)) out rps p50 p99 errs non2xx n reqs
	sleep 6 # idle connections of the previous run are gone (serve closes them after 5 s)
	rss0=$(rss) fd0=$(fds) r0=$(reads)
	out=$(LD_PRELOAD=$preload wrk -t "$t" -c "$c" -d "${secs}s" --latency "$url")
	sleep 6
	r1=$(reads) rss1=$(rss) fd1=$(fds)
	rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
	reqs=$(awk '/requests in/ {print $1}' <<<"$out")
	p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
	p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
	errs=$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' <<<"$out")
	non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
	n=$((r1 - r0 - 1)) # the map reads of the run (the scrape that read r1 counts itself)
	printf '%-34s %8s req/s  p50 %8s  p99 %8s  errors %s  non-2xx %s  map reads %d (%s requests)  RSS %d -> %d KiB  fds %d -> %d\n' \
		"$name" "$rps" "$p50" "$p99" "${errs:-0}" "${non2xx:-0}" "$n" "$reqs" "$rss0" "$rss1" "$fd0" "$fd1"
	[ "$4" = check ] || return 0
	# one map read per cache interval at most (+1: the interval under way when wrk starts; +2: the
	# --refresh reads, every 10 s, of the 12 s without scrapes around the run)
	if [ "$n" -gt $((secs * 1000 / cache_ms + 3)) ]; then echo "FAIL: $n map reads in $secs s, more than one per $cache_ms ms"; fail=1; fi
	if [ "${errs:-0}" != 0 ] || [ "${non2xx:-0}" != 0 ]; then echo "FAIL: errors"; fail=1; fi
	# flat: the same fds after, RSS within 10 % (+ 4 MiB for the allocator's arenas of the run)
	if [ "$fd1" -ne "$fd0" ]; then echo "FAIL: file descriptors $fd0 -> $fd1"; fail=1; fi
	if [ "$rss1" -gt $((rss0 * 11 / 10 + 4096)) ]; then echo "FAIL: RSS $rss0 -> $rss1 KiB"; fail=1; fi
}

spread=$(realpath "$build/bin/spread-src.so")
# the allocator's high-water mark: a run of each kind first (a 1-connection run grew RSS by
# 11 MB after a storm had, then nothing grew any more)
run "warm-up: $conns connections" "$conns" "$spread" info
run "warm-up: 1 connection" 1 "" info
run "baseline: 1 connection" 1 "" check
run "storm: $conns connections, 10 addresses" "$conns" "$spread" check
run "storm: $conns connections, 1 address" "$conns" "" info
echo "  (one address: serve refuses connections beyond 16 per address, HTTPD_PER_IP_LIMIT; wrk counts them as errors)"
[ "$fail" = 0 ] && echo "scrape-storm: all checks passed"
exit "$fail"
