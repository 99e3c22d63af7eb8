# Shared by the packaging tests (tests/pkg/*.sh): counting in tests/tally.sh's
# way, and reading the options a program's --help lists.
#
# Each test script calls pass/fail/skip once per check and ends with `summary`,
# which prints `N passed, N failed, N skipped` (after the skip reasons) and
# returns non-zero on a failure.

pkg_passed=0 pkg_failed=0 pkg_skipped=0
pkg_skips=$(mktemp)
pass() { echo "ok: $*"; pkg_passed=$((pkg_passed + 1)); }
fail() { echo "FAILED: $*"; pkg_failed=$((pkg_failed + 1)); }
skip() { echo "$*" >> "$pkg_skips"; pkg_skipped=$((pkg_skipped + 1)); }
summary() {
	sort "$pkg_skips" | uniq -c | sed -E 's/^ *([0-9]+) /skipped \1: /'
	rm -f "$pkg_skips"
	echo "$pkg_passed passed, $pkg_failed failed, $pkg_skipped skipped"
	[ "$pkg_failed" -eq 0 ]
}

# help_options PROGRAM [ARGS...]: the options PROGRAM ARGS --help lists, one a
# line, sorted. An option line is indented and starts with '-'; it names one or
# more options separated by ", ", each with an optional argument
# ("-o, --output FILE", "--from T, --to T", "-name NAME", "--isa vmx|svm").
help_options() {
	"$@" --help 2>&1 | options_of_help
}
options_of_help() {
	awk '/^ +-/ && match($0, /^ +/) && RLENGTH <= 8 {
		n = split($0, w, " ")
		want_opt = 1
		for (i = 1; i <= n; i++) {
			t = w[i]
			if (want_opt) {
				if (t !~ /^-[-A-Za-z]/)
					break
				more = sub(/,$/, "", t)
				print t
				want_opt = more
				if (!more)
					want_arg = 1
				continue
			}
			# an argument: FILE, NAME|PID, KEY=VALUE, vmx|svm, REC.sht
			if (want_arg && (t ~ /^[A-Z]/ || t ~ /^[a-z]+\|/)) {
				want_arg = 0
				if (sub(/,$/, "", t))
					want_opt = 1
				else
					break
				continue
			}
			break
		}
	}' | sort -u
}
