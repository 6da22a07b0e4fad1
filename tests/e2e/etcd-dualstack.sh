#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The etcd source carries IPv6 objects (issue 14): contrib/examples/
# dual-stack.json written to a one-member etcd (svcnat etcd-load), the
# daemon on a dual-stack node following it with --etcd-endpoints, on the
# first backend that writes ip6tables here (e2e_writes_ipv6):
#   - its ip6tables and iptables rules are those `svcnat --dry-run` prints for
#     the file (svcnat's chains and rules, sorted; counters and the digits
#     of ip6tables-save's probabilities aside);
#   - over the watch: an IPv6 endpoint removed from an IPv6 EndpointSlice
#     leaves ip6tables, and a new IPv6-only Service with its IPv6 slice is
#     programmed in ip6tables only.
set -u
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/etcd.sh"
e2e_init etcd-dualstack
etcd_need
e2e_need_svcnat
ETCD_MEMBERS=1
example=$top_srcdir/contrib/examples/dual-stack.json
args=(--hostname node-a --node-ip 198.18.0.1 --node-ip 2001:2::1
	--cluster-cidr 198.18.64.0/18,2001:2:0:100::/56)

e2e_first_ipv6_backend
backend=$E2E_BACKEND6
SAVE6=$(e2e_save6 "$backend")
SAVE4=${SAVE6/ip6tables/iptables}

wait_for_context() {
	echo "; daemon log: $(tail -n 10 "$E2E_TMP/daemon.log")"
}

# norm: svcnat's chain and rule lines of an iptables-save text, sorted,
# probabilities without trailing zeros (iptables-save prints 11 digits)
norm() {
	grep -E '^(:KUBE-|-A )' | sed -E 's/ \[[0-9]+:[0-9]+\]$//; s/^(:KUBE-[^ ]* [^ ]*).*/\1/;
		s/(--probability [0-9]+\.[0-9]*[1-9])0+/\1/' | LC_ALL=C sort
}

# part N: the Nth family's text of a dry-run (1 IPv4, 2 IPv6)
part() {
	awk -v n="$1" '/^\*filter/ { k++ } k == n' "$E2E_TMP/dry.rules"
}

kernel() {
	in_ns n1 "$1" -t filter
	in_ns n1 "$1" -t nat
}

# same FAMILY: the kernel's rules of FAMILY (4, 6) are the dry-run's
same() {
	local save=$SAVE4 k=1
	[ "$1" = 6 ] && save=$SAVE6 k=2
	part "$k" | norm >"$E2E_TMP/want$1"
	kernel "$save" | norm >"$E2E_TMP/got$1"
	diff -u "$E2E_TMP/want$1" "$E2E_TMP/got$1" >"$E2E_TMP/diff$1"
}

no_v6_endpoint() {
	! kernel "$SAVE6" | grep -q -- "--to-destination \[$1\]"
}

# slice6 NAME SERVICE IP...: an IPv6 EndpointSlice of namespace shop
slice6() {
	local name=$1 svc=$2 eps= ip
	shift 2
	for ip in "$@"; do
		eps="${eps:+$eps,}{\"addresses\":[\"$ip\"],\"conditions\":{\"ready\":true},\"nodeName\":\"node-a\"}"
	done
	printf '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"%s","namespace":"shop","labels":{"kubernetes.io/service-name":"%s"}},"addressType":"IPv6","endpoints":[%s],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}' \
		"$name" "$svc" "$eps"
}

etcd_topo_up
etcd_attach n1 "$ETCD_NET.11"
etcd_cluster_start
in_ns n1 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" "$example" >"$E2E_TMP/load.out" 2>&1 ||
	fail "etcd-load: $(cat "$E2E_TMP/load.out")"
say "etcd up, $(cat "$E2E_TMP/load.out"); daemon on backend $backend"

"$SVCNAT" --dry-run "${args[@]}" --config "$example" >"$E2E_TMP/dry.rules" 2>/dev/null ||
	fail "--dry-run of the example"
ip netns exec "$(ns_name n1)" timeout --kill-after=30 120 "$SVCNAT" --backend="$backend" \
	"${args[@]}" --etcd-endpoints "$ETCD_ENDPOINTS" --lock-wait 30000 \
	--iptables-min-sync-period 200ms --iptables-sync-period 30s \
	</dev/null >"$E2E_TMP/daemon.log" 2>&1 &
E2E_BG_PIDS+=($!)
wait_for 60 "initial sync" grep -q 'sync (initial)' "$E2E_TMP/daemon.log"
same 4 || fail "the IPv4 rules from etcd differ from the file's dry-run: $(cat "$E2E_TMP/diff4")"
same 6 || fail "the IPv6 rules from etcd differ from the file's dry-run: $(cat "$E2E_TMP/diff6")"
grep -q -- '-A KUBE-SERVICES -d 2001:2:0:f000::10/128' "$E2E_TMP/got6" || fail "no IPv6 cluster IP rule"
say "from etcd: $(wc -l <"$E2E_TMP/got4") IPv4 and $(wc -l <"$E2E_TMP/got6") IPv6 chain/rule lines, equal to the file's dry-run"

say "watch: [2001:2:0:102::20] leaves the IPv6 slice shop/web-v6"
ectl_retry put /registry/services/endpointslices/shop/web-v6 "$(slice6 web-v6 web 2001:2:0:101::20)" \
	>/dev/null || fail put
wait_for 45 "[2001:2:0:102::20] gone from ip6tables" no_v6_endpoint 2001:2:0:102::20
kernel "$SAVE6" | grep -q -- '--to-destination \[2001:2:0:101::20\]:8080' || fail "the kept IPv6 endpoint went too"

say "watch: a new IPv6-only Service shop/new6 with its IPv6 slice"
ectl_retry put /registry/services/specs/shop/new6 '{"apiVersion":"v1","kind":"Service","metadata":{"name":"new6","namespace":"shop"},"spec":{"type":"ClusterIP","clusterIP":"2001:2:0:f000::66","clusterIPs":["2001:2:0:f000::66"],"ipFamilies":["IPv6"],"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080}]}}' \
	>/dev/null || fail put
ectl_retry put /registry/services/endpointslices/shop/new6-a "$(slice6 new6-a new6 2001:2:0:101::66)" \
	>/dev/null || fail put
wait_for 45 "shop/new6 in ip6tables" eval "kernel $SAVE6 | grep -q -- '--to-destination \[2001:2:0:101::66\]:8080'"
kernel "$SAVE6" | grep -q -- '-A KUBE-SERVICES -d 2001:2:0:f000::66/128 ' || fail "no cluster IP rule for shop/new6"
kernel "$SAVE4" | grep -q 'shop/new6' && fail "the IPv6-only service is in iptables"
say "  programmed in ip6tables only"
