#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Replacing kube-proxy, and going back, with traffic flowing, on every
# backend.  The node's tables first hold what kube-proxy itself writes for
# its own TestOverallIPTablesRules services (tests/data/kube-proxy/, moved to
# the test's addresses by tests/e2e/kubeproxy.py: its jump rules in the
# built-in chains, its canary chains and what its IPv6 proxier writes on a
# dual-stack node included), loaded with the iptables-restore flavour the
# backend reads.  Then, while clients connect
# without pause to a cluster IP, a two-endpoint cluster IP and a node port:
#  - svcnat's daemon starts on the same Services and EndpointSlices: its first
#    sync finds kube-proxy's rules to be exactly its plan and writes no rule;
#    every table of both families is as kube-proxy left it, counters
#    included: adopted in place, nothing flushed; kube-proxy's
#    KUBE-PROXY-CANARY chains (filter, nat, mangle) stay: kube-proxy's
#    iptables monitor makes them, svcnat never does;
#  - svcnat is stopped (SIGTERM): the rules stay;
#  - kube-proxy's next sync (its restore input again, as it writes it at
#    every sync) takes the chains back;
# and not one connection failed.
. "$(dirname "$0")/lib/topology.sh"
e2e_init kube-proxy-takeover
e2e_need_svcnat

KP=$top_srcdir/tests/e2e/kubeproxy.py
python3 "$KP" rules "$top_srcdir/tests/data/kube-proxy/overall.rules" >"$E2E_TMP/kp.rules" ||
	fail "kubeproxy.py rules"
python3 "$KP" rules6 >"$E2E_TMP/kp6.rules" || fail "kubeproxy.py rules6"
python3 "$KP" objects >"$E2E_TMP/kp.json" || fail "kubeproxy.py objects"
DAEMON=

wait_for_context() { echo "; daemon log: $(tail -n 20 "$E2E_TMP/daemon.log" 2>/dev/null)"; }

flavour() { # the iptables flavour backend $1 writes
	case $1 in
	direct | libiptc) echo legacy ;;
	nft) echo nft ;;
	*) iptables --version 2>/dev/null | grep -q nf_tables && echo nft || echo legacy ;;
	esac
}

# tables FLAVOUR: the node's tables of both families with their rule
# counters, as iptables-save prints them (comments, chain counters and the
# canary chains aside)
tables() {
	{ in_ns node "iptables-$1-save" -c; in_ns node "ip6tables-$1-save" -c; } 2>/dev/null |
		grep -v -e '^#' -e KUBE-PROXY-CANARY | sed 's/^\(:[^ ]* [^ ]*\) \[[0-9]*:[0-9]*\]$/\1/'
}

# canaries FLAVOUR: the tables holding kube-proxy's canary chain
canaries() {
	local save t
	for save in iptables ip6tables; do
		for t in filter nat mangle; do
			in_ns node "$save-$1-save" -t "$t" 2>/dev/null | grep -q '^:KUBE-PROXY-CANARY ' &&
				printf '%s ' "$save/$t"
		done
	done
}

# rules FLAVOUR: the same without any counters
rules() {
	tables "$1" | sed 's/^\[[0-9]*:[0-9]*\] //'
}

# traffic: connections without pause until $E2E_TMP/stop exists (at most
# 400 rounds, 180 s); one line per connection in $E2E_TMP/traffic.log
traffic() {
	local i=0 end=$((SECONDS + 180))
	while [ ! -e "$E2E_TMP/stop" ] && [ $i -lt 400 ] && [ $SECONDS -lt $end ]; do
		in_ns podclient "$NAMESRV" client --addr 198.19.0.41 --port 80 --count 1 --timeout-ms 2000
		in_ns podclient "$NAMESRV" client --addr 198.19.0.44 --port 80 --count 1 --timeout-ms 2000
		in_ns client1 "$NAMESRV" client --addr "$E2E_NODE_IP" --port 3003 --count 1 --timeout-ms 2000
		i=$((i + 1))
	done >>"$E2E_TMP/traffic.log" 2>&1
}

healthy() { in_ns node curl -sf --max-time 3 http://127.0.0.1:10256/healthz >/dev/null; }

rounds() { grep -c '^ok ' "$E2E_TMP/traffic.log" 2>/dev/null; }

more_traffic() { # wait until 6 more connections succeeded
	local n
	n=$(rounds)
	wait_for 30 "6 more connections" sh -c "[ \$(grep -c '^ok ' '$E2E_TMP/traffic.log') -ge $((n + 6)) ]"
}

run() {
	local b=$1 fl tp
	fl=$(flavour "$b")
	rm -f "$E2E_TMP/stop" "$E2E_TMP/traffic.log"
	: >"$E2E_TMP/daemon.log"
	topo_add_pod p1 198.18.65.1 p2 198.18.65.2 p3 198.18.65.3 p4 198.18.65.4 p5 198.18.65.5
	start_servers 80
	in_ns node "iptables-$fl-restore" --noflush <"$E2E_TMP/kp.rules" ||
		fail "$b: iptables-$fl-restore of kube-proxy's rules"
	in_ns node "ip6tables-$fl-restore" --noflush <"$E2E_TMP/kp6.rules" ||
		fail "$b: ip6tables-$fl-restore of kube-proxy's IPv6 rules"
	probe "$E2E_TMP/probe" podclient 198.19.0.41 80 5
	expect_only "$E2E_TMP/probe" p1
	say "$b: kube-proxy's rules ($fl) carry the traffic"

	traffic &
	tp=$!
	E2E_BG_PIDS+=("$tp")
	more_traffic
	rules "$fl" >"$E2E_TMP/kp.save"
	tables "$fl" >"$E2E_TMP/kp.counters"

	# --nfacct off: kubeproxy.py's rules are those of a kube-proxy that
	# made no nfacct counter (with them, auto would add the matches).
	ip netns exec "$(ns_name node)" timeout --kill-after=10 300 "$SVCNAT" --backend="$b" \
		--config "$E2E_TMP/kp.json" --hostname test-node --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --lock-wait 30000 --sync-period 1h -v --v=4 \
		--nfacct off \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
	wait_for 60 "$b: svcnat's first sync" healthy
	wait_for 10 "$b: svcnat's first sync logged" grep -q 'sync (initial)' "$E2E_TMP/daemon.log"
	grep -q 'sync (initial): .* 0 rules written' "$E2E_TMP/daemon.log" ||
		fail "$b: svcnat's first sync wrote rules into kube-proxy's tables: $(grep sync "$E2E_TMP/daemon.log" | tail -5)"
	[ "$(canaries "$fl")" = "iptables/filter iptables/nat iptables/mangle ip6tables/filter ip6tables/nat ip6tables/mangle " ] ||
		fail "$b: kube-proxy's canaries after svcnat's first sync: $(canaries "$fl")"
	rules "$fl" >"$E2E_TMP/sv.save"
	diff -u "$E2E_TMP/kp.save" "$E2E_TMP/sv.save" >"$E2E_TMP/diff" ||
		fail "$b: svcnat changed kube-proxy's tables: $(cat "$E2E_TMP/diff")"
	# Every rule's counters went on from where they were (none reset).
	python3 - "$E2E_TMP/kp.counters" <(tables "$fl") <<-'EOF' || fail "$b: counters were reset"
		import re, sys
		def load(p):
		    out = []
		    for line in open(p):
		        m = re.match(r"\[(\d+):(\d+)\] (.*)", line.rstrip("\n"))
		        if m:
		            out.append((m.group(3), int(m.group(1))))
		    return out
		a, b = load(sys.argv[1]), load(sys.argv[2])
		if [r for r, _ in a] != [r for r, _ in b]:
		    sys.exit("the rules differ")
		low = [r for (r, x), (_, y) in zip(a, b) if y < x]
		if low:
		    sys.exit("counters went down: " + "; ".join(low))
	EOF
	more_traffic
	say "$b: svcnat took over in place: nothing written, nothing flushed, counters kept"

	kill -TERM "$DAEMON" 2>/dev/null
	wait "$DAEMON" 2>/dev/null
	DAEMON=
	rules "$fl" >"$E2E_TMP/stopped.save"
	diff -u "$E2E_TMP/kp.save" "$E2E_TMP/stopped.save" >"$E2E_TMP/diff" ||
		fail "$b: stopping svcnat changed the tables: $(cat "$E2E_TMP/diff")"
	more_traffic
	say "$b: svcnat stopped, its rules stay"

	in_ns node "iptables-$fl-restore" --noflush <"$E2E_TMP/kp.rules" &&
		in_ns node "ip6tables-$fl-restore" --noflush <"$E2E_TMP/kp6.rules" ||
		fail "$b: kube-proxy's next sync (ip(6)tables-$fl-restore)"
	[ "$(canaries "$fl")" = "iptables/filter iptables/nat iptables/mangle ip6tables/filter ip6tables/nat ip6tables/mangle " ] ||
		fail "$b: kube-proxy's canaries after its sync: $(canaries "$fl")"
	more_traffic
	touch "$E2E_TMP/stop"
	wait "$tp" 2>/dev/null
	grep -v '^ok ' "$E2E_TMP/traffic.log" >"$E2E_TMP/failed" &&
		fail "$b: connections failed: $(head -5 "$E2E_TMP/failed") ($(wc -l <"$E2E_TMP/failed") of $(wc -l <"$E2E_TMP/traffic.log"))"
	say "$b: kube-proxy's next sync took the chains back; $(rounds) connections, none failed"
}

e2e_for_each_backend run
