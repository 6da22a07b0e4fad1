#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The API source against hostile or broken API servers (the project's own,
# tests/kubeapi/kubeapi.py, with its faults), the daemon alone in a network
# and mount namespace of its own (lib/daemon-ns.sh), no traffic:
#  - a flapping watch (every watch answered 200, then closed at once, no
#    event; then every watch ended normally at once): the backoff grows to
#    its 5 s cap, so each resource sees a bounded number of requests over a
#    15 s window (no more than 20; 10 a second before);
#  - 503 with Retry-After: the next request of that resource waits it out
#    (as for 429); 403: a clear line, then retried with backoff;
#  - an endless continue: every list page of Services leads to another
#    full page of new ones: --dump-state ends (exit 1), the list given up at
#    200,000 items, naming the server and the resource, memory bounded;
#    empty pages forever: given up at 1,000 pages;
#  - a continue token that expires in the middle of a list: listed again;
#  - misleading answers get messages that tell what is wrong: items as an
#    object, a 1 MiB header, JSON nested too deep (a list and a watch).
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init api-hostile
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
E2E_TMP=$TMP
e2e_skip() { _dn_skip "$*"; }
. "$(dirname "$0")/lib/kubeapi.sh"
kapi_need
# The server goes too, whatever the test's outcome.
trap 'kapi_stop KILL; _dn_cleanup' EXIT
# Inside our own namespace: nothing else listens there.
KAPI_ADDR=127.0.0.1:6443
KAPI_CTL=127.0.0.1:6444

say() { echo "api-hostile: $*" >&2; }
logged() { grep -q -- "$1" "$TMP/log"; }
health() { curl -sS --max-time 5 http://127.0.0.1:10256/healthz; }
health_is() { health | grep -qF "$1"; }
wait_for_context() { echo "; daemon log: $(tail -n 20 "$TMP/log")"; }

# requests RES KIND T0 T1: requests of resource RES ("list"/"watch"/"any")
# the server saw between monotonic times T0 and T1 (/stats "log")
requests() {
	kapi_stat "sum(1 for t, r, k, c in s['log'] if r == '$1' and ('$2' == 'any' or k == '$2') and $3 <= t < $4)"
}
# gaps RES T0 T1: seconds between the consecutive watch requests of RES
gaps() {
	kapi_stat "' '.join('%.2f' % (b - a) for a, b in zip(*(lambda t: (t, t[1:]))([t for t, r, k, c in s['log'] if r == '$1' and k == 'watch' and $2 <= t < $3])))"
}
gaps_grow() {
	[ "$(kapi_stat "all(g >= 0.95 * min(0.1 * 2 ** i, 2.5) for i, g in enumerate(b - a for a, b in zip(*(lambda t: (t, t[1:]))([t for t, r, k, c in s['log'] if r == '$1' and k == 'watch' and $2 <= t < $3]))))")" = True ]
}
server_now() {
	python3 -c 'import time; print(time.monotonic())'
}

daemon_start() {
	: >"$TMP/log"
	"$SVCNAT" --backend=direct --hostname node-a --node-ip 198.18.0.1 \
		--kubeconfig "$TMP/kapi/kc" --min-sync-period 200ms --sync-period 30s \
		--lock-wait 30000 -v </dev/null >>"$TMP/log" 2>&1 &
	DAEMON=$!
}

daemon_stop() {
	kill -TERM "$DAEMON" 2>/dev/null
	wait "$DAEMON" 2>/dev/null
	DAEMON=
}

kapi_certs "$TMP/kapi"
kapi_kubeconfig "$TMP/kapi/kc" token
cat >"$TMP/objects.json" <<'EOF'
{"kind": "List", "apiVersion": "v1", "items": [
 {"kind": "Service", "apiVersion": "v1", "metadata": {"namespace": "e2e", "name": "web"},
  "spec": {"type": "ClusterIP", "clusterIP": "198.19.0.10",
   "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]}},
 {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
  "metadata": {"namespace": "e2e", "name": "web-1",
   "labels": {"kubernetes.io/service-name": "web"}},
  "addressType": "IPv4", "ports": [{"name": "http", "protocol": "TCP", "port": 8080}],
  "endpoints": [{"addresses": ["198.18.65.10"], "conditions": {"ready": true}}]},
 {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "node-a"},
  "status": {"addresses": [{"type": "InternalIP", "address": "198.18.0.1"}]}}]}
EOF
kapi_start - --data "$TMP/objects.json" --bookmark-interval 0.5

say "a daemon following the server"
daemon_start
wait_for 30 "first list and sync" health_is '"connected": true, "synced": true'

# flap_window FAULT: every watch meets FAULT for 15 s; each resource's
# requests in that window must stay bounded (the backoff grows to 5 s:
# 0.1-0.2 s, 0.2-0.4 s, ... 2.5-5 s: at most 12 in 15 s).
flap_window() {
	local fault=$1 t0 t1 res n lines0 lines1
	kapi_fault "$fault" 1000000
	kapi_fault drop
	lines0=$(wc -l <"$TMP/log")
	t0=$(server_now)
	sleep 15
	t1=$(server_now)
	lines1=$(wc -l <"$TMP/log")
	kapi_fault clear
	for res in services endpointslices nodes; do
		n=$(requests "$res" watch "$t0" "$t1")
		say "  $fault: $res: $n watch requests in 15 s, gaps $(gaps "$res" "$t0" "$t1")"
		[ "$n" -ge 3 ] || fail "$fault: $res: only $n watch requests in 15 s: no retries?"
		[ "$n" -le 20 ] || fail "$fault: $res: $n watch requests in 15 s: the backoff does not grow"
		# The k-th gap between requests is at least the k-th delay's
		# lower bound, 0.1 s x 2^(k-1) up to 2.5 s (a loaded machine
		# only makes gaps longer).
		gaps_grow "$res" "$t0" "$t1" ||
			fail "$fault: $res: gaps $(gaps "$res" "$t0" "$t1"): the backoff does not grow"
	done
	say "  $fault: $((lines1 - lines0)) log lines in 15 s (-v)"
	[ $((lines1 - lines0)) -le 150 ] || fail "$fault: $((lines1 - lines0)) log lines in 15 s"
	wait_for 30 "every watch back after $fault" health_is '"connected": true'
}

say "a flapping watch: 200, then the connection closed at once"
flap_window flap
logged "services: watch: .*keeping the last state" || fail "the flap was not logged"

say "a flapping watch: 200, then a normal end at once without an event"
flap_window quietend
logged "the server ended the watch after 0\.[0-9] s (timeoutSeconds [0-9]*) without an event" ||
	fail "the quiet end was not logged"

say "once the watch delivers again, the backoff starts from its base"
# Bookmarks every 0.5 s: every watch makes progress; a drop is then
# followed by a new watch within 1 s.
sleep 3
t0=$(server_now)
kapi_fault drop
sleep 2
n=$(requests services watch "$t0" "$(server_now)")
[ "$n" -ge 1 ] || fail "no new services watch within 2 s of a drop after progress"

say "503 with Retry-After 2: the next request of that resource waits it out"
sleep 2
kapi_ctl /fault '{"name": "503", "count": 1, "retry_after": 2}' >/dev/null || fail "fault 503"
kapi_fault drop
wait_for 20 "the 503 logged" logged "HTTP 503 Service Unavailable (Retry-After 2): injected: unavailable"
# (a function: wait_for runs it again, with fresh stats, at every try)
after_503() {
	kapi_stats | python3 -c '
import json, sys
log = json.load(sys.stdin)["log"]
i = max(i for i, e in enumerate(log) if e[3] == 503)
sys.exit(0 if any(e[1] == log[i][1] for e in log[i + 1:]) else 1)'
}
wait_for 20 "a request after the 503" after_503
gap=$(kapi_stats | python3 -c '
import json, sys
log = json.load(sys.stdin)["log"]
i = max(i for i, e in enumerate(log) if e[3] == 503)
nxt = next(e for e in log[i + 1:] if e[1] == log[i][1])
print("%s %.2f" % (log[i][1], nxt[0] - log[i][0]))')
say "  503 on $gap s before the next request"
awk -v g="${gap#* }" 'BEGIN { exit !(g >= 1.8) }' || fail "Retry-After 2 not honoured: $gap s"
wait_for 30 "every watch back after the 503" health_is '"connected": true'

say "403 Forbidden: one clear line naming the resource, then retried"
kapi_fault 403 1
kapi_fault drop
wait_for 20 "the 403 logged" logged ": [a-z]*: watch: HTTP 403 Forbidden: injected: forbidden"
wait_for 30 "every watch back after the 403" health_is '"connected": true'

say "a list page whose items is an object"
kapi_fault itemsobject 1
kill -HUP "$DAEMON"
wait_for 20 "items as an object logged" logged \
	"https://$KAPI_ADDR: [a-z]*: list: items: a JSON object, not an array"
logged "is a '[A-Za-z]*List', not a" && fail "the old message for items as an object"
wait_for 30 "listed again after the bad page" health_is '"connected": true'

say "a 1 MiB response header"
kapi_fault hugeheader 1
kapi_fault drop
wait_for 20 "the huge header logged" logged \
	"https://$KAPI_ADDR: [a-z]*: watch: the answer's headers could not be read: a header over libcurl's limit of 100 KiB"
wait_for 30 "every watch back after the huge header" health_is '"connected": true'

say "JSON nested too deep: a list page and a watch event"
kapi_fault deep 1
kill -HUP "$DAEMON"
wait_for 20 "the deep list logged" logged \
	"https://$KAPI_ADDR: [a-z]*: list: the answer has arrays and objects nested deeper than 1000 levels"
wait_for 30 "listed again after the deep page" health_is '"connected": true'
kapi_fault deepwatch 1
kapi_fault drop
wait_for 20 "the deep watch event logged" logged \
	"https://$KAPI_ADDR: [a-z]*: watch: a watch event with arrays and objects nested deeper than 1000 levels"
wait_for 30 "every watch back after the deep event" health_is '"connected": true'

daemon_stop

say "an endless continue: --dump-state gives the list up at 200,000 items (exit 1), memory bounded"
kapi_fault endless 1000000
/usr/bin/time -f %M -o "$TMP/time" timeout 300 "$SVCNAT" --dump-state \
	--kubeconfig "$TMP/kapi/kc" >"$TMP/out" 2>&1
rc=$?
kapi_fault clear
[ $rc = 1 ] || fail "--dump-state endless: exit $rc: $(tail -n 3 "$TMP/out")"
grep -q "https://$KAPI_ADDR: services: list: more than 200000 items (200[0-9]* in 40[0-9] pages): the limit is 200000; giving this list up" "$TMP/out" ||
	fail "--dump-state endless: $(tail -n 3 "$TMP/out")"
peak=$(tail -n 1 "$TMP/time")
say "  --dump-state peak RSS $((peak / 1024)) MiB"
# 200,000 Services decoded (an ASan build too), with a wide margin.
[ "$peak" -lt $((1536 * 1024)) ] || fail "endless continue: peak RSS $((peak / 1024)) MiB"

say "empty pages forever: given up at 1,000 pages"
kapi_fault emptyend 1000000
timeout 300 "$SVCNAT" --dump-state --kubeconfig "$TMP/kapi/kc" >"$TMP/out" 2>&1
rc=$?
kapi_fault clear
[ $rc = 1 ] || fail "--dump-state emptyend: exit $rc: $(tail -n 3 "$TMP/out")"
grep -q "https://$KAPI_ADDR: services: list: 1000 pages and still not the last: the limit is 1000 pages" "$TMP/out" ||
	fail "--dump-state emptyend: $(tail -n 3 "$TMP/out")"

say "a continue token expired in the middle of a list: listed again from the start"
python3 "$top_srcdir/contrib/bench/gen.py" -n 1200 -m 1 -o "$TMP/big.json" || fail "gen.py"
kapi_apply "$TMP/big.json"
kapi_fault 410cont 1
timeout 300 "$SVCNAT" --dump-state --kubeconfig "$TMP/kapi/kc" >"$TMP/out" 2>&1 ||
	fail "--dump-state after an expired continue token: $(tail -n 3 "$TMP/out")"
[ "$(grep -c '^bench' "$TMP/out")" -ge 1200 ] || fail "expired continue: $(grep -c '^bench' "$TMP/out") bench lines"
[ "$(kapi_stat 's["faults"].get("410cont", 0)')" = 0 ] || fail "the continue token was never asked for"

kapi_stop
say "ok"
