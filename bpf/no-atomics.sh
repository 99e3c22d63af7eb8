#!/bin/sh
# no-atomics.sh OBJDUMP OBJECT STAMP: OBJECT (the compat BPF object) holds
# no atomic operation but the plain add: older kernels' verifiers (before
# 5.12) refuse any other anywhere in a program, reachable or not
# ("BPF_STX uses reserved fields"). Touches STAMP when none is there.
set -eu
found=$("$1" -d --no-show-raw-insn "$2" | grep -E 'lock .*(\|=|&=|\^=)|atomic_|cmpxchg' || true)
if [ -n "$found" ]; then
	echo "$found" | head -5 >&2
	echo "no-atomics.sh: $2 uses atomic operations that kernels before 5.12 refuse (use handler_max(), handler_fetch_inc() or #ifdef VCPUSTAT_NO_ATOMIC_OPS)" >&2
	exit 1
fi
touch "$3"
