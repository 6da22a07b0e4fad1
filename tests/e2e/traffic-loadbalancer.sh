#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# LoadBalancer ingress IP with loadBalancerSourceRanges: a client inside the
# allowed range (198.18.1.0/25) reaches every backend; a client outside it
# (198.18.1.200) is dropped (a timeout, not a refusal), while the same
# client still reaches the service's NodePort, which the ranges do not
# guard.  A second LoadBalancer without ranges serves both clients.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-loadbalancer

cfg=$E2E_TMP/lb.json
k8s_list \
	"$(k8s_service e2e lb '"type":"LoadBalancer","clusterIP":"198.19.0.13",
		"loadBalancerSourceRanges":["198.18.1.0/25"],"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30081},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30081}]' \
		'"loadBalancer":{"ingress":[{"ip":"198.18.200.20"}]}')" \
	"$(k8s_slice e2e lb '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(k8s_service e2e open '"type":"LoadBalancer","clusterIP":"198.19.0.23","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30091}]' \
		'"loadBalancer":{"ingress":[{"ip":"198.18.200.21"}]}')" \
	"$(k8s_slice e2e open '[{"name":"http","protocol":"TCP","port":8080}]' \
		198.18.65.10@node-a 198.18.66.10@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	say "client1 (in 198.18.1.0/25) -> LB 198.18.200.20:80/tcp x300"
	probe "$o" client1 198.18.200.20 80 300
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP"
	say "  $(summary "$o")"
	say "client1 -> LB 198.18.200.20:53/udp x150"
	probe "$o" client1 198.18.200.20 53 150 --udp
	expect_spread "$o" 5 a1 a2 b1

	say "client2 (outside the ranges) -> LB: dropped"
	probe "$o" client2 198.18.200.20 80 1 --timeout-ms 1000
	expect_outcome "$o" timeout
	probe "$o" client2 198.18.200.20 53 1 --udp --timeout-ms 1000
	expect_outcome "$o" timeout
	say "client2 -> the NodePort of the same service: served"
	probe "$o" client2 "$E2E_NODE_IP" 30081 60
	expect_spread "$o" 5 a1 a2 b1
	say "client2 -> a LoadBalancer without source ranges: served"
	probe "$o" client2 198.18.200.21 80 60
	expect_spread "$o" 5 a1 b1
	say "client1 keeps working after client2's drops"
	probe "$o" client1 198.18.200.20 80 30
	expect_only "$o" a1 a2 b1
}

e2e_for_each_backend run
