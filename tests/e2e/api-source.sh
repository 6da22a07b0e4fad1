#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The Kubernetes API source end to end: the daemon follows the project's own
# API server (tests/kubeapi/kubeapi.py, HTTPS on 127.0.0.1 inside the node
# namespace) and real traffic follows it.
#  - started while the server is down: the kernel is not touched until the
#    first list of Services and EndpointSlices; then rules and traffic;
#  - over the watch: a service added, an endpoint removed (one service
#    port of two resolved again, as -v says), a service deleted; an object that does not decode is skipped with a diag naming
#    it (api:Service/<ns>/<name>), the rest stays;
#  - faults: a stream cut in the middle of an event (the event is applied
#    once, after the reconnect), a garbage line, a 500 and a 429 with
#    Retry-After on reconnect; a server that stops answering (the watch
#    is given up after 15 s, the rules stay), one that expires every
#    watch (the relists back off);
#  - the server killed: rules and traffic stay, /healthz and /metrics say
#    so; restarted (same state): the watch resumes from the last
#    resourceVersion with no new list; killed again, changed and compacted
#    meanwhile: the source lists again (410) and follows the change;
#  - a refused token: one clear error line, the kernel untouched; the token
#    file rotated to a good token: followed without a restart.
# Tested against the project's server, not a real kube-apiserver.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init api-source
kapi_need
e2e_need_svcnat

ports='[{"name":"http","protocol":"TCP","port":8080}]'
DAEMON=

svc() { # name ip
	k8s_service e2e "$1" "\"type\":\"ClusterIP\",\"clusterIP\":\"$2\",\"ports\":[
		{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080}]"
}

# apply JSON...: create or update these objects on the server
apply() { kapi_apply_objects "$@"; }

# wait_for (lib/wait.sh): what a failure shows
wait_for_context() { echo "; last probe: $(cat "$E2E_TMP/poll" 2>/dev/null); daemon log: $(tail -n 30 "$E2E_TMP/daemon.log")"; }

# only_from IP NAME...: connections to IP:80 answered by exactly these pods
only_from() {
	local ip=$1 o=$E2E_TMP/poll
	shift
	in_ns podclient "$NAMESRV" client --addr "$ip" --port 80 --count 20 --timeout-ms 500 --max-fail 1 >"$o" 2>&1 || return 1
	! grep -qv '^ok ' "$o" || return 1
	[ "$(awk '{print $2}' "$o" | sort -u | tr '\n' ' ')" = "$* " ]
}

refused() {
	in_ns podclient "$NAMESRV" client --addr "$1" --port 80 --count 3 --timeout-ms 500 >"$E2E_TMP/poll" 2>&1
	! grep -q '^ok ' "$E2E_TMP/poll"
}

logged() {
	grep -q -- "$1" "$E2E_TMP/daemon.log"
}

# owned_rules: svcnat's chains and rules in both flavours, counters stripped
owned_rules() {
	{ in_ns node iptables-legacy-save; in_ns node iptables-nft-save; } 2>/dev/null |
		grep -E '^(:KUBE-|-A KUBE-|-A [A-Z]+ .*-j KUBE-)' | sed 's/ \[[0-9]*:[0-9]*\]$//'
}

nat_has_kube() {
	{ in_ns node iptables-legacy-save -t nat; in_ns node iptables-nft-save -t nat; } 2>/dev/null |
		grep -q '^:KUBE-SERVICES'
}

health() {
	in_ns node curl -sS --max-time 5 http://127.0.0.1:10256/healthz
}

health_is() {
	health | grep -qF "$1"
}

watches_resumed() {
	[ "$(kapi_stat 'sum(s["watches"].values())' 2>/dev/null)" -ge 2 ] 2>/dev/null
}

metric() {
	in_ns node curl -sS --max-time 5 http://127.0.0.1:10249/metrics | grep "^$1 " | awk '{print $2}'
}

daemon_start() {
	local kc=$1
	ip netns exec "$(ns_name node)" timeout --kill-after=30 400 "$SVCNAT" \
		--backend="$BACKEND" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --kubeconfig "$kc" \
		--min-sync-period 200ms --sync-period 10s --lock-wait 30000 -v \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
}

daemon_stop() {
	kill -TERM "$DAEMON" 2>/dev/null
	wait "$DAEMON" 2>/dev/null
	DAEMON=
}

BACKEND=$(e2e_backends | awk '{print $1}')
topo_up
topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10
start_servers 8080
kapi_certs "$E2E_TMP/kapi"
kapi_kubeconfig "$E2E_TMP/kapi/kc-token" token
: >"$E2E_TMP/daemon.log"

say "daemon started while the API server is down: the kernel is not touched"
daemon_start "$E2E_TMP/kapi/kc-token"
wait_for 20 "a failed list logged" logged "services: \(streaming \)\?list: .*Couldn't connect"
sleep 1
nat_has_kube && fail "the kernel was written before the first list"
health | grep -q '"synced": false' || fail "/healthz: $(health)"

say "server up with web (a1 a2 b1): rules and traffic"
k8s_list "$(svc web 198.19.0.10)" \
	"$(k8s_slice e2e web "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	>"$E2E_TMP/initial.json"
kapi_start node --data "$E2E_TMP/initial.json"
wait_for 30 "first list and sync" only_from 198.19.0.10 a1 a2 b1
wait_for 10 "/healthz says connected" health_is '"connected": true, "synced": true' 

say "watch: a service added"
apply "$(svc web2 198.19.0.11)" "$(k8s_slice e2e web2 "$ports" 198.18.65.10@node-a)"
wait_for 10 "web2 added over the watch" only_from 198.19.0.11 a1

say "watch: an endpoint removed: one service port resolved again, of two"
n1=$(grep -c '(1 service ports anew)' "$E2E_TMP/daemon.log")
apply "$(k8s_slice e2e web "$ports" 198.18.65.11@node-a 198.18.66.10@node-b)"
wait_for 10 "a1 removed from web" only_from 198.19.0.10 a2 b1
# The event reaches the resolve as one change (-v: "sync parts: ...
# resolve S s (N service ports anew)"); a full resolve would say 2.
wait_for 10 "one service port resolved again" sh -c \
	"[ \$(grep -c '(1 service ports anew)' '$E2E_TMP/daemon.log') -gt $n1 ]"

say "watch: a service deleted"
kapi_delete Service e2e web2
kapi_delete EndpointSlice e2e web2-e2e
wait_for 10 "web2 deleted" refused 198.19.0.11

say "an object that does not decode: a diag naming it, the rest stays"
apply "$(k8s_service e2e bad '"type":"ClusterIP","clusterIP":"198.19.0.12","ports":[{"port":0}]')"
wait_for 10 "diag for api:Service/e2e/bad" logged "api:Service/e2e/bad: spec.ports\[0\]"
only_from 198.19.0.10 a2 b1 || fail "a bad object changed the rules"

say "a watch stream cut in the middle of an event: applied once after the reconnect"
ev0=$(metric svcnat_api_events)
kapi_fault cut
apply "$(svc web3 198.19.0.13)"
apply "$(k8s_slice e2e web3 "$ports" 198.18.66.10@node-b)"
wait_for 20 "web3 after the cut" only_from 198.19.0.13 b1
logged "watch: .*keeping the last state" || fail "the cut was not noticed"
ev1=$(metric svcnat_api_events)
# web3 (service) and its slice: two events, whichever stream was cut.
[ "$((ev1 - ev0))" = 2 ] || fail "events applied: $ev0 -> $ev1 (want +2: each once)"

say "a garbage line, then a 500 and a 429 (Retry-After) on reconnect"
# The garbage goes into the next event or bookmark of any stream; the
# reconnect then meets the 500, and the next attempt the 429.
kapi_fault 500
kapi_fault 429
kapi_fault garbage
apply "$(k8s_slice e2e web3 "$ports" 198.18.65.10@node-a)"
wait_for 20 "web3 moved to a1 through the faults" only_from 198.19.0.13 a1
wait_for 20 "the 429 logged" logged "HTTP 429 Too Many Requests (Retry-After 1)"
logged "HTTP 500" || fail "the 500 was not noticed"
logged "not a JSON object\|protobuf watch event that does not decode" ||
	fail "the garbage line was not noticed"
wait_for 20 "reconnected after the faults" health_is '"connected": true' 

say "a stalled server: the watch is given up after 15 s, the rules stay; then followed"
owned_rules >"$E2E_TMP/rules.stall"
kapi_fault stall 1000000
kapi_fault drop
wait_for 60 "the stall noticed" logged "watch: no answer within 15 s"
# The rules byte for byte, then traffic (retried: one slow connection on a
# loaded machine is no change of rules).
owned_rules | diff -u "$E2E_TMP/rules.stall" - >&2 || fail "a stalled server changed the rules"
wait_for 10 "traffic to web3 still only a1" only_from 198.19.0.13 a1
kapi_fault clear
apply "$(k8s_slice e2e web3 "$ports" 198.18.66.10@node-b)"
wait_for 30 "web3 after the stall" only_from 198.19.0.13 b1

say "a server that expires every watch at once: the relists back off"
l0=$(kapi_stat 's["lists"].get("services", 0)')
kapi_fault 410 1000000
kapi_fault drop
sleep 8
kapi_fault clear
l1=$(kapi_stat 's["lists"].get("services", 0)')
say "  services listed $((l1 - l0)) times in 8 s"
[ $((l1 - l0)) -ge 2 ] && [ $((l1 - l0)) -le 10 ] || fail "relists in 8 s: $((l1 - l0))"
logged "expired again within 5 s" || fail "no backoff logged"
apply "$(k8s_slice e2e web3 "$ports" 198.18.65.10@node-a)"
wait_for 30 "web3 after the expiries" only_from 198.19.0.13 a1
wait_for 30 "every watch back after the expiries" health_is '"connected": true'

say "server killed: rules and traffic stay"
lists_before=$(kapi_stat 's["lists"].get("services", 0)')
# What the daemon has applied of services (a bookmark may still advance it
# up to the server's version before the kill).
have=$(health | python3 -c 'import json,sys; print(json.load(sys.stdin)["api"]["resourceVersion"]["services"])')
rv=$(kapi_stat 's["resourceVersion"]')
kapi_stop KILL
wait_for 20 "loss logged" logged "the rules stay as they are"
only_from 198.19.0.10 a2 b1 || fail "traffic changed while the server is down"
wait_for 10 "/healthz says disconnected" health_is '"connected": false, "synced": true' 
[ "$(metric svcnat_api_connected)" = 0 ] || fail "svcnat_api_connected not 0"

say "server restarted: the watch resumes from resourceVersion $have..$rv, no new list"
kapi_start node
wait_for 20 "watches resumed" watches_resumed
apply "$(k8s_slice e2e web "$ports" 198.18.65.10@node-a)"
wait_for 20 "a change after the restart" only_from 198.19.0.10 a1
[ "$(kapi_stat 's["lists"].get("services", 0)')" = 0 ] ||
	fail "the source listed again after a restart with a valid resourceVersion: $(kapi_stats)"
resumed=$(kapi_stat 's["watch_rvs"]["services"][0]')
[ "$resumed" -ge "$have" ] && [ "$resumed" -le "$rv" ] ||
	fail "services watch did not resume from $have..$rv: $(kapi_stats)"
say "  lists before the kill: $lists_before, after the restart: 0"

say "killed again; changed and compacted meanwhile: 410, the source lists again"
kapi_stop KILL
wait_for 20 "loss logged" health_is '"connected": false'
k8s_list "$(svc web4 198.19.0.14)" "$(k8s_slice e2e web4 "$ports" 198.18.65.11@node-a)" \
	>"$E2E_TMP/meanwhile.json"
kapi_start node --apply "$E2E_TMP/meanwhile.json" --compact
wait_for 20 "relist after expiry" logged "410.*listing again"
wait_for 20 "web4 after the relist" only_from 198.19.0.14 a2
[ "$(kapi_stat 's["lists"].get("services", 0)')" -ge 1 ] || fail "no relist: $(kapi_stats)"
[ "$(metric svcnat_api_relists)" -ge 1 ] || fail "svcnat_api_relists: $(metric svcnat_api_relists)"

say "SIGTERM; a daemon with a refused token: a clear error, the rules stay"
daemon_stop
owned_rules >"$E2E_TMP/rules.before"
grep -q '^-A KUBE-SVC-' "$E2E_TMP/rules.before" || fail "no svcnat rules before the refusal: $(cat "$E2E_TMP/rules.before")"
: >"$E2E_TMP/daemon.log"
echo new-t0ken >"$E2E_TMP/kapi/tokens"
kapi_kubeconfig "$E2E_TMP/kapi/kc-file" tokenfile
daemon_start "$E2E_TMP/kapi/kc-file"
wait_for 20 "401 logged" logged "HTTP 401 Unauthorized: the server refused the credentials of $E2E_TMP/kapi/kc-file"
sleep 1
owned_rules >"$E2E_TMP/rules.after"
diff -u "$E2E_TMP/rules.before" "$E2E_TMP/rules.after" >&2 ||
	fail "a refused daemon changed the rules"
# The rules are the same; traffic through them is checked with retries (a
# lost probe on a loaded machine is not a changed rule).
wait_for 10 "traffic to web after the refusal" only_from 198.19.0.10 a1
wait_for 10 "traffic to web4 after the refusal" only_from 198.19.0.14 a2

say "the token file rotated to the accepted token: followed without a restart"
echo new-t0ken >"$E2E_TMP/kapi/token"
apply "$(k8s_slice e2e web "$ports" 198.18.66.10@node-b)"
wait_for 30 "followed after the rotation" only_from 198.19.0.10 b1
daemon_stop
kapi_stop
topo_down
