#!/usr/bin/env bash
# Run the whole test suite from a build directory: the Criterion suite (unit,
# in-kernel injection, live end-to-end; one process at a time because live
# tests pin threads to CPUs), the tests that need a real KVM inside the KVM
# lab (tests/kvmlab.sh, docs/kvmlab.md), the packaging checks (tests/pkg/),
# then brief runs of the fuzz harnesses (each one counts as a test). Ends with
# one line, `N passed, N failed, N skipped`, after
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

# Add up one part's closing `N passed, N failed, N skipped` and keep its
# FAILED and skip-reason lines for the summary.
count() {
	local p f s
	read -r p f s < <(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$summary" | tail -1 |
		awk '{ print $1, $3, $5 }')
	passed=$((passed + ${p:-0})) failed=$((failed + ${f:-1})) skipped=$((skipped + ${s:-0}))
	grep -E '^(FAILED|skipped [0-9]+):' "$summary" >> "$summary.lines" || true
}
: > "$summary.lines"

# The KVM lab runs the tests that need kvm_entry/kvm_exit to fire (suite
# kvmlab), those that need a host of two NUMA nodes (kvmlab_numa), and, on a machine without a usable /dev/kvm, every suite with
# tests that need /dev/kvm (they run whole there, not here). Without the lab
# (no QEMU, no kernel package) everything runs here, those tests skip, and
# tests/kvmlab.sh says why the lab could not run (one more skip).
lab_suites="kvmlab|kvmlab_numa"
# (-c first: `<>` would create a regular file where there is no /dev/kvm)
if ! [ -c /dev/kvm ] || ! (exec 3<> /dev/kvm) 2> /dev/null; then
	lab_suites="kvmlab|kvmlab_numa|microvm|e2e|record|export_live|health"
fi
host_filter='*'
if tools/kvmlab/run --prepare > /dev/null; then # fetches the guest kernel on first use
	host_filter="!(@($lab_suites)/*)"
fi

tests/tally.sh "$dir/bin/vcpustat-tests" --jobs 1 --filter "$host_filter" | tee "$summary"
count
# shellcheck disable=SC2086 # one suite per word
tests/kvmlab.sh "$dir" ${lab_suites//|/ } | tee "$summary"
count

# The kernel matrix (docs/kernels.md): the whole lab suite ran above on the
# lab's default kernel (6.1); on each other kernel, the tests that prove
# counts and time -- exits per reason = KVM's counters (recorded, live, the
# exporter), guest + host = schedstat, the culprits live and recorded,
# record = live, level full -- in each mode the loader can choose there
# (marks mode where `vcpustat probe` says the kernel takes it, and the hot
# page's programs), two lab sessions per kernel and mode (the kvmlab tests,
# then the e2e and record tests), with one TCG thread for all guest CPUs:
# attaching vcpustat makes the kernel patch its tracepoints' code, and under
# QEMU's multi-threaded TCG that patching races the other CPUs' translated
# code (docs/kvmlab.md, "Known problems": 6.12 died of it in 1 of 2
# sessions). The kernel's own tick-sampled guest share is not compared there
# (VCPUSTAT_LAB_NO_TICKS): on 6.12 under TCG it is no measure. KVMLAB_MATRIX
# overrides the kernels (empty: none).
matrix_tests="kvmlab/@(exits_per_reason_equal_kvm_counters_per_vcpu|live_json_and_export_equal_kvm_counters_per_vcpu|guest_host_split_matches_schedstat)"
matrix_host="@(e2e/@(vcpustat_json_matches_schedstat_for_contended_vcpus|a_level_vcpu_recording_names_who_kept_the_vcpus_waiting)"
matrix_host+="|record/@(file_totals_equal_live_maps_over_the_same_window|level_full_on_two_cpus_replays_to_the_same_file))"
for kernel in ${KVMLAB_MATRIX-5.10 6.12}; do
	if ! tools/kvmlab/run --kernel "$kernel" --prepare > /dev/null 2>&1; then
		tests/kvmlab.sh --kernel "$kernel" --label "kernel $kernel" "$dir" "matrix=$matrix_tests" | tee "$summary"
		count # the lab cannot run here: one skip, said
		continue
	fi
	# which mode the loader chooses on this kernel: its own probe, in the lab
	mode=$(tools/kvmlab/run --kernel "$kernel" -- "$dir/bin/vcpustat" probe -j -d 0.1 2> /dev/null |
		sed -n 's/.*"mode": *"\([a-z_]*\)".*/\1/p' | head -1)
	if [ -z "$mode" ]; then
		echo "FAILED: vcpustat probe -j printed no mode in the KVM lab on kernel $kernel" | tee -a "$summary.lines"
		failed=$((failed + 1))
		continue
	fi
	echo "kvmlab: kernel $kernel: vcpustat probe says mode $mode"
	KVMLAB_TCG_THREADS=single tests/kvmlab.sh --kernel "$kernel" --env VCPUSTAT_LAB_NO_TICKS=1 \
		--label "kernel $kernel, $mode" "$dir" "matrix=$matrix_tests" "matrix_host=$matrix_host" | tee "$summary"
	count
	if [ "$mode" = marks ]; then
		KVMLAB_TCG_THREADS=single tests/kvmlab.sh --kernel "$kernel" --env VCPUSTAT_LAB_NO_TICKS=1 \
			--env VCPUSTAT_NO_MARKS=1 --label "kernel $kernel, hot_page" "$dir" \
			"matrix=$matrix_tests" "matrix_host=$matrix_host" | tee "$summary"
		count
	fi
done

# Shipping (docs/install.md): cmake --install, the man pages against --help,
# bash completion, the systemd unit, the Debian package (deb.sh builds it
# with `./build.sh deb`, a release build of its own, and installs it into a
# fresh root with dpkg: 1-2 minutes on 2 cores), and ./build.sh itself
# (build-sh.sh: quiet steps, `run` builds what it runs; a build of vcpustat
# and microvm of its own, 1-2 minutes), and the whole tree warning-free with
# gcc as well (gcc.sh: -O3, Debian's hardening flags, -Werror; 1.5 minutes);
# the tree's layers (layers.sh: no include points up, every header compiles on
# its own, none includes the whole model/model.h; seconds).
for t in layers install man completion deb build-sh gcc; do
	tests/pkg/$t.sh "$dir" | tee "$summary"
	count
done

for fuzzer in "$dir"/bin/fuzz-*; do
	[ -x "$fuzzer" ] || continue
	name=$(basename "$fuzzer")
	corpus=tests/fuzz/corpus/${name#fuzz-}
	work=$(mktemp -d)
	echo "fuzz: $name for 20 s (corpus $corpus)"
	# leaks inside Debian's libraries that vcpustat cannot avoid: tests/fuzz/lsan.supp says which
	if ! LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
		"$fuzzer" -max_total_time=20 -timeout=5 -print_final_stats=0 "$work" "$corpus" > "$work.log" 2>&1; then
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
