#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The nft backend writes what iptables-nft and ip6tables-nft write.  For
# the shipped examples (their golden dry-run; dual-stack: both families;
# cluster and dual-stack also with kube-proxy's -m nfacct rules),
# a generated config of 1,000 services and a generated dual-stack one of
# 500, in a fresh namespace:
#   - iptables-nft-restore (ip6tables-nft-restore for the IPv6 part) of the
#     text, then svcnat's nft writer of the same plan: every rule's
#     expressions in ip filter/nat and ip6 filter/nat (tests/e2e/nftdump:
#     libnftnl's text and the xt blobs in hex) are byte-identical, and
#     iptables-nft-save / ip6tables-nft-save equal the dry-run's parts
#     (counters, comments and probability digits aside);
#   - iptables-nft -C / ip6tables-nft -C find a sample of the rules;
#   - a second write sends nothing (messages=0);
#   - a batch the kernel refuses halfway (a DNAT rule in filter, after the
#     nat changes; and one in ip6 filter, after ip filter and ip nat
#     changes) leaves all four tables exactly as they were, handles included;
#   - a native `table inet filter`, a native `table ip6 filter` of another
#     program's own chains, and another program's iptables-nft and
#     ip6tables-nft rules stay byte-identical (handles and counters too)
#     through sync, resync, refusal and cleanup;
#   - a built-in chain another program made with another priority is
#     refused with a clear message, and nothing is written.

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

DUMP=${NFTDUMP:-$top_builddir/tests/e2e/nftdump}
[ -x "$DUMP" ] || fail "no nftdump at $DUMP (make check builds it)"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
NFT="$BK_DRIVER --backend=nft"

reset() {
	nft flush ruleset
}

# The dry-run and iptables-nft-save in one form: no comments, no counters,
# probabilities to 5 digits (iptables-nft prints 11, svcnat 10).
norm() {
	grep -v '^#' | sed -e 's/ \[[0-9]*:[0-9]*\]$//' \
		-e 's/\(--probability [0-9]\.[0-9]\{5\}\)[0-9]*/\1/'
}

# The IPv4 part of a dry-run (the text up to its second *filter) and the
# IPv6 part (from there; empty for an IPv4-only dry-run).
part4() { awk '/^\*filter$/ { n++ } n < 2' "$1"; }
part6() { awk '/^\*filter$/ { n++ } n >= 2' "$1"; }

# sample_c TOOL PART-FILE: TOOL -C on every 25th rule; prints the count checked.
sample_c() {
	local tool=$1 line t n=0 miss=0
	while IFS= read -r line; do
		case $line in
		\**) t=${line#\*} ;;
		-A\ *)
			n=$((n + 1))
			[ $((n % 25)) = 1 ] || continue
			eval "$tool -t $t -C ${line#-A }" 2>/dev/null || {
				miss=$((miss + 1))
				echo "  not found by $tool -C: -t $t $line" >&2
			}
			;;
		esac
	done <"$2"
	[ "$miss" = 0 ] || fail "$tool -C missed $miss sampled rules"
	echo $(( (n + 24) / 25 ))
}

# check_case NAME TEXT-FILE SPEC: restore vs the nft writer for one plan
# (both families when the text has an IPv6 part).
check_case() {
	local name=$1 text=$2 spec=$3 tables="filter nat" found six="" also=""
	part4 "$text" >"$BK_TMP/p4"
	part6 "$text" >"$BK_TMP/p6"
	[ -s "$BK_TMP/p6" ] && six=1 tables="filter nat ip6:filter ip6:nat" also=" and ip6tables-nft's"
	reset
	iptables-nft-restore <"$BK_TMP/p4" || fail "$name: iptables-nft-restore refused the dry-run"
	[ -z "$six" ] || ip6tables-nft-restore <"$BK_TMP/p6" ||
		fail "$name: ip6tables-nft-restore refused the dry-run's IPv6 part"
	"$DUMP" $tables >"$BK_TMP/ref.expr" || fail "$name: nftdump"
	reset
	$NFT apply "$spec" >"$BK_TMP/out" 2>"$BK_TMP/err" || fail "$name: apply: $(cat "$BK_TMP/err")"
	"$DUMP" $tables >"$BK_TMP/mine.expr" || fail "$name: nftdump"
	cmp -s "$BK_TMP/ref.expr" "$BK_TMP/mine.expr" ||
		fail "$name: expressions differ from iptables-nft's: $(diff -u "$BK_TMP/ref.expr" "$BK_TMP/mine.expr" | head -40)"
	norm <"$BK_TMP/p4" >"$BK_TMP/want"
	iptables-nft-save 2>/dev/null | norm >"$BK_TMP/got"
	cmp -s "$BK_TMP/want" "$BK_TMP/got" ||
		fail "$name: iptables-nft-save differs from the dry-run: $(diff -u "$BK_TMP/want" "$BK_TMP/got" | head -40)"
	found=$(sample_c iptables-nft "$BK_TMP/p4") || fail "$name: iptables-nft -C"
	if [ -n "$six" ]; then
		norm <"$BK_TMP/p6" >"$BK_TMP/want"
		ip6tables-nft-save 2>/dev/null | norm >"$BK_TMP/got"
		cmp -s "$BK_TMP/want" "$BK_TMP/got" ||
			fail "$name: ip6tables-nft-save differs from the dry-run's IPv6 part: $(diff -u "$BK_TMP/want" "$BK_TMP/got" | head -40)"
		found="$found + $(sample_c ip6tables-nft "$BK_TMP/p6")" || fail "$name: ip6tables-nft -C"
	else
		# An IPv4-only plan leaves the ip6 tables alone.
		[ -z "$(ip6tables-nft-save 2>/dev/null | grep -v '^#')" ] ||
			fail "$name: an IPv4-only plan wrote ip6 tables"
	fi
	$NFT apply "$spec" >"$BK_TMP/out" 2>"$BK_TMP/err" || fail "$name: second apply: $(cat "$BK_TMP/err")"
	grep -q ' messages=0 ' "$BK_TMP/out" || fail "$name: a no-change sync sent messages: $(cat "$BK_TMP/out")"
	echo "  $name: $(grep -c '^[a-z0-9 ]* [A-Z]' "$BK_TMP/mine.expr") rules byte-identical to" \
		"iptables-nft's$also, save = dry-run, $found found by -C," \
		"resync sends nothing"
}

settings="--node-ip 198.18.0.1 --hostname node-a --cluster-cidr 198.18.64.0/18"
# The shipped examples' golden dry-runs (dual-stack: both families).
for c in cluster original dual-stack; do
	f=$top_srcdir/tests/data/golden/$c.rules
	check_case "$c" "$f" "file:$f"
done
# The same with kube-proxy's nfacct matches (--nfacct on), its counters
# made first: the kernel refuses a rule naming one that does not exist.
command -v nfacct >/dev/null || fail "needs the nfacct tool (contrib/install-deps)"
nfacct add ct_state_invalid_dropped_pkts && nfacct add localhost_nps_accepted_pkts ||
	fail "nfacct add"
for c in cluster@nfacct dual-stack@nfacct; do
	f=$top_srcdir/tests/data/golden/$c.rules
	grep -q -- '-m nfacct' "$f" || fail "$c: no -m nfacct rule in $f"
	check_case "$c" "$f" "file:$f"
done
$BK_DRIVER render gen:1000:3 >"$BK_TMP/gen.rules" || fail "render gen:1000:3"
check_case "gen:1000:3" "$BK_TMP/gen.rules" gen:1000:3
# Generated dual-stack services (contrib/bench/gen.py: every address also
# IPv6, node 2001:2::c612:1, cluster CIDR 2001:2::c612:4000/114).
python3 "$top_srcdir/contrib/bench/gen.py" -n 500 -m 3 --family dual -o "$BK_TMP/dual.json" ||
	fail "gen.py --family dual"
"$top_builddir/svcnat" --dry-run --config "$BK_TMP/dual.json" --hostname node-a \
	--node-ip 198.18.0.1 --node-ip 2001:2::c612:1 \
	--cluster-cidr 198.18.64.0/18,2001:2::c612:4000/114 >"$BK_TMP/dual.rules" 2>"$BK_TMP/err" ||
	fail "dry-run of the generated dual-stack config: $(cat "$BK_TMP/err")"
[ -n "$(part6 "$BK_TMP/dual.rules")" ] || fail "the generated dual-stack config planned no IPv6"
check_case "dual-stack gen:500:3" "$BK_TMP/dual.rules" "file:$BK_TMP/dual.rules"

# Other programs' rules, native and iptables-nft, before svcnat writes.
reset
nft -f - <<'NFT' || fail "loading the native table"
table inet filter {
	counter seen { packets 7 bytes 700 }
	chain input {
		type filter hook input priority 10; policy accept;
		ip saddr 198.19.255.1 counter packets 3 bytes 300 drop
		tcp dport 2222 counter name "seen" accept
	}
	chain helper {
		ip6 saddr 2001:2::/48 counter accept
	}
}
NFT
cat <<'RULES' | iptables-nft-restore --noflush || fail "loading the foreign iptables-nft rules"
*nat
:DOCKER - [0:0]
-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
-A POSTROUTING -s 198.18.250.0/24 ! -o docker0 -j MASQUERADE
-A DOCKER -i docker0 -j RETURN
COMMIT
*filter
:DOCKER-USER - [0:0]
-A FORWARD -j DOCKER-USER
-A DOCKER-USER -j RETURN
COMMIT
RULES
# A native ip6 table of the name ip6tables-nft uses, with its own chains.
nft -f - <<'NFT' || fail "loading the native ip6 filter table"
table ip6 filter {
	chain input {
		type filter hook input priority 5; policy accept;
		ip6 saddr 2001:2:ff::/48 counter packets 4 bytes 400 drop
		jump helper
	}
	chain helper {
		tcp dport 2223 counter packets 1 bytes 60 accept
	}
}
NFT
cat <<'RULES' | ip6tables-nft-restore --noflush || fail "loading the foreign ip6tables-nft rules"
*nat
:FOREIGN6 - [0:0]
-A PREROUTING -s 2001:2:1::99/128 -j FOREIGN6
-A FOREIGN6 -j RETURN
COMMIT
RULES
foreign() {
	nft -a list table inet filter
	nft -a list chain ip6 filter input
	nft -a list chain ip6 filter helper
	nft -a list chain ip6 nat FOREIGN6
	nft -a list chain ip6 nat PREROUTING | grep -v KUBE-
	nft -a list chain ip nat DOCKER
	nft -a list chain ip filter DOCKER-USER
	nft -a list chain ip nat PREROUTING | grep -v KUBE-
	nft -a list chain ip nat POSTROUTING | grep -v KUBE-
	nft -a list chain ip filter FORWARD | grep -v KUBE-
}
foreign >"$BK_TMP/foreign.before" 2>/dev/null
check_foreign() {
	foreign >"$BK_TMP/foreign.now" 2>/dev/null
	cmp -s "$BK_TMP/foreign.before" "$BK_TMP/foreign.now" ||
		fail "$1: other programs' rules changed: $(diff -u "$BK_TMP/foreign.before" "$BK_TMP/foreign.now")"
}
$NFT apply gen:50:3 >/dev/null 2>"$BK_TMP/err" || fail "sync beside foreign rules: $(cat "$BK_TMP/err")"
check_foreign "sync"
$NFT apply gen:50:3:7 >/dev/null 2>"$BK_TMP/err" || fail "resync: $(cat "$BK_TMP/err")"
check_foreign "resync"
[ "$(iptables-nft -t nat -S PREROUTING 2>/dev/null | grep -c -- '-j KUBE-SERVICES')" = 1 ] ||
	fail "the jump to KUBE-SERVICES is not there exactly once"
[ "$(iptables-nft -t nat -S PREROUTING 2>/dev/null | sed -n 2p)" = "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES" ] ||
	fail "the jump to KUBE-SERVICES is not at the top: $(iptables-nft -t nat -S PREROUTING)"

ds=$top_srcdir/tests/data/golden/dual-stack.rules
$NFT apply "file:$ds" >"$BK_TMP/out" 2>"$BK_TMP/err" || fail "dual-stack sync: $(cat "$BK_TMP/err")"
grep -q 'filter6=committed nat6=committed' "$BK_TMP/out" ||
	fail "the dual-stack sync wrote no ip6 tables: $(cat "$BK_TMP/out")"
check_foreign "dual-stack sync"
[ "$(nft list chain ip6 nat PREROUTING 2>/dev/null | grep -c 'jump KUBE-SERVICES')" = 1 ] ||
	fail "the ip6 nat jump to KUBE-SERVICES is not there exactly once"
nft list chain ip6 nat PREROUTING 2>/dev/null | grep -m1 'jump' | grep -q 'jump KUBE-SERVICES' ||
	fail "the ip6 nat jump to KUBE-SERVICES is not at the top: $(nft list chain ip6 nat PREROUTING)"
$NFT apply gen:50:3:5 >/dev/null 2>"$BK_TMP/err" || fail "IPv4-only sync: $(cat "$BK_TMP/err")"
check_foreign "IPv4-only sync after dual-stack"

# A refused batch: nat would change (variant 5), then filter gets a DNAT
# rule the kernel refuses.  Everything, handles included, stays.
$NFT apply gen:50:3 >/dev/null 2>"$BK_TMP/err" || fail "sync: $(cat "$BK_TMP/err")"
nft -a list ruleset >"$BK_TMP/all.before" 2>/dev/null
$NFT apply fail:50:3:5 >/dev/null 2>"$BK_TMP/err" && fail "a refused batch reported success"
grep -q 'every table keeps its previous rules' "$BK_TMP/err" ||
	fail "no clear message for a refused batch: $(cat "$BK_TMP/err")"
grep -q 'refused: Invalid argument' "$BK_TMP/err" ||
	fail "the message does not name the refused rule: $(cat "$BK_TMP/err")"
nft -a list ruleset >"$BK_TMP/all.after" 2>/dev/null
cmp -s "$BK_TMP/all.before" "$BK_TMP/all.after" ||
	fail "a refused batch changed the ruleset: $(diff -u "$BK_TMP/all.before" "$BK_TMP/all.after" | head -30)"
echo "  refused batch: ruleset unchanged, handles included ($(head -1 "$BK_TMP/err"))"

# Refused in the ip6 part: ip filter and ip nat would change (to the
# dual-stack example's IPv4 part) and ip6 nat be written, then ip6 filter
# gets a DNAT rule the kernel refuses.  All four tables stay, handles too.
$NFT apply "fail6:$ds" >/dev/null 2>"$BK_TMP/err" && fail "a batch refused in ip6 reported success"
grep -q 'every table keeps its previous rules' "$BK_TMP/err" ||
	fail "no clear message for a batch refused in ip6: $(cat "$BK_TMP/err")"
grep -q 'ip6 filter.*refused: Invalid argument' "$BK_TMP/err" ||
	fail "the message does not name the refused ip6 rule: $(cat "$BK_TMP/err")"
nft -a list ruleset >"$BK_TMP/all.after" 2>/dev/null
cmp -s "$BK_TMP/all.before" "$BK_TMP/all.after" ||
	fail "a batch refused in ip6 changed the ruleset: $(diff -u "$BK_TMP/all.before" "$BK_TMP/all.after" | head -30)"
echo "  refused in ip6: all four tables unchanged, handles included ($(grep -m1 'ip6 filter' "$BK_TMP/err"))"

$NFT cleanup >/dev/null 2>"$BK_TMP/err" || fail "cleanup: $(cat "$BK_TMP/err")"
check_foreign "cleanup"
nft list ruleset 2>/dev/null | grep -E 'KUBE-(SERVICES|SVC|SEP|NODEPORTS|POSTROUTING|MARK-MASQ)' &&
	fail "cleanup left svcnat's chains"
echo "  foreign native (inet, ip6) and iptables-nft/ip6tables-nft rules byte-identical through" \
	"sync, resync, dual-stack sync, refusals, cleanup"

# A table another program made incompatible: nat PREROUTING as a base chain
# of another priority.  Refused with a clear message, nothing written.
reset
nft -f - <<'NFT' || fail "loading the incompatible table"
table ip nat {
	chain PREROUTING {
		type nat hook prerouting priority 0; policy accept;
	}
}
NFT
nft -a list ruleset >"$BK_TMP/all.before" 2>/dev/null
$NFT apply gen:20:2 >/dev/null 2>"$BK_TMP/err" && fail "an incompatible table was written"
grep -q 'PREROUTING of table ip nat is not the base chain iptables-nft makes' "$BK_TMP/err" ||
	fail "no clear message for an incompatible table: $(cat "$BK_TMP/err")"
nft -a list ruleset >"$BK_TMP/all.after" 2>/dev/null
cmp -s "$BK_TMP/all.before" "$BK_TMP/all.after" || fail "an incompatible table was changed"
echo "  incompatible table: $(grep -m1 'not the base chain' "$BK_TMP/err" | cut -c1-110)..."
reset
echo "PASS"
