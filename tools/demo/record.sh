#!/usr/bin/env bash
# Record the bundled demo recording (tools/demo/demo.sht) on a host whose
# /dev/kvm works: the scene of `vcpustat --demo` (tools/microvm: 2 VMs x 2
# vCPUs named demo-0 and demo-1, and a CPU hog, all pinned to CPU 0) recorded
# with `vcpustat record --level full` (culprits included). Needs root.
#
#   tools/demo/record.sh [--build DIR] [--seconds S] [--chunk-us U] [-o OUT.sht]
#
# Defaults: build/, 20 s, 1000 us of guest work between two I/O exits (the live
# demo's microvm uses 50: with real exits that makes ~10x more intervals), and
# tools/demo/demo.sht. Inside the KVM lab (tools/kvmlab/), run it in the guest
# with --build pointing at the binaries shared from the host and -o on the
# shared folder: the recording then has the guest kernel's real SVM exits.
# The file must stay under 2 MiB: lower --seconds or raise --chunk-us if not.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../build
seconds=20
chunk=1000
out=$here/demo.sht
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--chunk-us) chunk=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--seconds S] [--chunk-us U] [-o OUT.sht]" >&2; exit 2 ;;
	esac
done
vcpustat=$build/bin/vcpustat
microvm=$build/bin/microvm
for b in "$vcpustat" "$microvm"; do
	[ -x "$b" ] || { echo "record.sh: $b is missing (./build.sh build, or --build DIR)" >&2; exit 1; }
done
if ! [ -c /dev/kvm ] || ! { exec 3<>/dev/kvm; } 2>/dev/null; then # -c first: <> creates a missing file
	echo "record.sh: /dev/kvm is not usable here: record on a host with KVM, or inside the KVM lab" >&2
	exit 1
fi
exec 3>&-

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

# the scene: the VMs, then the hog (its own name, like the live demo's)
"$microvm" --vms 2 --vcpus 2 --pin 0 --busy-us 3000 --idle-us 2000 --chunk-us "$chunk" \
	--duration $((seconds + 5)) -name demo --json /dev/null &
pids+=($!)
taskset -c 0 sh -c 'echo demo-cpu-hog > /proc/self/comm; while :; do :; done' &
pids+=($!)
sleep 1 # every vCPU runs

"$vcpustat" record -o "$out" --level full --duration "$seconds" -q \
	--meta workload="vcpustat --demo's scene: microvm --vms 2 --vcpus 2 --pin 0 --busy-us 3000 --idle-us 2000 --chunk-us $chunk, a CPU hog on CPU 0"
size=$(stat -c %s "$out")
echo "record.sh: $out: $size bytes, $seconds s"
"$vcpustat" report "$out" --top 3 | head -40
if [ "$size" -gt $((2 * 1024 * 1024)) ]; then
	echo "record.sh: $out is over 2 MiB: try --seconds $((seconds / 2)) or --chunk-us $((chunk * 2))" >&2
	exit 1
fi
