#!/usr/bin/env bash
# Run the whole test suite from a build directory: the Criterion suite (unit,
# in-kernel injection, live end-to-end; one process at a time because live
# tests pin threads to CPUs), then brief runs of the fuzz harnesses (each one
# counts as a test). Ends with one line, `N passed, N failed, N skipped`, after
# the list of skip reasons; exits non-zero on any failure or crash, never on a
# skip (tests/tally.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-test}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export VCPUSTAT_BUILD_DIR=$PWD/$dir

passed=0 failed=0 skipped=0
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT

tests/tally.sh "$dir/bin/vcpustat-tests" --jobs 1 | tee "$summary"
read -r p f s < <(tail -1 "$summary" | awk '{ print $1, $3, $5 }')
passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
grep -E '^(FAILED|skipped [0-9]+):' "$summary" > "$summary.lines" || true

for fuzzer in "$dir"/bin/fuzz-*; do
	[ -x "$fuzzer" ] || continue
	name=$(basename "$fuzzer")
	corpus=tests/fuzz/corpus/${name#fuzz-}
	work=$(mktemp -d)
	echo "fuzz: $name for 20 s (corpus $corpus)"
	if ! "$fuzzer" -max_total_time=20 -timeout=5 -print_final_stats=0 "$work" "$corpus" > "$work.log" 2>&1; then
		tail -40 "$work.log"
		echo "FAILED: $name found a crash or a leak (above)" | tee -a "$summary.lines"
		failed=$((failed + 1))
	else
		grep -E '^Done|DONE' "$work.log" | tail -1
		passed=$((passed + 1))
	fi
	rm -rf "$work" "$work.log"
done

echo
echo "== summary"
cat "$summary.lines"
rm -f "$summary.lines"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
