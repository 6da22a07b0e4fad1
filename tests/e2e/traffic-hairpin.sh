#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Hairpin: a backend reaching its own service gets through, also when the
# connection lands on itself (masqueraded to the node's address, else the
# pod would drop a packet from its own address); when it lands on another
# backend, that one sees the pod's own address.  TCP and UDP.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-hairpin

ports='[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]'
svc_ports='"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080},
	{"name":"dns","protocol":"UDP","port":53,"targetPort":8080}]'
cfg=$E2E_TMP/hairpin.json
k8s_list \
	"$(k8s_service e2e self "\"clusterIP\":\"198.19.0.16\",$svc_ports")" \
	"$(k8s_slice e2e self "$ports" 198.18.65.10@node-a)" \
	"$(k8s_service e2e pair "\"clusterIP\":\"198.19.0.26\",$svc_ports")" \
	"$(k8s_slice e2e pair "$ports" 198.18.65.10@node-a 198.18.65.11@node-a)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out udp port
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	for udp in "" --udp; do
		port=80
		[ -n "$udp" ] && port=53
		say "a1 -> its own single-endpoint service 198.19.0.16:$port $udp"
		probe "$o" a1 198.19.0.16 $port 20 $udp
		expect_only "$o" a1
		expect_peer "$o" "$E2E_NODE_IP"
		say "a1 -> 198.19.0.26:$port $udp (a1 and a2) x150"
		probe "$o" a1 198.19.0.26 $port 150 $udp
		expect_spread "$o" 5 a1 a2
		awk '$2 == "a1" && $3 != "'"$E2E_NODE_IP"'" { bad = 1 } END { exit bad }' "$o" ||
			fail "a1 reached itself without masquerade: $(grep ' a1 ' "$o" | sort | uniq -c)"
		awk '$2 == "a2" && $3 != "198.18.65.10" { bad = 1 } END { exit bad }' "$o" ||
			fail "a2 did not see a1's own address: $(grep ' a2 ' "$o" | sort | uniq -c)"
	done
}

e2e_for_each_backend run
