#!/usr/bin/env bash
# Scrapes while wrong passwords storm in (issue 40 item 2): the real `vcpustat serve` with basic
# auth (alice, a bcrypt hash of cost COST, default 10) and 1,000 simulated vCPUs (50 VMs x 20,
# injected by build/bin/inject-vms), scraped by wrk on one connection with alice's password for
# SECONDS seconds: first alone, then while wrk sends wrong passwords on CONNECTIONS connections
# from 10 loopback addresses (build/bin/spread-src.so), the rate of bench/scrape-storm.sh.
# Reported for each: the scrapes' requests/s, p50 and p99, their errors; the storm's requests and
# how they were answered (401: a bcrypt ran or the password was refused outright, 429: limited
# without a bcrypt, 503: the queue full); serve's CPU time. With BEFORE=DIR, the same runs again
# with DIR/bin/vcpustat (the build of another commit: main before the change), in the same run.
# Exits 1 if the scrapes alone or under the storm have errors (a timeout is one: wrk's is 2 s).
# usage: [BEFORE=DIR] bench/auth-storm.sh [BUILD_DIR] [SECONDS] [CONNECTIONS] [COST]   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
secs=${2:-30}
conns=${3:-100}
cost=${4:-10}
[ "$(id -u)" = 0 ] || { echo "auth-storm: needs root (BPF)" >&2; exit 1; }
[ -x "$build/bin/inject-vms" ] && [ -f "$build/bin/spread-src.so" ] || ./build.sh build
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
command -v curl >/dev/null || apt-get install -y curl >/dev/null

tmp=$(mktemp -d)
serve=
trap '[ -n "$serve" ] && kill $serve 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
hash=$(python3 -W ignore -c "import crypt; print(crypt.crypt('alice-pw', crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << $cost)))")
printf 'basic_auth_users:\n  alice: %s\n' "$hash" >"$tmp/web.yml"
good="Authorization: Basic $(printf alice:alice-pw | base64)"
bad="Authorization: Basic $(printf alice:wrong | base64)"
cat >"$tmp/statuses.lua" <<'EOF'
-- how the storm's requests were answered, summed over wrk's threads
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) n401, n429, n503, other = 0, 0, 0, 0 end
function response(status, headers, body)
	if status == 401 then n401 = n401 + 1
	elseif status == 429 then n429 = n429 + 1
	elseif status == 503 then n503 = n503 + 1
	else other = other + 1 end
end
function done(summary, latency, requests)
	local a, b, c, d = 0, 0, 0, 0
	for _, t in ipairs(threads) do
		a, b, c, d = a + t:get("n401"), b + t:get("n429"), c + t:get("n503"), d + t:get("other")
	end
	io.write(string.format("statuses 401 %d 429 %d 503 %d other %d\n", a, b, c, d))
end
EOF
spread=$(realpath "$build/bin/spread-src.so")
fail=0

cpu() { awk '{print $14 + $15}' "/proc/$serve/stat"; } # utime + stime, in ticks

# scrapes NAME: wrk on one connection with alice's password; the figures
scrapes() {
	local out
	out=$(wrk -t 1 -c 1 -d "${secs}s" --timeout 2s --latency -H "$good" "$url")
	printf '%-44s %8s req/s  p50 %8s  p99 %8s  errors %s  non-2xx %s\n' "$1" \
		"$(awk '/^Requests\/sec/ {print $2}' <<<"$out")" "$(awk '$1 == "50%" {print $2}' <<<"$out")" \
		"$(awk '$1 == "99%" {print $2}' <<<"$out")" \
		"$(awk '/Socket errors/ {gsub(",", ""); print $4 + $6 + $8 + $10}' <<<"$out" | grep . || echo 0)" \
		"$(awk '/Non-2xx/ {print $NF}' <<<"$out" | grep . || echo 0)"
	if grep -q 'Socket errors\|Non-2xx' <<<"$out"; then echo "FAIL: $1: scrapes failed"; fail=1; fi
}

# one BIN: serve with the web config, the vCPUs injected, scrapes alone and under the storm
one() {
	local bin=$1 label=$2 port t0 t1 storm
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	url=http://127.0.0.1:$port/metrics
	"$bin" serve --listen "127.0.0.1:$port" --web.config.file "$tmp/web.yml" 2>"$tmp/serve.err" &
	serve=$!
	for _ in $(seq 100); do curl -sf -o /dev/null -H "$good" "$url" && break; sleep 0.1; done
	"$build/bin/inject-vms" fill -p "$serve" -v 50 -c 20
	sleep 0.3
	curl -sf -o /dev/null -H "$good" "$url"
	echo "# $label: $bin; $(curl -sf -H "$good" "$url" | wc -c) bytes per scrape"
	scrapes "$label: scrapes alone"
	sleep 6
	t0=$(cpu)
	LD_PRELOAD=$spread wrk -t 2 -c "$conns" -d "$((secs + 4))s" --timeout 2s -s "$tmp/statuses.lua" -H "$bad" "$url" \
		>"$tmp/storm.out" 2>&1 &
	storm=$!
	sleep 2 # the storm under way (and past its first bcrypts)
	scrapes "$label: scrapes, $conns conns of wrong passwords"
	wait $storm || true
	t1=$(cpu)
	printf '%-44s %8s req/s  %s  serve CPU %.1f s\n' "  the storm ($conns conns, 10 addresses)" \
		"$(awk '/^Requests\/sec/ {print $2}' "$tmp/storm.out")" "$(grep '^statuses' "$tmp/storm.out" || echo '?')" \
		"$(echo "($t1 - $t0) / $(getconf CLK_TCK)" | bc -l)"
	kill -TERM $serve
	wait $serve || true
	serve=
	sleep 6 # the storm's connections gone
}

echo "# auth-storm: $(date -u '+%F %H:%M UTC'), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
	"kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); bcrypt cost $cost, $secs s per run"
one "$build/bin/vcpustat" "this build"
[ -n "${BEFORE:-}" ] && one "$BEFORE/bin/vcpustat" "before ($BEFORE)"
[ "$fail" = 0 ] && echo "auth-storm: all checks passed"
exit "$fail"
