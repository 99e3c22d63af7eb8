#!/usr/bin/env bash
# ./build.sh's own output (README "Running"): quiet unless a step fails, and
# `run` builds only what it runs. In a copy of the sources with a fresh build
# directory, and with a stand-in package manager on PATH (dpkg-query says every
# package is missing, apt-get prints about a thousand lines as a fresh
# machine's install does, id says root), so that tools/deps.sh takes its
# install path while nothing is installed for real:
#  - `./build.sh run --version`: one line per step (packages, configure, build)
#    on stderr, none of apt's lines, vcpustat's version alone on stdout; the
#    build directory's bin/ holds vcpustat and microvm only (no tests,
#    benchmarks or fuzzers);
#  - apt-get failing: its output printed, the step named, exit status 1;
#  - a compile error: the compiler's message printed, the step named, exit 1;
#  - the suite's own build (BUILD_DIR, when ./build.sh test made it) has
#    warnings as errors (VCPUSTAT_WERROR).
# The real build of vcpustat and microvm takes 1-2 minutes on 2 cores.
#
#   tests/pkg/build-sh.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/pkg/lib.sh
dir=${1:?usage: tests/pkg/build-sh.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The suite's build: made by ./build.sh test (it leaves build.log), with -Werror.
if [ ! -f "$dir/build.log" ]; then
	skip "build.sh: $dir was not built by ./build.sh test (no $dir/build.log): its -Werror is not checked"
elif grep -q '^VCPUSTAT_WERROR:BOOL=ON$' "$dir/CMakeCache.txt"; then
	pass "build.sh: ./build.sh test built $dir with warnings as errors (VCPUSTAT_WERROR=ON)"
else
	fail "build.sh: ./build.sh test built $dir without VCPUSTAT_WERROR=ON: warnings would not fail it"
fi

if ! command -v cmake > /dev/null || ! command -v clang > /dev/null; then
	skip "build.sh: cmake or clang is not installed (tools/deps.sh installs them)"
	summary
	exit
fi

src=$tmp/src stub=$tmp/stub
mkdir -p "$src" "$stub"
tar -c --exclude=./build --exclude='./build-*' --exclude=./.git --exclude='./obj-*' . | tar -x -C "$src"
cat > "$stub/dpkg-query" << 'EOF'
#!/bin/sh
echo "dpkg-query: no packages found matching $*" >&2
exit 1
EOF
cat > "$stub/apt-get" << 'EOF'
#!/bin/sh
# what a fresh machine's `apt-get install` prints, line after line
i=0
while [ $i -lt 1000 ]; do
	echo "Setting up stand-in-package-$i (1.0-1) ..."
	i=$((i + 1))
done
if [ -n "${STUB_APT_FAIL:-}" ]; then
	echo "E: Unable to locate package stand-in-missing"
	exit 100
fi
EOF
cat > "$stub/id" << 'EOF'
#!/bin/sh
[ "$1" = -u ] && { echo 0; exit 0; }
exec /usr/bin/id "$@"
EOF
chmod +x "$stub"/*

run_build() { # run_build NAME ARGS...: ./build.sh ARGS in the copy; NAME.out, NAME.err, NAME.rc
	local name=$1
	shift
	(cd "$src" && PATH=$stub:$PATH ./build.sh "$@") > "$tmp/$name.out" 2> "$tmp/$name.err"
	echo $? > "$tmp/$name.rc"
}

# A fresh machine: nothing installed, no build directory.
t0=$(date +%s)
run_build fresh run --version
echo "build-sh: ./build.sh run --version from a clean build directory took $(($(date +%s) - t0)) s"
if [ "$(cat "$tmp/fresh.rc")" != 0 ]; then
	fail "build.sh run --version failed (exit $(cat "$tmp/fresh.rc")): $(tail -5 "$tmp/fresh.err" | tr '\n' ' ')"
else
	out=$(cat "$tmp/fresh.out")
	version=$(sed -n 's/^project(vcpustat VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
	if [ "$out" = "vcpustat $version" ]; then
		pass "build.sh run --version: stdout is vcpustat's alone ($out)"
	else
		fail "build.sh run --version: stdout is not \`vcpustat $version\` alone: $(head -3 "$tmp/fresh.out" | tr '\n' ' ')"
	fi
	if [ "$(wc -l < "$tmp/fresh.err")" -eq 3 ] &&
		grep -qE '^build\.sh: packages: installed [0-9]+ \(log: build/deps\.log\)$' "$tmp/fresh.err" &&
		grep -qE '^build\.sh: configured build ' "$tmp/fresh.err" &&
		grep -qE '^build\.sh: built build/bin: vcpustat microvm$' "$tmp/fresh.err"; then
		pass "build.sh run: one line per step on stderr: $(tr '\n' '|' < "$tmp/fresh.err")"
	else
		fail "build.sh run: not one line per step (packages, configure, build) on stderr:" \
			"$(wc -l < "$tmp/fresh.err") lines: $(head -5 "$tmp/fresh.err" | tr '\n' '|')"
	fi
	if grep -q 'stand-in-package-999' "$src/build/deps.log" && ! grep -q stand-in "$tmp/fresh.err"; then
		pass "build.sh: apt's 1000 lines are in build/deps.log, not on the terminal"
	else
		fail "build.sh: apt's output was printed, or not kept in build/deps.log"
	fi
	bins=$(cd "$src/build/bin" && echo *)
	if [ "$bins" = "microvm vcpustat" ] && [ -f "$src/build/bpf/vcpustat.bpf.o" ] &&
		[ -f "$src/build/bpf/vcpustat_compat.bpf.o" ] && [ -f "$src/build/share/vcpustat/demo.sht" ]; then
		pass "build.sh run builds what it runs: bin/ holds $bins, with both BPF objects and the demo recording"
	else
		fail "build.sh run builds more or less than it runs: bin/ holds $bins"
	fi
fi

# apt-get fails (the packages are the first step: the build directory stays as it is).
STUB_APT_FAIL=1 run_build aptfail run --version
if [ "$(cat "$tmp/aptfail.rc")" = 1 ] && grep -q 'E: Unable to locate package stand-in-missing' "$tmp/aptfail.err" &&
	grep -qE '^build\.sh: installing the Debian packages failed \(log: build/deps\.log\)$' "$tmp/aptfail.err" &&
	[ ! -s "$tmp/aptfail.out" ]; then
	pass "build.sh: a failing apt-get's output is printed, the step named, exit 1"
else
	fail "build.sh: a failing apt-get: exit $(cat "$tmp/aptfail.rc"), stderr ends $(tail -2 "$tmp/aptfail.err" | tr '\n' '|')"
fi

# A compile error (after a good build, as a developer meets one): the compiler's message.
if [ "$(cat "$tmp/fresh.rc")" = 0 ]; then
	echo '#error build-sh test: a compile error' >> "$src/user/cli/cmd_probe.c"
	run_build ccfail run --version
	if [ "$(cat "$tmp/ccfail.rc")" = 1 ] && grep -q 'error: #error build-sh test: a compile error' "$tmp/ccfail.err" &&
		grep -qE '^build\.sh: build failed \(log: build/build\.log\)$' "$tmp/ccfail.err" &&
		[ ! -s "$tmp/ccfail.out" ]; then
		pass "build.sh: a compile error is printed with the build's log, the step named, exit 1"
	else
		fail "build.sh: a compile error: exit $(cat "$tmp/ccfail.rc"), stderr ends $(tail -2 "$tmp/ccfail.err" | tr '\n' '|')"
	fi
fi
summary
