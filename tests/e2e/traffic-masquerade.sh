#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Masquerade decisions, as the backends see them: traffic from outside the
# cluster CIDR (an outside client through the NodePort or the cluster IP,
# the node itself) arrives from the node's address, at a local and at a
# remote backend alike; traffic from a pod arrives from the pod's own
# address.  TCP and UDP.  Then the same with kube-proxy's
# --detect-local-mode=InterfaceNamePrefix (pods are told by the interface
# they arrive on).
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-masquerade

cfg=$E2E_TMP/masq.json
k8s_list \
	"$(k8s_service e2e web '"type":"NodePort","clusterIP":"198.19.0.10","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30080}]')" \
	"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		198.18.65.10@node-a 198.18.66.10@node-b)" >"$cfg"

# check FROM IP PORT SEEN [--udp]: both backends reached, all saw SEEN
check() {
	local from=$1 ip=$2 port=$3 seen=$4 o=$E2E_TMP/out
	shift 4
	probe "$o" "$from" "$ip" "$port" 100 "$@"
	expect_spread "$o" 5 a1 b1
	expect_peer "$o" "$seen"
	say "$from -> $ip:$port $*: a1 and b1 saw $seen ($(summary "$o"))"
}

run() {
	local backend=$1 udp
	topo_add_pod a1 198.18.65.10 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg"

	for udp in "" --udp; do
		local port=80
		[ -n "$udp" ] && port=53
		check client1 "$E2E_NODE_IP" 30080 "$E2E_NODE_IP" $udp
		check client1 198.19.0.10 $port "$E2E_NODE_IP" $udp
		check node 198.19.0.10 $port "$E2E_NODE_IP" $udp
		check podclient 198.19.0.10 $port "$E2E_PODCLIENT_IP" $udp
	done

	# kube-proxy's interface detector: the pods' links on the node are
	# named p<octets>, the outside client's vc1.
	say "--detect-local-mode=InterfaceNamePrefix --pod-interface-name-prefix p"
	svcnat_sync "$backend" "$cfg" --detect-local-mode=InterfaceNamePrefix --pod-interface-name-prefix p
	check client1 198.19.0.10 80 "$E2E_NODE_IP"
	check node 198.19.0.10 80 "$E2E_NODE_IP"
	check podclient 198.19.0.10 80 "$E2E_PODCLIENT_IP"
	say "a prefix no pod link has: the pod's traffic is masqueraded too (the -i match decides)"
	svcnat_sync "$backend" "$cfg" --detect-local-mode=InterfaceNamePrefix --pod-interface-name-prefix zz
	check podclient 198.19.0.10 80 "$E2E_NODE_IP"
}

e2e_for_each_backend run
