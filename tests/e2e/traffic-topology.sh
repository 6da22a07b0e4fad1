#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Traffic distribution with real traffic on the two-node topology: node-a
# (svcnat, --zone zone-a) and node-b (zone-b).  The endpoints carry the
# hints the EndpointSlice controller writes for a Service's
# trafficDistribution, and svcnat must choose as kube-proxy 1.35 does
# (pkg/proxy/topology.go):
#  - PreferSameNode: only the endpoints hinted for node-a; none ready for
#    node-a: those hinted for zone-a; none of those: every endpoint;
#  - PreferSameZone (and PreferClose): only the endpoints hinted for zone-a;
#  - one ready endpoint without hints: every endpoint (all or nothing);
#  - externalTrafficPolicy Local: external traffic reaches every local
#    endpoint, hinted or not, while cluster traffic follows the hints.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-topology

ports='[{"name":"http","protocol":"TCP","port":8080}]'
svc() { # NAME CLUSTER-IP DISTRIBUTION
	k8s_service e2e "$1" '"clusterIP":"'"$2"'","trafficDistribution":"'"$3"'",
		"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]'
}
cfg=$E2E_TMP/topology.json
k8s_list \
	"$(svc same-node 198.19.0.60 PreferSameNode)" \
	"$(k8s_slice e2e same-node "$ports" 198.18.65.10@node-a@@zone-a@node-a \
		198.18.65.11@node-a@@zone-a@node-a 198.18.66.10@node-b@@zone-b@node-b \
		198.18.66.11@node-b@@zone-a@node-b)" \
	"$(svc node-to-zone 198.19.0.61 PreferSameNode)" \
	"$(k8s_slice e2e node-to-zone "$ports" 198.18.65.10@node-a@notready@zone-a@node-a \
		198.18.66.10@node-b@@zone-a@node-b 198.18.66.11@node-b@@zone-b@node-b)" \
	"$(svc node-to-all 198.19.0.62 PreferSameNode)" \
	"$(k8s_slice e2e node-to-all "$ports" 198.18.65.10@node-a@notready@zone-a@node-a \
		198.18.66.10@node-b@@zone-b@node-b 198.18.66.11@node-b@@zone-b@node-b)" \
	"$(svc same-zone 198.19.0.63 PreferSameZone)" \
	"$(k8s_slice e2e same-zone "$ports" 198.18.65.10@node-a@@zone-a 198.18.66.10@node-b@@zone-b \
		198.18.66.11@node-b@@zone-a)" \
	"$(svc close 198.19.0.64 PreferClose)" \
	"$(k8s_slice e2e close "$ports" 198.18.65.11@node-a@@zone-a 198.18.66.10@node-b@@zone-b)" \
	"$(svc one-unhinted 198.19.0.65 PreferSameNode)" \
	"$(k8s_slice e2e one-unhinted "$ports" 198.18.65.10@node-a@@zone-a@node-a \
		198.18.66.10@node-b@@zone-b@node-b 198.18.66.11@node-b)" \
	"$(k8s_service e2e local-ext '"type":"NodePort","clusterIP":"198.19.0.66",
		"trafficDistribution":"PreferSameNode","externalTrafficPolicy":"Local",
		"healthCheckNodePort":32066,"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30066}]')" \
	"$(k8s_slice e2e local-ext "$ports" 198.18.65.10@node-a@@zone-a@node-a \
		198.18.65.11@node-a@@zone-a@node-x 198.18.66.10@node-b@@zone-b@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out
	topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10 b2 198.18.66.11
	start_servers 8080
	svcnat_sync "$backend" "$cfg" --zone zone-a

	say "PreferSameNode: podclient -> cluster IP x100: node-a's endpoints only (not b2 of zone-a)"
	probe "$o" podclient 198.19.0.60 80 100
	expect_spread "$o" 10 a1 a2
	say "PreferSameNode: node-a itself -> cluster IP x20: the same"
	probe "$o" node 198.19.0.60 80 20
	expect_only "$o" a1 a2
	say "PreferSameNode, node-a's endpoint not ready: zone-a's hints (b1)"
	probe "$o" podclient 198.19.0.61 80 30
	expect_only "$o" b1
	say "PreferSameNode, none ready for node-a or zone-a: every endpoint"
	probe "$o" podclient 198.19.0.62 80 100
	expect_spread "$o" 10 b1 b2
	say "PreferSameZone: zone-a's hints (a1 and b2, hinted across zones)"
	probe "$o" podclient 198.19.0.63 80 100
	expect_spread "$o" 10 a1 b2
	say "PreferClose: as PreferSameZone"
	probe "$o" podclient 198.19.0.64 80 20
	expect_only "$o" a2
	say "one ready endpoint without hints: every endpoint"
	probe "$o" podclient 198.19.0.65 80 150
	expect_spread "$o" 5 a1 b1 b2
	say "eTP Local: cluster traffic by node hints (a1), external traffic to every local endpoint"
	probe "$o" podclient 198.19.0.66 80 30
	expect_only "$o" a1
	probe "$o" client1 "$E2E_NODE_IP" 30066 100
	expect_spread "$o" 10 a1 a2
	expect_peer "$o" "$E2E_CLIENT1_IP"
}

e2e_for_each_backend run
