#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The API source's wire and list modes against the project's API server
# (tests/kubeapi/kubeapi.py), kernel rules compared across them:
#  - by default svcnat asks as kube-proxy's client-go does (Accept:
#    application/vnd.kubernetes.protobuf, */*), lists from the watch cache
#    (resourceVersion=0) after a streaming list the server (v1.30, no
#    WatchList) refused, and reads protobuf lists and watch frames;
#  - --kube-api-content-type application/json with --feature-gates
#    WatchListClient=false: JSON only, no streaming list: the same rules;
#  - clientConnection.acceptContentTypes (a KubeProxyConfiguration) is the
#    Accept header as given;
#  - a server that answers JSON to a protobuf client: read as JSON;
#  - a server that streams lists: synced at the k8s.io/initial-events-end
#    bookmark with no list request, then followed over the same watch; one
#    that ignores sendInitialEvents: listed instead;
#  - an expired watch (410) relists at the last version, and when that is
#    gone too, without one (a consistent read), as client-go's reflector.
# Tested against the project's server, not a real kube-apiserver.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init api-protobuf
kapi_need
e2e_need_svcnat

ports='[{"name":"http","protocol":"TCP","port":8080}]'
DAEMON=

svc() { # name ip
	k8s_service e2e "$1" "\"type\":\"ClusterIP\",\"clusterIP\":\"$2\",\"ports\":[
		{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080}]"
}

apply() { kapi_apply_objects "$@"; }

wait_for_context() { echo "; stats: $(kapi_stats | head -c 1500); daemon log: $(tail -n 15 "$E2E_TMP/daemon.log")"; }

owned_rules() {
	{ in_ns node iptables-legacy-save; in_ns node iptables-nft-save; } 2>/dev/null |
		grep -E '^(:KUBE-|-A KUBE-|-A [A-Z]+ .*-j KUBE-)' | sed 's/ \[[0-9]*:[0-9]*\]$//' | sort
}

# has_rules IP...: the rules of every service applied so far, endpoints included: each
# cluster IP jumps to its service chain (a service whose slice has not come yet has a
# REJECT rule to its cluster IP instead, and the rules compared later would differ)
has_rules() {
	local r ip
	r=$(owned_rules)
	for ip in "$@"; do grep -q -- "-d $ip/32 .*-j KUBE-SVC-" <<<"$r" || return 1; done
}

lacks_rules() {
	! owned_rules | grep -q -- "-d $1/32"
}

stat() { kapi_stat "$1"; }

# synced: this daemon applied a list or a streamed list of both resources
synced() {
	grep -q "\(listed\|streamed\) [0-9]* services" "$E2E_TMP/daemon.log" &&
		grep -q "\(listed\|streamed\) [0-9]* endpointslices" "$E2E_TMP/daemon.log"
}

daemon_start() {
	: >"$E2E_TMP/daemon.log"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
		--backend="$BACKEND" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --kubeconfig "$E2E_TMP/kapi/kc-token" \
		--min-sync-period 200ms --sync-period 10s --lock-wait 30000 -v "$@" \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
}

daemon_stop() {
	kill -TERM "$DAEMON" 2>/dev/null
	wait "$DAEMON" 2>/dev/null
	DAEMON=
	wait_for 60 "--cleanup removed the rules" cleaned
}

# cleaned: --cleanup ran (it waits for the shared xtables lock) and the rules are gone
cleaned() {
	in_ns node "$SVCNAT" --cleanup --backend="$BACKEND" --lock-wait 30000 >/dev/null 2>&1
	lacks_rules 198.19.0.10
}

# sync_then IP...: this daemon synced, and the services' rules are in
sync_then() {
	wait_for 40 "the daemon's first sync" synced
	wait_for 20 "the rules of $*" has_rules "$@"
}

mode() { kapi_ctl /mode "$1" >/dev/null || fail "kubeapi /mode $1"; }

BACKEND=$(e2e_backends | awk '{print $1}')
topo_up
kapi_certs "$E2E_TMP/kapi"
kapi_kubeconfig "$E2E_TMP/kapi/kc-token" token
k8s_list "$(svc web 198.19.0.10)" \
	"$(k8s_slice e2e web "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(svc web2 198.19.0.11)" "$(k8s_slice e2e web2 "$ports" 198.18.65.10@node-a)" \
	>"$E2E_TMP/initial.json"
kapi_start node --data "$E2E_TMP/initial.json"

say "default: protobuf asked and read, first lists from the watch cache"
daemon_start
sync_then 198.19.0.10 198.19.0.11
accept=$(stat 'sorted(s["accept"])')
grep -qF "'application/vnd.kubernetes.protobuf, */*'" <<<"$accept" || fail "Accept: $accept"
[ "$(stat 's["served"].get("protobuf", {}).get("list", 0)')" -ge 3 ] ||
	fail "protobuf lists: $(stat 's["served"]')"
[ "$(stat 's["served"].get("json", {}).get("list", 0)')" = 0 ] || fail "JSON lists: $(stat 's["served"]')"
[ "$(stat 's["list_modes"].get("0", 0)')" -ge 3 ] || fail "lists at resourceVersion=0: $(stat 's["list_modes"]')"
[ "$(stat 's["list_modes"].get("none", 0)')" = 0 ] || fail "consistent lists: $(stat 's["list_modes"]')"
[ "$(stat 's["streams_refused"]')" -ge 3 ] || fail "no streaming list tried: $(stat 's["streams_refused"]')"
apply "$(svc web3 198.19.0.12)" "$(k8s_slice e2e web3 "$ports" 198.18.65.11@node-a)"
wait_for 20 "web3 over a protobuf watch" has_rules 198.19.0.12
[ "$(stat 's["events"].get("protobuf", 0)')" -ge 2 ] || fail "protobuf watch events: $(stat 's["events"]')"
owned_rules >"$E2E_TMP/rules.pb"
daemon_stop

say "application/json, WatchListClient=false: JSON only, the same rules"
r0=$(stat 's["streams_refused"]')
daemon_start --kube-api-content-type application/json --feature-gates WatchListClient=false
sync_then 198.19.0.10 198.19.0.11 198.19.0.12
owned_rules >"$E2E_TMP/rules.json"
diff "$E2E_TMP/rules.pb" "$E2E_TMP/rules.json" >&2 || fail "rules differ between protobuf and JSON"
grep -qF "'application/json, */*'" <<<"$(stat 'sorted(s["accept"])')" || fail "Accept: $(stat 's["accept"]')"
[ "$(stat 's["streams_refused"]')" = "$r0" ] || fail "a streaming list with WatchListClient=false"
[ "$(stat 's["served"].get("json", {}).get("list", 0)')" -ge 3 ] || fail "JSON lists: $(stat 's["served"]')"
daemon_stop

say "clientConnection.acceptContentTypes: the Accept header as given"
printf 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclientConnection:\n  acceptContentTypes: application/json\n' \
	>"$E2E_TMP/kp-accept.yaml"
j0=$(stat 's["served"].get("json", {}).get("list", 0)')
daemon_start --config "$E2E_TMP/kp-accept.yaml"
sync_then 198.19.0.10 198.19.0.11 198.19.0.12
grep -qF "'application/json'" <<<"$(stat 'sorted(s["accept"])')" || fail "Accept: $(stat 's["accept"]')"
[ "$(stat 's["served"].get("json", {}).get("list", 0)')" -gt "$j0" ] || fail "JSON lists: $(stat 's["served"]')"
daemon_stop

say "a JSON-only server: the protobuf client reads JSON"
mode '{"wire": "json"}'
p0=$(stat 's["served"].get("protobuf", {}).get("list", 0)')
daemon_start
sync_then 198.19.0.10 198.19.0.11 198.19.0.12
owned_rules >"$E2E_TMP/rules.jsonsrv"
diff "$E2E_TMP/rules.pb" "$E2E_TMP/rules.jsonsrv" >&2 || fail "rules differ with a JSON-only server"
[ "$(stat 's["served"].get("protobuf", {}).get("list", 0)')" = "$p0" ] || fail "protobuf from a JSON-only server"
apply "$(svc web4 198.19.0.13)" "$(k8s_slice e2e web4 "$ports" 198.18.65.11@node-a)"
wait_for 20 "web4 over a JSON watch" has_rules 198.19.0.13
daemon_stop
mode '{"wire": "auto"}'

say "a server that streams lists: synced at the initial-events-end bookmark"
mode '{"watch_list": "serve"}'
l0=$(stat 'sum(s["lists"].values())')
daemon_start
sync_then 198.19.0.10 198.19.0.11 198.19.0.12 198.19.0.13
grep -q "streamed [0-9]* services" "$E2E_TMP/daemon.log" || fail "services were not streamed"
[ "$(stat 'sum(s["lists"].values())')" = "$l0" ] || fail "a list despite streaming: $(stat 's["lists"]')"
[ "$(stat 's["streams"].get("services", 0)')" -ge 1 ] || fail "streams: $(stat 's["streams"]')"
kapi_delete Service e2e web4
wait_for 20 "web4 deleted over the same stream" lacks_rules 198.19.0.13
[ "$(stat 's["streams"].get("services", 0)')" = 1 ] || fail "streams: $(stat 's["streams"]')"
daemon_stop

say "a server that ignores sendInitialEvents: listed instead"
mode '{"watch_list": "ignore"}'
l0=$(stat 's["lists"].get("services", 0)')
daemon_start
sync_then 198.19.0.10 198.19.0.11 198.19.0.12
grep -q "listed [0-9]* services" "$E2E_TMP/daemon.log" || fail "services were not listed"
[ "$(stat 's["lists"].get("services", 0)')" -gt "$l0" ] || fail "no list after an ignored stream"
grep -q "streaming list refused (.*did not stream the initial state" "$E2E_TMP/daemon.log" ||
	fail "the ignored stream was not named: $(tail -n 5 "$E2E_TMP/daemon.log")"
mode '{"watch_list": "refuse"}'

say "a watch expired (410): relisted at the last version, then without one"
k8s_list "$(svc web5 198.19.0.14)" "$(k8s_slice e2e web5 "$ports" 198.18.65.11@node-a)" \
	>"$E2E_TMP/web5.json"
kapi_stop
# changed and compacted while the node was cut off (a new server: new stats)
kapi_start node --apply "$E2E_TMP/web5.json" --compact
wait_for 40 "web5 after the relist" has_rules 198.19.0.14
[ "$(stat 's["list_modes"].get("exact", 0)')" -ge 1 ] || fail "no relist at the last version: $(stat 's["list_modes"]')"
[ "$(stat 's["list_modes"].get("none", 0)')" -ge 1 ] || fail "no consistent relist: $(stat 's["list_modes"]')"
[ "$(stat 's["list_modes"].get("0", 0)')" = 0 ] || fail "a relist from the cache at 0: $(stat 's["list_modes"]')"
daemon_stop
kapi_stop
say "ok"
