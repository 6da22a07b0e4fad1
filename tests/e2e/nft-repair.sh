#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The nft backend in the daemon, in a fresh namespace: the live state is
# kept while the ruleset generation is svcnat's own, so periodic syncs with
# nothing to change write nothing (every rule keeps its handle); another
# program's write moves the generation, and the next periodic sync reads
# again and repairs: a rule deleted with `nft delete rule`, a chain flushed
# with `iptables-nft -F`, a jump rule deleted from a built-in chain, in the
# ip tables and in the ip6 ones (the dual-stack example: ip6tables-nft-save
# equals the dry-run's IPv6 part throughout).  Another program's commit of
# a table of its own after svcnat's commits is seen through the
# notifications (the writer joins their group again after each of its own
# commits) and found not to matter (the -v note counts it).

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
SVCNAT=${SVCNAT:-$top_builddir/svcnat}
CFG=$top_srcdir/contrib/examples/dual-stack.json
SETTINGS="--node-ip 198.18.0.1 --node-ip 2001:2::1 --hostname node-a
	--cluster-cidr 198.18.64.0/18,2001:2:0:100::/56"
DAEMON=
SVC=

stop() {
	if [ -n "$DAEMON" ]; then
		[ -n "$SVC" ] && kill -CONT "$SVC" 2>/dev/null
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
grep -q '2001:2:' "$BK_TMP/want" || fail "the dry-run has no IPv6 part"
# Both families, as the dry-run prints them.
saves() {
	iptables-nft-save 2>/dev/null
	ip6tables-nft-save 2>/dev/null
}
equal() {
	saves | norm | cmp -s "$BK_TMP/want" -
}
wait_equal() {
	for _ in $(seq 100); do
		equal && return 0
		sleep 0.1
	done
	fail "$1: the tables did not come back to the plan: $(saves | norm | diff -u "$BK_TMP/want" - | head -20)"
}

# shellcheck disable=SC2086
timeout 120 "$SVCNAT" --backend=nft --config "$CFG" $SETTINGS --sync-period 1s -v \
	--healthz-bind-address '' --metrics-bind-address '' </dev/null >"$BK_TMP/daemon.log" 2>&1 &
DAEMON=$!
wait_equal "first sync"
# svcnat itself (timeout's child), to stop it for a moment.
SVC=$(cat "/proc/$DAEMON/task/$DAEMON/children")
[ -n "$SVC" ] || fail "no svcnat under timeout $DAEMON"
echo "  first sync: iptables-nft-save and ip6tables-nft-save = dry-run"

# Three periodic syncs with nothing to change: no rule is rewritten.
nft -a list ruleset >"$BK_TMP/handles.before" 2>/dev/null
sleep 3.5
nft -a list ruleset >"$BK_TMP/handles.after" 2>/dev/null
cmp -s "$BK_TMP/handles.before" "$BK_TMP/handles.after" ||
	fail "periodic syncs without a change rewrote rules: $(diff -u "$BK_TMP/handles.before" "$BK_TMP/handles.after" | head -20)"
echo "  periodic syncs without a change: every handle kept (nothing written)"

h=$(nft -a list chain ip nat KUBE-SERVICES 2>/dev/null | grep -m1 'KUBE-SVC-' | sed 's/.*# handle //')
[ -n "$h" ] || fail "no rule to delete in KUBE-SERVICES"
# The daemon stopped meanwhile: its periodic sync would repair the rule
# before the check could see it gone.
kill -STOP "$SVC"
nft delete rule ip nat KUBE-SERVICES handle "$h" || fail "nft delete rule"
equal && fail "the deletion did not show"
kill -CONT "$SVC"
wait_equal "nft delete rule"
echo "  nft delete rule ip nat KUBE-SERVICES handle $h: repaired"

iptables-nft -t nat -F KUBE-SERVICES 2>/dev/null || fail "iptables-nft -F"
wait_equal "iptables-nft -F KUBE-SERVICES"
echo "  iptables-nft -t nat -F KUBE-SERVICES: repaired"

h=$(nft -a list chain ip nat PREROUTING 2>/dev/null | grep -m1 'KUBE-SERVICES' | sed 's/.*# handle //')
nft delete rule ip nat PREROUTING handle "$h" || fail "nft delete rule PREROUTING"
wait_equal "the jump from PREROUTING"
echo "  the jump from PREROUTING deleted: repaired"

# The same in the ip6 tables.
h=$(nft -a list chain ip6 nat KUBE-SVC-67NZLRHBNDSAWJRO 2>/dev/null | grep -m1 'KUBE-SEP-' | sed 's/.*# handle //')
[ -n "$h" ] || fail "no rule to delete in ip6 nat KUBE-SVC-67NZLRHBNDSAWJRO"
kill -STOP "$SVC"
nft delete rule ip6 nat KUBE-SVC-67NZLRHBNDSAWJRO handle "$h" || fail "nft delete rule ip6"
equal && fail "the ip6 deletion did not show"
kill -CONT "$SVC"
wait_equal "nft delete rule ip6 nat"
echo "  nft delete rule ip6 nat KUBE-SVC-67NZLRHBNDSAWJRO handle $h: repaired"

ip6tables-nft -t nat -F KUBE-SERVICES 2>/dev/null || fail "ip6tables-nft -F"
wait_equal "ip6tables-nft -F KUBE-SERVICES"
echo "  ip6tables-nft -t nat -F KUBE-SERVICES: repaired"

ip6tables-nft -t filter -F KUBE-SERVICES 2>/dev/null || fail "ip6tables-nft -t filter -F"
wait_equal "ip6tables-nft -t filter -F KUBE-SERVICES"
echo "  ip6tables-nft -t filter -F KUBE-SERVICES (the REJECT of a service without endpoints): repaired"

h=$(nft -a list chain ip6 nat PREROUTING 2>/dev/null | grep -m1 'KUBE-SERVICES' | sed 's/.*# handle //')
nft delete rule ip6 nat PREROUTING handle "$h" || fail "nft delete rule ip6 PREROUTING"
wait_equal "the jump from ip6 nat PREROUTING"
echo "  the jump from ip6 nat PREROUTING deleted: repaired"

# The writer leaves the notification group for its own commits and joins
# it again after each: another program's commit after them (a table of its
# own) is still seen, and found not to matter, so the kept state stays.
# The next commit's -v note counts it.
foreign() {
	grep 'changes of other programs left it as it was' "$BK_TMP/daemon.log" | tail -n 1 |
		sed 's/.*; \([0-9]*\) changes of other programs.*/\1/'
}
before=$(foreign)
[ -n "$before" ] || fail "no -v note of a commit: $(tail -n 5 "$BK_TMP/daemon.log")"
nft add table inet svcnat-e2e-other || fail "nft add table"
sleep 1.5
h=$(nft -a list chain ip nat KUBE-SERVICES 2>/dev/null | grep -m1 'KUBE-SVC-' | sed 's/.*# handle //')
nft delete rule ip nat KUBE-SERVICES handle "$h" || fail "nft delete rule (after the other table)"
wait_equal "nft delete rule after another program's table"
for _ in $(seq 50); do
	[ "$(foreign)" -gt "$before" ] && break
	sleep 0.1
done
[ "$(foreign)" -gt "$before" ] ||
	fail "another program's table after svcnat's commits went unseen ($before, then $(foreign) changes found not to matter)"
nft delete table inet svcnat-e2e-other
echo "  another program's table after svcnat's commits: seen, the kept state stays ($(foreign) such changes)"

kill -0 "$DAEMON" 2>/dev/null || fail "the daemon died: $(cat "$BK_TMP/daemon.log")"
stop
echo "PASS"
