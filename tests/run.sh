#!/usr/bin/env bash
# Run the whole test suite from a build directory: the Criterion suite (unit,
# in-kernel injection, live end-to-end; one process at a time because live
# tests pin threads to CPUs), then brief runs of the fuzz harnesses.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-test}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export VCPUSTAT_BUILD_DIR=$PWD/$dir

status=0
"$dir/bin/vcpustat-tests" --jobs 1 || status=1

for fuzzer in "$dir"/bin/fuzz-*; do
	[ -x "$fuzzer" ] || continue
	name=$(basename "$fuzzer")
	corpus=tests/fuzz/corpus/${name#fuzz-}
	work=$(mktemp -d)
	echo "fuzz: $name for 20 s (corpus $corpus)"
	if ! "$fuzzer" -max_total_time=20 -timeout=5 -print_final_stats=0 "$work" "$corpus" > "$work.log" 2>&1; then
		tail -40 "$work.log"
		echo "fuzz: $name FAILED"
		status=1
	else
		grep -E '^Done|DONE' "$work.log" | tail -1
	fi
	rm -rf "$work" "$work.log"
done
exit $status
