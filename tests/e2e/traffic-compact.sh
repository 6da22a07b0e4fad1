#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The compact layout (--compact-endpoints-threshold 1: past one endpoint,
# no KUBE-SEP- chains; DNAT straight from the service chain) with real
# traffic: every endpoint is reached (TCP and UDP), ClientIP affinity
# sticks (-m recent --update), a pod reaching its own service gets through
# and is masqueraded wherever it lands, the kernel holds no KUBE-SEP- chain
# (iptables-save) and reads back as planned (--diff).
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-compact

ports='[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]'
svc_ports='"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080},
	{"name":"dns","protocol":"UDP","port":53,"targetPort":8080}]'
cfg=$E2E_TMP/compact.json
k8s_list \
	"$(k8s_service e2e spread "\"clusterIP\":\"198.19.0.27\",$svc_ports")" \
	"$(k8s_slice e2e spread "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(k8s_service e2e sticky "\"clusterIP\":\"198.19.0.28\",\"sessionAffinity\":\"ClientIP\",
		\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":600}},$svc_ports")" \
	"$(k8s_slice e2e sticky "$ports" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	>"$cfg"

# save BACKEND: the node's nat table as the backend wrote it
save() { node_nat_save "$1"; }

run() {
	local backend=$1 o=$E2E_TMP/out save=$E2E_TMP/save udp port from name
	topo_add_pod a1 198.18.65.10 \
		a2 198.18.65.11 \
		b1 198.18.66.10
	start_servers 8080
	svcnat_sync "$backend" "$cfg" --compact-endpoints-threshold 1

	save "$backend" >"$save" || fail "iptables-save failed"
	grep -q '^:KUBE-SVC-' "$save" || fail "no KUBE-SVC- chain in the kernel: $(cat "$save")"
	! grep -Eq '^:KUBE-SEP-|-j KUBE-SEP-' "$save" ||
		fail "a KUBE-SEP- chain in the compact layout: $(grep -E '^:KUBE-SEP-|-j KUBE-SEP-' "$save")"
	grep -q -- '-m recent --update --seconds 600 --reap --name KUBE-SEP-' "$save" ||
		fail "no '-m recent --update' affinity rule: $(grep -- '-m recent' "$save")"
	say "kernel: no KUBE-SEP- chain, $(grep -c -- '-j DNAT' "$save") DNAT rules in service chains"
	svcnat_run "$backend" --dry-run --diff --config "$cfg" --compact-endpoints-threshold 1 ||
		fail "the kernel differs from the compact plan: $(cat "$E2E_TMP/svcnat.log")"

	for udp in "" --udp; do
		port=80
		[ -n "$udp" ] && port=53
		say "podclient -> 198.19.0.27:$port $udp x150: every endpoint"
		probe "$o" podclient 198.19.0.27 $port 150 $udp
		expect_spread "$o" 5 a1 a2 b1
		expect_peer "$o" "$E2E_PODCLIENT_IP"
		for from in podclient node; do
			probe "$o" "$from" 198.19.0.28 $port 60 $udp
			name=$(expect_single "$o") || exit 1
			say "$from -> 198.19.0.28:$port $udp x60 (ClientIP affinity): all to $name"
		done
		say "a1 -> its own service 198.19.0.27:$port $udp x150: masqueraded everywhere"
		probe "$o" a1 198.19.0.27 $port 150 $udp
		expect_spread "$o" 5 a1 a2 b1
		expect_peer "$o" "$E2E_NODE_IP"
	done
}

e2e_for_each_backend run
