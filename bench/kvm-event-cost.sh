#!/usr/bin/env bash
# In-kernel cost per event of vcpustat's KVM handlers -- kvm_entry, kvm_exit
# and the exit details (kvm_pio, kvm_mmio, kvm_msr, kvm_page_fault), and the
# guest-CR3 program of --address-spaces (a second one on kvm_exit) -- next to
# empty programs of the same attach kind on the same tracepoints, in the same
# run (bpf_stats run_time_ns / run_cnt; phases: empty, vcpustat, empty, each
# with a fresh `microvm --mix all`: build/bin/kvm-event-cost). These fire only
# where KVM runs guests: in the KVM lab (docs/kvmlab.md).
# Beside them the floor (issue 38 item 1): an empty program plus one clock read
# (bpf_ktime_get_ns, kept), on kvm_entry and kvm_exit and for the injected
# events -- what any timing tracer pays per event, since every one reads a clock.
# Targets: issue 12, <= 2x the empty program; issue 38, kvm_exit and kvm_entry
# each <= 1.5x the floor, kvm_entry after an exit with a detail <= 2x.
#
# First, on this host (any host with BPF, /dev/kvm or not): the same handlers
# given injected events (kvm-event-cost -i: exit, one detail, entry per exit)
# next to an empty raw_tp program given the same events: the cost on a real
# CPU; then the same at record level vcpu (-l vcpu: what a recording adds,
# its records read after each event). Then the lab.
#
# usage: bench/kvm-event-cost.sh [BUILD_DIR] [RUNS] [SEC]   (default build 3 3; root)
# Under QEMU's TCG every instruction of a program is emulated: absolute times
# are far above hardware's; the ratio to the empty program is what this measures.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-3}
secs=${3:-3}
[ -x "$build/bin/kvm-event-cost" ] || ./build.sh build
echo "# $(date -u +%FT%TZ); host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
	"kernel $(uname -r); injected events (kvm-event-cost -i 40000), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
for r in $(seq "$runs"); do
	echo "## run $r (injected)"
	"$build/bin/kvm-event-cost" -i 40000
	# what `record` (level vcpu) adds: its records, read after each event as a recording reads them
	echo "## run $r (injected, record level vcpu)"
	"$build/bin/kvm-event-cost" -i 5000 -l vcpu
done
tools/kvmlab/run --check
scratch=$(mktemp -d /tmp/vcpustat-kvm-event-cost.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
echo "# $(date -u +%FT%TZ); host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs," \
	"kernel $(uname -r); /dev/kvm: $([ -c /dev/kvm ] && echo yes || echo no); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
tools/kvmlab/run --tcg-threads multi --scratch "$scratch" -- bash -c \
	'echo "# lab guest: kernel $(uname -r), $(nproc) CPUs"; for r in $(seq "$2"); do echo "## run $r"; "$1/bin/kvm-event-cost" -t "$3"; done' \
	sh "$PWD/$build" "$runs" "$secs"
