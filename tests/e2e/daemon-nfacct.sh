#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon and kube-proxy's nfacct counters, alone in a namespace, per
# backend (SVCNAT_E2E_BACKENDS):
#   - started with --nfacct on it makes the counters
#     ct_state_invalid_dropped_pkts and localhost_nps_accepted_pkts in its
#     namespace and writes kube-proxy's -m nfacct rules;
#   - /metrics has
#     kubeproxy_iptables_localhost_nodeports_accepted_packets_total and
#     kubeproxy_iptables_ct_state_invalid_dropped_packets_total (0), and
#     after one SYN to 127.0.0.1's node port (a raw socket, one packet) the
#     first is 1, as the kernel's counter says; promtool check metrics
#     passes;
#   - `--dry-run --diff --nfacct on` finds the kernel equal to the plan;
#     --nfacct off writes the rules without them and reports no nfacct
#     metric;
#   - auto (the default) makes and counts as on, `--dry-run --diff` without
#     --nfacct agrees, and counters someone deleted (with svcnat's rules
#     that used them) are made again by the next periodic sync, which
#     writes the counted rules back.

. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-nfacct "$@"

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
command -v nfacct >/dev/null || fail "needs the nfacct tool (contrib/install-deps)"
LNP=localhost_nps_accepted_pkts
INV=ct_state_invalid_dropped_pkts
LM=kubeproxy_iptables_localhost_nodeports_accepted_packets_total
IM=kubeproxy_iptables_ct_state_invalid_dropped_packets_total
cp "$top_srcdir/contrib/examples/cluster.json" "$TMP/c.json"
sysctl -qw net.ipv4.conf.all.route_localnet=1
# The node port's DNAT sends the SYN on to an endpoint, masqueraded: a
# route for it, an address to masquerade to.
ip link add nfa0 type veth peer name nfa1 && ip addr add 198.18.0.1/32 dev nfa0 && ip link set nfa0 up && ip link set nfa1 up &&
	ip route add 198.18.64.0/18 dev nfa0 ||
		fail "veth route"

save_for() { # BACKEND
	case $1 in nft | restore) echo iptables-nft-save ;; *) echo iptables-legacy-save ;; esac
}
pkts() { nfacct get "$1" | sed -n 's/.*pkts = \([0-9]*\),.*/\1/p' | sed 's/^0*\([0-9]\)/\1/'; }
scrape() { curl -s --max-time 30 http://127.0.0.1:10249/metrics >"$TMP/metrics"; }
has_family() { scrape && grep -q "^# TYPE $1 counter$" "$TMP/metrics"; }
value_is() { scrape && [ "$(awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics")" = "$2" ]; }
synced() { grep -q 'sync (initial)' "$TMP/log"; }
knock() { # SPORT: one SYN from 127.0.0.1:SPORT to 127.0.0.1:30080
	timeout 10 python3 - "$1" <<'PY'
import socket, struct, sys
sport = int(sys.argv[1])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
hdr = struct.pack("!HHIIBBHHH", sport, 30080, 1, 0, 5 << 4, 0x02, 8192, 0, 0)
lo = socket.inet_aton("127.0.0.1")
hdr = hdr[:16] + struct.pack("!H", csum(lo + lo + struct.pack("!BBH", 0, 6, len(hdr)) + hdr)) + hdr[18:]
socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP).sendto(hdr, ("127.0.0.1", 0))
PY
}

SPORT=41000
run() {
	local b=$1 save before
	save=$(save_for "$b")
	nfacct flush 2>/dev/null
	dn_start "$b" --cluster-cidr 198.18.64.0/18 --v=2 --nfacct on
	wait_for 30 "$b: first sync" synced
	wait_for 10 "$b: $LM on /metrics" has_family "$LM"
	nfacct get $LNP >/dev/null && nfacct get $INV >/dev/null || fail "$b: the counters were not made"
	[ "$($save -t filter | grep -c -- "--ctstate INVALID -m nfacct --nfacct-name  $INV -j DROP")" = 1 ] ||
		fail "$b: no counted INVALID drop"
	[ "$($save -t nat | grep -c -- "-m nfacct --nfacct-name  $LNP")" = 3 ] ||
		fail "$b: not 3 counted localhost node-port rules"
	wait_for 10 "$b: $IM 0" value_is "$IM" 0
	before=$(pkts $LNP)
	SPORT=$((SPORT + 1))
	knock $SPORT || fail "$b: could not send the SYN"
	[ "$(pkts $LNP)" = $((before + 1)) ] || fail "$b: the kernel counted $(pkts $LNP), not $((before + 1))"
	wait_for 10 "$b: $LM $((before + 1))" value_is "$LM" $((before + 1))
	echo "  $b: counters made, rules counted, $LM = $((before + 1)) after one SYN"
	if command -v promtool >/dev/null; then
		scrape
		promtool check metrics <"$TMP/metrics" >"$TMP/promtool" 2>&1
		rc=$?
		# exit 3: lint advice only (kube-proxy's gauges named ..._total)
		if [ "$rc" = 3 ]; then
			! grep -Ev '^kubeproxy_sync_proxy_rules_(iptables|no_local_endpoints)_total non-counter metrics should not have "_total" suffix$' \
				"$TMP/promtool" | grep -q . || rc=1
		fi
		[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "$b: promtool check metrics (exit $rc): $(cat "$TMP/promtool")"
	elif [ "${CI:-}" = true ]; then
		fail "promtool missing (contrib/install-deps installs Debian's prometheus)"
	fi
	"$SVCNAT" --dry-run --diff --backend="$b" --nfacct on --config "$TMP/c.json" --hostname node-a \
		--node-ip 198.18.0.1 --cluster-cidr 198.18.64.0/18 >"$TMP/diff" 2>&1 ||
		fail "$b: --dry-run --diff --nfacct on: $(head -n 20 "$TMP/diff")"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$b: exit $?"
	DAEMON=

	: >"$TMP/log"
	dn_start "$b" --cluster-cidr 198.18.64.0/18 --v=2 --nfacct off
	wait_for 30 "$b: first sync (--nfacct off)" synced
	wait_for 10 "$b: /metrics (--nfacct off)" sh -c "curl -s http://127.0.0.1:10249/metrics | grep -q '^svcnat_syncs_total'"
	! $save | grep -q -- '-m nfacct' || fail "$b: -m nfacct rules with --nfacct off"
	scrape
	! grep -q "nfacct\|$LM\|$IM" "$TMP/metrics" || fail "$b: nfacct metrics with --nfacct off"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$b: exit $? (--nfacct off)"
	DAEMON=
	"$SVCNAT" --cleanup --backend="$b" >/dev/null 2>&1

	# auto (the default): made and counted as with on; a dry run here
	# plans the same (it probes as --once would make them); someone
	# removes svcnat's counted rules and deletes both counters: the next
	# periodic sync makes them again and writes the counted rules back.
	: >"$TMP/log"
	nfacct flush 2>/dev/null
	dn_start "$b" --cluster-cidr 198.18.64.0/18 --v=2 --iptables-sync-period 3s
	wait_for 30 "$b: first sync (auto)" synced
	counted || fail "$b: auto: the counters were not made or the rules not counted"
	"$SVCNAT" --dry-run --diff --backend="$b" --config "$TMP/c.json" --hostname node-a \
		--node-ip 198.18.0.1 --cluster-cidr 198.18.64.0/18 >"$TMP/diff" 2>&1 ||
		fail "$b: --dry-run --diff (auto): $(head -n 20 "$TMP/diff")"
	IPT=${save%-save}
	wait_for 20 "$b: both counters deleted" deleted
	wait_for 30 "$b: counters made again, rules counted again" counted
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$b: exit $? (auto)"
	DAEMON=
	echo "  $b: auto: made, dry run agrees, deleted counters made again by a periodic sync"
	"$SVCNAT" --cleanup --backend="$b" >/dev/null 2>&1
}
counted() {
	nfacct get $LNP >/dev/null 2>&1 && nfacct get $INV >/dev/null 2>&1 &&
		[ "$($save -t filter | grep -c -- "--ctstate INVALID -m nfacct --nfacct-name  $INV -j DROP")" = 1 ] &&
		[ "$($save -t nat | grep -c -- "-m nfacct --nfacct-name  $LNP")" = 3 ]
}
deleted() { # the rules that use them go first (the kernel keeps a counter in use)
	$IPT -w -t filter -F KUBE-FORWARD 2>/dev/null
	$IPT -w -t nat -F KUBE-NODEPORTS 2>/dev/null
	${IPT/iptables/ip6tables} -w -t filter -F KUBE-FORWARD 2>/dev/null
	for c in $LNP $INV; do
		! nfacct get $c >/dev/null 2>&1 || nfacct del $c >/dev/null 2>&1
	done
	! nfacct get $LNP >/dev/null 2>&1 && ! nfacct get $INV >/dev/null 2>&1
}

for b in ${SVCNAT_E2E_BACKENDS:-direct libiptc nft restore}; do
	run "$b"
done
echo PASS
