#!/usr/bin/env bash
# Run one Criterion test binary and account for every test honestly:
#
#   tests/tally.sh BINARY [criterion options...]
#
# Criterion's TAP report says, per test, `ok`, `not ok` (failed, crashed or
# timed out) or `ok ... # SKIP <reason>`. This prints each failure, then each
# skip reason once with its count, then one last line:
#
#   N passed, N failed, N skipped
#
# and exits 0 when nothing failed or crashed — skips never fail the run. The
# binary's own exit status counts too: non-zero with no failing test in the
# report (Criterion fails a run that logged a warning, or died before the end)
# is one more failure, named. Tests that a --filter left out appear in TAP as
# "# SKIP test was skipped" and are not counted at all (every skip in this
# suite gives a reason: tests/helpers.h, SKIP_UNLESS).
set -uo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 BINARY [criterion options...]" >&2
	exit 2
fi
bin=$1
shift
tap=$(mktemp)
trap 'rm -f "$tap"' EXIT

"$bin" --tap="$tap" "$@"
rc=$?

awk -v rc="$rc" -v bin="$(basename "$bin")" '
/^1\.\.[0-9]+$/ { planned = substr($0, 4) + 0 }
/^(ok|not ok) / { flush_failure() }
/^ok / && / # SKIP / {
	reason = $0
	sub(/.* # SKIP /, "", reason)
	if (reason == "test was skipped") {
		unselected++ # left out by --filter
		next
	}
	if (!(reason in why))
		order[nwhy++] = reason
	why[reason]++
	skipped++
	next
}
/^ok / { passed++; next }
# a failure is printed with its assertions (`- FILE:LINE: |+` then the message,
# indented) on the same line, so that an excerpt of a log that holds only the
# FAILED lines still says what went wrong
function flush_failure() {
	if (pending != "")
		print "FAILED: " pending (detail != "" ? " --" detail : "")
	pending = detail = ""
}
/^not ok / {
	flush_failure()
	failed++
	pending = $0
	sub(/^not ok - /, "", pending)
	next
}
pending != "" && /^  - .*: [|]/ { where = $0; sub(/^  - /, "", where); sub(/: [|].*$/, "", where); detail = detail " " where ":"; next }
pending != "" && /^      / { msg = $0; sub(/^ +/, "", msg); detail = detail " " msg; next }
pending != "" && /^  \.\.\.$/ { flush_failure(); next }
END {
	flush_failure()
	for (i = 0; i < nwhy; i++)
		printf "skipped %d: %s\n", why[order[i]], order[i]
	seen = passed + failed + skipped + unselected
	if (planned && seen < planned) {
		printf "FAILED: %s reported %d of its %d tests: the run stopped early\n", bin, seen, planned
		failed++
	}
	if (rc != 0 && failed == 0) {
		printf "FAILED: %s exited with status %d and no failing test in its report", bin, rc
		printf " (a warning logged, or it died before the end)\n"
		failed = 1
	}
	printf "%d passed, %d failed, %d skipped\n", passed, failed, skipped
	exit failed != 0
}' "$tap"
