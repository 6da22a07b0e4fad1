#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A service with no endpoints is REJECTed: TCP and UDP clients get
# "connection refused" at once (each attempt has a 1s deadline, so a drop
# would show as a timeout) - from the node, from a pod, from outside
# through the cluster IP, the NodePort and an external IP (kube-proxy guards
# external IPs on INPUT/FORWARD only, so not from the node itself).  A
# neighbouring service with endpoints keeps working.
# So that "refused" means svcnat's REJECT and not a closed port, the node
# itself listens on the node port (TCP and UDP 30082) and on 30083, which
# no service uses: 30083 answers from everywhere, 30082 is refused.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-no-endpoints

cfg=$E2E_TMP/empty.json
k8s_list \
	"$(k8s_service e2e empty '"type":"NodePort","clusterIP":"198.19.0.14","externalIPs":["198.18.200.14"],"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30082},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30082}]')" \
	"$(k8s_slice e2e empty '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]')" \
	"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
	"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080}]' 198.18.65.10@node-a)" >"$cfg"

run() {
	local backend=$1 o=$E2E_TMP/out from dst port
	topo_add_pod a1 198.18.65.10
	start_servers 8080
	in_ns node "$NAMESRV" serve --daemon --name nodelistener --port 30082 --port 30083 \
		--timeout "$E2E_SERVER_TIMEOUT" </dev/null >>"$E2E_TMP/server.node.log" 2>&1 ||
		fail "the node's listener did not start: $(cat "$E2E_TMP/server.node.log")"
	for from in node podclient client1; do
		say "$from -> node:30083 (no service) tcp+udp: the node's listener answers"
		probe "$o" "$from" "$E2E_NODE_IP" 30083 2 --timeout-ms 1000
		expect_only "$o" nodelistener
		probe "$o" "$from" "$E2E_NODE_IP" 30083 2 --udp --timeout-ms 1000
		expect_only "$o" nodelistener
	done
	svcnat_sync "$backend" "$cfg"

	for from in node podclient client1; do
		for dst in 198.19.0.14:80 198.18.200.14:80 "$E2E_NODE_IP:30082"; do
			port=${dst#*:}
			[ "$from" = node ] && [ "$dst" = 198.18.200.14:80 ] && continue
			say "$from -> $dst tcp+udp: refused"
			probe "$o" "$from" "${dst%:*}" "$port" 3 --timeout-ms 1000
			expect_outcome "$o" refused
			[ "$port" = 80 ] && port=53
			probe "$o" "$from" "${dst%:*}" "$port" 3 --udp --timeout-ms 1000
			expect_outcome "$o" refused
		done
	done
	say "the service with an endpoint still answers"
	probe "$o" podclient 198.19.0.10 80 5
	expect_only "$o" a1
}

e2e_for_each_backend run
