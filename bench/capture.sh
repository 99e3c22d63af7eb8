#!/usr/bin/env bash
# File size and workload overhead of recording the same SEC seconds of activity:
#   none            the workload alone
#   vcpustat-vcpu   `vcpustat record --level vcpu`  (vCPU states, exits, pCPUs)
#   vcpustat-full   `vcpustat record --level full`  (also every switch and wakeup on the host)
#   ftrace          raw tracefs recording of the same tracepoints
#                   (per_cpu/cpuN/trace_pipe_raw, what trace-cmd record does)
#   perf            `perf record -a` of the same tracepoints
# Activity: tools/microvm (2 VMs x 2 vCPUs pinned to CPU 0, busy/halt/IO) plus
# `stress-ng --switch 1` (context switches on every CPU).
# Workload figures: microvm guest I/O exits per second (guest progress) and
# context switches per second (/proc/stat). Target (issue 4): vcpustat's file
# smaller and its overhead lower than both ftrace and perf.
# usage: [MODES="..."] bench/capture.sh [BUILD_DIR] [SEC]     (root, quiet machine)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
secs=${2:-60}
[ -x "$build/bin/vcpustat" ] || ./build.sh build
tracefs=/sys/kernel/tracing
[ -d $tracefs/events ] || mount -t tracefs nodev $tracefs
ncpu=$(nproc)
tmp=$(mktemp -d /var/tmp/vcpustat-capture-XXXXXX)
events="sched/sched_switch sched/sched_wakeup sched/sched_wakeup_new sched/sched_migrate_task sched/sched_process_exit
	kvm/kvm_entry kvm/kvm_exit kvm/kvm_userspace_exit kvm/kvm_fpu kvm/kvm_hypercall"
cleanup() {
	for e in $events; do echo 0 > $tracefs/events/$e/enable 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

ctxt() { awk '/^ctxt/ {print $2}' /proc/stat; }
wait_gone() { for p in "$@"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done; }

run_mode() { # prints: mode bytes exits_per_s switches_per_s
	local mode=$1 out="$tmp/$1" pids="" c0 c1 t0 t1 exits
	rm -rf "$out"; mkdir -p "$out"
	case $mode in
	none) ;;
	vcpustat-vcpu) "$build/bin/vcpustat" record -q -o "$out/rec.sht" & pids=$! ;;
	vcpustat-full) "$build/bin/vcpustat" record -q --level full -o "$out/rec.sht" & pids=$! ;;
	ftrace)
		echo 0 > $tracefs/tracing_on; echo > $tracefs/trace
		for e in $events; do echo 1 > $tracefs/events/$e/enable; done
		echo 1 > $tracefs/tracing_on
		for c in $(seq 0 $((ncpu - 1))); do
			cat $tracefs/per_cpu/cpu$c/trace_pipe_raw > "$out/cpu$c.raw" & pids="$pids $!"
		done ;;
	perf)
		perf record -q -a -o "$out/perf.data" $(for e in $events; do printf -- '-e %s ' "${e/\//:}"; done) \
			> /dev/null 2>&1 & pids=$! ;;
	esac
	sleep 1
	c0=$(ctxt); t0=$(date +%s%N)
	stress-ng --switch 1 -t "$secs" -q > /dev/null 2>&1 &
	local stress=$!
	"$build/bin/microvm" --vms 2 --vcpus 2 --pin 0 --busy-us 2000 --idle-us 1000 --duration "$secs" \
		-name cap --json "$out/microvm.json" > /dev/null
	wait $stress || true
	t1=$(date +%s%N); c1=$(ctxt)
	if [ -n "$pids" ]; then kill -INT $pids 2>/dev/null || true; wait_gone $pids; fi
	for e in $events; do echo 0 > $tracefs/events/$e/enable 2>/dev/null || true; done
	exits=$(python3 -c "import json,sys; d=json.load(open('$out/microvm.json')); print(sum(v['exits'].get('IO',0) for vm in d['vms'] for v in vm['vcpus']))")
	local bytes
	bytes=$(du -sb --exclude=microvm.json "$out" | cut -f1)
	awk -v m=$mode -v b=$bytes -v e=$exits -v c=$((c1 - c0)) -v t=$(( (t1 - t0) / 1000000 )) \
		'BEGIN {printf "%-14s %12.0f bytes  %9.0f guest IO exits/s  %9.0f switches/s\n", m, b, e * 1000 / t, c * 1000 / t}'
}

echo "# capture: $(date -u +%F), $ncpu CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r), $secs s per mode"
for m in ${MODES:-none vcpustat-vcpu vcpustat-full ftrace perf}; do
	run_mode $m
done
