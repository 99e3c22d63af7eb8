#!/usr/bin/env bash
# Benchmark of `vcpustat report --flow` (execution-flow recovery) on a large recording.
#
#   bench/flow.sh [LINES] [REPEATS]   (defaults: 10000000 lines, best of 3)
#
# Builds a Release tree in build-bench/ (no sanitizers; BENCH_PREBUILT=DIR takes
# DIR/bin's binaries as they are instead, to try the script on a small input),
# generates a host trace of LINES lines (bench/trace_gen.c: 8 CPUs, 4 VMs x 3
# vCPUs, 8 host threads; about one SHT interval per line once imported),
# imports it, then on the same file (page cache warm), wall clock and peak RSS:
#  1. `vcpustat report FILE`: the whole file's tables (the baseline: one pass
#     over every vCPU's intervals);
#  2. `--flow 10101`: vCPU 0 of the first VM over the whole file (its host
#     run-queue waits resolved through the CPUs and the other vCPUs);
#  3. `--flow 500`: a host thread over the whole file (every CPU's
#     current_tid is read to find where it waited);
#  4. `--flow 10101 --from 1s --to 2s`: a one-second window.
# Prints the machine and the results; paste them into bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-10000000}
repeats=${2:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${BENCH_PREBUILT:-}" ]; then
	dir=$BENCH_PREBUILT
else
	dir=build-bench
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DVCPUSTAT_TESTS=OFF > "$work/configure.log" 2>&1 ||
		{ cat "$work/configure.log"; exit 1; }
	cmake --build "$dir" -j "$(nproc)" --target vcpustat trace-gen > "$work/build.log" 2>&1 ||
		{ cat "$work/build.log"; exit 1; }
fi
bin=$dir/bin

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) at start"
echo "command: bench/flow.sh $lines $repeats${BENCH_PREBUILT:+ (BENCH_PREBUILT=$BENCH_PREBUILT)}"
echo

"$bin/trace-gen" "$lines" "$work/host.txt" 2> /dev/null
"$bin/vcpustat" import --host "$work/host.txt" -o "$work/host.sht" -q
rm -f "$work/host.txt"
intervals=$("$bin/vcpustat" query "$work/host.sht" | awk '$1 == "intervals" { print $2 }')
echo "file:    $lines trace lines imported: $intervals SHT intervals, $(($(stat -c %s "$work/host.sht") / 1000000)) MB"
cat "$work/host.sht" > /dev/null # into the page cache

run() { # NAME ARGS...: best wall time of REPEATS runs, and the peak RSS of the last
	local name=$1 best=999999999 t0 t1 t rss
	shift
	for _ in $(seq "$repeats"); do
		t0=$(date +%s%N)
		/usr/bin/time -f %M -o "$work/rss" "$bin/vcpustat" "$@" > "$work/out" 2> "$work/err" ||
			{ cat "$work/err"; exit 1; }
		t1=$(date +%s%N)
		t=$(((t1 - t0) / 1000))
		((t < best)) && best=$t
	done
	rss=$(tail -1 "$work/rss")
	printf '  %-44s %d.%06d s  %6d MB peak RSS' "$name" $((best / 1000000)) $((best % 1000000)) $((rss / 1024))
	if grep -q '^intervals (' "$work/out"; then
		printf '  %s flow intervals' "$(sed -n 's/^intervals (\([0-9]*\)):$/\1/p' "$work/out")"
	fi
	echo
}

echo "best of $repeats (wall clock):"
run "report FILE" report "$work/host.sht"
run "report FILE --flow 10101 (a vCPU)" report "$work/host.sht" --flow 10101
run "report FILE --flow 500 (a host thread)" report "$work/host.sht" --flow 500
run "report FILE --flow 10101 --from 1s --to 2s" report "$work/host.sht" --flow 10101 --from 1s --to 2s
