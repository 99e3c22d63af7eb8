#!/usr/bin/env bash
# The Debian package (docs/install.md): `./build.sh deb` builds
# build-deb/vcpustat_<version>_amd64.deb with dpkg-buildpackage and lintian
# finds no error in it; then the package is installed by dpkg into a fresh root
# -- a chroot assembled, offline, from this machine's own installed packages:
# the package's dependencies (its Depends, recursively), man-db for `man`, and
# the essential shell tools its maintainer scripts may run -- and there
# `vcpustat --version`, `vcpustat --help` and `man vcpustat` work.
#
#   tests/pkg/deb.sh [--reuse]
#
# --reuse: use build-deb/*.deb if it is newer than every source file.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/pkg/lib.sh
reuse=0
[ "${1:-}" = --reuse ] && reuse=1

for t in dpkg-buildpackage dh lintian fakeroot chroot; do
	if ! command -v "$t" > /dev/null; then
		skip "$t is not installed (Debian packages dpkg-dev, debhelper, lintian, fakeroot: tools/deps.sh)"
		summary
		exit
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	skip "installing into a chroot needs root"
	summary
	exit
fi
version=$(dpkg-parsechangelog -S Version)
deb=build-deb/vcpustat_${version}_amd64.deb

newer=$(find CMakeLists.txt bpf include user tools docs debian cmake -newer "$deb" -type f 2> /dev/null | head -1)
if [ $reuse = 1 ] && [ -f "$deb" ] && [ -z "$newer" ]; then
	echo "deb: reusing $deb (no source file is newer)"
else
	t0=$(date +%s)
	if ! out=$(./build.sh deb 2>&1); then
		echo "$out" | tail -20
		fail "./build.sh deb failed (build-deb/build.log, build-deb/lintian.log)"
		summary
		exit
	fi
	echo "deb: ./build.sh deb took $(($(date +%s) - t0)) s"
fi
if [ -f "$deb" ]; then
	pass "./build.sh deb built $deb ($(du -k "$deb" | cut -f1) KiB)"
else
	fail "./build.sh deb left no $deb"
	summary
	exit
fi
lint=$(lintian "$deb" 2>&1)
if echo "$lint" | grep -q '^E: '; then
	fail "lintian errors: $(echo "$lint" | grep '^E: ' | head -5 | tr '\n' ' ')"
else
	pass "lintian: no error ($(echo "$lint" | grep -c '^W: ') warnings)"
	echo "$lint" | grep '^W: ' | sed 's/^/  lintian /'
fi

# The fresh root.
root=$(mktemp -d /tmp/vcpustat-debroot.XXXXXX)
trap 'rm -rf "$root"' EXIT
for d in bin sbin lib lib64; do # the host's /usr merge, mirrored
	if [ -L "/$d" ]; then
		mkdir -p "$root/usr/$d"
		ln -s "usr/$d" "$root/$d"
	fi
done
mkdir -p "$root"/{etc,tmp,var/lib/dpkg/info,var/lib/dpkg/updates,var/cache/man,proc,dev}
chmod 1777 "$root/tmp"

# The closure of the package's dependencies among the installed packages
# (first installed alternative of each), plus man-db and the tools
# maintainer scripts use.
declare -A seen=()
queue=(man-db base-files dash bash coreutils sed grep debianutils diffutils findutils libc-bin)
deps=$(dpkg-deb -f "$deb" Depends Pre-Depends | sed -E 's/^[A-Za-z-]+: //')
add_deps() { # "DEPENDS FIELD"
	local alt p
	while IFS= read -r alt; do
		for p in $(echo "$alt" | tr '|' '\n' | sed -E 's/\(.*\)//; s/:any//; s/ //g'); do
			if [ "$(dpkg-query -W -f='${Status}' "$p" 2> /dev/null)" = "install ok installed" ]; then
				queue+=("$p")
				break
			fi
		done
	done < <(echo "$1" | tr ',' '\n' | grep -v '^ *$')
}
add_deps "$deps"
while [ ${#queue[@]} -gt 0 ]; do
	p=${queue[0]}
	queue=("${queue[@]:1}")
	[ -n "${seen[$p]:-}" ] && continue
	seen[$p]=1
	add_deps "$(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p")"
done
: > "$root/var/lib/dpkg/status"
for p in "${!seen[@]}"; do
	dpkg-query -L "$p" | while IFS= read -r f; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		[ -d "$f" ] && [ ! -L "$f" ] && continue
		echo "${f#/}"
	done
	dpkg-query -s "$p" >> "$root/var/lib/dpkg/status"
	echo >> "$root/var/lib/dpkg/status"
done > "$root/.files"
tar -C / -c --no-recursion -T "$root/.files" 2> /dev/null | tar -C "$root" -x --keep-directory-symlink
rm -f "$root/.files"
echo "deb: fresh root of ${#seen[@]} packages from this machine ($(du -sm "$root" | cut -f1) MiB): ${!seen[*]}"

if out=$(dpkg --root="$root" -i "$deb" 2>&1); then
	pass "dpkg --root installs $deb into the fresh root (its Depends satisfied there)"
else
	fail "dpkg --root -i: $(echo "$out" | tail -5 | tr '\n' ' ')"
	summary
	exit
fi
# Run in the root with its own /proc (vcpustat finds its files through
# /proc/self/exe), in a private mount namespace that takes the mount away.
in_root() {
	unshare --mount --propagation private sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
		"$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
out=$(in_root vcpustat --version 2>&1)
[ "$out" = "vcpustat $version" ] && pass "in the fresh root: vcpustat --version: $out" ||
	fail "in the fresh root: vcpustat --version printed '$out'"
out=$(in_root vcpustat --help 2>&1)
echo "$out" | grep -q '^Commands:' && echo "$out" | grep -q '^  record ' &&
	pass "in the fresh root: vcpustat --help lists the commands" ||
	fail "in the fresh root: vcpustat --help: $(echo "$out" | head -3 | tr '\n' ' ')"
out=$(in_root MANPAGER=cat MANWIDTH=80 man vcpustat 2>&1)
echo "$out" | grep -q 'vcpustat - what every virtual CPU of a KVM host' &&
	pass "in the fresh root: man vcpustat shows the page" ||
	fail "in the fresh root: man vcpustat: $(echo "$out" | head -3 | tr '\n' ' ')"
out=$(in_root MANPAGER=cat man 8 vcpustat-record 2>&1)
echo "$out" | grep -q 'vcpustat-record - ' && pass "in the fresh root: man vcpustat-record" ||
	fail "in the fresh root: man vcpustat-record: $(echo "$out" | head -3 | tr '\n' ' ')"
out=$(in_root VCPUSTAT_DEMO_NO_KVM=1 vcpustat --demo -b -n 1 2>&1)
echo "$out" | grep -q 'playing the bundled recording /usr/share/vcpustat/demo.sht' &&
	pass "in the fresh root: vcpustat --demo plays /usr/share/vcpustat/demo.sht" ||
	fail "in the fresh root: vcpustat --demo: $(echo "$out" | head -3 | tr '\n' ' ')"
summary
