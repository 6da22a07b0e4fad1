#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon's loop never waits for the kernel write (issue 17, item 6):
# while another process holds the xtables lock and a sync waits for it,
# /healthz and /metrics answer, every time before the sync has given up
# (the daemon still has the lock file open, no failure logged yet); once
# the lock is free the sync goes through.  SIGTERM during such a write waits
# for it to end and exits 0.  Runs in a network and mount namespace of its
# own with a private /run, so the lock and the tables are the test's.
# Backends libiptc and direct (they take the lock in process; restore's
# lock is iptables-restore's own).
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-stall "$@"

holds_lock_file() { ls -l "/proc/$DAEMON/fd" 2>/dev/null | grep -q " $LOCK\$"; }
failed_yet() { grep -q 'sync (.*) failed' "$TMP/log"; }
nat_has() { iptables-legacy-save -t nat | grep -q -- "$1"; }

run() {
	local backend=$1 i code
	legacy_config 1
	dn_start "$backend" --lock-wait 30000 --min-sync-period 100ms --sync-period 60s
	wait_for 20 "first sync" grep -q 'sync (initial)' "$TMP/log"

	echo "# $backend: the lock held, a change: the sync waits, the loop answers"
	hold
	legacy_config 2
	wait_for 20 "the sync waiting for the lock" holds_lock_file
	for i in 1 2 3 4 5; do
		code=$(curl -s -o "$TMP/h" -w '%{http_code}' --max-time 60 http://127.0.0.1:10256/healthz)
		case $code in 200 | 503) ;; *) fail "/healthz: HTTP '$code'" ;; esac
		curl -s --max-time 60 http://127.0.0.1:10249/metrics >"$TMP/m" ||
			fail "/metrics did not answer"
		grep -q '^svcnat_syncs_total' "$TMP/m" || fail "/metrics: no svcnat_syncs_total"
		holds_lock_file && ! failed_yet ||
			fail "probe $i answered only after the sync stopped waiting for the lock"
	done
	nat_has 's2' && fail "written while the lock was held"
	release
	wait_for 30 "the sync after the lock was released" nat_has 'default/s2'
	failed_yet && fail "the sync failed instead of waiting"

	echo "# $backend: SIGTERM while a write waits: it ends, exit 0"
	hold
	legacy_config 3
	wait_for 20 "the sync waiting for the lock" holds_lock_file
	kill -TERM "$DAEMON"
	wait_for 10 "the exit message" grep -q 'waiting for the kernel write in progress to end' "$TMP/log"
	release
	wait "$DAEMON"
	code=$?
	DAEMON=
	[ "$code" = 0 ] || fail "exit $code after SIGTERM during a write"
	nat_has 'default/s3' || fail "the write in progress at SIGTERM did not complete"
	echo "# $backend: ok"
}

for b in ${SVCNAT_E2E_BACKENDS:-libiptc direct restore}; do
	case $b in libiptc | direct) run "$b" ;; esac
done
echo PASS
