#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Both backends, kernel level: a sync into tables that hold other tools'
# rules writes exactly the plan (iptables-save shows what the renderer
# prints), a second sync writes nothing, a plan change rewrites only what
# changed, the jump rules exist once at the top of the built-in chains,
# --diff reports the difference, and cleanup removes svcnat's part only.
# Other tools' rules stay byte-identical throughout.  The same through
# svcnat for ip6tables (run_cli6) where the backend writes it.

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

PLAN_A=gen:100:3
PLAN_B=gen:100:3:7   # service 0's first endpoint moved

check_plan() { # SPEC
	local t
	for t in filter nat; do
		bk_owned "$t" >"$BK_TMP/live.$t"
		bk_plan "$t" "$1" >"$BK_TMP/plan.$t"
		[ "$(wc -l <"$BK_TMP/plan.$t")" -gt 10 ] || fail "the plan's $t view is empty"
		diff -u "$BK_TMP/plan.$t" "$BK_TMP/live.$t" >&2 ||
			fail "$BK_NAME: live $t table differs from the plan $1"
	done
}

check_foreign() { # EXPECTED-FILE
	bk_foreign >"$BK_TMP/foreign.now"
	diff -u "$1" "$BK_TMP/foreign.now" >&2 || fail "$BK_NAME: other tools' rules changed"
}

check_jumps_once() {
	local l n
	while IFS= read -r l; do
		n=$(bk_count "${l%%|*}" "${l#*|}")
		[ "$n" = 1 ] || fail "$BK_NAME: '${l#*|}' appears $n times"
	done <<-'EOF'
	nat|-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	nat|-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	nat|-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
	filter|-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
	filter|-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
	filter|-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	filter|-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	EOF
}

apply() { # SPEC EXPECTED-COMMITS ("filter=... nat=...")
	local out
	out=$($DRV apply "$1" 2>"$BK_TMP/err") || {
		cat "$BK_TMP/err" >&2
		fail "$BK_NAME: apply $1 failed"
	}
	echo "  apply $1: $out"
	case $out in
	*"$2"*) ;;
	*) fail "$BK_NAME: apply $1: expected '$2'" ;;
	esac
}

run_backend() {
	bk_use "$1"
	bk_reset

	# Other tools' rules, there before svcnat runs.
	$IPT -t nat -N DOCKER
	$IPT -t nat -A DOCKER -i docker0 -j RETURN
	$IPT -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
	$IPT -t nat -A PREROUTING -d 198.18.200.9/32 -p tcp -m tcp --dport 8080 -j DNAT --to-destination 198.18.65.9:80 -c 7 700
	$IPT -t nat -A POSTROUTING -s 198.18.65.0/24 ! -o docker0 -j MASQUERADE
	$IPT -t filter -N DOCKER-USER
	$IPT -t filter -A DOCKER-USER -j RETURN
	$IPT -t filter -A FORWARD -j DOCKER-USER
	bk_foreign >"$BK_TMP/foreign.0"

	apply "$PLAN_A" "filter=committed nat=committed"
	check_plan "$PLAN_A"
	check_foreign "$BK_TMP/foreign.0"
	check_jumps_once
	# kube-proxy's position: the top of the built-in chain.
	[ "$($SAVE -t nat | grep -m1 '^-A PREROUTING')" = \
	  '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' ] ||
		fail "$BK_NAME: the PREROUTING jump is not the first rule"

	$SAVE | _bk_strip >"$BK_TMP/save.1"
	apply "$PLAN_A" "filter=unchanged nat=unchanged"
	$SAVE | _bk_strip | diff -u "$BK_TMP/save.1" - >&2 || fail "$BK_NAME: a no-op sync changed the tables"

	$DRV diff "$PLAN_A" >"$BK_TMP/diff" || fail "$BK_NAME: diff after sync: exit $?"
	[ ! -s "$BK_TMP/diff" ] || fail "$BK_NAME: diff after sync printed: $(cat "$BK_TMP/diff")"

	# A rule of someone else before ours and one after.
	$IPT -t nat -I PREROUTING 1 -s 198.18.1.1/32 -j RETURN
	$IPT -t nat -A PREROUTING -s 198.18.1.2/32 -j RETURN
	bk_foreign >"$BK_TMP/foreign.1"

	apply "$PLAN_B" "filter=unchanged nat=committed"
	check_plan "$PLAN_B"
	check_foreign "$BK_TMP/foreign.1"
	check_jumps_once
	# Another program's packet counters survive svcnat's commits.
	$SAVE -c -t nat | grep -qF '[7:700] -A PREROUTING -d 198.18.200.9/32' ||
		fail "$BK_NAME: a foreign rule's counters were lost: $($SAVE -c -t nat | grep 198.18.200.9)"
	$SAVE -t nat | grep '^-A PREROUTING' >"$BK_TMP/prerouting"
	diff -u - "$BK_TMP/prerouting" >&2 <<-'EOF' || fail "$BK_NAME: PREROUTING order changed"
	-A PREROUTING -s 198.18.1.1/32 -j RETURN
	-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
	-A PREROUTING -d 198.18.200.9/32 -p tcp -m tcp --dport 8080 -j DNAT --to-destination 198.18.65.9:80
	-A PREROUTING -s 198.18.1.2/32 -j RETURN
	EOF

	# --diff: the planned A against the live B.
	set +e
	$DRV diff "$PLAN_A" >"$BK_TMP/diff"
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "$BK_NAME: diff with a changed plan: exit $rc, want 1"
	grep -q '^\*nat$' "$BK_TMP/diff" &&
		grep -q '^+:KUBE-SEP-' "$BK_TMP/diff" && grep -q '^-:KUBE-SEP-' "$BK_TMP/diff" &&
		grep -q '^+-A KUBE-SVC-.*-j KUBE-SEP-' "$BK_TMP/diff" &&
		grep -q '^--A KUBE-SVC-.*-j KUBE-SEP-' "$BK_TMP/diff" &&
		! grep -q '^\*filter$' "$BK_TMP/diff" ||
		fail "$BK_NAME: unexpected diff: $(cat "$BK_TMP/diff")"

	# A lost jump rule comes back, a duplicated one goes, once each.
	$IPT -t nat -D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	$IPT -t nat -A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	$IPT -t filter -I FORWARD 1 -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
	apply "$PLAN_B" "filter=committed nat=committed"
	check_jumps_once
	check_foreign "$BK_TMP/foreign.1"
	check_plan "$PLAN_B"

	# Back to A (stale chains deleted) and then cleanup.
	apply "$PLAN_A" "filter=unchanged nat=committed"
	check_plan "$PLAN_A"
	$DRV cleanup 2>"$BK_TMP/err" || { cat "$BK_TMP/err" >&2; fail "$BK_NAME: cleanup failed"; }
	check_foreign "$BK_TMP/foreign.1"
	[ -z "$(bk_owned nat)$(bk_owned filter)" ] ||
		fail "$BK_NAME: cleanup left: $(bk_owned nat; bk_owned filter)"

	# Another program's chain that jumps to svcnat's chain and goes to
	# another one keeps both through a commit that moves every offset.
	apply "$PLAN_A" "filter=committed nat=committed"
	$IPT -t nat -N OTHER-JUMP
	$IPT -t nat -A OTHER-JUMP -s 198.18.1.9/32 -g DOCKER
	$IPT -t nat -A OTHER-JUMP -j KUBE-SERVICES
	apply "$PLAN_B" "nat=committed"
	$SAVE -t nat >"$BK_TMP/jumps"
	grep -qx -- '-A OTHER-JUMP -s 198.18.1.9/32 -g DOCKER' "$BK_TMP/jumps" &&
		grep -qx -- '-A OTHER-JUMP -j KUBE-SERVICES' "$BK_TMP/jumps" ||
		fail "$BK_NAME: another program's jumps lost their targets: $(grep OTHER-JUMP "$BK_TMP/jumps")"
	check_plan "$PLAN_B"
	$IPT -t nat -F OTHER-JUMP
	$IPT -t nat -X OTHER-JUMP

	# A stale chain of ours that another program still jumps to stays,
	# emptied, with a warning; one nobody jumps to goes.
	apply "$PLAN_A" "nat=committed"
	$IPT -t nat -N KUBE-SEP-STALEA
	$IPT -t nat -A KUBE-SEP-STALEA -j RETURN
	$IPT -t nat -N KUBE-SEP-STALEB
	$IPT -t nat -N KUBE-SEP-STALEC
	$IPT -t nat -A KUBE-SEP-STALEC -j RETURN
	$IPT -t nat -N OTHER-TOOL
	$IPT -t nat -A OTHER-TOOL -j KUBE-SEP-STALEA
	$IPT -t nat -A OTHER-TOOL -j KUBE-SEP-STALEB
	apply "$PLAN_A" "nat=committed"
	grep -q 'KUBE-SEP-STALEA.*still jump' "$BK_TMP/err" ||
		fail "$BK_NAME: no warning for a stale chain still referenced: $(cat "$BK_TMP/err")"
	$SAVE -t nat >"$BK_TMP/stale"
	grep -q '^:KUBE-SEP-STALEA ' "$BK_TMP/stale" && grep -q '^:KUBE-SEP-STALEB ' "$BK_TMP/stale" ||
		fail "$BK_NAME: a stale chain another program jumps to was deleted"
	! grep -q -- '-A KUBE-SEP-STALEA ' "$BK_TMP/stale" ||
		fail "$BK_NAME: a referenced stale chain was not emptied"
	! grep -q 'KUBE-SEP-STALEC' "$BK_TMP/stale" || fail "$BK_NAME: an unreferenced stale chain stayed"
	grep -qx -- '-A OTHER-TOOL -j KUBE-SEP-STALEA' "$BK_TMP/stale" &&
		grep -qx -- '-A OTHER-TOOL -j KUBE-SEP-STALEB' "$BK_TMP/stale" ||
		fail "$BK_NAME: the other program's rules changed"
	$IPT -t nat -F OTHER-TOOL
	$IPT -t nat -X OTHER-TOOL
	apply "$PLAN_A" "nat=committed"
	! $SAVE -t nat | grep -q 'KUBE-SEP-STALE' || fail "$BK_NAME: stale chains stayed once unreferenced"
	$DRV cleanup 2>"$BK_TMP/err" || { cat "$BK_TMP/err" >&2; fail "$BK_NAME: cleanup failed"; }
	echo "  ok"
}

# The same acid test through the CLI with the planner's output for the
# shipped example: what --dry-run prints is what the kernel holds.
run_cli() {
	local kind args t
	bk_use "$1"
	bk_reset
	case $1 in
	libiptc | direct) kind=$1 ;;
	*) kind="restore" ;;
	esac
	args=(--config "$top_srcdir/contrib/examples/cluster.json" --hostname node-a
	      --node-ip 198.18.0.1 --cluster-cidr 198.18.64.0/18)
	"$SVCNAT" --dry-run "${args[@]}" >"$BK_TMP/dry" 2>/dev/null || fail "svcnat --dry-run failed"
	if [ "$1" = restore-legacy ]; then
		return 0 # the CLI picks the restore command by iptables --version
	fi
	"$SVCNAT" --once --backend "$kind" "${args[@]}" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: svcnat --once: $(cat "$BK_TMP/err")"
	for t in filter nat; do
		sed -n "/^\\*$t\$/,/^COMMIT\$/p" "$BK_TMP/dry" | _bk_owned_filter >"$BK_TMP/plan.$t"
		[ "$(wc -l <"$BK_TMP/plan.$t")" -gt 5 ] || fail "the dry-run's $t view is empty"
		bk_owned "$t" | diff -u "$BK_TMP/plan.$t" - >&2 ||
			fail "$BK_NAME: svcnat --once wrote something else than --dry-run prints ($t)"
	done
	"$SVCNAT" --dry-run --diff --backend "$kind" "${args[@]}" >"$BK_TMP/diff" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: svcnat --diff after --once: exit $?: $(cat "$BK_TMP/diff")"
	"$SVCNAT" --cleanup --backend "$kind" "${args[@]}" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: svcnat --cleanup: $(cat "$BK_TMP/err")"
	echo "  ok (svcnat --once = --dry-run)"
}

# The same for ip6tables with the shipped dual-stack example, on the
# backends that write it: the kernel's ip6tables hold exactly the
# dry-run's IPv6 part, --diff finds both families equal, and another
# program's ip6tables rules stay byte-identical through the sync and
# --cleanup, which leaves none of svcnat's chains (KUBE-FIREWALL is not
# svcnat's to remove, as with kube-proxy).
run_cli6() {
	local kind args t
	bk_use "$1"
	if ! bk_writes_ipv6 "$1"; then
		echo "  ip6tables: not written by $1 yet: not run"
		return 0
	fi
	bk_reset
	case $1 in
	libiptc | direct | nft) kind=$1 ;;
	*) kind="restore" ;;
	esac
	if [ "$1" = restore-legacy ]; then
		return 0 # the CLI picks the restore command by iptables --version
	fi
	args=(--config "$top_srcdir/contrib/examples/dual-stack.json" --hostname node-a
	      --node-ip 198.18.0.1 --node-ip 2001:2::1
	      --cluster-cidr 198.18.64.0/18,2001:2:0:100::/56)
	"$SVCNAT" --dry-run "${args[@]}" >"$BK_TMP/dry" 2>/dev/null || fail "svcnat --dry-run failed"
	# The second *filter (after a *nat) starts the ip6tables part.
	dry_part 6 "$BK_TMP/dry" >"$BK_TMP/dry6"
	$IPT6 -t nat -N FOREIGN6
	$IPT6 -t nat -A PREROUTING -s 2001:2:1::99/128 -j FOREIGN6
	$IPT6 -t nat -A FOREIGN6 -p tcp --dport 81 -j DNAT --to-destination [2001:2:1::1]:80
	$IPT6 -t filter -A INPUT -s 2001:2:1::98/128 -c 3 300 -j ACCEPT
	$SAVE6 -c | grep -v '^#' | grep -v 'KUBE-' >"$BK_TMP/foreign6.before"
	"$SVCNAT" --once --backend "$kind" "${args[@]}" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: svcnat --once (dual-stack): $(cat "$BK_TMP/err")"
	for t in filter nat; do
		sed -n "/^\*$t\$/,/^COMMIT\$/p" "$BK_TMP/dry6" | _bk_owned_filter >"$BK_TMP/plan6.$t"
		[ "$(wc -l <"$BK_TMP/plan6.$t")" -gt 5 ] || fail "the dry-run's ip6 $t view is empty"
		bk_owned6 "$t" | diff -u "$BK_TMP/plan6.$t" - >&2 ||
			fail "$BK_NAME: svcnat --once wrote something else than --dry-run prints (ip6 $t)"
	done
	$SAVE6 -c | grep -v '^#' | grep -v 'KUBE-' | diff -u "$BK_TMP/foreign6.before" - >&2 ||
		fail "$BK_NAME: the sync changed another program's ip6tables rules"
	# kube-proxy's "check, else insert at the top": the jump goes before
	# the other program's rule, and a second sync neither moves nor
	# repeats it.
	for t in 1 2; do
		[ "$($SAVE6 -t nat | grep -m1 '^-A PREROUTING')" = \
			'-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' ] ||
			fail "$BK_NAME: ip6 nat PREROUTING does not start with svcnat's jump (sync $t)"
		[ "$($SAVE6 -t nat | grep -c '^-A PREROUTING .*-j KUBE-SERVICES$')" = 1 ] ||
			fail "$BK_NAME: svcnat's ip6 nat PREROUTING jump is not there once (sync $t)"
		[ "$t" = 2 ] || "$SVCNAT" --once --backend "$kind" "${args[@]}" 2>"$BK_TMP/err" ||
			fail "$BK_NAME: second svcnat --once (dual-stack): $(cat "$BK_TMP/err")"
	done
	"$SVCNAT" --dry-run --diff --backend "$kind" "${args[@]}" >"$BK_TMP/diff" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: svcnat --diff after --once (dual-stack): exit $?: $(cat "$BK_TMP/diff")"
	grep -qx '# ip6tables' "$BK_TMP/diff" || fail "$BK_NAME: --diff compared no ip6tables"
	"$SVCNAT" --cleanup --backend "$kind" "${args[@]}" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: svcnat --cleanup: $(cat "$BK_TMP/err")"
	! $SAVE6 | grep -v '^#' | grep 'KUBE-' | grep -v 'KUBE-FIREWALL' >&2 ||
		fail "$BK_NAME: svcnat's ip6tables chains left after --cleanup"
	$SAVE6 -c | grep -v '^#' | grep -v 'KUBE-' | diff -u "$BK_TMP/foreign6.before" - >&2 ||
		fail "$BK_NAME: --cleanup changed another program's ip6tables rules"
	echo "  ok (ip6tables: svcnat --once = --dry-run's IPv6 part; foreign rules kept)"
}

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${SVCNAT:=$top_builddir/svcnat}"
# run_cli needs the svcnat binary; without it, the driver's part alone.
if [ -x "$SVCNAT" ]; then
	bk_run run_backend run_cli run_cli6
else
	bk_run run_backend
fi
