#!/usr/bin/env bash
# The fused multi-level import against the same traces imported separately
# (issue 13: the fused multi-level paper's Figs. 19-20 question: what does
# analysing host and guests together cost, next to analysing each alone?).
#
#   bench/fused.sh [HOST_LINES] [GUEST_LINES] [REPEATS]
#                    (defaults: 1000000 host lines, 1000000 lines a guest, best of 3)
#
# For N = 1, 2 and 4 VMs with guest traces, bench/trace_gen.c (--guests)
# writes a host trace (ftrace text, 8 CPUs, 4 VMs x 3 vCPUs, host threads,
# the sync protocol's rounds of N VMs) and N guest traces (each on its own
# clock, scheduler events of 8 threads on 3 CPUs, the sync agent's markers),
# then, in the same run, on the same files (page cache warm):
#  - fused: `vcpustat import --host H --guest VM1=G1 ... --guest VMN=GN`:
#    one file with the host's view, each guest synchronized and its threads'
#    states against their vCPUs (the multi-level analysis);
#  - separately (the baseline): `vcpustat import --host H` and each guest
#    trace imported on its own (`vcpustat import --host Gi`), as a tool that
#    analyses each trace alone would; the sum of their times.
# Wall and CPU (user + sys) seconds, best of REPEATS by wall. Release build.
set -euo pipefail
cd "$(dirname "$0")/.."
hlines=${1:-1000000}
glines=${2:-1000000}
repeats=${3:-3}
dir=build-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DVCPUSTAT_TESTS=OFF > "$work/configure.log" 2>&1 ||
	{ cat "$work/configure.log"; exit 1; }
cmake --build "$dir" -j"$(nproc)" --target vcpustat trace-gen > "$work/build.log" 2>&1 ||
	{ cat "$work/build.log"; exit 1; }
bin=$dir/bin
echo "# fused: $(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# host trace $hlines lines, each guest trace $glines lines, best of $repeats (by wall)"

# Seconds of one command, best of $repeats by wall: "WALL CPU"
TIMEFORMAT='%R %U %S'
measure() {
	local best="" out w u s
	for _ in $(seq "$repeats"); do
		out=$( { time "$@" > /dev/null 2> "$work/err"; } 2>&1 ) || { cat "$work/err"; exit 1; }
		read -r w u s <<< "$out"
		best=$(awk -v w="$w" -v c="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')" -v b="$best" \
			'BEGIN { split(b, x, " "); if (b == "" || w < x[1]) print w, c; else print b }')
	done
	echo "$best"
}
add() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }

printf '%-4s %-28s %-28s %-10s\n' "N" "fused: wall / CPU (s)" "separately: wall / CPU (s)" "fused / separately (CPU)"
for n in 1 2 4; do
	mkdir -p "$work/$n"
	"$bin/trace-gen" --guests "$n" "$hlines" "$glines" "$work/$n" 2>> "$work/gen.log"
	guests=()
	for v in $(seq "$n"); do
		guests+=(--guest "pid$((10000 + 100 * (v - 1)))=$work/$n/guest$v.txt")
	done
	cat "$work/$n"/*.txt > /dev/null # page cache warm
	fused=$(measure "$bin/vcpustat" import -q --host "$work/$n/host.txt" "${guests[@]}" -o "$work/$n/fused.sht")
	sep_w=0
	sep_c=0
	read -r w c <<< "$(measure "$bin/vcpustat" import -q --host "$work/$n/host.txt" -o "$work/$n/host.sht")"
	sep_w=$(add "$sep_w" "$w")
	sep_c=$(add "$sep_c" "$c")
	for v in $(seq "$n"); do
		read -r w c <<< "$(measure "$bin/vcpustat" import -q --host "$work/$n/guest$v.txt" -o "$work/$n/g$v.sht")"
		sep_w=$(add "$sep_w" "$w")
		sep_c=$(add "$sep_c" "$c")
	done
	read -r fw fc <<< "$fused"
	printf '%-4s %-28s %-28s %s\n' "$n" "$fw / $fc" "$sep_w / $sep_c" \
		"$(awk -v a="$fc" -v b="$sep_c" 'BEGIN { printf "%.2fx", a / b }')"
	rm -f "$work/$n"/*.sht
done
sed 's/^/# /' "$work/gen.log"
