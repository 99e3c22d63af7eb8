#!/usr/bin/env bash
# In-kernel cost per event of vcpustat's sched_switch/sched_wakeup handlers next to
# empty programs on the same tracepoints, in the same run (bpf_stats run_time_ns /
# run_cnt under `stress-ng --switch 2`; each program alone on its tracepoints, in
# alternating phases: build/bin/handler-cost -h), and the cost of one injected event.
# Target (issue 15): <= 1.5x the empty program with no VM, <= 2x with VMs.
#
# usage: bench/handler-cost.sh [BUILD_DIR] [RUNS]     (as root, on a quiet machine)
#   Each run: no VM on the host; 4 threads tracked as vCPUs (-i 4, registered
#   through the injection program: works without /dev/kvm); and, where /dev/kvm
#   opens, 2 microvm VMs (4 vCPUs) on CPU 0 (-m).
#   LOCK=FILE: hold flock FILE for each measurement (a machine shared with builds).
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
for i in $(seq "$runs"); do
	echo "## run $i: no VM on the host"
	measure "$build/bin/handler-cost" -t 4
	echo "## run $i: 4 threads tracked as vCPUs (busy 2 ms, asleep 2 ms) on CPU 0"
	measure "$build/bin/handler-cost" -t 4 -i 4 -n 1000
	if [ "$kvm" = yes ]; then
		echo "## run $i: with 2 microvm VMs (4 vCPUs) on CPU 0"
		measure "$build/bin/handler-cost" -t 4 -m -n 1000
	fi
done
