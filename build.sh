#!/usr/bin/env bash
# vcpustat's one entry point for building, running and testing.
#
#   ./build.sh run [ARGS...]   install Debian packages, build (build/), run vcpustat ARGS
#   ./build.sh test            install Debian packages, build with ASan/UBSan (build-test/),
#                              run the whole test suite
#   ./build.sh build           install Debian packages and build (build/)
#   ./build.sh deb             install Debian packages, build the Debian package
#                              (dpkg-buildpackage -b) in build-deb/, leave
#                              build-deb/vcpustat_<version>_amd64.deb, run lintian
#
# Run as root on Debian 12: the packages are installed with apt-get when missing,
# and vcpustat and most tests need BPF (root).
set -euo pipefail
cd "$(dirname "$0")"
top=$(pwd)
cmd=${1:-run}
[ $# -gt 0 ] && shift

jobs=$(nproc 2>/dev/null || echo 2)

build() { # build DIR [cmake args...]: quiet unless something goes wrong
	local dir=$1
	shift
	mkdir -p "$dir"
	cmake -S "$top" -B "$dir" "$@" > "$dir/configure.log" 2>&1 ||
		{ cat "$dir/configure.log"; echo "build.sh: cmake configure failed" >&2; exit 1; }
	cmake --build "$dir" -j "$jobs" > "$dir/build.log" 2>&1 ||
		{ cat "$dir/build.log"; echo "build.sh: build failed" >&2; exit 1; }
	grep -E 'warning:' "$dir/build.log" || true
	echo "build.sh: built $dir/bin: $(cd "$dir/bin" && echo *)"
}

tools/deps.sh
case "$cmd" in
build)
	build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	;;
run)
	build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	exec build/bin/vcpustat "$@"
	;;
test)
	# Sanitized user space, built with clang so the libFuzzer harnesses build too.
	CC=clang build build-test -DCMAKE_BUILD_TYPE=Debug -DVCPUSTAT_SANITIZE=ON
	exec tests/run.sh build-test
	;;
deb)
	# In a copy of the sources, so that dpkg-buildpackage's files (debian/vcpustat,
	# obj-*/, the .deb in the parent folder) stay in build-deb/.
	version=$(dpkg-parsechangelog -S Version)
	t0=$(date +%s)
	rm -rf build-deb
	mkdir -p "build-deb/vcpustat-$version"
	tar -c --exclude=./build --exclude='./build-*' --exclude=./.git --exclude='./obj-*' . | tar -x -C "build-deb/vcpustat-$version"
	# All CPUs, unless DEB_BUILD_OPTIONS=parallel=N says otherwise (-j would override it).
	par=-j$jobs
	case " ${DEB_BUILD_OPTIONS:-} " in *" parallel="*) par= ;; esac
	(cd "build-deb/vcpustat-$version" && dpkg-buildpackage -b -us -uc ${par:+"$par"}) > build-deb/build.log 2>&1 ||
		{ tail -40 build-deb/build.log; echo "build.sh: dpkg-buildpackage failed (build-deb/build.log)" >&2; exit 1; }
	rm -rf "build-deb/vcpustat-$version"
	deb=build-deb/vcpustat_${version}_amd64.deb
	echo "build.sh: built $deb ($(du -k "$deb" | cut -f1) KiB) in $(($(date +%s) - t0)) s"
	lintian --fail-on error "$deb" | tee build-deb/lintian.log ||
		{ echo "build.sh: lintian reports errors (build-deb/lintian.log)" >&2; exit 1; }
	;;
*)
	echo "usage: $0 run [vcpustat args] | test | build | deb" >&2
	exit 2
	;;
esac
