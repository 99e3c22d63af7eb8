#!/usr/bin/env bash
# Reproduce the SHT section of bench/RESULTS.md: build speed, stabbing and
# range query latency, bytes per interval (each next to a baseline measured in
# the same run), bytes per interval by node size, and a long fuzz run.
#
#   bench/sht.sh                 10 M intervals, 2000 queries, 300 s of fuzzing
#   INTERVALS=2000000 FUZZ_SECONDS=30 bench/sht.sh     a quick run
#
# Prints Markdown on stdout. Uses build/ (Release) for the benchmark and
# build-test/ (clang, ASan/UBSan) for the fuzzer. Needs ~1 GB of memory and
# ~250 MB in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
intervals=${INTERVALS:-10000000}
queries=${QUERIES:-2000}
fuzz_seconds=${FUZZ_SECONDS:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

./build.sh build > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
CC=clang cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DVCPUSTAT_SANITIZE=ON > "$tmp/cfg.log" 2>&1 &&
	cmake --build build-test --target fuzz-sht -j "$(nproc)" > "$tmp/fz.log" 2>&1 ||
	{ cat "$tmp/cfg.log" "$tmp/fz.log"; exit 1; }

echo "## SHT file (bench/sht.sh)"
echo
echo "- command: \`INTERVALS=$intervals QUERIES=$queries FUZZ_SECONDS=$fuzz_seconds bench/sht.sh\`"
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), kernel $(uname -r)"
echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (modified)')"
echo
build/bin/sht-bench all --intervals "$intervals" --queries "$queries" --file "$tmp/bench.sht"

echo "### node size: bytes per interval and stabbing latency ($intervals intervals of the same data, 5000 queries)"
echo
echo "| node size | bytes/interval | stabbing median µs | p99 µs |"
echo "|---:|---:|---:|---:|"
for ns in 4096 16384 65536; do
	b=$(build/bin/sht-bench gen "$tmp/ns.sht" --intervals "$intervals" --node-size $ns |
		sed -n 's/.*(\([0-9.]*\) bytes\/interval).*/\1/p')
	q=$(build/bin/sht-bench stab "$tmp/ns.sht" --queries 5000)
	echo "| $ns | $b | $(echo "$q" | sed -n 's/.*median \([0-9.]*\) us.*/\1/p') | $(echo "$q" | sed -n 's/.*p99 \([0-9.]*\) us.*/\1/p') |"
done
rm -f "$tmp/ns.sht"
echo

echo "### fuzzing (fuzz-sht, libFuzzer + ASan/UBSan, $fuzz_seconds s, seed corpus tests/fuzz/corpus/sht)"
echo
mkdir -p "$tmp/corpus"
if build-test/bin/fuzz-sht -max_total_time="$fuzz_seconds" -timeout=5 -print_final_stats=1 \
	-artifact_prefix="$tmp/" "$tmp/corpus" tests/fuzz/corpus/sht > "$tmp/fuzz.log" 2>&1; then
	status="no crash, leak or timeout"
else
	status="FAILED (see the log below)"
fi
echo '```'
grep -E '^#[0-9]+[[:space:]]+DONE|^stat::|^Done' "$tmp/fuzz.log" || true
echo '```'
echo
echo "Result: $status; corpus grew to $(ls "$tmp/corpus" | wc -l) inputs."
if [ "$status" != "no crash, leak or timeout" ]; then
	tail -60 "$tmp/fuzz.log"
	exit 1
fi
