#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kube-proxy's nfacct rules through every backend, in a fresh namespace
# whose nfacct counters ct_state_invalid_dropped_pkts and
# localhost_nps_accepted_pkts exist (nfacct add):
#   - the golden dry-runs with --nfacct on (tests/data/golden/cluster@nfacct
#     and, where the backend writes ip6tables, dual-stack@nfacct) are taken
#     by the kernel, read back as the plan (iptables-save shows what the
#     renderer prints), and a second sync writes nothing;
#   - traffic counts: one TCP SYN to 127.0.0.1:30080 (shop/web's node port)
#     raises localhost_nps_accepted_pkts by one, and a TCP packet with
#     SYN+FIN, which conntrack marks INVALID, forwarded through the node
#     from a peer namespace raises ct_state_invalid_dropped_pkts by one and
#     goes no further;
#   - the plan without nfacct (cluster.rules) replaces those rules in place.
# Every packet loop is bounded; the peer namespace dies with the test.

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
command -v nfacct >/dev/null || fail "needs the nfacct tool (contrib/install-deps)"
G=$top_srcdir/tests/data/golden
INV=ct_state_invalid_dropped_pkts
LNP=localhost_nps_accepted_pkts

for n in $INV $LNP; do
	nfacct add "$n" || fail "nfacct add $n"
done

# pkts NAME: the counter's packets
pkts() {
	nfacct get "$1" | sed -n 's/.*pkts = \([0-9]*\),.*/\1/p' | sed 's/^0*\([0-9]\)/\1/'
}

# A peer namespace on a veth: 198.18.1.100 there, 198.18.0.1 here; here
# routes 198.18.9.0/24 back to the peer, so that its packets to
# 198.18.9.9 are forwarded (FORWARD, then out the way they came).
ip link set lo up
sysctl -qw net.ipv4.ip_forward=1
unshare -n sleep 300 &
PEER=$!
trap 'kill $PEER 2>/dev/null; rm -rf "$BK_TMP"' EXIT
# Until unshare has made its namespace, $PEER's is still this one: wait
# (bounded) before a veth end is moved there.
for _ in $(seq 1 100); do
	[ "$(readlink /proc/$PEER/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
	sleep 0.05
done
[ "$(readlink /proc/$PEER/ns/net)" != "$(readlink /proc/self/ns/net)" ] || fail "the peer namespace was not made"
ip link add nfa0 type veth peer name nfa1 netns "$PEER" || fail "veth"
ip addr add 198.18.0.1/32 dev nfa0
ip link set nfa0 up
ip route add 198.18.1.100/32 dev nfa0
ip route add 198.18.9.0/24 via 198.18.1.100 dev nfa0 onlink
# The node port's DNAT sends the SYN on to an endpoint 198.18.65.x: via the
# peer too, from 127.0.0.1 as kube-proxy's route_localnet allows.
ip route add 198.18.64.0/18 via 198.18.1.100 dev nfa0 onlink
sysctl -qw net.ipv4.conf.all.route_localnet=1
in_peer() { nsenter -t "$PEER" -n "$@"; }
in_peer ip link set lo up
in_peer ip addr add 198.18.1.100/32 dev nfa1
in_peer ip link set nfa1 up
in_peer ip route add 198.18.0.1/32 dev nfa1
in_peer ip route add default via 198.18.0.1 dev nfa1 onlink
# the peer must not answer for 198.18.9.9 itself, nor drop what comes back
in_peer sysctl -qw net.ipv4.conf.all.rp_filter=0

# segment SRC SPORT DST DPORT FLAGS: one TCP segment through a raw socket (the
# kernel adds the IP header; the checksum is right), in this namespace.
segment() {
	timeout 10 python3 - "$@" <<'PY'
import socket, struct, sys
src, sport, dst, dport = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
flags = int(sys.argv[5], 0)
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
hdr = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, flags, 8192, 0, 0)
pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(hdr))
hdr = hdr[:16] + struct.pack("!H", csum(pseudo + hdr)) + hdr[18:]
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
s.sendto(hdr, (dst, 0))
PY
}

# SYN+FIN (invalid flags: conntrack marks it INVALID) from the peer, to be
# forwarded here; a SYN to the node port on loopback (the packet the nat
# table sees, from a source port of its own: a new connection), sent here.
SPORT=40000
send_synfin() { in_peer bash -c "$(declare -f segment); segment 198.18.1.100 40000 198.18.9.9 80 0x03"; }
knock_localhost() { SPORT=$((SPORT + 1)); segment 127.0.0.1 $SPORT 127.0.0.1 30080 0x02; }

check_plan() { # FILE
	local t
	for t in filter nat; do
		bk_owned "$t" >"$BK_TMP/live.$t"
		bk_plan "$t" "file:$1" >"$BK_TMP/plan.$t"
		diff -u "$BK_TMP/plan.$t" "$BK_TMP/live.$t" >&2 ||
			fail "$BK_NAME: live $t table differs from the plan $1"
	done
}

apply() { # SPEC WANT...
	local spec=$1 w
	shift
	$DRV apply "$spec" >"$BK_TMP/out" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: apply $spec: $(cat "$BK_TMP/err")"
	for w in "$@"; do
		grep -q " $w" "$BK_TMP/out" || fail "$BK_NAME: apply $spec: no '$w' in $(cat "$BK_TMP/out")"
	done
}

run_backend() {
	local b=$1 before after
	bk_use "$b"
	bk_reset

	apply "file:$G/cluster@nfacct.rules" filter=committed nat=committed
	check_plan "$G/cluster@nfacct.rules"
	[ "$(bk_owned filter | grep -c -- "-m nfacct --nfacct-name  $INV")" = 1 ] ||
		fail "$b: no counted INVALID drop"
	[ "$(bk_owned nat | grep -c -- "-m nfacct --nfacct-name  $LNP")" = 3 ] ||
		fail "$b: not 3 counted localhost node-port rules"
	apply "file:$G/cluster@nfacct.rules" filter=unchanged nat=unchanged

	before=$(pkts $LNP)
	knock_localhost || fail "$b: could not send the SYN to 127.0.0.1:30080"
	after=$(pkts $LNP)
	[ "$after" = $((before + 1)) ] || fail "$b: $LNP went from $before to $after, not +1"

	before=$(pkts $INV)
	send_synfin || fail "$b: could not send the SYN+FIN segment"
	after=$(pkts $INV)
	[ "$after" = $((before + 1)) ] || fail "$b: $INV went from $before to $after, not +1"
	echo "  $b: localhost node port and INVALID drop counted"

	if bk_writes_ipv6 "$b"; then
		apply "file:$G/dual-stack@nfacct.rules" filter6=committed
		$SAVE6 -t filter | grep -q -- "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name  $INV -j DROP" ||
			fail "$b: no counted INVALID drop in ip6tables"
		apply "file:$G/dual-stack@nfacct.rules" filter=unchanged nat=unchanged filter6=unchanged nat6=unchanged
	fi

	apply "file:$G/cluster.rules" filter=committed nat=committed
	! $SAVE | grep -q -- '-m nfacct' || fail "$b: -m nfacct rules left after the plan without them"
}

bk_run run_backend
