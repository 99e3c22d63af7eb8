#!/usr/bin/env bash
# The tree reads as the data flow (docs/architecture.md), and this keeps it so:
#  - no include points up: a file of user/D/ includes headers of its own
#    folder and of folders below D only, by the ranks below (folders of one
#    rank do not include each other);
#  - every header of user/ compiles on its own (it includes what it uses), so
#    a file can include the one capability it needs (model/summary.h, not the
#    whole model/model.h);
#  - and none includes the whole model/model.h: not the code, nor the tests
#    and benchmarks.
#
#   tests/pkg/layers.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/pkg/lib.sh
dir=${1:?usage: tests/pkg/layers.sh BUILD_DIR}

# Bottom to top. A new folder gets a rank here, or this test fails on it.
declare -A rank=(
	[util]=0
	[sht]=1 [sync]=1
	[base]=2
	[record]=3 [model]=3
	[import]=4 [export]=4
	[serve]=5
	[live]=6
	[cli]=7
)

for d in user/*/; do
	d=${d#user/} d=${d%/}
	[ -n "${rank[$d]:-}" ] || fail "user/$d/ has no rank in tests/pkg/layers.sh"
done

up=$(mktemp)
trap 'rm -f "$up"' EXIT
edges=0
for f in user/*/*.[ch]; do
	d=${f#user/} d=${d%%/*}
	[ -n "${rank[$d]:-}" ] || continue
	while IFS=: read -r line inc; do
		t=${inc%%/*}
		[ "$t" = "$d" ] && continue
		edges=$((edges + 1))
		if [ -z "${rank[$t]:-}" ]; then
			echo "$f:$line includes $inc: user/$t/ has no rank" >> "$up"
		elif [ "${rank[$t]}" -ge "${rank[$d]}" ]; then
			echo "$f:$line includes $inc (user/$t/ is not below user/$d/)" >> "$up"
		fi
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/[a-z_]+\.h"' "$f" |
		sed -E 's|^([0-9]+):[^"]*"([^"]+)".*|\1:\2|')
done
if [ -s "$up" ]; then
	fail "includes that point up or out of the ranks: $(tr '\n' ';' < "$up")"
elif [ "$edges" -eq 0 ]; then
	fail "found no include between folders of user/: the pattern no longer matches"
else
	pass "the $edges includes between folders of user/ all point down"
fi

cc=${CC:-cc}
flags=(-fsyntax-only -Wall -Wextra -Werror -D_GNU_SOURCE -Iuser -Iinclude -I"$dir/bpf")
for i in trace-cmd tracefs traceevent; do
	[ -d /usr/include/$i ] && flags+=(-I/usr/include/$i)
done
n=0 bad=0
for h in user/*/*.h; do
	n=$((n + 1))
	if ! out=$(printf '#include "%s"\n' "${h#user/}" | "$cc" "${flags[@]}" -x c - 2>&1); then
		fail "$h does not compile on its own: $(echo "$out" | grep -m1 -E 'error')"
		bad=$((bad + 1))
	fi
done
[ "$bad" -eq 0 ] && pass "each of the $n headers of user/ compiles on its own ($cc)"

# model/model.h is the model's whole API in one place; code and tests include
# the capability they use (model/summary.h, model/report.h, ...), so that what
# a file depends on reads from its includes
whole=$(grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"model/model\.h"' user/*/*.[ch] tests/*.[ch] bench/*.c \
	tools/*/*.c 2> /dev/null | grep -v '^user/model/model\.h$' | tr '\n' ' ')
if [ -n "$whole" ]; then
	fail "these include the whole of model/model.h, not the capabilities they use: $whole"
else
	pass "no file includes the whole of model/model.h: each includes the capabilities it uses"
fi
summary
