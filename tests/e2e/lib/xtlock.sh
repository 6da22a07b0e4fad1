# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Another process holding the xtables lock (sourced by lib/daemon-ns.sh and
# tests/e2e/backend-lock.sh, inside their private /run; the sourcing script
# provides fail MSG).
#
#   hold [SECONDS]    flock(1) takes $LOCK (default /run/xtables.lock) and
#                     keeps it for SECONDS (default 120) or until release;
#                     returns once the lock is taken
#   release           end the holder (no-op without one)

LOCK=${LOCK:-/run/xtables.lock}
HOLDER=

hold() {
	flock "$LOCK" sleep "${1:-120}" &
	HOLDER=$!
	for _ in $(seq 100); do
		flock -n "$LOCK" true || return 0
		sleep 0.05
	done
	fail "the lock holder did not take the lock"
}

release() {
	if [ -n "$HOLDER" ]; then
		# flock(1)'s child inherits the locked descriptor: end both.
		pkill -P "$HOLDER" 2>/dev/null || true
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
		HOLDER=
	fi
}
