#!/usr/bin/env bash
# vcpustat's one entry point for building, running and testing.
#
#   ./build.sh run [ARGS...]   install Debian packages, build vcpustat and what it runs
#                              (its BPF objects, microvm for --demo) in build/, run
#                              vcpustat ARGS
#   ./build.sh test            install Debian packages, build everything with ASan/UBSan
#                              and -Werror (build-test/), run the whole test suite
#   ./build.sh build           install Debian packages and build everything (build/):
#                              vcpustat, microvm, the sync agent, tests, benchmarks
#   ./build.sh deb             install Debian packages, build the Debian package
#                              (dpkg-buildpackage -b) in build-deb/, leave
#                              build-deb/vcpustat_<version>_amd64.deb, run lintian
#
# Run as root on Debian 12: the packages are installed with apt-get when missing,
# and vcpustat and most tests need BPF (root).
#
# Quiet unless something fails: one line per step (packages, configure, build) on
# stderr, so that what `run` prints on stdout is vcpustat's alone. Each step's
# output goes to a log in the build directory (deps.log, configure.log, build.log),
# printed whole when the step fails; compiler warnings are printed too.
set -euo pipefail
cd "$(dirname "$0")"
top=$(pwd)
cmd=${1:-run}
[ $# -gt 0 ] && shift

jobs=$(nproc 2>/dev/null || echo 2)

say() { echo "build.sh: $*" >&2; }

# step LOG WHAT COMMAND...: run COMMAND with its output in LOG; on failure print
# LOG and stop.
step() {
	local log=$1 what=$2
	shift 2
	if ! "$@" > "$log" 2>&1; then
		cat "$log" >&2
		say "$what failed (log: $log)"
		exit 1
	fi
}

packages() { # packages DIR: the Debian packages (tools/deps.sh), apt's output in DIR/deps.log
	mkdir -p "$1"
	step "$1/deps.log" "installing the Debian packages" tools/deps.sh
	if [ -s "$1/deps.log" ]; then
		say "packages: installed $(sed -n 's/^deps: installing //p' "$1/deps.log" | wc -w) (log: $1/deps.log)"
	else
		say "packages: all installed"
	fi
}

# build DIR TARGETS CMAKE_ARGS...: configure DIR and build TARGETS there (all: everything).
build() {
	local dir=$1 targets=$2
	shift 2
	packages "$dir"
	step "$dir/configure.log" "cmake configure" cmake -S "$top" -B "$dir" "$@"
	say "configured $dir ($*)"
	if [ "$targets" = all ]; then
		step "$dir/build.log" build cmake --build "$dir" -j "$jobs"
		targets=$(cd "$dir/bin" && echo *)
	else
		# shellcheck disable=SC2086 # one target a word
		step "$dir/build.log" build cmake --build "$dir" -j "$jobs" --target $targets
	fi
	grep -E 'warning:' "$dir/build.log" >&2 || true
	say "built $dir/bin: $targets"
}

case "$cmd" in
build)
	build build all -DCMAKE_BUILD_TYPE=RelWithDebInfo
	;;
run)
	# vcpustat (its BPF objects are part of it) and microvm, which --demo runs
	build build "vcpustat microvm" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	exec build/bin/vcpustat "$@"
	;;
test)
	# Sanitized user space, built with clang so the libFuzzer harnesses build too;
	# warnings are errors here, so that the suite's build keeps the tree warning-free.
	CC=clang build build-test all -DCMAKE_BUILD_TYPE=Debug -DVCPUSTAT_SANITIZE=ON -DVCPUSTAT_WERROR=ON
	exec tests/run.sh build-test
	;;
deb)
	# In a copy of the sources, so that dpkg-buildpackage's files (debian/vcpustat,
	# obj-*/, the .deb in the parent folder) stay in build-deb/.
	rm -rf build-deb
	packages build-deb
	version=$(dpkg-parsechangelog -S Version)
	t0=$(date +%s)
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
