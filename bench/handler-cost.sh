#!/usr/bin/env bash
# In-kernel cost per event of vcpustat's sched_switch/sched_wakeup handlers next to
# empty programs on the same tracepoints, in the same run (bpf_stats run_time_ns /
# run_cnt under `stress-ng --switch 2`), and the cost of one injected event.
# Target (issue 2): the sched_switch handler costs <= 3x the empty program.
# usage: bench/handler-cost.sh [BUILD_DIR] [RUNS]     (as root, on a quiet machine)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
[ -x "$build/bin/handler-cost" ] || ./build.sh build
echo "# handler-cost: $(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
for i in $(seq "$runs"); do
	echo "## run $i: no VM on the host"
	"$build/bin/handler-cost" -t 4
	echo "## run $i: with 2 microvm VMs (4 vCPUs) on CPU 0"
	"$build/bin/handler-cost" -t 4 -m -n 1000
done
