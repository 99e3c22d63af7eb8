#!/usr/bin/env bash
# The man pages (docs/man/*.scd, rendered into BUILD/man by CMake):
#  - each command's page lists exactly the options its --help lists, so the
#    two cannot drift (vcpustat-CMD.8 against `vcpustat CMD --help`,
#    microvm.1 against `microvm --help`, vcpustat.8's COMMANDS against the
#    command list of `vcpustat --help`);
#  - `man --warnings -l` renders each page with no warning.
#
#   tests/pkg/man.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/pkg/lib.sh
dir=${1:?usage: tests/pkg/man.sh BUILD_DIR}
bin=$dir/bin

# The options a page's OPTIONS section lists: its `*-x*, *--xx* _ARG_` lines.
page_options() {
	awk '/^# / { in_opts = ($0 == "# OPTIONS") } in_opts && /^\*-/' "$1" |
		grep -oE '\*-[^*]+\*' | tr -d '*' | sort -u
}
compare() { # NAME PAGE_OPTIONS_FILE HELP_OPTIONS_FILE
	if [ ! -s "$3" ]; then
		fail "$1: its --help lists no option"
	elif diff -q "$2" "$3" > /dev/null; then
		pass "$1: the page lists the $(wc -l < "$3") options of --help"
	else
		fail "$1: the page and --help differ (< page only, > --help only): $(diff "$2" "$3" | grep '^[<>]' | tr '\n' ' ')"
	fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for src in docs/man/*.scd; do
	page=$(basename "$src" .scd) # vcpustat-record.8
	name=${page%.*}
	case $name in
	vcpustat)
		"$bin/vcpustat" --help | awk '/^Commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }' | sort > "$tmp/help"
		awk '/^# / { c = ($0 == "# COMMANDS") } c && /^\*[a-z]+\*$/' "$src" | tr -d '*' | sort > "$tmp/page"
		compare "vcpustat.8 commands" "$tmp/page" "$tmp/help"
		continue
		;;
	vcpustat-*) help_options "$bin/vcpustat" "${name#vcpustat-}" > "$tmp/help" ;;
	*) help_options "$bin/$name" > "$tmp/help" ;;
	esac
	page_options "$src" > "$tmp/page"
	compare "$page" "$tmp/page" "$tmp/help"
done
# Every command has its page.
for cmd in $("$bin/vcpustat" --help | awk '/^Commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }'); do
	[ -f "docs/man/vcpustat-$cmd.8.scd" ] || fail "vcpustat $cmd has no man page (docs/man/vcpustat-$cmd.8.scd)"
done

if ! command -v man > /dev/null; then
	skip "man is not installed (Debian package man-db)"
elif [ ! -d "$dir/man" ]; then
	skip "no rendered man pages in $dir/man (scdoc missing at configure time: Debian package scdoc)"
else
	for page in "$dir"/man/man*/*; do
		# groff's warnings (and man's own) go to stderr
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 > "$tmp/out")
		if [ -n "$w" ]; then
			fail "$(basename "$page"): man --warnings: $(echo "$w" | head -3 | tr '\n' ' ')"
		elif ! grep -q '^NAME' "$tmp/out"; then
			fail "$(basename "$page"): rendered without a NAME section"
		else
			pass "$(basename "$page") renders with no warning"
		fi
	done
fi
summary
