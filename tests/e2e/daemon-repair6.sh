#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon repairs drift in its ip6tables chains as it does in its
# iptables ones (issue 14): on the dual-stack example, a rule removed by
# hand from one of svcnat's ip6 nat chains is back after the next periodic
# check (--iptables-sync-period 1s), and that sync says so: the "repaired
# drift" warning and its info line (a sync that wrote only ip6tables was
# logged as one that wrote nothing, at debug level).  Also: the start warns
# that net.ipv6.conf.all.forwarding is 0, as for ip_forward.  On every writer that
# writes ip6tables here; each run in the test's own namespaces.

BK_BACKENDS=${BK_BACKENDS:-libiptc direct restore-nft nft}
. "$(dirname "$0")/backend-common.sh"
bk_init "$@"
# shellcheck source=tests/e2e/lib/wait.sh
. "$(dirname "$0")/lib/wait.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${SVCNAT:=$top_builddir/svcnat}"
[ -x "$SVCNAT" ] || fail "no svcnat at $SVCNAT"
ip link set lo up

ARGS=(--config "$top_srcdir/contrib/examples/dual-stack.json" --hostname node-a
      --node-ip 198.18.0.1 --node-ip 2001:2::1 --cluster-cidr 198.18.64.0/18,2001:2:0:100::/56
      --iptables-min-sync-period 100ms --iptables-sync-period 1s --metrics-bind-address ''
      --healthz-bind-address '')
DAEMON=

# A failure ends the daemon too, and shows its log.
eval "_bk_fail() $(declare -f fail | tail -n +2)"
fail() {
	[ -z "$DAEMON" ] || kill "$DAEMON" 2>/dev/null
	[ -s "$BK_TMP/log" ] && tail -n 20 "$BK_TMP/log" >&2
	_bk_fail "$@"
}

# rules CHAIN: the number of rules in ip6 nat CHAIN
rules() {
	$IPT6 -w 10 -t nat -S "$1" | grep -c '^-A'
}

run_backend() {
	local kind sep n
	bk_use "$1"
	case $1 in
	libiptc | direct | nft) kind=$1 ;;
	restore-nft)
		# The CLI's restore flavour is the host's iptables'.
		if ! iptables --version 2>/dev/null | grep -q nf_tables; then
			echo "  the host's iptables is not the nft one: not run"
			return 0
		fi
		kind=restore
		;;
	*) fail "no svcnat backend for $1" ;;
	esac
	bk_reset
	: >"$BK_TMP/log"
	timeout --kill-after=5 120 "$SVCNAT" --backend "$kind" "${ARGS[@]}" --v=2 </dev/null \
		>>"$BK_TMP/log" 2>&1 &
	DAEMON=$!
	wait_for 60 "$BK_NAME: the initial sync" grep -q 'sync (initial)' "$BK_TMP/log"
	# (a fresh namespace forwards no IPv6: said at start, as ip_forward)
	grep -q '^W[0-9]\{4\} .*\] net/ipv6/conf/all/forwarding is 0: IPv6 service traffic' "$BK_TMP/log" ||
		fail "$BK_NAME: no warning that IPv6 forwarding is off"
	sep=$($IPT6 -w 10 -t nat -S | sed -n 's/^-A \(KUBE-SEP-[A-Z0-9]*\) .*-j DNAT .*/\1/p' | head -n 1)
	[ -n "$sep" ] || fail "$BK_NAME: no KUBE-SEP- chain in ip6 nat: $($SAVE6 -t nat)"
	n=$(rules "$sep")
	# (-w: the daemon's syncs, every second, hold the xtables lock a while)
	$IPT6 -w 10 -t nat -D "$sep" "$n" || fail "$BK_NAME: cannot delete rule $n of $sep"
	wait_for 30 "$BK_NAME: $sep repaired" eval '[ "$(rules "$sep")" = "$n" ]'
	wait_for 10 "$BK_NAME: the repair logged" grep -q 'repaired drift' "$BK_TMP/log"
	grep -q '^I[0-9]\{4\} .*\] sync (periodic): .* [1-9][0-9]* rules written' "$BK_TMP/log" ||
		fail "$BK_NAME: no info line for the sync that wrote ip6 nat"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$BK_NAME: the daemon exited $? on SIGTERM"
	DAEMON=
	echo "  ok ($sep: rule $n removed, put back and logged)"
}

bk_run run_backend
