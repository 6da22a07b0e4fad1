#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# externalIPs: a service's external IP (routed to the node) reaches every
# backend, from an outside client (masqueraded), from a pod and from the
# node itself; other ports of that address are not forwarded.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-externalip

cfg=$E2E_TMP/externalip.json
k8s_list \
	"$(k8s_service e2e ext '"type":"ClusterIP","clusterIP":"198.19.0.12","externalIPs":["198.18.200.10"],"ports":[
		{"name":"http","protocol":"TCP","port":8000,"targetPort":8080},
		{"name":"dns","protocol":"UDP","port":8053,"targetPort":8080}]')" \
	"$(k8s_slice e2e ext '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	say "client1 -> 198.18.200.10:8000/tcp x300"
	probe "$o" client1 198.18.200.10 8000 300
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP"
	say "  $(summary "$o")"
	say "client1 -> 198.18.200.10:8053/udp x300"
	probe "$o" client1 198.18.200.10 8053 300 --udp
	expect_spread "$o" 10 a1 a2 b1
	say "  $(summary "$o")"
	say "podclient -> 198.18.200.10:8000/tcp x100"
	probe "$o" podclient 198.18.200.10 8000 100
	expect_spread "$o" 5 a1 a2 b1
	say "node -> 198.18.200.10:8000/tcp x100"
	probe "$o" node 198.18.200.10 8000 100
	expect_spread "$o" 5 a1 a2 b1
	say "cluster IP works as well"
	probe "$o" podclient 198.19.0.12 8000 50
	expect_spread "$o" 5 a1 a2 b1

	say "another port of the external IP is not forwarded"
	probe "$o" client1 198.18.200.10 8001 2 --timeout-ms 500
	expect_no_answer "$o"
}

e2e_for_each_backend run
