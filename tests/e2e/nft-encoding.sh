#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The nft backend writes what iptables-nft writes.  For both shipped
# examples (their golden dry-run) and a generated config of 1,000
# services, in a fresh namespace:
#   - iptables-nft-restore of the text, then svcnat's nft writer of the same
#     plan: every rule's expressions (tests/e2e/nftdump: libnftnl's text
#     and the xt blobs in hex) are byte-identical, and iptables-nft-save
#     equals the dry-run (counters, comments and probability digits aside);
#   - iptables-nft -C finds a sample of the rules;
#   - a second write sends nothing (messages=0);
#   - a batch the kernel refuses halfway (a DNAT rule in filter, after the
#     nat changes) leaves both tables exactly as they were, handles included;
#   - a native `table inet filter` and another program's iptables-nft rules
#     stay byte-identical (handles and counters too) through sync, resync
#     and cleanup;
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

# check_case NAME TEXT-FILE SPEC: restore vs the nft writer for one plan.
check_case() {
	local name=$1 text=$2 spec=$3 line t n=0 miss=0
	reset
	iptables-nft-restore <"$text" || fail "$name: iptables-nft-restore refused the dry-run"
	"$DUMP" filter nat >"$BK_TMP/ref.expr" || fail "$name: nftdump"
	reset
	$NFT apply "$spec" >"$BK_TMP/out" 2>"$BK_TMP/err" || fail "$name: apply: $(cat "$BK_TMP/err")"
	"$DUMP" filter nat >"$BK_TMP/mine.expr" || fail "$name: nftdump"
	cmp -s "$BK_TMP/ref.expr" "$BK_TMP/mine.expr" ||
		fail "$name: expressions differ from iptables-nft's: $(diff -u "$BK_TMP/ref.expr" "$BK_TMP/mine.expr" | head -40)"
	norm <"$text" >"$BK_TMP/want"
	iptables-nft-save 2>/dev/null | norm >"$BK_TMP/got"
	cmp -s "$BK_TMP/want" "$BK_TMP/got" ||
		fail "$name: iptables-nft-save differs from the dry-run: $(diff -u "$BK_TMP/want" "$BK_TMP/got" | head -40)"
	# iptables-nft -C on every 25th rule
	t=
	while IFS= read -r line; do
		case $line in
		\**) t=${line#\*} ;;
		-A\ *)
			n=$((n + 1))
			[ $((n % 25)) = 1 ] || continue
			eval "iptables-nft -t $t -C ${line#-A }" 2>/dev/null || {
				miss=$((miss + 1))
				echo "  not found by iptables-nft -C: -t $t $line" >&2
			}
			;;
		esac
	done <"$text"
	[ "$miss" = 0 ] || fail "$name: iptables-nft -C missed $miss sampled rules"
	$NFT apply "$spec" >"$BK_TMP/out" 2>"$BK_TMP/err" || fail "$name: second apply: $(cat "$BK_TMP/err")"
	grep -q ' messages=0 ' "$BK_TMP/out" || fail "$name: a no-change sync sent messages: $(cat "$BK_TMP/out")"
	echo "  $name: $(grep -c '^[a-z]* [A-Z]' "$BK_TMP/mine.expr") rules byte-identical to iptables-nft's," \
		"save = dry-run, $(( (n + 24) / 25 )) found by -C, resync sends nothing"
}

settings="--node-ip 198.18.0.1 --hostname node-a --cluster-cidr 198.18.64.0/18"
# The shipped examples' golden dry-runs (the IPv4 ones: this writer does ip only).
for c in cluster original; do
	f=$top_srcdir/tests/data/golden/$c.rules
	check_case "$c" "$f" "file:$f"
done
$BK_DRIVER render gen:1000:3 >"$BK_TMP/gen.rules" || fail "render gen:1000:3"
check_case "gen:1000:3" "$BK_TMP/gen.rules" gen:1000:3

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
foreign() {
	nft -a list table inet filter
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

# A refused batch: nat would change (variant 5), then filter gets a DNAT
# rule the kernel refuses.  Everything, handles included, stays.
nft -a list ruleset >"$BK_TMP/all.before" 2>/dev/null
$NFT apply fail:50:3:5 >/dev/null 2>"$BK_TMP/err" && fail "a refused batch reported success"
grep -q 'both tables keep their previous rules' "$BK_TMP/err" ||
	fail "no clear message for a refused batch: $(cat "$BK_TMP/err")"
grep -q 'refused: Invalid argument' "$BK_TMP/err" ||
	fail "the message does not name the refused rule: $(cat "$BK_TMP/err")"
nft -a list ruleset >"$BK_TMP/all.after" 2>/dev/null
cmp -s "$BK_TMP/all.before" "$BK_TMP/all.after" ||
	fail "a refused batch changed the ruleset: $(diff -u "$BK_TMP/all.before" "$BK_TMP/all.after" | head -30)"
echo "  refused batch: ruleset unchanged, handles included ($(head -1 "$BK_TMP/err"))"

$NFT cleanup >/dev/null 2>"$BK_TMP/err" || fail "cleanup: $(cat "$BK_TMP/err")"
check_foreign "cleanup"
iptables-nft-save 2>/dev/null | grep -E 'KUBE-(SERVICES|SVC|SEP|NODEPORTS|POSTROUTING|MARK-MASQ)' &&
	fail "cleanup left svcnat's chains"
echo "  foreign native and iptables-nft rules byte-identical through sync, resync, refusal, cleanup"

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
