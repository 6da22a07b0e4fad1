#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A kernel without IPv6 (issue 14): the writers (libiptc, direct, nft,
# restore) find that they cannot write ip6tables, say so in one note,
# and write IPv4 as before.  The host is played by tests/e2e/noipv6, which makes
# socket(AF_INET6, ...) fail with EAFNOSUPPORT for svcnat.  With the shipped
# dual-stack example, svcnat --once exits 0, the iptables tables hold the
# dry-run's IPv4 part, the ip6tables tables (another program's rule in
# them) are untouched, --diff compares IPv4 only and finds it equal, and
# --cleanup removes svcnat's IPv4 chains.

BK_BACKENDS=${BK_BACKENDS:-libiptc direct nft restore-legacy restore-nft}
. "$(dirname "$0")/backend-common.sh"
bk_init "$@"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${SVCNAT:=$top_builddir/svcnat}"
NOIPV6=$top_builddir/tests/e2e/noipv6
[ -x "$SVCNAT" ] || fail "no svcnat at $SVCNAT"
[ -x "$NOIPV6" ] || fail "no noipv6 at $NOIPV6 (make check builds it)"
ip link set lo up

ARGS=(--config "$top_srcdir/contrib/examples/dual-stack.json" --hostname node-a
      --node-ip 198.18.0.1 --node-ip 2001:2::1 --cluster-cidr 198.18.64.0/18,2001:2:0:100::/56)

# The helper works: no IPv6 socket under it, IPv4 ones as usual.
"$NOIPV6" python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)' ||
	fail "noipv6 refuses IPv4 sockets"
! "$NOIPV6" python3 -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)' \
	2>/dev/null || fail "noipv6 lets IPv6 sockets through"

run_backend() {
	local t who=$1 be=(--backend "$1") path=$PATH
	bk_use "$1"
	case $1 in
	restore-*)
		# svcnat's restore writer takes the flavour `iptables --version`
		# names: an iptables of the flavour wanted first in PATH.
		who=restore be=(--backend restore)
		mkdir -p "$BK_TMP/bin"
		ln -sf "$(command -v "iptables-${1#restore-}")" "$BK_TMP/bin/iptables"
		path=$BK_TMP/bin:$PATH
		;;
	esac
	bk_reset
	"$SVCNAT" --dry-run "${ARGS[@]}" >"$BK_TMP/dry" 2>/dev/null || fail "svcnat --dry-run failed"
	dry_part 4 "$BK_TMP/dry" >"$BK_TMP/dry4"
	grep -q '2001:2:' "$BK_TMP/dry" || fail "the dry-run has no IPv6 part"
	$IPT6 -t filter -A INPUT -s 2001:2:1::98/128 -j ACCEPT
	$SAVE6 | _bk_strip >"$BK_TMP/save6.before"

	PATH=$path "$NOIPV6" "$SVCNAT" --once "${be[@]}" "${ARGS[@]}" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: --once without IPv6: $(cat "$BK_TMP/err")"
	grep -q "note: $who: the kernel has no IPv6: svcnat writes the iptables tables only" \
		"$BK_TMP/err" || fail "$BK_NAME: no note that IPv6 is not written: $(cat "$BK_TMP/err")"
	for t in filter nat; do
		sed -n "/^\\*$t\$/,/^COMMIT\$/p" "$BK_TMP/dry4" | _bk_owned_filter >"$BK_TMP/plan.$t"
		[ "$(wc -l <"$BK_TMP/plan.$t")" -gt 5 ] || fail "the dry-run's $t view is empty"
		bk_owned "$t" | diff -u "$BK_TMP/plan.$t" - >&2 ||
			fail "$BK_NAME: without IPv6, --once wrote something else than the IPv4 plan ($t)"
	done
	$SAVE6 | _bk_strip | diff -u "$BK_TMP/save6.before" - >&2 ||
		fail "$BK_NAME: without IPv6, the ip6tables tables changed"

	PATH=$path "$NOIPV6" "$SVCNAT" --dry-run --diff "${be[@]}" "${ARGS[@]}" >"$BK_TMP/diff" \
		2>"$BK_TMP/err" || fail "$BK_NAME: --diff without IPv6: exit $?: $(cat "$BK_TMP/diff")"
	! grep -q '^# ip6tables' "$BK_TMP/diff" || fail "$BK_NAME: --diff compared ip6tables"

	PATH=$path "$NOIPV6" "$SVCNAT" --cleanup "${be[@]}" "${ARGS[@]}" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: --cleanup without IPv6: $(cat "$BK_TMP/err")"
	! bk_owned nat | grep -q . || fail "$BK_NAME: --cleanup left svcnat's nat chains"
	$SAVE6 | _bk_strip | diff -u "$BK_TMP/save6.before" - >&2 ||
		fail "$BK_NAME: --cleanup without IPv6 changed the ip6tables tables"
	echo "  ok (IPv4 written, ip6tables untouched, one note)"
}

bk_run run_backend
