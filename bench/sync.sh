#!/usr/bin/env bash
# Benchmark of the clock synchronization (user/sync/sync.c) on 1 M matches.
#
#   bench/sync.sh [N] [REPEATS]      (defaults: 1000000 matches, best of 5)
#
# Builds a Release tree in build-bench/ (no sanitizers), then:
#  1. vcpustat-bench-sync: in-memory timings against baselines measured in the
#     same run on the same data (parsing the pairs text; a least-squares fit),
#     and the accuracy of both against the known truth;
#  2. the whole command, `vcpustat sync --pairs FILE` on the same 1 M matches
#     (read + parse + sync + print), against `wc -l FILE` as the I/O floor.
# Prints the machine and the results; paste them into bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
repeats=${2:-5}
dir=build-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DVCPUSTAT_TESTS=OFF > "$work/configure.log" 2>&1 ||
	{ cat "$work/configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)" --target vcpustat vcpustat-bench-sync > "$work/build.log" 2>&1 ||
	{ cat "$work/build.log"; exit 1; }

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) at start"
echo "command: bench/sync.sh $n $repeats"
echo

"$dir/bin/vcpustat-bench-sync" "$n" "$repeats" "$work/pairs.csv"
echo

best() { # best wall time in seconds of REPEATS runs of a command
	local best=999999 t0 t1 t
	for _ in $(seq "$repeats"); do
		t0=$(date +%s%N)
		"$@" > /dev/null
		t1=$(date +%s%N)
		t=$(( (t1 - t0) / 1000 ))
		(( t < best )) && best=$t
	done
	printf '%d.%06d' $((best / 1000000)) $((best % 1000000))
}
echo "end to end, best of $repeats (wall clock):"
printf '  %-44s %s s\n' "wc -l FILE (I/O floor)" "$(best wc -l "$work/pairs.csv")"
printf '  %-44s %s s\n' "vcpustat sync --pairs FILE" "$(best "$dir/bin/vcpustat" sync --pairs "$work/pairs.csv")"
printf '  %-44s %s s\n' "vcpustat sync --pairs FILE --json" \
	"$(best "$dir/bin/vcpustat" sync --pairs "$work/pairs.csv" --json)"
echo
"$dir/bin/vcpustat" sync --pairs "$work/pairs.csv" | tail -1
