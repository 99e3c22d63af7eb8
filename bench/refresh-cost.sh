#!/usr/bin/env bash
# CPU time of one live-view refresh with 1,000 and 10,000 simulated vCPUs
# (build/bin/refresh-cost: the live window, then what `top -b` and `top -j`
# add), next to reading the maps only and to `bpftool map dump`, in the same
# run. Targets (issue 15): <= 5 ms per refresh at 1,000 vCPUs, <= 50 ms at 10,000.
# usage: bench/refresh-cost.sh [BUILD_DIR] [RUNS]     (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
[ -x "$build/bin/refresh-cost" ] || ./build.sh build
echo "# refresh-cost: $(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), /dev/kvm $([ -e /dev/kvm ] && echo present || echo absent), load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
	echo "## run $i"
	"$build/bin/refresh-cost" -v 50 -c 20 -r 50
	"$build/bin/refresh-cost" -v 500 -c 20 -r 10
	echo "## run $i: without heap_keep() (the baseline of that change)"
	"$build/bin/refresh-cost" -v 50 -c 20 -r 50 -K
	"$build/bin/refresh-cost" -v 500 -c 20 -r 10 -K
done
