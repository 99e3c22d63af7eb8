#!/usr/bin/env bash
# The whole tree (vcpustat, microvm, the tests, the benchmarks) warning-free
# with gcc too: the suite's own build is clang's (the fuzzers need it), and gcc
# warns of other things (-O3's maybe-uninitialized, _FORTIFY_SOURCE's ignored
# results, format truncation). A Release build (-O3) with Debian's hardening
# flags (dpkg-buildflags: what a package build of vcpustat gets) and
# -DVCPUSTAT_WERROR=ON, in a build directory of its own; a warning fails the
# check with the compiler's messages. About 1.5 minutes on 2 cores.
#
#   tests/pkg/gcc.sh BUILD_DIR   (BUILD_DIR unused: the build is a fresh one)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/pkg/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v gcc > /dev/null || ! command -v cmake > /dev/null || ! command -v ninja > /dev/null; then
	skip "gcc: gcc, cmake or ninja is not installed (tools/deps.sh installs them)"
	summary
	exit
fi
flags=
if command -v dpkg-buildflags > /dev/null; then
	# -O2 gives way to Release's -O3, where gcc sees the most
	flags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS | sed 's/ *-O2//')"
fi
version=$(gcc -dumpfullversion 2> /dev/null || gcc -dumpversion)
t0=$(date +%s)
if ! CC=gcc CFLAGS="$flags" cmake -S . -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
	-DVCPUSTAT_WERROR=ON > "$tmp/configure.log" 2>&1; then
	tail -30 "$tmp/configure.log"
	fail "gcc: cmake could not configure a gcc build (above)"
	summary
	exit
fi
if cmake --build "$tmp/build" -j "$(nproc)" -- -k 0 > "$tmp/build.log" 2>&1; then
	echo "gcc: built in $(($(date +%s) - t0)) s"
	bins=$(cd "$tmp/build/bin" && echo *)
	missing=
	# the programs, the suite, two benchmarks (bench/)
	for b in vcpustat microvm vcpustat-tests record-throughput kvm-event-cost; do
		[ -x "$tmp/build/bin/$b" ] || missing="$missing $b"
	done
	if [ -n "$missing" ]; then
		fail "gcc: the build left out$missing (bin/ holds $bins): the check covers less than the tree"
	else
		pass "gcc: the whole tree ($(echo "$bins" | wc -w) programs: vcpustat, microvm, the tests, the benchmarks)" \
			"builds with gcc $version -O3, Debian's hardening flags and -Werror"
	fi
else
	grep -E 'warning:|error:' "$tmp/build.log" | head -40
	fail "gcc: the tree does not build with gcc $version -O3 -Werror and Debian's hardening flags" \
		"($(grep -cE ' error: ' "$tmp/build.log") errors; above)"
fi
summary
