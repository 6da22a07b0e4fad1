#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon (not --once) on a dual-stack node (issue 14), with real IPv6
# and IPv4 traffic, on every backend that writes ip6tables here
# (e2e_for_each_ipv6_backend: svcnat itself is asked; under CI=true a
# backend in SVCNAT_E2E_IPV6_EXPECTED that does not write IPv6 fails):
#   - a dual-stack NodePort service: every endpoint answers over IPv6 (the
#     off-cluster client masqueraded to the node's IPv6 address) while IPv4
#     clients use its IPv4 cluster IP at the same time;
#   - an IPv6 endpoint removed from the file: the daemon rewrites ip6tables,
#     the endpoint is no longer hit, every other one still is, IPv4 as before;
#   - an IPv6 node address added (--nodeport-addresses 2001:2::/64), learnt
#     over netlink (no --node-ip: the daemon follows the node's addresses):
#     the node port answers on it; removed, its node-port jump goes;
#   - IPv6 UDP conntrack cleanup: one UDP socket to an IPv6-only service;
#     its endpoint removed, the daemon deletes the entry (checked with
#     `conntrack -L -f ipv6` in the node namespace) and the next datagram on
#     the same socket reaches the live endpoint;
#   - a dual-stack LoadBalancer with externalTrafficPolicy Local (one local
#     IPv4 endpoint, two local IPv6 ones and a remote one): its IPv6 ingress
#     IP reaches only the local endpoints (client address kept); its
#     health-check node port answers 200 on the node's IPv6 address with
#     localEndpoints 2 and on its IPv4 address with 1 (each family counts
#     its own, as kube-proxy's per-family proxiers);
#   - /metrics carries the ip_family="IPv6" series with the IPv6 rules.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-dualstack
TOPO_IPV6=1
command -v curl >/dev/null || e2e_skip "needs 'curl'"
command -v conntrack >/dev/null || e2e_skip "needs 'conntrack' (contrib/install-deps installs it)"

HC=32000
http='[{"name":"http","protocol":"TCP","port":8080}]'
dns='[{"name":"dns","protocol":"UDP","port":5353}]'
ADDR6=2001:2::5

# config FILE WEB6 DNS6: the services; WEB6 and DNS6 are the IPv6 endpoints
# (IP@NODE, space separated) of web and dns6
config() {
	local f=$1 web6=$2 dns6=$3
	# shellcheck disable=SC2086
	k8s_list \
		"$(k8s_service e2e web '"type":"NodePort","clusterIP":"198.19.0.10",
			"clusterIPs":["198.19.0.10","2001:2:0:f000::10"],"ipFamilies":["IPv4","IPv6"],
			"ipFamilyPolicy":"RequireDualStack","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}]')" \
		"$(k8s_slice e2e web "$http" 198.18.65.10@node-a 198.18.65.11@node-a 198.18.66.10@node-b)" \
		"$(k8s_slice6 e2e web "$http" $web6)" \
		"$(k8s_service e2e dns6 '"type":"ClusterIP","clusterIP":"2001:2:0:f000::53",
			"clusterIPs":["2001:2:0:f000::53"],"ipFamilies":["IPv6"],"ipFamilyPolicy":"SingleStack",
			"ports":[{"name":"dns","protocol":"UDP","port":53,"targetPort":5353}]')" \
		"$(k8s_slice6 e2e dns6 "$dns" $dns6)" \
		"$(k8s_service e2e lb '"type":"LoadBalancer","clusterIP":"198.19.0.20",
			"clusterIPs":["198.19.0.20","2001:2:0:f000::20"],"ipFamilies":["IPv4","IPv6"],
			"ipFamilyPolicy":"PreferDualStack","externalTrafficPolicy":"Local",
			"healthCheckNodePort":'$HC',"ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30081}]' \
			'"loadBalancer":{"ingress":[{"ip":"198.18.200.1"},{"ip":"2001:2:0:200::1"}]}')" \
		"$(k8s_slice e2e lb "$http" 198.18.65.10@node-a)" \
		"$(k8s_slice6 e2e lb "$http" 2001:2:0:65::10@node-a 2001:2:0:65::11@node-a \
			2001:2:0:66::10@node-b)" >"$f.tmp"
	mv "$f.tmp" "$f"
}

wait_for_context() {
	echo "; daemon log: $(tail -n 15 "$E2E_TMP/daemon.log")"
}

# Every failure shows the daemon's log too (then topology.sh's fail).
eval "_topo_fail() $(declare -f fail | tail -n +2)"
fail() {
	echo "--- daemon log (tail) ---" >&2
	tail -n 25 "$E2E_TMP/daemon.log" >&2
	_topo_fail "$@"
}

# save6 TABLE: the node's ip6tables TABLE as the backend wrote it
save6() {
	in_ns node "$SAVE6" -t "$1"
}

# answers IP PORT: a TCP connection from client1 is answered
answers() {
	in_ns client1 "$NAMESRV" client --addr "$1" --port "$2" --count 1 --max-fail 1 --timeout-ms 1000 \
		>"$E2E_TMP/answers" 2>&1
	grep -q '^ok ' "$E2E_TMP/answers"
}

# metric NAME{LABELS}: its value
metric() {
	awk -v m="$1" '$1 == m { print $2 }' "$E2E_TMP/metrics"
}

# ct6 IP: the node's IPv6 UDP conntrack entries whose reply comes from IP
ct6() {
	in_ns node conntrack -L -f ipv6 -p udp 2>/dev/null | grep -c "src=$1 " || true
}

# has_lines FILE N: FILE has at least N lines
has_lines() {
	[ "$(wc -l <"$1")" -ge "$2" ]
}

# udp_send N: the kept socket sends datagram N; ANS is who answered
udp_send() {
	touch "$E2E_TMP/send.$1"
	wait_for 10 "answer to datagram $1" has_lines "$E2E_TMP/udp.out" "$1"
	ANS=$(awk -v n="$1" 'NR == n { print $1 }' "$E2E_TMP/udp.out")
}

run() {
	local backend=$1 cfg=$E2E_TMP/conf.json o=$E2E_TMP/o o4=$E2E_TMP/o4 pid first other n
	SAVE6=$(e2e_save6 "$backend")
	: >"$E2E_TMP/daemon.log"
	topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10
	start_servers 8080 5353
	config "$cfg" "2001:2:0:65::10@node-a 2001:2:0:65::11@node-a 2001:2:0:66::10@node-b" \
		"2001:2:0:65::10@node-a 2001:2:0:65::11@node-a"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
		--backend="$backend" --hostname "$E2E_HOSTNAME" --lock-wait 30000 \
		--cluster-cidr "$E2E_CLUSTER_CIDR,$E2E_CLUSTER_CIDR6" \
		--nodeport-addresses 198.18.0.0/24,2001:2::/64 --config "$cfg" \
		--iptables-min-sync-period 200ms --iptables-sync-period 30s --v=2 \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	E2E_BG_PIDS+=($!)
	# The xtables lock is the host's (/run is not private here): another
	# test's commit may hold it for a while (--lock-wait 30000).
	wait_for 60 "initial sync" grep -q 'sync (initial)' "$E2E_TMP/daemon.log"
	save6 nat | grep -q '^-A KUBE-SERVICES -d 2001:2:0:f000::10/128' ||
		fail "no IPv6 service rule in $SAVE6: $(save6 nat)"

	say "client1 -> [2001:2:0:f000::10]:80 x300 and client2 -> 198.19.0.10:80 x300 at once"
	probe "$o4" client2 198.19.0.10 80 300 &
	pid=$!
	probe "$o" client1 2001:2:0:f000::10 80 300
	wait "$pid" || fail "the IPv4 client failed"
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_NODE_IP6"
	expect_spread "$o4" 10 a1 a2 b1
	expect_peer "$o4" "$E2E_NODE_IP"
	say "  IPv6: $(summary "$o")  IPv4: $(summary "$o4")"

	say "b1's IPv6 endpoint leaves the file: the daemon rewrites ip6tables"
	config "$cfg" "2001:2:0:65::10@node-a 2001:2:0:65::11@node-a" \
		"2001:2:0:65::10@node-a 2001:2:0:65::11@node-a"
	wait_for 45 "2001:2:0:66::10 gone from web's IPv6 rules" \
		eval "! save6 nat | grep -q -- '-A KUBE-SEP-.*web:http.* --to-destination \[2001:2:0:66::10\]'"
	probe "$o4" client2 198.19.0.10 80 200 &
	pid=$!
	probe "$o" client1 2001:2:0:f000::10 80 200
	wait "$pid" || fail "the IPv4 client failed"
	expect_spread "$o" 15 a1 a2
	expect_spread "$o4" 10 a1 a2 b1
	say "  IPv6: $(summary "$o")  IPv4: $(summary "$o4")"

	say "a node address $ADDR6 (in --nodeport-addresses 2001:2::/64), learnt over netlink"
	# Not the node's yet: the packet is routed on (node-b sends it back
	# until its hop limit runs out), never answered.
	answers "$ADDR6" 30080 && fail "[$ADDR6]:30080 answered before it is the node's address"
	in_ns node ip -6 addr add "$ADDR6/128" dev vc1 nodad || fail "ip addr add $ADDR6"
	# The probe above left an un-NATed SYN_SENT conntrack entry (its SYN
	# was routed on); a later SYN from the same source port would follow
	# it past the nat table.  Not svcnat's: drop it.
	in_ns node conntrack -D -f ipv6 -d "$ADDR6" >/dev/null 2>&1
	wait_for 45 "the node port on [$ADDR6]" answers "$ADDR6" 30080
	save6 nat | grep -q "^-A KUBE-SERVICES -d $ADDR6/128 .* -j KUBE-NODEPORTS" ||
		fail "no node-port jump for $ADDR6: $(save6 nat | grep KUBE-NODEPORTS)"
	grep -q 'node addresses changed' "$E2E_TMP/daemon.log" || fail "no 'node addresses changed'"
	probe "$o" client1 "$ADDR6" 30080 100
	grep -q '^ok' "$o" && ! grep -qv '^ok' "$o" ||
		fail "[$ADDR6]:30080: $(summary "$o"); conntrack: $(in_ns node conntrack -L -f ipv6 -d "$ADDR6" 2>&1 | head -n 5); rules: $(save6 nat | grep -e KUBE-NODEPORTS -e "$ADDR6")"
	expect_spread "$o" 15 a1 a2
	expect_peer "$o" "$E2E_NODE_IP6"
	say "  [$ADDR6]:30080: $(summary "$o")"
	in_ns node ip -6 addr del "$ADDR6/128" dev vc1 || fail "ip addr del $ADDR6"
	wait_for 45 "the node-port jump for $ADDR6 gone" \
		eval "! save6 nat | grep -q -- '-d $ADDR6/128'"
	say "  address removed: its node-port jump is gone"

	say "IPv6 UDP: one socket from podclient to [2001:2:0:f000::53]:53"
	rm -f "$E2E_TMP/send."* "$E2E_TMP/udp.out"
	: >"$E2E_TMP/udp.out"
	ip netns exec "$(ns_name podclient)" timeout 120 bash -c '
		exec 3<>/dev/udp/2001:2:0:f000::53/53 || exit 1
		for n in 1 2 3; do
			for i in $(seq 1 600); do [ -e "$0.$n" ] && break; sleep 0.1; done
			echo hello >&3
			timeout 2 dd bs=512 count=1 status=none <&3 || echo timeout
		done' "$E2E_TMP/send" >>"$E2E_TMP/udp.out" 2>&1 &
	E2E_BG_PIDS+=($!)
	udp_send 1
	first=$ANS
	case $first in
	a1) other=a2 ;;
	a2) other=a1 ;;
	*) fail "first datagram: $(cat "$E2E_TMP/udp.out")" ;;
	esac
	declare -A ip6of=([a1]=2001:2:0:65::10 [a2]=2001:2:0:65::11)
	udp_send 2
	[ "$ANS" = "$first" ] || fail "the socket should stick to $first: $(cat "$E2E_TMP/udp.out")"
	[ "$(ct6 "${ip6of[$first]}")" -ge 1 ] ||
		fail "no IPv6 conntrack entry from ${ip6of[$first]}: $(in_ns node conntrack -L -f ipv6 2>&1)"
	say "  served by $first; conntrack -f ipv6 has its entry; $first leaves the file"
	config "$cfg" "2001:2:0:65::10@node-a 2001:2:0:65::11@node-a" "${ip6of[$other]}@node-a"
	wait_for 45 "conntrack: deleted" grep -q 'conntrack: deleted [1-9]' "$E2E_TMP/daemon.log"
	[ "$(ct6 "${ip6of[$first]}")" = 0 ] ||
		fail "an IPv6 conntrack entry from ${ip6of[$first]} is left: $(in_ns node conntrack -L -f ipv6 2>&1)"
	udp_send 3
	[ "$ANS" = "$other" ] || fail "next datagram answered by '$ANS', expected the live $other"
	say "  entry deleted ($(grep 'conntrack:' "$E2E_TMP/daemon.log" | tail -n 1 | sed 's/.*conntrack: //')); next datagram: $ANS"

	say "LoadBalancer [2001:2:0:200::1]:80, externalTrafficPolicy Local: a1, a2, client kept"
	probe "$o" client1 2001:2:0:200::1 80 100
	expect_spread "$o" 15 a1 a2
	expect_peer "$o" "$E2E_CLIENT1_IP6"
	say "  $(summary "$o")"
	say "health check [$E2E_NODE_IP6]:$HC over IPv6 and $E2E_NODE_IP:$HC over IPv4"
	wait_for 10 "health check over IPv6" in_ns client1 curl -sSf -g -o "$E2E_TMP/hc" \
		"http://[$E2E_NODE_IP6]:$HC/"
	grep -q '"localEndpoints": 2,' "$E2E_TMP/hc" || fail "IPv6 health check body: $(cat "$E2E_TMP/hc")"
	grep -q '"name": "lb"' "$E2E_TMP/hc" || fail "health check body: $(cat "$E2E_TMP/hc")"
	say "  IPv6: 200 $(tr -d '\n\t' <"$E2E_TMP/hc")"
	in_ns client1 curl -sSf -o "$E2E_TMP/hc" "http://$E2E_NODE_IP:$HC/" || fail "IPv4 health check"
	grep -q '"localEndpoints": 1,' "$E2E_TMP/hc" || fail "IPv4 health check body: $(cat "$E2E_TMP/hc")"
	say "  IPv4: 200 $(tr -d '\n\t' <"$E2E_TMP/hc")"

	in_ns node curl -sS "http://127.0.0.1:10249/metrics" >"$E2E_TMP/metrics" || fail "curl /metrics"
	local m v
	for m in 'kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv6",table="nat"}' \
		'kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv6",table="filter"}' \
		'kubeproxy_sync_proxy_rules_iptables_last{ip_family="IPv6",table="nat"}' \
		'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"}' \
		'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv6"}' \
		'kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv6"}'; do
		v=$(metric "$m")
		[ -n "$v" ] && [ "$v" != 0 ] || fail "/metrics: $m is '${v:-absent}'"
	done
	v=$(metric 'kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv6",table="nat"}')
	[ "$v" = "$(save6 nat | grep -c '^-A')" ] ||
		fail "IPv6 nat rules: metric $v, $SAVE6 $(save6 nat | grep -c '^-A')"
	# svcnat's own gauges sum both families: 2 IPv4 service ports (web,
	# lb) and 3 IPv6 ones (web, dns6, lb); the nat chains of both tables.
	v=$(metric 'svcnat_services')
	[ "$v" = 5 ] || fail "svcnat_services: '$v', not the 2 IPv4 + 3 IPv6 service ports"
	v=$(metric 'svcnat_chains{table="nat"}')
	n=$(( $(in_ns node "${SAVE6/ip6tables/iptables}" -t nat | grep -c '^:KUBE-') +
		$(save6 nat | grep -c '^:KUBE-') ))
	[ "$v" = "$n" ] || fail "svcnat_chains{table=\"nat\"}: '$v', the two nat tables have $n"
	v=$(metric 'kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family="IPv6",traffic_policy="external"}')
	[ "$v" = 0 ] || fail "IPv6 no_local_endpoints external: '$v'"
	say "  metrics: IPv6 nat rules $(metric 'kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv6",table="nat"}') (= $SAVE6), filter $(metric 'kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv6",table="filter"}')"
	if [ -n "${E2E_VERBOSE:-}" ]; then cat "$E2E_TMP/daemon.log"; fi
}

e2e_for_each_ipv6_backend run
