#!/usr/bin/env bash
# `cmake --install` (docs/install.md): into a DESTDIR with the prefix /usr, the
# tree has every file where GNUInstallDirs and bash-completion put it, nothing
# is written outside DESTDIR, and the installed vcpustat runs: --version, and
# --demo finds the recording installed beside it (../share/vcpustat/demo.sht).
# A second install with --prefix /opt/vcpustat lands under that prefix, its
# unit naming the binary there.
#
#   tests/pkg/install.sh BUILD_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/pkg/lib.sh
dir=${1:?usage: tests/pkg/install.sh BUILD_DIR}
version=$(sed -nE 's/^project\(vcpustat VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dest=$tmp/root
if ! DESTDIR=$dest cmake --install "$dir" --prefix /usr > "$tmp/install.log" 2>&1; then
	fail "cmake --install failed: $(tail -3 "$tmp/install.log" | tr '\n' ' ')"
	summary
	exit
fi
pass "cmake --install into DESTDIR, prefix /usr ($(du -sk "$dest" | cut -f1) KiB, $(find "$dest" -type f | wc -l) files)"

# cmake's manifest names each installed file by its path under the prefix.
outside=$(while IFS= read -r f; do [ -e "$dest${f#"$dest"}" ] || echo "$f"; done < "$dir/install_manifest.txt")
if [ -z "$outside" ] && [ "$(grep -c "" "$dir/install_manifest.txt")" -eq "$(find "$dest" -type f | wc -l)" ]; then
	pass "every one of the $(grep -c "" "$dir/install_manifest.txt") installed files is in DESTDIR"
else
	fail "installed files not in DESTDIR: $(echo "$outside" | head -3 | tr '\n' ' ')"
fi

want=(
	usr/sbin/vcpustat usr/bin/microvm usr/libexec/vcpustat/vcpustat-sync-agent
	usr/share/vcpustat/demo.sht
	usr/share/bash-completion/completions/vcpustat usr/share/bash-completion/completions/microvm
	usr/lib/systemd/system/vcpustat-exporter.service
	usr/share/doc/vcpustat/README.md usr/share/doc/vcpustat/docs/export.md
	usr/share/doc/vcpustat/examples/prometheus/vcpustat.rules.yml
	usr/share/doc/vcpustat/examples/prometheus/vcpustat.rules.test.yml
	usr/share/doc/vcpustat/examples/prometheus/vcpustat-dashboard.json
)
for src in docs/man/*.scd; do
	page=$(basename "$src" .scd)
	want+=("usr/share/man/man${page##*.}/$page")
done
missing=()
for f in "${want[@]}"; do
	[ -f "$dest/$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -eq 0 ]; then
	pass "the tree has all ${#want[@]} expected files (binaries, man pages, completions, unit, demo, docs)"
elif ! command -v scdoc > /dev/null && ! printf '%s\n' "${missing[@]}" | grep -qv /man/; then
	skip "scdoc is not installed (Debian package scdoc): no man pages to install"
else
	fail "missing from the installed tree: ${missing[*]}"
fi
for f in usr/sbin/vcpustat usr/bin/microvm; do
	[ -x "$dest/$f" ] || fail "$f is not executable"
done

if grep -qx "ExecStart=/usr/sbin/vcpustat serve --listen 127.0.0.1:9477 --user nobody" \
	"$dest/usr/lib/systemd/system/vcpustat-exporter.service" 2> /dev/null; then
	pass "the unit starts /usr/sbin/vcpustat"
else
	fail "the unit's ExecStart: $(grep ExecStart "$dest/usr/lib/systemd/system/vcpustat-exporter.service" 2>&1)"
fi

out=$("$dest/usr/sbin/vcpustat" --version 2>&1)
[ "$out" = "vcpustat $version" ] && pass "installed vcpustat --version: $out" ||
	fail "installed vcpustat --version printed '$out', expected 'vcpustat $version'"

# --demo where the live demo cannot run: the installed recording. (Run from /:
# nothing may be found through the current directory.)
out=$(cd / && VCPUSTAT_DEMO_NO_KVM=1 timeout 60 "$dest/usr/sbin/vcpustat" --demo -b -n 1 2>&1)
rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "playing the bundled recording $dest/usr/share/vcpustat/demo.sht" &&
	echo "$out" | grep -q '^VM '; then
	pass "installed vcpustat --demo -b -n 1 plays $dest/usr/share/vcpustat/demo.sht"
else
	fail "installed vcpustat --demo -b -n 1 (exit $rc): $(echo "$out" | head -3 | tr '\n' ' ')"
fi

# The unit, as installed, through systemd's own checker: with the tree as
# --root (plus this machine's system units, for the targets it names), every
# warning -- an unknown key, a bad value, a missing binary -- fails.
if ! command -v systemd-analyze > /dev/null; then
	skip "systemd-analyze is not installed (Debian package systemd)"
else
	cp -a /usr/lib/systemd/system/. "$dest/usr/lib/systemd/system/" 2> /dev/null
	cp "$dir/vcpustat-exporter.service" "$dest/usr/lib/systemd/system/vcpustat-exporter.service"
	out=$(systemd-analyze verify --root="$dest" /usr/lib/systemd/system/vcpustat-exporter.service 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		pass "systemd-analyze verify: the unit has no warning"
	else
		fail "systemd-analyze verify (exit $rc): $(echo "$out" | head -5 | tr '\n' ' ')"
	fi
	score=$(systemd-analyze security --offline=true --root="$dest" vcpustat-exporter.service 2>/dev/null |
		grep -oE 'Overall exposure level for vcpustat-exporter.service: .*')
	[ -n "$score" ] && echo "systemd-analyze security: $score"
fi

# The example Prometheus rules, through Prometheus's own checker, and their unit
# tests installed beside them (which name the rules file relative to themselves).
rules=$dest/usr/share/doc/vcpustat/examples/prometheus/vcpustat.rules.yml
if ! command -v promtool > /dev/null; then
	skip "promtool is not installed (Debian package prometheus)"
elif out=$(promtool check rules "$rules" 2>&1); then
	pass "promtool check rules: the installed example rules ($(echo "$out" | grep -oE '[0-9]+ rules found'))"
	if out=$(cd / && promtool test rules "${rules%.yml}.test.yml" 2>&1); then
		pass "promtool test rules: the installed rules pass their installed unit tests"
	else
		fail "promtool test rules ${rules%.yml}.test.yml: $(echo "$out" | head -5 | tr '\n' ' ')"
	fi
else
	fail "promtool check rules $rules: $(echo "$out" | tail -3 | tr '\n' ' ')"
fi

# The unit's CapabilityBoundingSet is enough: the installed vcpustat, started
# as the unit starts it but on another port, with exactly that bounding set and
# no new privileges, loads, drops to nobody keeping CAP_BPF alone, and serves.
unit=$dest/usr/lib/systemd/system/vcpustat-exporter.service
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv > /dev/null || ! command -v curl > /dev/null; then
	skip "the unit's capability set is tried as root with setpriv and curl"
elif [ ! -r /sys/kernel/btf/vmlinux ]; then
	skip "the unit's capability set: no kernel BTF here, vcpustat serve cannot load"
else
	port=$((20000 + RANDOM % 20000))
	setpriv --bounding-set=-all,"$caps" --no-new-privs \
		"$dest/usr/sbin/vcpustat" serve --listen 127.0.0.1:$port --user nobody > "$tmp/serve.log" 2>&1 &
	pid=$!
	code=000
	for _ in $(seq 60); do
		code=$(curl -s -o "$tmp/metrics" -w '%{http_code}' "http://127.0.0.1:$port/metrics")
		[ "$code" = 200 ] && break
		kill -0 $pid 2> /dev/null || break
		sleep 0.5
	done
	eff=$(sed -n 's/^CapEff:\t//p' /proc/$pid/status 2> /dev/null)
	kill $pid 2> /dev/null
	wait $pid 2> /dev/null
	if [ "$code" = 200 ] && grep -q '^vcpustat_' "$tmp/metrics" && [ "$eff" = 0000008000000000 ]; then
		pass "with only the unit's bounding set ($caps) serve loads, drops to CAP_BPF and serves /metrics"
	else
		fail "with the unit's bounding set: HTTP $code, CapEff ${eff:-?}: $(head -3 "$tmp/serve.log" | tr '\n' ' ')"
	fi
fi

# Another prefix.
dest2=$tmp/opt
if DESTDIR=$dest2 cmake --install "$dir" --prefix /opt/vcpustat > "$tmp/install2.log" 2>&1 &&
	[ -x "$dest2/opt/vcpustat/sbin/vcpustat" ] && [ -f "$dest2/opt/vcpustat/share/vcpustat/demo.sht" ] &&
	grep -q "^ExecStart=/opt/vcpustat/sbin/vcpustat " "$dest2/opt/vcpustat/lib/systemd/system/vcpustat-exporter.service" &&
	[ "$(find "$dest2" -mindepth 1 -maxdepth 1)" = "$dest2/opt" ]; then
	pass "cmake --install --prefix /opt/vcpustat: everything under /opt/vcpustat, the unit names its binary"
else
	fail "cmake --install --prefix /opt/vcpustat: $(tail -3 "$tmp/install2.log" | tr '\n' ' ') $(find "$dest2" -maxdepth 3 | head -5 | tr '\n' ' ')"
fi
summary
