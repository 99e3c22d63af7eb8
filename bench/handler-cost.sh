#!/usr/bin/env bash
# In-kernel cost per event of vcpustat's sched_switch/sched_wakeup handlers next to
# empty programs on the same tracepoints, in the same run (bpf_stats run_time_ns /
# run_cnt under `stress-ng --switch 2`; each program alone on its tracepoints, in
# alternating phases: build/bin/handler-cost -h), and the cost of one injected event.
# Target (issue 15): <= 1.5x the empty program with no VM, <= 2x with VMs. Each run also
# prints, per tracepoint, the floor of any tracer that times events (an empty program plus
# one clock read, bench/sched_floor.bpf.c; issue 38 item 1) and vcpustat's ratio to it.
#
# usage: bench/handler-cost.sh [BUILD_DIR] [RUNS]     (as root, on a quiet machine)
#   Each run: no VM on the host; 4 threads tracked as vCPUs (-i 4, registered
#   through the injection program: works without /dev/kvm); and, where /dev/kvm
#   opens, 2 microvm VMs (4 vCPUs) on CPU 0 (-m).
#   LOCK=FILE: hold flock FILE for each measurement (a machine shared with builds).
#   FULL=1: instead, record level full (every switch and wakeup recorded, a thread
#   draining): `handler-cost -t 2 -f` per run, then the min/median/max of the ratios
#   (issue 15 item 2: <= 2x, stable); with BASELINE=OTHER_BUILD_DIR each run measures
#   that build's handler-cost just before (main vs a branch, alternating), and with
#   LOCK the whole series holds the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
[ -x "$build/bin/handler-cost" ] || ./build.sh build

measure() {
	if [ -n "${LOCK:-}" ]; then
		flock "$LOCK" sh -c 'echo "load average: $(cut -d" " -f1-3 /proc/loadavg)"; exec "$@"' sh "$@"
	else
		echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
		"$@"
	fi
}

kvm=no
if [ -c /dev/kvm ] && exec 3<>/dev/kvm 2>/dev/null; then
	kvm=yes
	exec 3>&-
fi
echo "# handler-cost: $(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
	"kernel $(uname -r), /dev/kvm: $kvm, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "${FULL:-}" ]; then
	if [ -n "${LOCK:-}" ]; then
		exec flock "$LOCK" env -u LOCK "$0" "$@"
	fi
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	for i in $(seq "$runs"); do
		for b in ${BASELINE:+"$BASELINE"} "$build"; do
			echo "## run $i: level full, $b (load average $(cut -d' ' -f1 /proc/loadavg))"
			"$b/bin/handler-cost" -t 2 -f -n 1000 | grep -E '^(sched_|records drained)' | sed "s|^|$b: |"
		done
	done | tee "$out"
	for b in ${BASELINE:+"$BASELINE"} "$build"; do
		for ev in sched_switch sched_wakeup; do
			awk -v p="$b: $ev:" 'index($0, p) == 1' "$out" | sed 's/.*ratio \([0-9.]*\)x/\1/' | sort -n |
				awk -v k="$b $ev" '{ x[++n] = $1 }
					END { if (n) printf "%s: ratio min %.2fx, median %.2fx, max %.2fx over %d runs\n", k, x[1],
						  n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2, x[n], n }'
		done
	done
	exit 0
fi
# HOTPAGE=1: each measurement also with the hot page's programs (VCPUSTAT_NO_MARKS=1), the
# baseline of marks mode (docs/architecture.md, "The hot path"), right after it
modes=marks
[ -n "${HOTPAGE:-}" ] && modes="marks hotpage"
for i in $(seq "$runs"); do
	for m in $modes; do
		env=()
		[ "$m" = hotpage ] && env=(env VCPUSTAT_NO_MARKS=1)
		echo "## run $i: no VM on the host ($m)"
		measure "${env[@]}" "$build/bin/handler-cost" -t 4
		echo "## run $i: 4 threads tracked as vCPUs (busy 2 ms, asleep 2 ms) on CPU 0 ($m)"
		measure "${env[@]}" "$build/bin/handler-cost" -t 4 -i 4 -n 1000
	done
	if [ "$kvm" = yes ]; then
		echo "## run $i: with 2 microvm VMs (4 vCPUs) on CPU 0"
		measure "$build/bin/handler-cost" -t 4 -m -n 1000
	fi
done
