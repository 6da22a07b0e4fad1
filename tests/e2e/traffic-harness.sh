#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Self-test of the real-traffic harness, without svcnat: the topology routes
# between every namespace, and hand-written iptables-legacy rules in the
# node namespace give each outcome the svcnat tests rely on (spread over
# backends, masquerade seen by the backend, refused, dropped = timeout).
# When this fails, the harness is broken, not svcnat.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-harness

say "topology"
topo_up
topo_add_pod a1 198.18.65.10
topo_add_pod a2 198.18.65.11
topo_add_pod b1 198.18.66.10
say "servers"
start_servers 8080
o=$E2E_TMP/out

say "plain routing: every pod from client1, node and podclient, nothing rewritten"
for ip in 198.18.65.10 198.18.65.11 198.18.66.10; do
	probe "$o" client1 "$ip" 8080 3
	expect_peer "$o" "$E2E_CLIENT1_IP"
	probe "$o" client1 "$ip" 8080 3 --udp
	expect_peer "$o" "$E2E_CLIENT1_IP"
	probe "$o" podclient "$ip" 8080 3
	expect_peer "$o" "$E2E_PODCLIENT_IP"
	probe "$o" node "$ip" 8080 3
	expect_peer "$o" "$E2E_NODE_IP"
done
probe "$o" client1 198.18.66.10 8080 2
expect_only "$o" b1
probe "$o" client1 "$E2E_NODEB_IP" 8080 2 --timeout-ms 1000
expect_outcome "$o" refused

say "no rules: a cluster IP is unreachable"
probe "$o" podclient 198.19.0.10 80 1
expect_outcome "$o" unreach

say "hand-written DNAT, REJECT and DROP in the node namespace"
in_ns node iptables-legacy-restore -w 10 --noflush <<'RULES' || fail "iptables-legacy-restore"
*nat
:E2E-TCP - [0:0]
:E2E-UDP - [0:0]
-A PREROUTING -d 198.19.0.10/32 -p tcp -j E2E-TCP
-A PREROUTING -d 198.19.0.10/32 -p udp -j E2E-UDP
-A OUTPUT -d 198.19.0.10/32 -p tcp -j E2E-TCP
-A OUTPUT -d 198.19.0.10/32 -p udp -j E2E-UDP
-A E2E-TCP -p tcp -m statistic --mode random --probability 0.33333333349 -j DNAT --to-destination 198.18.65.10:8080
-A E2E-TCP -p tcp -m statistic --mode random --probability 0.50000000000 -j DNAT --to-destination 198.18.65.11:8080
-A E2E-TCP -p tcp -j DNAT --to-destination 198.18.66.10:8080
-A E2E-UDP -p udp -m statistic --mode random --probability 0.33333333349 -j DNAT --to-destination 198.18.65.10:8080
-A E2E-UDP -p udp -m statistic --mode random --probability 0.50000000000 -j DNAT --to-destination 198.18.65.11:8080
-A E2E-UDP -p udp -j DNAT --to-destination 198.18.66.10:8080
-A POSTROUTING ! -s 198.18.64.0/18 -d 198.18.64.0/18 -j MASQUERADE
COMMIT
*filter
-A FORWARD -d 198.19.0.11/32 -j REJECT
-A OUTPUT -d 198.19.0.11/32 -j REJECT
-A FORWARD -d 198.19.0.12/32 -j DROP
COMMIT
RULES

for proto in tcp udp; do
	opt=
	[ $proto = udp ] && opt=--udp
	probe "$o" node 198.19.0.10 80 300 $opt
	expect_spread "$o" 10 a1 a2 b1
	probe "$o" podclient 198.19.0.10 80 300 $opt
	expect_spread "$o" 10 a1 a2 b1
	expect_peer "$o" "$E2E_PODCLIENT_IP"
	probe "$o" client1 198.19.0.10 80 30 $opt
	expect_peer "$o" "$E2E_NODE_IP"
	probe "$o" client1 198.19.0.11 80 3 $opt
	expect_outcome "$o" refused
	probe "$o" node 198.19.0.11 80 3 $opt
	expect_outcome "$o" refused
	probe "$o" client2 198.19.0.12 80 2 --timeout-ms 300 $opt
	expect_outcome "$o" timeout
done

say "namesrv hold: one connection across a change"
in_ns client1 "$NAMESRV" hold --addr 198.19.0.10 --port 80 --wait-file "$E2E_TMP/go" \
	--timeout 20 >"$o.hold" 2>&1 &
hold=$!
for i in $(seq 1 100); do
	[ -s "$o.hold" ] && break
	sleep 0.05
done
touch "$E2E_TMP/go"
wait $hold || fail "hold failed: $(cat "$o.hold")"
[ "$(wc -l <"$o.hold")" = 2 ] && [ "$(sort -u "$o.hold" | wc -l)" = 1 ] ||
	fail "hold: expected the same answer twice: $(cat "$o.hold")"

topo_down
[ -z "$(ip netns list | grep "svcnat-e2e-$$-")" ] || fail "namespaces left behind"
