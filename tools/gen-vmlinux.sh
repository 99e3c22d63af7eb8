#!/usr/bin/env bash
# Regenerate vmlinux/<arch>/vmlinux.h from the running kernel's BTF.
# The committed header makes the build independent of kernel headers; CO-RE
# relocations make the compiled object portable to other kernels.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-x86}
btf=${BTF:-/sys/kernel/btf/vmlinux}
[ -r "$btf" ] || { echo "gen-vmlinux: $btf not readable: kernel built without CONFIG_DEBUG_INFO_BTF?" >&2; exit 1; }
out="$top/vmlinux/$arch/vmlinux.h"
mkdir -p "$(dirname "$out")"
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(wc -l < "$out") lines) from $btf"
