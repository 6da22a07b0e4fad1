#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# sessionAffinity ClientIP: repeated connections from one client reach one
# backend (TCP and UDP; through the cluster IP from a pod and from the node,
# through the NodePort from outside).  A twin service without affinity,
# same endpoints, spreads over all of them from the same client, so the
# single backend is the affinity's doing.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-affinity

ports='[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]'
cfg=$E2E_TMP/affinity.json
k8s_list \
	"$(k8s_service e2e sticky '"type":"NodePort","clusterIP":"198.19.0.15","sessionAffinity":"ClientIP",
		"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":600}},"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30083},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30083}]')" \
	"$(k8s_slice e2e sticky "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(k8s_service e2e twin '"type":"ClusterIP","clusterIP":"198.19.0.25","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080}]')" \
	"$(k8s_slice e2e twin "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out from name
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	for from in podclient node; do
		probe "$o" "$from" 198.19.0.15 80 60
		name=$(expect_single "$o") || exit 1
		say "$from -> 198.19.0.15:80/tcp x60: all to $name"
		probe "$o" "$from" 198.19.0.15 53 60 --udp
		name=$(expect_single "$o") || exit 1
		say "$from -> 198.19.0.15:53/udp x60: all to $name"
	done
	probe "$o" client1 "$E2E_NODE_IP" 30083 60
	name=$(expect_single "$o") || exit 1
	say "client1 -> node:30083/tcp x60: all to $name"
	probe "$o" client2 "$E2E_NODE_IP" 30083 60 --udp
	name=$(expect_single "$o") || exit 1
	say "client2 -> node:30083/udp x60: all to $name"

	say "the twin without affinity spreads from the same client"
	probe "$o" podclient 198.19.0.25 80 150
	expect_spread "$o" 5 a1 a2 b1
	probe "$o" podclient 198.19.0.25 53 150 --udp
	expect_spread "$o" 5 a1 a2 b1
}

e2e_for_each_backend run
