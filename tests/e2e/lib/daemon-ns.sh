# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Sourced by tests/e2e/daemon-{stall,batching}.sh: the daemon alone in a
# network and mount namespace of its own (unshare -n -m) with a private
# /run, so the xtables lock and the tables it touches are the test's and
# vanish with it.  No traffic, no topology: loopback for /healthz and
# /metrics.
#
#   dn_init NAME      root check, re-exec in the namespaces, temp dir ($TMP), traps
#   dn_start BACKEND ARGS...  the daemon on $TMP/c.json (log $TMP/log; pid $DAEMON)
#   legacy_config N [PORT0]   $TMP/c.json: services default/s1..sN (2014 format), by rename
#   hold / release    take / drop the xtables lock from another process (lib/xtlock.sh)
#   wait_for SECONDS DESC CMD...   poll CMD every 0.1 s (lib/wait.sh)
#   fail MSG
set -u

DN_NAME=daemon
TMP=
DAEMON=

_dn_lib=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tests/e2e/lib/wait.sh
. "$_dn_lib/wait.sh"
# shellcheck source=tests/e2e/lib/xtlock.sh
. "$_dn_lib/xtlock.sh"

fail() {
	echo "FAIL: $DN_NAME: $*" >&2
	if [ -n "$TMP" ] && [ -f "$TMP/log" ]; then
		echo "--- daemon log ---" >&2
		tail -n 30 "$TMP/log" >&2
	fi
	exit 1
}

_dn_skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $DN_NAME: cannot run under CI: $*" >&2
		exit 1
	fi
	echo "*** SKIPPED: $DN_NAME: $* ***" >&2
	exit 77
}

_dn_cleanup() {
	release
	[ -n "$DAEMON" ] && kill -KILL "$DAEMON" 2>/dev/null
	[ -n "$TMP" ] && rm -rf "$TMP"
}

dn_init() {
	local t
	DN_NAME=$1
	shift
	[ "$(id -u)" = 0 ] || _dn_skip "needs root (network namespaces, iptables)"
	for t in curl flock iptables-legacy-save unshare; do
		command -v "$t" >/dev/null || _dn_skip "needs $t"
	done
	if [ -z "${DN_IN_NS:-}" ]; then
		export DN_IN_NS=1
		exec timeout 600 unshare -n -m bash "$0" "$@"
	fi
	mount -t tmpfs -o mode=0755 tmpfs /run || fail "cannot mount a private /run"
	ip link set lo up
	top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
	SVCNAT=${SVCNAT:-$top_builddir/svcnat}
	[ -x "$SVCNAT" ] || fail "no svcnat at $SVCNAT"
	TMP=$(mktemp -d)
	trap _dn_cleanup EXIT
	# A fresh namespace has no tables until something asks for them.
	iptables-legacy-save >/dev/null 2>&1
}

dn_start() {
	local backend=$1
	shift
	: >"$TMP/log"
	"$SVCNAT" --backend="$backend" --config "$TMP/c.json" --hostname node-a \
		--node-ip 198.18.0.1 "$@" </dev/null >>"$TMP/log" 2>&1 &
	DAEMON=$!
}

legacy_config() {
	local i sep= items= base=${2:-20000}
	for i in $(seq 1 "$1"); do
		items="$items$sep{\"Name\":\"s$i\",\"Port\":$((base + i)),\"Endpoints\":[\"198.18.65.10:80\"]}"
		sep=,
	done
	printf '{"Services":[%s]}\n' "$items" >"$TMP/c.tmp"
	mv "$TMP/c.tmp" "$TMP/c.json"
}

# metric NAME_AND_LABELS: its value from /metrics (empty if absent)
metric() {
	curl -s --max-time 30 http://127.0.0.1:10249/metrics | awk -v m="$1" '$1 == m { print $2 }'
}
