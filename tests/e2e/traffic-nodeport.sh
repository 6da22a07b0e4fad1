#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# NodePort, TCP and UDP, from clients outside the node (and from the node to
# its own address): every backend is reached through the node's address,
# and traffic from outside the cluster CIDR is masqueraded.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-nodeport

cfg=$E2E_TMP/nodeport.json
k8s_list \
	"$(k8s_service e2e web '"type":"NodePort","clusterIP":"198.19.0.11","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30053}]')" \
	"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	say "client1 -> node:30080/tcp x300"
	probe "$o" client1 "$E2E_NODE_IP" 30080 300
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP"
	say "  $(summary "$o")"
	say "client1 -> node:30053/udp x300"
	probe "$o" client1 "$E2E_NODE_IP" 30053 300 --udp
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP"
	say "  $(summary "$o")"
	say "client2 -> node:30080/tcp x100"
	probe "$o" client2 "$E2E_NODE_IP" 30080 100
	expect_spread "$o" 5 a1 a2 b1
	say "node -> its own address :30080/tcp x100"
	probe "$o" node "$E2E_NODE_IP" 30080 100
	expect_spread "$o" 5 a1 a2 b1

	say "other ports of the node are not forwarded"
	probe "$o" client1 "$E2E_NODE_IP" 30081 2
	expect_outcome "$o" refused
	probe "$o" client1 "$E2E_NODE_IP" 30080 2 --udp --timeout-ms 500
	expect_outcome "$o" refused
}

e2e_for_each_backend run
