#!/usr/bin/env bash
# Benchmark of `vcpustat import` on a large ftrace text file, next to grep.
#
#   bench/import.sh [LINES] [REPEATS] [ROUNDS]
#                     (defaults: 3000000 lines, best of 5, 500000 sync rounds)
#
# Builds a Release tree in build-bench/ (no sanitizers), generates a host trace
# of LINES lines (bench/trace_gen.c: 8 CPUs, 4 VMs x 3 vCPUs, host threads;
# tracefs layout with the tgid and irq-flags columns), then, in the same run
# on the same file (page cache warm):
#  1. `grep -c sched_switch FILE` (the baseline: one pass of a fast text tool);
#  2. `vcpustat import --host FILE -o OUT.sht` end to end (wall clock), and
#     its rate in events/s and lines/s;
#  3. import-bench: CPU time of parsing alone, parsing + the handler, the
#     whole import (where the time goes);
#  4. trace-based synchronization: ROUNDS protocol rounds (2 x ROUNDS
#     matches) as host and guest ftrace text, `vcpustat sync --host --guest`
#     end to end, next to grep over the same two files.
# Prints the machine and the results; paste them into bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-3000000}
repeats=${2:-5}
rounds=${3:-500000}
dir=build-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DVCPUSTAT_TESTS=OFF > "$work/configure.log" 2>&1 ||
	{ cat "$work/configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)" --target vcpustat trace-gen import-bench > "$work/build.log" 2>&1 ||
	{ cat "$work/build.log"; exit 1; }

echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) at start"
echo "command: bench/import.sh $lines $repeats $rounds"
echo

"$dir/bin/trace-gen" "$lines" "$work/host.txt"
size=$(stat -c %s "$work/host.txt")
echo "file:    $(wc -l < "$work/host.txt") lines, $((size / 1000000)) MB"
cat "$work/host.txt" > /dev/null # into the page cache

best() { # best wall time in seconds of REPEATS runs of a command
	local best=999999999 t0 t1 t
	for _ in $(seq "$repeats"); do
		t0=$(date +%s%N)
		"$@" > "$work/stdout" 2>&1 # not /dev/null: GNU grep then stops at the first match
		t1=$(date +%s%N)
		t=$(( (t1 - t0) / 1000 ))
		(( t < best )) && best=$t
	done
	printf '%d.%06d' $((best / 1000000)) $((best % 1000000))
}

g=$(best grep -c sched_switch "$work/host.txt")
i=$(best "$dir/bin/vcpustat" import --host "$work/host.txt" -o "$work/out.sht" -q)
"$dir/bin/vcpustat" import --host "$work/host.txt" -o "$work/out.sht" --json > "$work/report.json"
events=$(grep -m1 '"events"' "$work/report.json" | tr -dc 0-9)
intervals=$(grep -m1 '"intervals"' "$work/report.json" | tr -dc 0-9)
echo "events:  $events used by the analysis, $intervals SHT intervals written ($(($(stat -c %s "$work/out.sht") / 1000000)) MB)"
echo
echo "end to end, best of $repeats (wall clock):"
printf '  %-44s %s s\n' "grep -c sched_switch FILE (baseline)" "$g"
printf '  %-44s %s s   %s M events/s, %s M lines/s, %sx grep\n' "vcpustat import --host FILE -o OUT.sht" "$i" \
	"$(echo "scale=2; $events / $i / 1000000" | bc)" "$(echo "scale=2; $lines / $i / 1000000" | bc)" \
	"$(echo "scale=1; $i / $g" | bc)"
echo
"$dir/bin/import-bench" "$work/host.txt" "$repeats"
echo
"$dir/bin/trace-gen" --sync "$rounds" "$work/sync-host.txt" "$work/sync-guest.txt"
echo "sync:    $(wc -l < "$work/sync-host.txt") host lines, $(wc -l < "$work/sync-guest.txt") guest lines, $((($(stat -c %s "$work/sync-host.txt") + $(stat -c %s "$work/sync-guest.txt")) / 1000000)) MB"
cat "$work/sync-host.txt" "$work/sync-guest.txt" > /dev/null
gs=$(best grep -c -e kvm_hypercall -e vcpustat_sync "$work/sync-host.txt" "$work/sync-guest.txt")
s=$(best "$dir/bin/vcpustat" sync --host "$work/sync-host.txt" --guest "$work/sync-guest.txt")
"$dir/bin/vcpustat" sync --host "$work/sync-host.txt" --guest "$work/sync-guest.txt" | grep -E '^(matches|quality|error):'
echo "end to end, best of $repeats (wall clock):"
printf '  %-44s %s s\n' "grep -c -e kvm_hypercall -e vcpustat_sync H G" "$gs"
printf '  %-44s %s s   %sx grep\n' "vcpustat sync --host H --guest G" "$s" "$(echo "scale=1; $s / $gs" | bc)"
