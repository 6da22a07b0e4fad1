#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# externalTrafficPolicy=Local: external traffic (NodePort, LoadBalancer IP)
# reaches only this node's backends and keeps the client's own source
# address (no masquerade); traffic from inside the cluster still reaches
# every backend (cluster IP, and pods reaching the external addresses are
# short-circuited to the cluster-wide chain).  A Local service without a
# local backend drops external traffic, and serves in-cluster traffic.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-local-policy

ports='[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]'
cfg=$E2E_TMP/local.json
k8s_list \
	"$(k8s_service e2e local '"type":"LoadBalancer","clusterIP":"198.19.0.17","externalTrafficPolicy":"Local",
		"healthCheckNodePort":32000,"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30084},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30084}]' \
		'"loadBalancer":{"ingress":[{"ip":"198.18.200.30"}]}')" \
	"$(k8s_slice e2e local "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(k8s_service e2e faraway '"type":"NodePort","clusterIP":"198.19.0.27","externalTrafficPolicy":"Local",
		"healthCheckNodePort":32001,"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30085}]')" \
	"$(k8s_slice e2e faraway "$ports" 198.18.66.10@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	say "client1 -> node:30084/tcp x150: local backends only, source kept"
	probe "$o" client1 "$E2E_NODE_IP" 30084 150
	expect_spread "$o" 10 a1 a2
	expect_peer "$o" "$E2E_CLIENT1_IP"
	say "  $(summary "$o")"
	say "client2 -> LB 198.18.200.30:80/tcp x150"
	probe "$o" client2 198.18.200.30 80 150
	expect_spread "$o" 10 a1 a2
	expect_peer "$o" "$E2E_CLIENT2_IP"
	say "client1 -> LB 198.18.200.30:53/udp x150"
	probe "$o" client1 198.18.200.30 53 150 --udp
	expect_spread "$o" 10 a1 a2
	expect_peer "$o" "$E2E_CLIENT1_IP"

	say "podclient -> cluster IP x150: every backend"
	probe "$o" podclient 198.19.0.17 80 150
	expect_spread "$o" 5 a1 a2 b1
	say "podclient -> LB IP x150: short-circuited to every backend"
	probe "$o" podclient 198.18.200.30 80 150
	expect_spread "$o" 5 a1 a2 b1
	expect_peer "$o" "$E2E_PODCLIENT_IP"

	say "Local service with its only backend on node-b"
	probe "$o" client1 "$E2E_NODE_IP" 30085 1 --timeout-ms 1000
	expect_outcome "$o" timeout
	probe "$o" podclient 198.19.0.27 80 5
	expect_only "$o" b1
}

e2e_for_each_backend run
