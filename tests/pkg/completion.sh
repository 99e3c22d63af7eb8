#!/usr/bin/env bash
# Bash completion (tools/completion/*.bash, installed into bash-completion's
# completions/ folder):
#  - each command's option list equals the options its --help lists;
#  - driven in bash as readline would (COMP_WORDS, COMP_CWORD, COMP_LINE and
#    the completion function, through bash-completion's own helpers), it offers
#    the expected commands, options, values and files (.sht, .vcap, traces).
#
#   tests/pkg/completion.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/pkg/lib.sh
dir=${1:?usage: tests/pkg/completion.sh BUILD_DIR}
bin=$dir/bin
top=$PWD
bc=/usr/share/bash-completion/bash_completion

if [ ! -r "$bc" ]; then
	skip "bash-completion is not installed (Debian package bash-completion, tools/deps.sh)"
	summary
	exit
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The option lists against --help.
for cmd in $("$bin/vcpustat" --help | awk '/^Commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }'); do
	help_options "$bin/vcpustat" "$cmd" > "$tmp/help"
	bash -c '. "$1"; _vcpustat_options "$2"' _ tools/completion/vcpustat.bash "$cmd" | tr -s ' \t\n' '\n' |
		grep . | sort -u > "$tmp/list"
	if [ -s "$tmp/list" ] && diff -q "$tmp/list" "$tmp/help" > /dev/null; then
		pass "completion of vcpustat $cmd: the $(wc -l < "$tmp/help") options of --help"
	else
		fail "completion of vcpustat $cmd differs from --help (< completion only, > --help only): $(diff "$tmp/list" "$tmp/help" | grep '^[<>]' | tr '\n' ' ')"
	fi
done
help_options "$bin/microvm" > "$tmp/help"
sed -n '/compgen -W "--vms/,/-- "\$cur"/p' tools/completion/microvm.bash | sed 's/.*compgen -W "//; s/" -- .*//' |
	tr -s ' \t\n' '\n' | grep . | sort -u > "$tmp/list"
if diff -q "$tmp/list" "$tmp/help" > /dev/null; then
	pass "completion of microvm: the $(wc -l < "$tmp/help") options of --help"
else
	fail "completion of microvm differs from --help: $(diff "$tmp/list" "$tmp/help" | grep '^[<>]' | tr '\n' ' ')"
fi

# Driving it. A folder with one file of each kind.
mkdir -p "$tmp/files/sub"
touch "$tmp/files/day.sht" "$tmp/files/raw.vcap" "$tmp/files/host.txt" "$tmp/files/chart.svg"

# expect "WANTED CANDIDATES" "COMMAND LINE": the line up to the cursor, split
# into COMP_WORDS as readline does (at blanks, and '=' is a word of its own);
# the candidates sorted, space-separated.
expect() {
	local want=$1 line=$2 got
	got=$(cd "$tmp/files" && bash --norc --noprofile -c '
		. "$1"; . "$2"; . "$3"
		COMP_LINE=$4
		COMP_POINT=${#COMP_LINE}
		COMP_WORDS=()
		for w in $COMP_LINE; do
			while [[ $w == *=* ]]; do
				COMP_WORDS+=("${w%%=*}" "=")
				w=${w#*=}
			done
			COMP_WORDS+=("$w")
		done
		[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		func=$(complete -p "${COMP_WORDS[0]}" | sed -E "s/.*-F ([^ ]+).*/\1/")
		"$func" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ \
		"$bc" "$top/tools/completion/vcpustat.bash" "$top/tools/completion/microvm.bash" "$line" 2>&1)
	got=${got% }
	if [ "$got" = "$want" ]; then
		pass "completion of '$line': '$want'"
	else
		fail "completion of '$line': got '$got', expected '$want'"
	fi
}
expect "record replay report" "vcpustat re"
expect "check" "vcpustat ch"
expect "--capture" "vcpustat record --c"
expect "--delay --demo" "vcpustat --de"
expect "--verbose --version" "vcpustat --ver"
expect "--delay --demo" "vcpustat -b --de" # options only: top's
expect "--capture" "vcpustat record --cap"
expect "day.sht sub" "vcpustat report "
expect "day.sht" "vcpustat query d"
expect "raw.vcap sub" "vcpustat replay "
expect "day.sht sub" "vcpustat replay raw.vcap -o "
expect "raw.vcap sub" "vcpustat record -o day.sht --capture "
expect "day.sht sub" "vcpustat --file "
expect "day.sht sub" "vcpustat export --file "
expect "chart.svg sub" "vcpustat plot day.sht -o "
expect "chart.svg day.sht host.txt raw.vcap sub" "vcpustat import --host "
expect "host.txt" "vcpustat import --guest web=h"
expect "host.txt" "vcpustat sync --host h"
expect "openmetrics" "vcpustat export -f o"
expect "full" "vcpustat record --level f"
expect "svm" "vcpustat import --isa s"
expect "root" "vcpustat serve --user roo"
expect "" "vcpustat top -d "
expect "" "vcpustat --vm "
expect "--buckets" "vcpustat plot --bu"
expect "--vm --vm-name" "vcpustat import --v"
expect "--vcpus --vms" "microvm --v"
expect "host.txt" "microvm --json h"
summary
