#!/bin/sh
# skel-same.sh A.skel.h NAME_A B.skel.h NAME_B STAMP: the two skeletons
# describe the same maps, programs and global variables, in the same layout
# (the loader opens the compat object through the main object's skeleton:
# user/live/loader.c). Their embedded objects are left out of the
# comparison; the names are made equal. Touches STAMP when they agree.
set -eu
strip() { # the skeleton without its ELF bytes, NAME_bpf made x_bpf
	up=$(echo "$2" | tr a-z A-Z)
	awk '/__elf_bytes\(size_t \*sz\)/ { skip = 1 } skip && /^}/ { skip = 0; next } !skip' "$1" |
		sed "s/$2_bpf/x_bpf/g; s/${up}_BPF/X_BPF/g"
}
if ! strip "$1" "$2" > "$5.a" || ! strip "$3" "$4" > "$5.b" || ! diff -u "$5.a" "$5.b" > "$5.diff"; then
	cat "$5.diff" >&2
	echo "skel-same.sh: $1 and $3 differ in their maps, programs or variables" >&2
	exit 1
fi
rm -f "$5.a" "$5.b" "$5.diff"
touch "$5"
