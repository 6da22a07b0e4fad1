#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# /healthz follows this node's Node object over the API source's watch, as
# kube-proxy's (proxy_health.go SyncNode): the ToBeDeletedByClusterAutoscaler
# taint or a deletionTimestamp make it 503 with "nodeEligible": false while
# the syncs are fine (/livez stays 200); the taint removed, 200 and true
# again; the Node deleted after that: 503.  Against the project's API server
# (tests/kubeapi/kubeapi.py) in the node namespace.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init api-node-health
kapi_need
e2e_need_svcnat

DAEMON=

# node [TAINT_KEY [DELETION_TIMESTAMP]]: this node's Node object
node() {
	local taints= del=
	[ -n "${1:-}" ] && taints=",\"spec\": {\"taints\": [{\"key\": \"other\", \"effect\": \"NoSchedule\"},
		{\"key\": \"$1\", \"value\": \"1764622800\", \"effect\": \"NoSchedule\"}]}"
	[ -n "${2:-}" ] && del=", \"deletionTimestamp\": \"$2\", \"finalizers\": [\"e2e/hold\"]"
	cat >"$E2E_TMP/node.json" <<JSON
{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "$E2E_HOSTNAME"$del},
 "status": {"addresses": [{"type": "InternalIP", "address": "$E2E_NODE_IP"}]}$taints}
JSON
	kapi_apply "$E2E_TMP/node.json"
}

# probe PATH CODE TEXT: PATH answers HTTP CODE and its body holds TEXT
probe() {
	in_ns node curl -sS --max-time 5 -o "$E2E_TMP/body" -w '%{http_code}' \
		"http://127.0.0.1:10256$1" >"$E2E_TMP/code" 2>&1 || return 1
	[ "$(cat "$E2E_TMP/code")" = "$2" ] && grep -qF -- "$3" "$E2E_TMP/body"
}

wait_for_context() { echo "; last answer: $(cat "$E2E_TMP/code" 2>/dev/null) $(cat "$E2E_TMP/body" 2>/dev/null); daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"; }

BACKEND=$(e2e_backends | awk '{print $1}')
topo_up
kapi_certs "$E2E_TMP/kapi"
kapi_kubeconfig "$E2E_TMP/kapi/kc-token" token
k8s_list "$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[
	{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" >"$E2E_TMP/initial.json"
kapi_start node --data "$E2E_TMP/initial.json"
node
: >"$E2E_TMP/daemon.log"
ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
	--backend="$BACKEND" --hostname "$E2E_HOSTNAME" --cluster-cidr "$E2E_CLUSTER_CIDR" \
	--kubeconfig "$E2E_TMP/kapi/kc-token" --min-sync-period 200ms --sync-period 10s \
	--lock-wait 30000 </dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
DAEMON=$!
E2E_BG_PIDS+=("$DAEMON")

wait_for 60 "/healthz 200 after the first sync" probe /healthz 200 '"nodeEligible": true'
say "synced, the Node untainted: /healthz 200, nodeEligible true"

node ToBeDeletedByClusterAutoscaler
wait_for 10 "/healthz 503 with the autoscaler's taint" probe /healthz 503 '"nodeEligible": false'
probe /livez 200 '"currentTime"' || fail "/livez with the taint: $(cat "$E2E_TMP/code") $(cat "$E2E_TMP/body")"
grep -q nodeEligible "$E2E_TMP/body" && fail "/livez has nodeEligible: $(cat "$E2E_TMP/body")"
grep -q 'is being deleted' "$E2E_TMP/daemon.log" || fail "no warning logged: $(tail -n 5 "$E2E_TMP/daemon.log")"
say "tainted ToBeDeletedByClusterAutoscaler: /healthz 503 nodeEligible false, /livez 200"

node
wait_for 10 "/healthz 200 once the taint is gone" probe /healthz 200 '"nodeEligible": true'
say "taint removed: 200, nodeEligible true again"

node some-other-taint
sleep 1
probe /healthz 200 '"nodeEligible": true' || fail "another taint: $(cat "$E2E_TMP/code") $(cat "$E2E_TMP/body")"
say "another taint: still 200"

node "" 2026-12-01T21:00:00Z
wait_for 10 "/healthz 503 with a deletionTimestamp" probe /healthz 503 '"nodeEligible": false'
say "deletionTimestamp set: 503, nodeEligible false"

node
wait_for 10 "/healthz 200 again" probe /healthz 200 '"nodeEligible": true'
kapi_delete Node "" "$E2E_HOSTNAME"
wait_for 10 "/healthz 503 once the Node is gone" probe /healthz 503 '"nodeEligible": false'
say "the Node deleted: 503"

kill -TERM "$DAEMON"
wait "$DAEMON" || fail "daemon exited $? on SIGTERM: $(tail -n 20 "$E2E_TMP/daemon.log")"
DAEMON=
kapi_stop
topo_down
