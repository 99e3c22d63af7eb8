#!/usr/bin/env bash
# The interim tools/demo/demo.sht: a SIMULATED trace of the demo's scene
# (tools/demo/demo_trace.c: 2 microvm-like VMs x 2 vCPUs with SVM exits and a
# CPU hog, all on CPU 0), imported with `vcpustat import` and labelled as
# what it is: metadata host=synthetic, workload says it is simulated and how it
# was made. A real recording replaces it: tools/demo/record.sh.
#
#   tools/demo/make-synthetic.sh [BUILD_DIR] [OUT.sht]     (default: build, tools/demo/demo.sht)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-tools/demo/demo.sht}")
seconds=20

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$build/bin/demo-trace" --seconds "$seconds" --vms 2 --vcpus 2 --seed 1 demo-trace.txt
"$build/bin/vcpustat" import --host demo-trace.txt --cpus 2 -q \
	--vm-name 1000=demo-0 --vm-name 2000=demo-1 \
	--meta host=synthetic \
	--meta recorded="$(date -u +%Y-%m-%d)" \
	--meta workload="simulated, not recorded: 2 microvm-like VMs x 2 vCPUs, SVM exits, a CPU hog, all on CPU 0; tools/demo/make-synthetic.sh" \
	-o demo.sht
mv demo.sht "$out"
echo "make-synthetic: $out: $(stat -c %s "$out") bytes, $seconds s"
