#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A write the kernel refuses leaves the previous rules in place and says
# why; without CAP_NET_ADMIN the backends fail cleanly.  The refused write
# is real: a DNAT rule in a filter chain, which x_tables (and nf_tables)
# reject at commit time ("DNAT target: only valid in nat table").

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

expect_fail() { # WHAT PATTERN CMD...
	local what=$1 pat=$2 rc=0
	shift 2
	"$@" >"$BK_TMP/out" 2>"$BK_TMP/err" || rc=$?
	[ "$rc" != 0 ] || fail "$BK_NAME: $what succeeded"
	grep -q -- "$pat" "$BK_TMP/err" ||
		fail "$BK_NAME: $what: no '$pat' in: $(cat "$BK_TMP/err")"
	echo "  $what: $(grep -m1 -- "$pat" "$BK_TMP/err")"
}

run_backend() {
	bk_use "$1"
	bk_reset
	$IPT -t nat -A PREROUTING -s 198.18.1.3/32 -j RETURN
	$DRV apply gen:20:2 >/dev/null 2>"$BK_TMP/err" || fail "$BK_NAME: first apply: $(cat "$BK_TMP/err")"
	$SAVE | _bk_strip >"$BK_TMP/before"

	case $1 in
	libiptc) pat='committing the table failed: errno 22 (Invalid argument)' ;;
	direct) pat='replacing the table (IPT_SO_SET_REPLACE) failed: errno 22 (Invalid argument)' ;;
	*) pat="the kernel keeps its previous rules" ;;
	esac
	# The failing plan also changes nat (variant 3): nothing of it may land.
	expect_fail "refused commit" "$pat" $DRV --check-lock apply fail:20:2:3
	grep -qx 'lock: free' "$BK_TMP/err" || fail "$BK_NAME: the xtables lock stayed held"
	grep -q 'apply failed' "$BK_TMP/err" || fail "$BK_NAME: the failure was not the apply's"
	$SAVE | _bk_strip | diff -u "$BK_TMP/before" - >&2 ||
		fail "$BK_NAME: a failed write changed the tables"

	# A plan whose filter table differs and whose nat table the kernel
	# refuses: filter is written first and must be back as it was,
	# counters included, when the apply returns (issue 11).
	$IPT -t filter -A INPUT -s 198.18.1.4/32 -c 7 700 -j ACCEPT
	$SAVE | _bk_strip >"$BK_TMP/before"
	$SAVE -c -t filter | grep -- '-s 198.18.1.4/32' >"$BK_TMP/counters"
	bk_plan filter gen:20:2 >"$BK_TMP/plan.gen"
	bk_plan filter failnat:20:2:3 >"$BK_TMP/plan.failnat"
	! cmp -s "$BK_TMP/plan.gen" "$BK_TMP/plan.failnat" || fail "failnat's filter plan is gen's"
	case $1 in
	libiptc) pat='libiptc: nat: committing the table failed: errno 22 (Invalid argument)' ;;
	direct) pat='direct: nat: replacing the table (IPT_SO_SET_REPLACE) failed: errno 22' ;;
	nft) pat='the kernel applied none of the batch: every table keeps its previous rules' ;;
	*) pat='-restore: exit status' ;;
	esac
	expect_fail "refused nat after a changed filter" "$pat" $DRV --check-lock apply failnat:20:2:3
	grep -qx 'lock: free' "$BK_TMP/err" || fail "$BK_NAME: the xtables lock stayed held"
	$SAVE | _bk_strip | diff -u "$BK_TMP/before" - >&2 ||
		fail "$BK_NAME: a refused nat table left filter changed"
	$SAVE -c -t filter | grep -- '-s 198.18.1.4/32' | diff -u "$BK_TMP/counters" - >&2 ||
		fail "$BK_NAME: putting filter back lost its counters"
	# (nft sends both tables in one batch: nothing to put back.)
	[ "$1" = nft ] || grep -q 'filter: already written; put back as it was' "$BK_TMP/err" ||
		fail "$BK_NAME: filter was not put back: $(cat "$BK_TMP/err")"
	grep -q 'the kernel keeps its previous rules' "$BK_TMP/err" ||
		fail "$BK_NAME: no 'the kernel keeps its previous rules' in: $(cat "$BK_TMP/err")"
	echo "  filter as it was: $(cat "$BK_TMP/counters")"

	# A plan that jumps to a chain it does not have is refused before
	# anything is written, by every backend.
	expect_fail "dangling jump" "jumps to 'KUBE-SVC-NOSUCHCHAIN', which is not a planned chain" \
		$DRV apply dangle:20:2:3
	grep -q "nothing was written; the kernel keeps its previous rules" "$BK_TMP/err" ||
		fail "$BK_NAME: dangling jump: no 'nothing was written' in: $(cat "$BK_TMP/err")"
	$SAVE | _bk_strip | diff -u "$BK_TMP/before" - >&2 ||
		fail "$BK_NAME: a refused plan changed the tables"

	if [ "$1" = libiptc ] || [ "$1" = direct ] || [ "$1" = nft ]; then
		expect_fail "without CAP_NET_ADMIN" 'CAP_NET_ADMIN' \
			setpriv --bounding-set -net_admin --inh-caps -net_admin $DRV apply gen:20:2
	else
		expect_fail "without CAP_NET_ADMIN" 'exit status' \
			setpriv --bounding-set -net_admin --inh-caps -net_admin $DRV apply gen:20:3
	fi
	$SAVE | _bk_strip | diff -u "$BK_TMP/before" - >&2 ||
		fail "$BK_NAME: a refused write changed the tables"
	echo "  ok"
}

bk_run run_backend
