#!/usr/bin/env bash
# What one Prometheus scrape of `vcpustat serve` costs with 1,000 simulated vCPUs
# (50 VMs x 20, made through the injection program), next to reading the maps only
# and to an HTTP request that reads nothing, in the same run; with and without
# per-vCPU labels; and with 10,000 vCPUs. Target: <= 10 ms per scrape at 1,000.
# usage: bench/exporter.sh [BUILD_DIR] [RUNS] [SCRAPES]     (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
scrapes=${3:-200}
[ -x "$build/bin/exporter-bench" ] || ./build.sh build
echo "# exporter-bench: $(date -u +%F), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$runs"); do
	echo "## run $i: per-vCPU labels"
	"$build/bin/exporter-bench" -v 50 -c 20 -n "$scrapes"
	echo "## run $i: --no-vcpu-labels"
	"$build/bin/exporter-bench" -v 50 -c 20 -n "$scrapes" -N
done
# at scale: 10,000 vCPUs (500 VMs x 20), with and without heap_keep() (the baseline
# of that change: the heap given back to the kernel between scrapes)
for i in $(seq "$runs"); do
	echo "## run $i: 10,000 vCPUs"
	"$build/bin/exporter-bench" -v 500 -c 20 -n 20
	echo "## run $i: 10,000 vCPUs, without heap_keep()"
	"$build/bin/exporter-bench" -v 500 -c 20 -n 20 -K
done
