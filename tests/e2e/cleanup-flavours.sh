#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# --cleanup (--backend auto) removes svcnat's and kube-proxy's chains and
# jump rules from every iptables flavour present: rules written into the
# legacy tables (direct writer) and into the nft ones (iptables-nft-restore)
# both go, in one run; other programs' chains stay in both, and so does
# KUBE-FIREWALL (kubelet's too, as kube-proxy's cleanup leaves it).
. "$(dirname "$0")/lib/topology.sh"
e2e_init cleanup-flavours
for t in iptables-nft iptables-nft-save iptables-nft-restore; do
	command -v "$t" >/dev/null || e2e_skip "needs '$t'"
done

kube_chains() { # FLAVOUR: svcnat's chains left, KUBE-FIREWALL aside
	in_ns node "iptables-$1-save" 2>/dev/null | grep -E '^:KUBE-|-j KUBE-' | grep -v KUBE-FIREWALL
}

run() {
	local f
	for b in direct restore; do
		in_ns node "$SVCNAT" --once --backend "$b" --hostname "$E2E_HOSTNAME" \
			--node-ip "$E2E_NODE_IP" --cluster-cidr "$E2E_CLUSTER_CIDR" \
			--config "$top_srcdir/contrib/examples/cluster.json" 2>"$E2E_TMP/err" ||
			fail "--once --backend $b: $(cat "$E2E_TMP/err")"
	done
	for f in legacy nft; do
		[ -n "$(kube_chains $f)" ] || fail "no rules written in the $f tables"
		in_ns node "iptables-$f" -t nat -N OTHER-$f || fail "foreign chain ($f)"
		in_ns node "iptables-$f" -t nat -A PREROUTING -j OTHER-$f || fail "foreign jump ($f)"
	done
	say "rules in both flavours; --cleanup"
	in_ns node "$SVCNAT" --cleanup 2>"$E2E_TMP/err" || fail "--cleanup: $(cat "$E2E_TMP/err")"
	for f in legacy nft; do
		[ -z "$(kube_chains $f)" ] || fail "left in the $f tables: $(kube_chains $f)"
		in_ns node "iptables-$f-save" -t nat 2>/dev/null | grep -q -- '-A PREROUTING -j OTHER-'"$f" ||
			fail "the foreign rule went from the $f tables"
	done
	say "both flavours clean, foreign chains kept"
}

SVCNAT_E2E_BACKENDS=auto
e2e_for_each_backend run
