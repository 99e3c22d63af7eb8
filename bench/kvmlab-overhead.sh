#!/usr/bin/env bash
# What tracing real VM exits costs, measured in the KVM lab (docs/kvmlab.md),
# where kvm_entry/kvm_exit fire: microvm's exits per second with
#   none      nothing attached
#   live      `vcpustat -j -d 1` (the live view: maps only, no ring buffer)
#   record    `vcpustat record` (level vcpu: every transition to the ring buffer and the file)
#   full      `vcpustat record --level full` (also every switch and wakeup of the host)
#   perf      `perf kvm stat record` (a perf ring buffer of kvm:* tracepoints)
# one session, the modes alternated round by round (their order rotates, so
# none is first or last equally often).
#
# Workload: `microvm --vcpus 1 --pin 0 --mix all --idle-us 0 --duration SEC`:
# one vCPU, never halted, causing io, cpuid, msr and npf exits back to back
# (the exit-bound extreme: every exit pays the tracer). The vCPU is pinned to
# the lab's CPU 0; the tools' user space runs on CPU 1 (as on a real host,
# where the vCPU's core is not the one the tracer's daemon runs on).
# exits/s = KVM's own exits counter (KVM_GET_STATS_FD) / the VM's running
# time, so a tool that slows the vCPU down shows as fewer exits/s.
#
# usage: bench/kvmlab-overhead.sh [BUILD_DIR] [ROUNDS] [SEC]   (default build 5 3; root)
# The lab is slow (QEMU TCG): absolute rates are ~100x below hardware; the
# ratios are what this measures.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --inside ]; then
	shift
	build=$1 rounds=$2 secs=$3
	out=$KVMLAB_SCRATCH
	modes=(none live record full perf)
	start_mode() { # $1 mode, $2 tag: starts the tool, waits until it is attached, echoes its pid
		case $1 in
		none) ;;
		live)
			"$build/bin/vcpustat" -j -d 1 > "/tmp/$2.live" 2> /dev/null &
			local p=$!
			while [ ! -s "/tmp/$2.live" ]; do kill -0 $p || return 1; sleep 0.1; done
			echo $p ;;
		record | full)
			local lvl=vcpu
			[ "$1" = full ] && lvl=full
			"$build/bin/vcpustat" record -q --level $lvl -o "/tmp/$2.sht" > /dev/null &
			local p=$!
			while [ ! -e "/tmp/$2.sht" ]; do kill -0 $p || return 1; sleep 0.1; done
			echo $p ;;
		esac
	}
	run_microvm() { # $1 mode, $2 tag
		local vm=("$build/bin/microvm" --vcpus 1 --pin 0 --mix all --idle-us 0 --duration "$secs"
			-name "guest=b$2" --json "$out/$2.json")
		if [ "$1" = perf ]; then
			perf kvm stat record -q -o "/tmp/$2.perf" -- "${vm[@]}" > /dev/null 2>&1
		else
			"${vm[@]}" > /dev/null
		fi
	}
	rate() { # exits/s of a microvm report
		python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
vm = m["vms"][0]
exits = sum(v["kvm_stats"]["exits"] for v in vm["vcpus"])
print("%d %.6f" % (exits, vm["running_ns"] / 1e9))' "$1"
	}
	echo "mode round exits seconds exits_per_s" > "$out/runs.txt"
	for r in $(seq 1 "$rounds"); do
		n=${#modes[@]}
		for i in $(seq 0 $((n - 1))); do
			m=${modes[$(((i + r - 1) % n))]}
			tag=$m-$r
			pid=$(start_mode "$m" "$tag") || { echo "kvmlab-overhead: $m did not start" >&2; exit 1; }
			run_microvm "$m" "$tag"
			if [ -n "$pid" ]; then
				kill -INT "$pid"
				while kill -0 "$pid" 2> /dev/null; do sleep 0.1; done
			fi
			rm -f "/tmp/$tag".*
			res=$(rate "$out/$tag.json") # (no <(...): the lab has no /dev/fd)
			exits=${res% *} s=${res#* }
			echo "$m $r $exits $s $(awk -v e="$exits" -v s="$s" 'BEGIN { printf "%.1f", e / s }')" |
				tee -a "$out/runs.txt" >&2
		done
	done
	exit 0
fi

build=${1:-build}
rounds=${2:-5}
secs=${3:-3}
[ -x "$build/bin/vcpustat" ] || ./build.sh build
tools/kvmlab/run --check
command -v perf > /dev/null || { echo "kvmlab-overhead: perf is missing (Debian package linux-perf)" >&2; exit 1; }
scratch=$(mktemp -d /tmp/vcpustat-kvmlab-bench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
echo "# $(date -u +%FT%TZ); host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, kernel $(uname -r); /dev/kvm: $([ -c /dev/kvm ] && echo yes || echo no)"
tools/kvmlab/run --tcg-threads multi --scratch "$scratch" -- bash -c \
	'echo "# lab guest: kernel $(uname -r), $(nproc) CPUs, $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed "s/^ //"); perf $(perf version | cut -d" " -f3)"; exec "$0" --inside "$@"' \
	"$PWD/bench/kvmlab-overhead.sh" "$PWD/$build" "$rounds" "$secs"
echo "# microvm --vcpus 1 --pin 0 --mix all --idle-us 0 --duration $secs; $rounds rounds, modes alternated"
awk 'NR > 1 { n[$1]++; s[$1] += $5; v[$1, n[$1]] = $5 }
END {
	base = s["none"] / n["none"]
	printf "%-8s %6s %14s %14s %10s %9s\n", "mode", "runs", "exits/s mean", "min..max", "vs none", "overhead"
	split("none live record full perf", order, " ")
	for (i = 1; i <= 5; i++) {
		m = order[i]; lo = 1e18; hi = 0
		for (k = 1; k <= n[m]; k++) { lo = v[m, k] < lo ? v[m, k] : lo; hi = v[m, k] > hi ? v[m, k] : hi }
		mean = s[m] / n[m]
		printf "%-8s %6d %14.1f %6.0f..%-6.0f %10.3f %8.1f%%\n", m, n[m], mean, lo, hi, mean / base, 100 * (1 - mean / base)
	}
}' "$scratch/runs.txt"
