#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# IPv6 and dual-stack (issue 14) with real traffic, on a dual-stack topology
# (TOPO_IPV6=1: every link also carries 2001:2::/48 addresses, nodad;
# forwarding and ICMPv6 without rate limit in the namespaces):
#   - a dual-stack NodePort service reached over IPv6 by its cluster IP
#     from a client outside the cluster (every endpoint answers, the client
#     is masqueraded to the node's IPv6 address), while IPv4 clients use
#     its IPv4 cluster IP at the same time, and by its node port on the
#     node's IPv6 address;
#   - an IPv6 service without endpoints refuses (icmp6-port-unreachable);
#   - UDP over IPv6;
#   - another program's ip6tables rules stay byte-identical through the
#     sync and --cleanup, which leaves none of svcnat's chains.
# Run on every backend that writes ip6tables here (e2e_for_each_ipv6_backend:
# svcnat itself is asked); the others are named and not run, and under
# CI=true one listed in SVCNAT_E2E_IPV6_EXPECTED (lib/topology.sh) fails.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-ipv6
TOPO_IPV6=1

cfg=$E2E_TMP/ipv6.json
k8s_list \
	"$(k8s_service e2e web '"type":"NodePort","clusterIP":"198.19.0.10",
		"clusterIPs":["198.19.0.10","2001:2:0:f000::10"],"ipFamilies":["IPv4","IPv6"],
		"ipFamilyPolicy":"PreferDualStack","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080},
		{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30053}]')" \
	"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
	"$(k8s_slice6 e2e web '[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]' \
		2001:2:0:65::10@node-a 2001:2:0:65::11@node-a 2001:2:0:66::10@node-b)" \
	"$(k8s_service e2e idle6 '"type":"ClusterIP","clusterIP":"2001:2:0:f000::99",
		"clusterIPs":["2001:2:0:f000::99"],"ipFamilies":["IPv6"],"ports":[
		{"protocol":"TCP","port":81,"targetPort":8080}]')" >"$cfg"

v6args=(--node-ip "$E2E_NODE_IP6" --cluster-cidr "$E2E_CLUSTER_CIDR6")

# Another program's ip6tables rules (its own chain, a rule in a built-in
# chain of each table), in the flavour the backend writes.
foreign6() {
	local save=$1
	in_ns node "${save%-save}" -t nat -N FOREIGN6 &&
		in_ns node "${save%-save}" -t nat -A PREROUTING -s 2001:2:1::99/128 -j FOREIGN6 &&
		in_ns node "${save%-save}" -t filter -A INPUT -s 2001:2:1::98/128 -j ACCEPT ||
		fail "cannot add the foreign ip6tables rules"
}

# The ip6tables text of everything not svcnat's (no KUBE- line).
others6() {
	in_ns node "$1" | grep -v '^#' | grep -v 'KUBE-' | sed 's/\[[0-9]*:[0-9]*\]/[c]/'
}

run() {
	local backend=$1 o=$E2E_TMP/out o4=$E2E_TMP/out4 save pid
	save=$(e2e_save6 "$backend")
	topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10
	start_servers 8080
	foreign6 "$save"
	others6 "$save" >"$E2E_TMP/others.before"
	svcnat_sync "$backend" "$cfg" "${v6args[@]}"
	in_ns node "$save" -t nat | grep -q '^-A KUBE-SERVICES -d 2001:2:0:f000::10/128' ||
		fail "no IPv6 service rule in $save: $(in_ns node "$save" -t nat)"

	say "client1 -> [2001:2:0:f000::10]:80/tcp x300, client2 -> 198.19.0.10:80 x300 at once"
	probe "$o4" client2 198.19.0.10 80 300 &
	pid=$!
	probe "$o" client1 2001:2:0:f000::10 80 300
	wait "$pid" || fail "the IPv4 client failed"
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP6"
	say "  IPv6: $(summary "$o")"
	expect_spread "$o4" 10 a1 a2 b1
	expect_peer "$o4" "$E2E_NODE_IP"
	say "  IPv4: $(summary "$o4")"

	say "client1 -> [node]:30080/tcp x200"
	probe "$o" client1 "$E2E_NODE_IP6" 30080 200
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP6"
	say "  $(summary "$o")"

	say "client1 -> [2001:2:0:f000::10]:53/udp x200"
	probe "$o" client1 2001:2:0:f000::10 53 200 --udp
	expect_spread "$o" 10 a1 a2 b1
	say "  $(summary "$o")"

	say "client1 -> [2001:2:0:f000::99]:81 (no endpoints): refused"
	# The client's connect sees the ICMPv6 port unreachable of the SYN
	# sent again after 1 s (seen on this kernel also with a plain
	# ip6tables REJECT in INPUT, without svcnat), so each attempt may
	# take a little over 1 s.
	probe "$o" client1 2001:2:0:f000::99 81 3 --timeout-ms 5000
	expect_outcome "$o" refused

	others6 "$save" >"$E2E_TMP/others.synced"
	diff -u "$E2E_TMP/others.before" "$E2E_TMP/others.synced" ||
		fail "the sync changed another program's ip6tables rules"
	svcnat_run "$backend" --cleanup || fail "--cleanup failed: $(cat "$E2E_TMP/svcnat.log")"
	in_ns node "$save" | grep -v '^#' | grep 'KUBE-' | grep -v 'KUBE-FIREWALL' &&
		fail "svcnat's ip6tables chains left after --cleanup"
	others6 "$save" >"$E2E_TMP/others.cleaned"
	diff -u "$E2E_TMP/others.before" "$E2E_TMP/others.cleaned" ||
		fail "--cleanup changed another program's ip6tables rules"
	say "  foreign ip6tables rules identical through the sync and --cleanup"
}

e2e_for_each_ipv6_backend run
