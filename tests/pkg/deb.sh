#!/usr/bin/env bash
# The Debian package (docs/install.md): `./build.sh deb` builds
# build-deb/vcpustat_<version>_amd64.deb with dpkg-buildpackage and lintian
# finds no error in it; then the package is installed by dpkg into a fresh root
# -- a chroot assembled, offline, from this machine's own installed packages:
# the Essential packages every Debian system has (what maintainer scripts may
# assume: deb-systemd-helper, perl-base...), the package's dependencies (its
# Depends, recursively) and man-db for `man` -- with its maintainer scripts
# run in that root; there it must be "install ok installed", hold every file
# docs/install.md lists, leave the exporter disabled, and `vcpustat --version`,
# `vcpustat --help`, `man vcpustat` and `vcpustat --demo` must work; then it
# is purged and must leave nothing behind.
#
#   tests/pkg/deb.sh [BUILD_DIR] [--reuse]
#
# BUILD_DIR (tests/run.sh passes it) is not used: the package is built from
# the sources by `./build.sh deb` (a release build of its own, 1-2 minutes on
# 2 cores). --reuse: use build-deb/*.deb if no source file is newer.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/pkg/lib.sh
reuse=0
for a in "$@"; do
	[ "$a" = --reuse ] && reuse=1
done

for t in dpkg-buildpackage dh lintian fakeroot unshare chroot man; do
	if ! command -v "$t" > /dev/null; then
		skip "the Debian package: $t is not installed (Debian packages dpkg-dev, debhelper, lintian, fakeroot, man-db: tools/deps.sh)"
		summary
		exit
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	skip "the Debian package: installing it into a fresh root with dpkg needs root"
	summary
	exit
fi
version=$(dpkg-parsechangelog -S Version)
deb=build-deb/vcpustat_${version}_amd64.deb

newer=$(find CMakeLists.txt README.md build.sh bpf include user tools docs debian cmake vmlinux \
	-newer "$deb" -type f 2> /dev/null | head -1)
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
	pass "./build.sh deb: $deb ($(du -k "$deb" | cut -f1) KiB)"
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

# The closure, among this machine's installed packages (first installed
# alternative of each), of the Essential ones, man-db and the package's own
# Depends.
declare -A seen=()
# shellcheck disable=SC2207 # package names: one a word
queue=(man-db $(dpkg-query -W -f='${Package} ${Essential} ${db:Status-Abbrev}\n' |
	awk '$2 == "yes" && $3 == "ii" { print $1 }'))
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
# Each package's files, its status entry and its file list (dpkg reads every
# installed package's list when it installs one).
: > "$root/var/lib/dpkg/status"
for p in "${!seen[@]}"; do
	dpkg-query -L "$p" | while IFS= read -r f; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		[ -d "$f" ] && [ ! -L "$f" ] && continue
		echo "${f#/}"
	done
	dpkg-query -s "$p" >> "$root/var/lib/dpkg/status"
	echo >> "$root/var/lib/dpkg/status"
	cp /var/lib/dpkg/info/"$p".list /var/lib/dpkg/info/"$p":*.list "$root/var/lib/dpkg/info/" 2> /dev/null
done > "$root/.files"
tar -C / -c --no-recursion -T "$root/.files" 2> /dev/null | tar -C "$root" -x --keep-directory-symlink
rm -f "$root/.files"
echo "deb: fresh root of ${#seen[@]} packages from this machine ($(du -sm "$root" | cut -f1) MiB): $(echo "${!seen[@]}" | tr ' ' '\n' | sort | tr '\n' ' ')"

# dpkg --root runs the maintainer scripts chrooted into the root.
if out=$(dpkg --root="$root" -i "$deb" 2>&1); then
	echo "$out" | sed 's/^/  dpkg: /'
	pass "dpkg --root -i installs $deb into the fresh root (its Depends satisfied there)"
else
	echo "$out" | sed 's/^/  dpkg: /'
	fail "dpkg --root -i $deb: $(echo "$out" | tail -3 | tr '\n' ' ')"
	summary
	exit
fi
if echo "$out" | grep -qiE 'warning|not found|error'; then
	fail "dpkg --root -i or the maintainer scripts complained (above)"
fi
status=$(dpkg --root="$root" -s vcpustat 2>&1 | grep '^Status:')
[ "$status" = "Status: install ok installed" ] &&
	pass "in the fresh root: vcpustat is configured (postinst ran): $status" ||
	fail "in the fresh root: dpkg -s vcpustat: '$status'"

# What docs/install.md says the package installs.
missing=
for f in usr/sbin/vcpustat usr/bin/microvm usr/libexec/vcpustat/vcpustat-sync-agent \
	usr/share/vcpustat/demo.sht usr/share/man/man8/vcpustat.8.gz usr/share/man/man1/microvm.1.gz \
	usr/share/bash-completion/completions/vcpustat usr/share/bash-completion/completions/microvm \
	lib/systemd/system/vcpustat-exporter.service \
	usr/share/doc/vcpustat/examples/prometheus/vcpustat.rules.yml \
	usr/share/doc/vcpustat/examples/prometheus/vcpustat.rules.test.yml \
	usr/share/doc/vcpustat/examples/prometheus/vcpustat-dashboard.json \
	usr/share/doc/vcpustat/copyright usr/share/doc/vcpustat/README.md.gz; do
	dpkg --root="$root" -L vcpustat | grep -qx "/$f" && [ -e "$root/$f" ] || missing+=" $f"
done
pages=$(find docs/man -name '*.scd' | wc -l)
installed_pages=$(dpkg --root="$root" -L vcpustat | grep -cE '^/usr/share/man/man[18]/.*\.gz$')
[ "$installed_pages" -eq "$pages" ] || missing+=" (man pages: $installed_pages of $pages)"
[ -z "$missing" ] && pass "the package holds every file docs/install.md lists ($installed_pages man pages)" ||
	fail "missing from the package:$missing"
grep -q '^ExecStart=/usr/sbin/vcpustat serve ' "$root/lib/systemd/system/vcpustat-exporter.service" &&
	pass "the unit's ExecStart is /usr/sbin/vcpustat" ||
	fail "the unit's ExecStart: $(grep ExecStart "$root/lib/systemd/system/vcpustat-exporter.service" 2>&1)"
# Not enabled: no WantedBy link, but deb-systemd-helper (postinst) knows the
# unit, so that a purge cleans up after a later `systemctl enable`.
wants=$(find "$root/etc/systemd" -name 'vcpustat-exporter.service' 2> /dev/null)
if [ -n "$wants" ]; then
	fail "the package enabled the exporter: ${wants//$root/}"
elif ! [ -e "$root/var/lib/systemd/deb-systemd-helper-enabled/vcpustat-exporter.service.dsh-also" ]; then
	fail "postinst did not register the unit with deb-systemd-helper (no dsh-also state file)"
else
	pass "the exporter is not enabled; postinst registered it with deb-systemd-helper"
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
out=$(in_root microvm --help 2>&1)
echo "$out" | grep -q -- '--vms' &&
	pass "in the fresh root: microvm --help" ||
	fail "in the fresh root: microvm --help: $(echo "$out" | head -3 | tr '\n' ' ')"
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

# Purge (postrm runs): nothing of the package is left.
files=$(dpkg --root="$root" -L vcpustat | while IFS= read -r f; do [ -d "$root$f" ] || echo "$f"; done)
if out=$(dpkg --root="$root" --purge vcpustat 2>&1); then
	left=$(for f in $files /var/lib/systemd/deb-systemd-helper-enabled/vcpustat-exporter.service.dsh-also; do
		[ -e "$root$f" ] && echo "$f"; done)
	[ -z "$left" ] && pass "dpkg --purge removes all $(echo "$files" | wc -w) files of the package" ||
		fail "dpkg --purge left: $(echo "$left" | head -5 | tr '\n' ' ')"
else
	fail "dpkg --root --purge vcpustat: $(echo "$out" | tail -3 | tr '\n' ' ')"
fi
summary
