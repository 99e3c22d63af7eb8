#!/usr/bin/env bash
# The benchmarks an architecture step must leave unchanged (issues 11, 39):
# the tree at BEFORE against the tree at AFTER (commits), in one run on one
# machine, one benchmark at a time, the two trees' runs in turn:
#  - refresh-cost -r 50 (1,000 vCPUs: the CPU of a live refresh), 3 runs;
#  - record-throughput -n 4000000 -t 5 (records drained into an SHT file, and
#    1 M transitions/s sustained for 5 s: lost), 3 runs;
#  - bench/import.sh 3000000 5 500000 of each tree (`vcpustat import` and
#    `sync` next to grep; best of 5), once.
# Each tree is checked out into a worktree of its own and built Release
# (build-bench/, as bench/import.sh builds it). refresh-cost and
# record-throughput need root and BPF. Takes the machine's lock
# (/tmp/vcpustat-cpu.lock) for the whole run; prints the machine and each
# result; paste them into bench/RESULTS.md.
#
#   bench/arch-before-after.sh BEFORE AFTER
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench/arch-before-after.sh BEFORE AFTER}
after=${2:?usage: bench/arch-before-after.sh BEFORE AFTER}
work=$(mktemp -d)
cleanup() {
	for t in before after; do
		[ -d "$work/$t" ] && git worktree remove --force "$work/$t" > /dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT
exec 9> /tmp/vcpustat-cpu.lock
flock 9

for t in before after; do
	rev=${!t}
	git worktree add --detach "$work/$t" "$rev" > /dev/null 2>&1
	(cd "$work/$t" &&
		cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DVCPUSTAT_TESTS=OFF > "$work/$t.configure.log" 2>&1 &&
		cmake --build build-bench -j "$(nproc)" --target vcpustat trace-gen import-bench refresh-cost \
			record-throughput > "$work/$t.build.log" 2>&1) ||
		{ tail -40 "$work/$t.configure.log" "$work/$t.build.log" 2> /dev/null; exit 1; }
	echo "$t: $rev = $(git rev-parse --short "$rev") $(git log -1 --format=%s "$rev" | cut -c1-60)"
done
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) at start"

# before and after in turn, so that a drift of the machine over the run
# (another guest on the host, its clock) weighs on both alike
for i in 1 2 3; do
	for t in before after; do
		echo "== $t refresh-cost -r 50 ($i)"
		"$work/$t/build-bench/bin/refresh-cost" -r 50 2>&1 | tail -6
	done
done
for i in 1 2 3; do
	for t in before after; do
		echo "== $t record-throughput -n 4000000 -t 5 ($i)"
		"$work/$t/build-bench/bin/record-throughput" -n 4000000 -t 5 -o "$work" 2>&1 | tail -6
	done
done
for t in before after; do
	echo "== $t bench/import.sh 3000000 5 500000"
	(cd "$work/$t" && bench/import.sh 3000000 5 500000 2>&1 | sed -n '/^file:/,$p')
done
