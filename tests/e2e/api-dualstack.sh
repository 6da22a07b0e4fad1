#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The Kubernetes API source with dual-stack objects and real IPv6 traffic
# (issue 14): the daemon follows the project's API server
# (tests/kubeapi/kubeapi.py) on a dual-stack node, on the first backend that
# writes ip6tables here (e2e_writes_ipv6):
#   - a RequireDualStack Service with an IPv4 and an IPv6 EndpointSlice:
#     every endpoint answers over IPv6 and over IPv4;
#   - over the watch: an IPv6 endpoint removed from the IPv6 slice is no
#     longer hit (IPv4 keeps all three), and an IPv6-only Service added with
#     its IPv6 slice answers on its IPv6 cluster IP.
# Tested against the project's server, not a real kube-apiserver.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init api-dualstack
kapi_need
e2e_need_svcnat
TOPO_IPV6=1

ports='[{"name":"http","protocol":"TCP","port":8080}]'

e2e_first_ipv6_backend
backend=$E2E_BACKEND6

web() {
	k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10",
		"clusterIPs":["198.19.0.10","2001:2:0:f000::10"],"ipFamilies":["IPv4","IPv6"],
		"ipFamilyPolicy":"RequireDualStack","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]'
}

# apply JSON...: create or update these objects on the server
apply() { kapi_apply_objects "$@"; }

wait_for_context() { echo "; last probe: $(summary "$E2E_TMP/poll" 2>/dev/null); daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"; }

# only_from IP NAME...: 30 connections from client1 to IP:80 answered by
# exactly these pods
only_from() {
	local ip=$1 o=$E2E_TMP/poll
	shift
	in_ns client1 "$NAMESRV" client --addr "$ip" --port 80 --count 30 --timeout-ms 1000 --max-fail 1 \
		>"$o" 2>&1 || return 1
	! grep -qv '^ok ' "$o" || return 1
	[ "$(awk '{print $2}' "$o" | sort -u | tr '\n' ' ')" = "$* " ]
}

topo_up
topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10
start_servers 8080
kapi_certs "$E2E_TMP/kapi"
kapi_kubeconfig "$E2E_TMP/kapi/kc-token" token
k8s_list "$(web)" \
	"$(k8s_slice e2e web "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(k8s_slice6 e2e web "$ports" 2001:2:0:65::10@node-a 2001:2:0:65::11@node-a 2001:2:0:66::10@node-b)" \
	>"$E2E_TMP/initial.json"
kapi_start node --data "$E2E_TMP/initial.json"
: >"$E2E_TMP/daemon.log"
say "daemon on backend $backend following the API server, dual-stack node"
ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
	--backend="$backend" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
	--node-ip "$E2E_NODE_IP6" --cluster-cidr "$E2E_CLUSTER_CIDR,$E2E_CLUSTER_CIDR6" \
	--kubeconfig "$E2E_TMP/kapi/kc-token" --min-sync-period 200ms --sync-period 30s \
	--lock-wait 30000 </dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
E2E_BG_PIDS+=($!)
wait_for 60 "web over IPv6: every endpoint" only_from 2001:2:0:f000::10 a1 a2 b1
only_from 198.19.0.10 a1 a2 b1 || fail "web over IPv4: $(summary "$E2E_TMP/poll")"
say "  [2001:2:0:f000::10] and 198.19.0.10: a1 a2 b1"

say "watch: b1 leaves the IPv6 slice"
apply "$(k8s_slice6 e2e web "$ports" 2001:2:0:65::10@node-a 2001:2:0:65::11@node-a)"
wait_for 45 "b1 no longer hit over IPv6" only_from 2001:2:0:f000::10 a1 a2
only_from 198.19.0.10 a1 a2 b1 || fail "IPv4 changed with the IPv6 slice: $(summary "$E2E_TMP/poll")"
say "  IPv6: a1 a2; IPv4 still a1 a2 b1"

say "watch: an IPv6-only Service with its IPv6 slice"
apply "$(k8s_service e2e web6 '"type":"ClusterIP","clusterIP":"2001:2:0:f000::11",
		"clusterIPs":["2001:2:0:f000::11"],"ipFamilies":["IPv6"],"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
	"$(k8s_slice6 e2e web6 "$ports" 2001:2:0:66::10@node-b)"
wait_for 45 "web6 over IPv6" only_from 2001:2:0:f000::11 b1
say "  [2001:2:0:f000::11]: b1"
kapi_stop
