#!/usr/bin/env bash
# The cost of live monitoring on a context-switch-heavy workload, every mode
# measured in the same run and alternated round by round:
#   none      nothing attached
#   empty     empty BPF programs on sched_switch + sched_wakeup (the floor)
#   vcpustat  `vcpustat -b -d 1` (the live view, maps only)
#   perf      `perf record -a` of the same two tracepoints
#   tracefs   raw ftrace recording of them (per_cpu/cpuN/trace_pipe_raw, what
#             trace-cmd record does; trace-cmd itself refuses to start here)
# Workload: `stress-ng --switch 2 -t SEC`; cost = ns per context switch =
# nCPUs x elapsed / context switches (from /proc/stat ctxt).
# Then a CPU-bound workload (`stress-ng --cpu 2 --cpu-method int64`, bogo ops/s)
# with and without vcpustat.
# Targets (issue 3): vcpustat's slowdown <= 1.3x the empty-program floor's, and
# < 1 % on the CPU-bound workload.
# usage: [MODES="none empty vcpustat"] bench/overhead.sh [BUILD_DIR] [ROUNDS] [SEC]    (root, quiet machine)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
secs=${3:-4}
[ -x "$build/bin/vcpustat" ] || ./build.sh build
ncpu=$(nproc)
tracefs=/sys/kernel/tracing
[ -d $tracefs/events ] || mount -t tracefs nodev $tracefs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; echo 0 > $tracefs/events/sched/sched_switch/enable; echo 0 > $tracefs/events/sched/sched_wakeup/enable' EXIT

ctxt() { awk '/^ctxt/ {print $2}' /proc/stat; }

start_mode() { # prints the pid of what it started (nothing for none)
	case $1 in
	none) ;;
	empty) "$build/bin/attach-empty" > /dev/null & echo $! ;;
	vcpustat) "$build/bin/vcpustat" -b -d 1 > /dev/null & echo $! ;;
	perf) perf record -q -a -e sched:sched_switch -e sched:sched_wakeup -o "$tmp/perf.data" > /dev/null 2>&1 &
	      echo $! ;;
	tracefs)
		echo 0 > $tracefs/tracing_on
		echo > $tracefs/trace
		echo 1 > $tracefs/events/sched/sched_switch/enable
		echo 1 > $tracefs/events/sched/sched_wakeup/enable
		echo 1 > $tracefs/tracing_on
		for c in $(seq 0 $((ncpu - 1))); do
			cat $tracefs/per_cpu/cpu$c/trace_pipe_raw > "$tmp/raw$c" &
			echo $!
		done ;;
	esac
}

wait_gone() { # the pids are not our children (started in a subshell): poll
	for p in "$@"; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
}

stop_mode() {
	local pids=$2
	if [ -n "$pids" ]; then
		kill $pids 2>/dev/null || true
		wait_gone $pids
	fi
	if [ "$1" = tracefs ]; then
		echo 0 > $tracefs/events/sched/sched_switch/enable
		echo 0 > $tracefs/events/sched/sched_wakeup/enable
		echo "tracefs bytes: $(cat "$tmp"/raw* | wc -c)" >> "$tmp/sizes"
		rm -f "$tmp"/raw*
	fi
	[ "$1" = perf ] && { echo "perf bytes: $(stat -c %s "$tmp/perf.data" 2>/dev/null || echo 0)" >> "$tmp/sizes"; rm -f "$tmp/perf.data"; }
	return 0
}

switch_ns() { # ns per context switch under stress-ng --switch
	local c0 c1 t0 t1
	c0=$(ctxt); t0=$(date +%s%N)
	stress-ng --switch "$ncpu" -t "$secs" -q > /dev/null 2>&1
	t1=$(date +%s%N); c1=$(ctxt)
	echo $(( (t1 - t0) * ncpu / (c1 - c0) ))
}

cpu_ops() { # bogo ops/s of a CPU-bound stressor
	stress-ng --cpu "$ncpu" --cpu-method int64 -t "$secs" --metrics-brief 2>&1 |
		awk '$4 == "cpu" {print $9}'
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

modes=${MODES:-"none empty vcpustat perf tracefs"}
echo "# overhead: $(date -u +%F), $ncpu CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "# stress-ng --switch $ncpu -t $secs, $rounds rounds, modes alternated"
for r in $(seq "$rounds"); do
	for m in $modes; do
		pids=$(start_mode $m | xargs)
		sleep 1
		ns=$(switch_ns)
		stop_mode $m "$pids"
		echo "$m $ns" >> "$tmp/switch"
		echo "round $r $m: $ns ns/switch"
	done
done
none=$(awk '$1 == "none" {print $2}' "$tmp/switch" | median)
empty=$(awk '$1 == "empty" {print $2}' "$tmp/switch" | median)
echo
echo "median ns per context switch (slowdown vs none):"
for m in $modes; do
	v=$(awk -v m=$m '$1 == m {print $2}' "$tmp/switch" | median)
	awk -v m=$m -v v=$v -v n=$none 'BEGIN {printf "  %-9s %7.0f ns  %+6.1f%%\n", m, v, (v - n) * 100 / n}'
done
vcs=$(awk '$1 == "vcpustat" {print $2}' "$tmp/switch" | median)
awk -v v=$vcs -v e=$empty -v n=$none 'BEGIN {printf "vcpustat slowdown / empty-program slowdown: %.2fx (target <= 1.3x)\n", (v - n) / (e - n)}'
[ -f "$tmp/sizes" ] && sort "$tmp/sizes" | uniq -c | sed "s/^/  /"

echo
echo "# CPU-bound: stress-ng --cpu $ncpu --cpu-method int64 -t $secs, bogo ops/s, $rounds rounds"
for r in $(seq "$rounds"); do
	echo "none $(cpu_ops)" >> "$tmp/cpu"
	pid=$("$build/bin/vcpustat" -b -d 1 > /dev/null & echo $!)
	sleep 1
	echo "vcpustat $(cpu_ops)" >> "$tmp/cpu"
	kill "$pid"; wait_gone "$pid"
done
cn=$(awk '$1 == "none" {print $2}' "$tmp/cpu" | median)
cv=$(awk '$1 == "vcpustat" {print $2}' "$tmp/cpu" | median)
awk -v n=$cn -v v=$cv 'BEGIN {printf "  none %.1f ops/s, vcpustat %.1f ops/s: %+.2f%% (target > -1%%)\n", n, v, (v - n) * 100 / n}'
