#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The xtables lock: while another process holds /run/xtables.lock (as a
# running iptables command would), a libiptc or iptables-legacy-restore
# write waits a bounded time, then fails with a clear message and writes
# nothing; once the lock is free the write goes through, and the backend
# does not keep the lock after it returns (backend-fail.sh checks the same
# after a failed commit).
# iptables-nft (1.8.9: strace shows it never opens the lock file) and the
# nft backend take no lock: the nf_tables generation check guards their
# transactions, and they write regardless.

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"

# shellcheck source=tests/e2e/lib/xtlock.sh
. "$(dirname "$0")/lib/xtlock.sh"
trap 'release; rm -rf "$BK_TMP"' EXIT

now_ms() { date +%s%3N; }

run_backend() {
	local t0 t1 rc=0 pat
	bk_use "$1"
	bk_reset
	$DRV apply gen:10:2 >/dev/null 2>"$BK_TMP/err" || fail "$BK_NAME: first apply: $(cat "$BK_TMP/err")"
	$SAVE | _bk_strip >"$BK_TMP/before"

	hold 60
	t0=$(now_ms)
	$DRV --lock-wait-ms=800 apply gen:10:2:5 >"$BK_TMP/out" 2>"$BK_TMP/err" || rc=$?
	t1=$(now_ms)
	if [ "$1" = restore-nft ] || [ "$1" = nft ]; then
		[ "$rc" = 0 ] || fail "$BK_NAME: nft write failed under the xtables lock: $(cat "$BK_TMP/err")"
		release
		echo "  ok (nf_tables takes no xtables lock)"
		return
	fi
	[ "$rc" = 1 ] || fail "$BK_NAME: apply under a held lock: exit $rc, want 1: $(cat "$BK_TMP/err")"
	case $1 in
	libiptc | direct) pat="xtables lock: $LOCK: still held by pid $HOLDER (flock) after waiting 800 ms" ;;
	*) pat='xtables lock' ;;
	esac
	grep -qF -- "$pat" "$BK_TMP/err" || fail "$BK_NAME: no '$pat' in: $(cat "$BK_TMP/err")"
	[ $((t1 - t0)) -ge 700 ] || fail "$BK_NAME: gave up after $((t1 - t0)) ms, before the wait"
	[ $((t1 - t0)) -lt 20000 ] || fail "$BK_NAME: waited $((t1 - t0)) ms, unbounded?"
	echo "  held: $(grep -m1 -F -- "$pat" "$BK_TMP/err") ($((t1 - t0)) ms)"
	$SAVE | _bk_strip | diff -u "$BK_TMP/before" - >&2 ||
		fail "$BK_NAME: a write without the lock changed the tables"

	release
	$DRV --lock-wait-ms=800 --check-lock apply gen:10:2:5 >"$BK_TMP/out" 2>"$BK_TMP/err" ||
		fail "$BK_NAME: apply after release: $(cat "$BK_TMP/err")"
	grep -q 'nat=committed' "$BK_TMP/out" || fail "$BK_NAME: nothing written after release"
	grep -qx 'lock: free' "$BK_TMP/err" || fail "$BK_NAME: the lock stayed held after success"
	echo "  ok"
}

bk_run run_backend
