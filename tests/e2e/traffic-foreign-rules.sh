#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Other tools' rules survive svcnat: a fake Docker setup (DOCKER and
# DOCKER-USER chains, their jumps and MASQUERADE) and a user's own
# PREROUTING DNAT, written before svcnat runs (with iptables-legacy and with
# iptables-nft, whichever a backend writes), are byte-identical after a
# sync, a re-sync with changes, a no-op re-sync and --cleanup; svcnat's
# jumps exist exactly once; `--dry-run --diff` reports nothing foreign;
# after --cleanup nothing of svcnat is left; the user's DNAT keeps working
# throughout, next to svcnat's services.  (KUBE-FIREWALL, shared with
# kubelet, stays after --cleanup as kube-proxy leaves it.)
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-foreign-rules

ports='[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]'
svc_web=$(k8s_service e2e web '"type":"LoadBalancer","clusterIP":"198.19.0.10",
	"loadBalancerSourceRanges":["198.18.1.0/25"],"sessionAffinity":"ClientIP","ports":[
	{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080},
	{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30080}]' \
	'"loadBalancer":{"ingress":[{"ip":"198.18.200.20"}]}')
svc_empty=$(k8s_service e2e empty '"type":"NodePort","clusterIP":"198.19.0.14","ports":[
	{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30082}]')
k8s_list "$svc_web" "$(k8s_slice e2e web "$ports" 198.18.65.10@node-a 198.18.66.10@node-b)" \
	"$svc_empty" >"$E2E_TMP/v1.json"
k8s_list "$svc_web" "$(k8s_slice e2e web "$ports" 198.18.65.10@node-a)" \
	"$svc_empty" "$(k8s_slice e2e empty "$ports" 198.18.66.10@node-b)" >"$E2E_TMP/v2.json"

# foreign_rules DNAT-IP: the rules of "other tools" (restore input)
foreign_rules() {
	cat <<RULES
*nat
:DOCKER - [0:0]
-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
-A PREROUTING -d $1/32 -p tcp -m tcp --dport 8443 -m comment --comment "user rule" -j DNAT --to-destination 198.18.65.10:8080
-A OUTPUT ! -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j DOCKER
-A POSTROUTING -s 198.18.250.0/24 ! -o docker0 -j MASQUERADE
-A DOCKER -i docker0 -j RETURN
-A DOCKER ! -i docker0 -p tcp -m tcp --dport 8888 -j DNAT --to-destination 198.18.250.2:80
COMMIT
*filter
:DOCKER - [0:0]
:DOCKER-USER - [0:0]
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A FORWARD -j DOCKER-USER
-A FORWARD -o docker0 -j DOCKER
-A OUTPUT -d 198.18.250.9/32 -j DROP
-A DOCKER-USER -s 198.18.1.128/25 -p udp -m udp --dport 9999 -j DROP
-A DOCKER-USER -j RETURN
COMMIT
RULES
}

# save FLAVOUR: the node's tables without comments and counters
save() {
	# (iptables-nft-save's note that legacy tables exist too is expected here)
	in_ns node "iptables-$1-save" 2> >(grep -v 'iptables-legacy tables present' >&2) |
		grep -v '^#' | sed -E 's/^(:[^ ]+ [^ ]+) \[[0-9]+:[0-9]+\]$/\1/'
}

# check_foreign WHEN: every flavour's non-svcnat lines equal the baseline
check_foreign() {
	local f
	for f in $flavours; do
		save "$f" | grep -v 'KUBE-' >"$E2E_TMP/now.$f"
		cmp -s "$E2E_TMP/base.$f" "$E2E_TMP/now.$f" ||
			fail "$1: foreign $f rules changed: $(diff -u "$E2E_TMP/base.$f" "$E2E_TMP/now.$f")"
	done
	say "$1: foreign rules byte-identical ($flavours)"
}

# check_jumps: svcnat's jump rules exist exactly once in the flavour it writes
check_jumps() {
	local rules=$E2E_TMP/mine jump table chain target n
	save "$mine" >"$rules"
	for jump in nat:PREROUTING:KUBE-SERVICES nat:OUTPUT:KUBE-SERVICES \
			nat:POSTROUTING:KUBE-POSTROUTING filter:FORWARD:KUBE-FORWARD; do
		IFS=: read -r table chain target <<<"$jump"
		n=$(awk -v t="*$table" '/^\*/ { cur = $0 } cur == t' "$rules" |
			grep -c -- "^-A $chain .*-j $target\$")
		[ "$n" = 1 ] || fail "$1: $n jumps from $table $chain to $target, expected 1"
	done
}

user_dnat_works() {
	local o=$E2E_TMP/out f ip
	for f in $flavours; do
		ip=198.18.200.99
		[ "$f" = nft ] && ip=198.18.200.98
		probe "$o" client1 "$ip" 8443 5
		expect_only "$o" a1
	done
}

run() {
	local backend=$1 o=$E2E_TMP/out f rc
	topo_add_pod a1 198.18.65.10 \
		b1 198.18.66.10
	start_servers 8080

	for f in $flavours; do
		ip=198.18.200.99
		[ "$f" = nft ] && ip=198.18.200.98
		foreign_rules "$ip" | in_ns node "iptables-$f-restore" -w 10 --noflush ||
			fail "iptables-$f-restore of the foreign rules"
		save "$f" >"$E2E_TMP/base.$f"
	done
	grep -q 'user rule' "$E2E_TMP/base.legacy" || fail "baseline lacks the user rule"
	user_dnat_works

	svcnat_sync "$backend" "$E2E_TMP/v1.json"
	mine=
	for f in $flavours; do
		save "$f" | grep -q -- '-j KUBE-SERVICES' && mine="$mine$f"
	done
	case $mine in
	legacy | nft) say "svcnat --backend=$backend wrote the $mine tables" ;;
	*) fail "svcnat's rules not found in exactly one of legacy/nft tables: '$mine'" ;;
	esac
	case $backend in libiptc | direct) [ "$mine" = legacy ] || fail "$backend must write the legacy tables" ;; esac
	check_foreign "sync"
	check_jumps "sync"
	user_dnat_works
	probe "$o" client1 198.18.200.20 80 20
	expect_single "$o" >/dev/null
	probe "$o" client1 "$E2E_NODE_IP" 30082 2
	expect_outcome "$o" refused

	svcnat_run "$backend" --dry-run --diff --config "$E2E_TMP/v1.json"
	rc=$?
	[ $rc = 0 ] || fail "--diff right after a sync: exit $rc, expected 0: $(cat "$E2E_TMP/svcnat.log")"
	svcnat_run "$backend" --dry-run --diff --config "$E2E_TMP/v2.json"
	rc=$?
	[ $rc = 1 ] || fail "--diff against a changed config: exit $rc, expected 1: $(cat "$E2E_TMP/svcnat.log")"
	grep -E '^[-+]' "$E2E_TMP/svcnat.log" | grep -v 'KUBE-' | grep . &&
		fail "--diff shows lines that are not svcnat's"
	grep -qE '^[-+]' "$E2E_TMP/svcnat.log" || fail "--diff printed no +/- lines: $(cat "$E2E_TMP/svcnat.log")"
	say "--diff: 0 when equal, 1 and only KUBE- lines when not"

	svcnat_sync "$backend" "$E2E_TMP/v2.json"
	check_foreign "re-sync with changes"
	check_jumps "re-sync with changes"
	probe "$o" client1 "$E2E_NODE_IP" 30082 10
	expect_only "$o" b1
	svcnat_sync "$backend" "$E2E_TMP/v2.json"
	check_foreign "no-op re-sync"
	check_jumps "no-op re-sync"
	user_dnat_works

	svcnat_run "$backend" --cleanup || fail "--cleanup failed: $(cat "$E2E_TMP/svcnat.log")"
	check_foreign "--cleanup"
	# KUBE-FIREWALL (and its jumps from INPUT/OUTPUT) is kubelet's chain
	# too: kube-proxy creates it but leaves it in CleanupLeftovers, and so
	# does svcnat.  Apart from it, nothing may be left.
	for f in $flavours; do
		save "$f" | grep -v -- 'KUBE-FIREWALL' >"$E2E_TMP/after.$f"
		cmp -s "$E2E_TMP/base.$f" "$E2E_TMP/after.$f" ||
			fail "--cleanup left something: $(diff -u "$E2E_TMP/base.$f" "$E2E_TMP/after.$f")"
	done
	say "--cleanup: tables equal the baseline again (but for kubelet's KUBE-FIREWALL)"
	user_dnat_works
	probe "$o" client1 "$E2E_NODE_IP" 30080 2
	expect_outcome "$o" refused
	svcnat_run "$backend" --cleanup || fail "a second --cleanup failed: $(cat "$E2E_TMP/svcnat.log")"
	check_foreign "second --cleanup"
}

flavours=legacy
command -v iptables-nft-save >/dev/null && command -v iptables-nft-restore >/dev/null &&
	flavours="legacy nft"
e2e_for_each_backend run
