#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# ClusterIP, TCP and UDP, from the node itself and from a pod: over a few
# hundred connections every backend (two on this node, one on node-b) is
# reached; a port the service does not have is not.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-clusterip

cfg=$E2E_TMP/clusterip.json
k8s_list \
	"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080}]')" \
	"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out from
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080 53 80
	svcnat_sync "$backend" "$cfg"

	for from in node podclient; do
		say "$from -> 198.19.0.10:80/tcp x300"
		probe "$o" "$from" 198.19.0.10 80 300
		expect_spread "$o" 10 a1 a2 b1
		say "  $(summary "$o")"
		say "$from -> 198.19.0.10:53/udp x300"
		probe "$o" "$from" 198.19.0.10 53 300 --udp
		expect_spread "$o" 10 a1 a2 b1
		say "  $(summary "$o")"
	done
	say "in-cluster source is kept: backends see the pod's address"
	probe "$o" podclient 198.19.0.10 80 20
	expect_peer "$o" "$E2E_PODCLIENT_IP"

	# The pods serve 53/tcp and 80/udp as well: only the service's own
	# protocol/port pairs may be forwarded.
	say "ports the service does not have are not forwarded"
	probe "$o" podclient 198.19.0.10 53 2 --timeout-ms 500
	expect_no_answer "$o"
	probe "$o" podclient 198.19.0.10 80 2 --udp --timeout-ms 500
	expect_no_answer "$o"
}

e2e_for_each_backend run
