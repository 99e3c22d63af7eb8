#!/usr/bin/env bash
# vcpustat's one entry point for building, running and testing.
#
#   ./build.sh run [ARGS...]   install Debian packages, build (build/), run vcpustat ARGS
#   ./build.sh test            install Debian packages, build with ASan/UBSan (build-test/),
#                              run the whole test suite
#   ./build.sh build           install Debian packages and build (build/)
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
*)
	echo "usage: $0 run [vcpustat args] | test | build" >&2
	exit 2
	;;
esac
