#!/usr/bin/env bash
# The KVM lab part of the test suite (docs/kvmlab.md): run the given test
# suites inside the lab, one lab session per suite, with tests/tally.sh.
#
#   tests/kvmlab.sh [--kernel K] [--env VAR=VALUE]... [--label TEXT] BUILD_DIR SUITE...
#
# SUITE is a Criterion suite, or NAME=FILTER: the tests FILTER selects
# (`@(kvmlab/a|e2e/b)`), in one session named NAME. --kernel: the lab's guest
# kernel (tools/kvmlab/run --kernel: 5.10, 6.1, 6.12 or a package; default
# its own, 6.1); --env: set in the lab (VCPUSTAT_NO_MARKS=1: the hot page's
# programs where marks mode would be chosen); --label: how the summary names
# this run (the kernel and mode, in tests/run.sh's matrix).
#
# tests/run.sh passes the suites that need a KVM whose kvm_entry/kvm_exit
# fire, and those that need /dev/kvm at all when this machine has none. Prints
# each failure, each skip reason with its count, and ends, like tally.sh,
# with `N passed, N failed, N skipped`; exits non-zero on a failure.
#
# When the lab cannot run here -- QEMU, busybox-static or cpio missing, the
# guest kernel package not fetchable, or QEMU unable to start -- that is one
# skip with the reason, never a failure. Once QEMU runs, anything that goes
# wrong (the guest does not boot, kvm_amd does not load, a test fails or the
# session times out) is a failure: the lab is this project's own code. The
# one exception is a guest kernel that stalls, freezes or panics under
# QEMU's emulation, or an emulated CPU that leaves microvm's guest program
# (microvm says "the guest CPU left its program"; docs/kvmlab.md, "Known
# problems"): a panic's console is kept and named, and
# that suite runs again in a fresh lab, up to KVMLAB_ATTEMPTS sessions in all
# (default 3), and these are counted and said. A test that fails runs once
# more, alone, in a fresh lab (KVMLAB_RERUN_FAILED=0 turns this off; that
# session too runs again after a stall, a freeze, a panic or a CPU astray): if
# it passes then, it is flaky under emulation -- said with its first failure's
# assertion and counted as passed; if it fails again, it failed.
set -uo pipefail
cd "$(dirname "$0")/.."
usage="usage: tests/kvmlab.sh [--kernel K] [--env VAR=VALUE]... [--label TEXT] BUILD_DIR SUITE..."
kernel_opt=() envs=() label=
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel_opt=(--kernel "${2:?$usage}"); shift 2 ;;
	--env) envs+=("${2:?$usage}"); shift 2 ;;
	--label) label=${2:?$usage}; shift 2 ;;
	-*) echo "$usage" >&2; exit 2 ;;
	*) break ;;
	esac
done
dir=${1:?$usage}
shift
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
lab=tools/kvmlab/run
# the lab on the kernel asked for, with the environment asked for (the lab passes it into the guest)
lab_cmd=(env ${envs[@]+"${envs[@]}"} "$lab" ${kernel_opt[@]+"${kernel_opt[@]}"})
at=${label:+ ($label)}
timeout_s=${KVMLAB_TEST_TIMEOUT:-900}
attempts=${KVMLAB_ATTEMPTS:-3}

skip() {
	echo "skipped 1: the KVM lab${at} cannot run here: $*"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
}

if ! why=$("${lab_cmd[@]}" --prepare 2>&1); then
	skip "$(echo "$why" | tail -1 | sed 's/^kvmlab: //; s/^the lab cannot run here: //')"
fi
scratch=$(mktemp -d /tmp/vcpustat-kvmlab-suite.XXXXXX)
keep=0
trap '[ "$keep" = 1 ] || rm -rf "$scratch"' EXIT
lines=$scratch/lines # FAILED and skipped lines of every suite
: > "$lines"
flaky_lines=$scratch/flaky # tests that failed, then passed in a fresh lab
: > "$flaky_lines"
rerun=${KVMLAB_RERUN_FAILED:-1}
passed=0 failed=0 skipped=0 stalls=0 astray=0 panics=0 flaky=0

# run_suite SUITE N [FILTER]: one lab session (the Nth for SUITE), of the
# tests FILTER selects (default: all of SUITE, or the filter NAME=FILTER
# gave it: groups); sets rc, out
declare -A groups=()
run_suite() {
	local suite=$1 n=$2 filter=${3:-} t0
	[ -n "$filter" ] || filter=${groups[$suite]:-$suite/*}
	out=$scratch/$suite.$n.out
	t0=$(date +%s)
	mkdir -p "$scratch/$suite.$n"
	# QEMU's TCG threads (docs/kvmlab.md, "Known problems"): one for all guest
	# CPUs, but one each for the suite kvmlab, whose figures (the guest's share
	# of a busy vCPU, exit latencies) are those of CPUs that run at once
	local threads=${KVMLAB_TCG_THREADS:-}
	[ -n "$threads" ] || case $filter in kvmlab/* | *'(kvmlab/'* | *'|kvmlab/'*) threads=multi ;; *) threads=single ;; esac
	# the suite kvmlab_numa needs a guest of two NUMA nodes
	local topology=()
	[ "$suite" = kvmlab_numa ] && topology=(--numa 2)
	echo "kvmlab: booting the KVM lab${at} for the suite $suite (session $n, TCG threads: $threads${topology:+, ${topology[*]}})" >&2
	"${lab_cmd[@]}" ${topology[@]+"${topology[@]}"} --tcg-threads "$threads" --scratch "$scratch/$suite.$n" --timeout "$timeout_s" -- \
		tests/tally.sh "$dir/bin/vcpustat-tests" --jobs 1 --verbose --filter "$filter" \
		> "$out" 2> "$scratch/$suite.$n.err"
	rc=$?
	# Criterion's --verbose: each test's start ([RUN ]) and end, so a session
	# that stops names the test it was in; less the suites --filter left out
	grep -avE ': Test is disabled$|^\[====\] Running [0-9]+ tests? from ' "$scratch/$suite.$n.err" >&2
	echo "kvmlab: the session took $(($(date +%s) - t0)) s" >&2
}

# lab_failed SUITE N WHY: a failure of the lab itself, its files kept
lab_failed() {
	keep=1
	echo "FAILED: $3 (console: $scratch/$1.$2/.kvmlab/console.log)" | tee -a "$lines"
	failed=$((failed + 1))
}

# run_attempts SUITE [FILTER]: lab sessions of the tests FILTER selects (the
# next ones of SUITE, counted in n) until one ends without a known problem of
# the lab -- a guest that stalls, freezes or panics, an emulated CPU astray --
# up to KVMLAB_ATTEMPTS sessions; sets rc, out, n
run_attempts() {
	local suite=$1 filter=${2:-} i
	for i in $(seq 1 "$attempts"); do
		n=$((n + 1))
		run_suite "$suite" "$n" "$filter"
		# docs/kvmlab.md, "Known problems": the guest kernel stalled or froze
		# under emulation, or an emulated CPU left microvm's program
		if [ "$rc" = 126 ]; then
			stalls=$((stalls + 1))
			echo "kvmlab: $(grep -a -m1 -E 'stalled|froze' "$scratch/$suite.$n.err" | sed 's/^kvmlab: //')" >&2
		elif [ "$rc" = 1 ] && grep -aq 'the guest CPU left its program' "$scratch/$suite.$n.err"; then
			astray=$((astray + 1))
			echo "kvmlab: an emulated CPU left microvm's guest program in the suite $suite" >&2
		elif [ "$rc" = 125 ] && grep -aq 'Kernel panic - not syncing' "$scratch/$suite.$n/.kvmlab/console.log" 2> /dev/null; then
			panics=$((panics + 1))
			echo "kvmlab: the guest kernel panicked in the suite $suite: $(grep -a -m1 'Kernel panic - not syncing' \
				"$scratch/$suite.$n/.kvmlab/console.log" | sed 's/^\[ *[0-9.]*\] //') (console kept: $scratch/$suite.$n/.kvmlab/console.log)" >&2
			keep=1
		else
			return
		fi
		[ "$i" -lt "$attempts" ] && echo "kvmlab: running ${filter:-the suite $suite} again in a fresh lab" >&2
	done
}

for arg in "$@"; do
	suite=${arg%%=*}
	[ "$suite" = "$arg" ] || groups[$suite]=${arg#*=}
	n=0
	run_attempts "$suite"
	case $rc in
	0 | 1)
		# tally.sh's own verdict: its lines, and its counts last
		if ! tail -1 "$out" | grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'; then
			lab_failed "$suite" "$n" "the KVM lab session of $suite ended without the suite's summary (exit status $rc)"
			continue
		fi
		read -r p f s < <(tail -1 "$out" | awk '{ print $1, $3, $5 }')
		# the tests that failed, as suite/name (not a run that stopped early: that is not rerun)
		names=$(sed -nE 's/^FAILED: ([a-z0-9_]+)::([a-z0-9_]+) .*/\1\/\2/p' "$out")
		if [ "$f" -gt 0 ] && [ "$rerun" = 1 ] && [ "$(grep -c . <<< "$names")" = "$f" ]; then
			# timing under an emulated CPU (docs/kvmlab.md, "Known problems"): each
			# test that failed runs once more in a fresh lab; one that passes then is
			# said, with its first failure, and counted as flaky, not failed
			first=$out
			run_attempts "$suite" "@($(paste -sd'|' <<< "$names"))"
			if [ "$rc" -le 1 ] && tail -1 "$out" | grep -qE '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'; then
				read -r p2 f2 s2 < <(tail -1 "$out" | awk '{ print $1, $3, $5 }')
				while read -r t; do
					t=${t/\//::}
					grep -qE "^FAILED: $t " "$out" && continue
					echo "kvmlab: flaky${at}: $(grep -E "^FAILED: $t " "$first" | sed 's/^FAILED: //') -- passed when run again in a fresh lab" | tee -a "$flaky_lines" >&2
					flaky=$((flaky + 1))
				done <<< "$names"
				grep -E '^FAILED:' "$out" >> "$lines"
				p=$((p + p2)) f=$f2 s=$((s + s2))
			else
				grep -E '^FAILED:' "$first" >> "$lines"
				echo "kvmlab: the second session of $suite (the failed tests again) ended with exit status $rc" >&2
			fi
			grep -E '^skipped [0-9]+:' "$first" >> "$lines"
		else
			grep -E '^(FAILED|skipped [0-9]+):' "$out" >> "$lines"
		fi
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
		;;
	125)
		if [ ! -s "$scratch/$suite.$n/.kvmlab/booted" ] && [ -s "$scratch/$suite.$n/.kvmlab/qemu.log" ]; then
			skip "QEMU could not start: $(head -1 "$scratch/$suite.$n/.kvmlab/qemu.log")"
		fi
		lab_failed "$suite" "$n" "the KVM lab failed for $suite (exit status 125, its message above)"
		;;
	126)
		lab_failed "$suite" "$n" "the KVM lab's guest kernel stalled or froze in all $attempts sessions of $suite"
		;;
	124)
		lab_failed "$suite" "$n" "the KVM lab session of $suite timed out after $timeout_s s (KVMLAB_TEST_TIMEOUT)"
		;;
	*)
		lab_failed "$suite" "$n" "the KVM lab session of $suite ended with exit status $rc"
		;;
	esac
done

[ "$stalls" -gt 0 ] && echo "kvmlab: the guest stalled or froze in $stalls session(s); those suites ran again in a fresh lab"
[ "$astray" -gt 0 ] && echo "kvmlab: an emulated CPU left microvm's program in $astray session(s); those suites ran again in a fresh lab"
[ "$panics" -gt 0 ] && echo "kvmlab: the guest kernel panicked in $panics session(s); those suites ran again in a fresh lab"
[ "$flaky" -gt 0 ] && { echo "kvmlab: $flaky test(s) failed once, then passed in a fresh lab:"; cat "$flaky_lines"; }
# the failures, and each skip reason once with its count over the suites, the label after them
grep '^FAILED' "$lines" | sed "s|\$|${at}|"
awk -v at="$at" '/^skipped [0-9]+: / { n = $2 + 0; sub(/^skipped [0-9]+: /, ""); if (!($0 in c)) o[k++] = $0; c[$0] += n }
	END { for (i = 0; i < k; i++) printf "skipped %d: %s%s\n", c[o[i]], o[i], at }' "$lines"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
