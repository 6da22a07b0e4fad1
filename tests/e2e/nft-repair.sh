#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The nft backend in the daemon, in a fresh namespace: the live state is
# kept while the ruleset generation is svcnat's own, so periodic syncs with
# nothing to change write nothing (every rule keeps its handle); another
# program's write moves the generation, and the next periodic sync reads
# again and repairs: a rule deleted with `nft delete rule`, a chain flushed
# with `iptables-nft -F`, a jump rule deleted from a built-in chain.

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
SVCNAT=${SVCNAT:-$top_builddir/svcnat}
CFG=$top_srcdir/contrib/examples/cluster.json
SETTINGS="--node-ip 198.18.0.1 --hostname node-a --cluster-cidr 198.18.64.0/18"
DAEMON=

stop() {
	if [ -n "$DAEMON" ]; then
		kill "$DAEMON" 2>/dev/null || true
		wait "$DAEMON" 2>/dev/null || true
		DAEMON=
	fi
}
trap 'stop; rm -rf "$BK_TMP"' EXIT

norm() {
	grep -v '^#' | sed -e 's/ \[[0-9]*:[0-9]*\]$//' \
		-e 's/\(--probability [0-9]\.[0-9]\{5\}\)[0-9]*/\1/'
}

# shellcheck disable=SC2086
"$SVCNAT" --dry-run --config "$CFG" $SETTINGS 2>/dev/null | norm >"$BK_TMP/want" ||
	fail "--dry-run"
equal() {
	iptables-nft-save 2>/dev/null | norm | cmp -s "$BK_TMP/want" -
}
wait_equal() {
	for _ in $(seq 100); do
		equal && return 0
		sleep 0.1
	done
	fail "$1: the tables did not come back to the plan: $(iptables-nft-save 2>/dev/null | norm | diff -u "$BK_TMP/want" - | head -20)"
}

# shellcheck disable=SC2086
timeout 120 "$SVCNAT" --backend=nft --config "$CFG" $SETTINGS --sync-period 1s \
	--healthz-bind-address '' --metrics-bind-address '' </dev/null >"$BK_TMP/daemon.log" 2>&1 &
DAEMON=$!
wait_equal "first sync"
echo "  first sync: iptables-nft-save = dry-run"

# Three periodic syncs with nothing to change: no rule is rewritten.
nft -a list table ip nat >"$BK_TMP/handles.before" 2>/dev/null
sleep 3.5
nft -a list table ip nat >"$BK_TMP/handles.after" 2>/dev/null
cmp -s "$BK_TMP/handles.before" "$BK_TMP/handles.after" ||
	fail "periodic syncs without a change rewrote rules: $(diff -u "$BK_TMP/handles.before" "$BK_TMP/handles.after" | head -20)"
echo "  periodic syncs without a change: every handle kept (nothing written)"

h=$(nft -a list chain ip nat KUBE-SERVICES 2>/dev/null | grep -m1 'KUBE-SVC-' | sed 's/.*# handle //')
[ -n "$h" ] || fail "no rule to delete in KUBE-SERVICES"
nft delete rule ip nat KUBE-SERVICES handle "$h" || fail "nft delete rule"
equal && fail "the deletion did not show"
wait_equal "nft delete rule"
echo "  nft delete rule ip nat KUBE-SERVICES handle $h: repaired"

iptables-nft -t nat -F KUBE-SERVICES 2>/dev/null || fail "iptables-nft -F"
wait_equal "iptables-nft -F KUBE-SERVICES"
echo "  iptables-nft -t nat -F KUBE-SERVICES: repaired"

h=$(nft -a list chain ip nat PREROUTING 2>/dev/null | grep -m1 'KUBE-SERVICES' | sed 's/.*# handle //')
nft delete rule ip nat PREROUTING handle "$h" || fail "nft delete rule PREROUTING"
wait_equal "the jump from PREROUTING"
echo "  the jump from PREROUTING deleted: repaired"

kill -0 "$DAEMON" 2>/dev/null || fail "the daemon died: $(cat "$BK_TMP/daemon.log")"
stop
echo "PASS"
