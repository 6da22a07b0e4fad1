#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The etcd source against a hostile member (tests/e2e/etcdfake.py, a JSON
# gateway that misbehaves on purpose), the source alone (etcd-follow) in a
# network namespace of its own:
#  - every watch created, then ended at once: the backoff grows to its 5 s
#    cap (no more than 20 watches in 15 s, the last gaps over 2 s; ten a
#    second before);
#  - every watch created, then canceled as compacted: the re-reads back off
#    the same way (no more than 20 ranges in 15 s).
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init etcd-hostile
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
FOLLOW=${FOLLOW:-$top_builddir/tests/e2e/etcd-follow}
[ -x "$FOLLOW" ] || fail "no etcd-follow at $FOLLOW"
command -v python3 >/dev/null || _dn_skip "needs python3"

say() { echo "etcd-hostile: $*" >&2; }
FAKE=
FOLLOWER=
stop_all() {
	[ -n "$FOLLOWER" ] && kill "$FOLLOWER" 2>/dev/null && wait "$FOLLOWER" 2>/dev/null
	[ -n "$FAKE" ] && kill "$FAKE" 2>/dev/null && wait "$FAKE" 2>/dev/null
	FOLLOWER= FAKE=
}
trap 'stop_all; _dn_cleanup' EXIT

stat() { # python expression over s (/stats)
	curl -s --max-time 10 http://127.0.0.1:2379/stats |
		python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

# window MODE WHAT: WHAT requests ("watch" or "range") in 15 s, bounded,
# with gaps that grow
window() {
	local mode=$1 what=$2 t0 n gaps last
	python3 "$top_srcdir/tests/e2e/etcdfake.py" --port 2379 --mode "$mode" >"$TMP/fake.log" 2>&1 &
	FAKE=$!
	wait_for 20 "the fake member serves" curl -s --max-time 2 http://127.0.0.1:2379/stats
	t0=$(python3 -c 'import time; print(time.monotonic())')
	"$FOLLOW" http://127.0.0.1:2379 >"$TMP/log" 2>&1 &
	FOLLOWER=$!
	sleep 15
	n=$(stat "sum(1 for t, w in s['log'] if w == '$what' and t < $t0 + 15)")
	gaps=$(stat "' '.join('%.2f' % (b - a) for a, b in zip(*(lambda t: (t, t[1:]))([t for t, w in s['log'] if w == '$what' and t < $t0 + 15])))")
	last=$(stat "max((lambda t: [b - a for a, b in zip(t, t[1:])][-2:] or [0])([t for t, w in s['log'] if w == '$what' and t < $t0 + 15]))")
	stop_all
	say "  $mode: $n $what requests in 15 s, gaps $gaps"
	[ "$n" -ge 3 ] || fail "$mode: only $n $what requests in 15 s: no retries?$(tail -n 5 "$TMP/log")"
	[ "$n" -le 20 ] || fail "$mode: $n $what requests in 15 s: the backoff does not grow"
	awk -v g="$last" 'BEGIN { exit !(g >= 2.0) }' ||
		fail "$mode: the last gaps ($gaps) are under 2 s: the backoff does not grow"
}

say "every watch created, then ended at once"
window flap watch
grep -q '^EVENT disconnected http://127.0.0.1:2379: watch stream closed by the member' "$TMP/log" ||
	fail "flap: not logged: $(head -n 5 "$TMP/log")"

say "every watch created, then canceled as compacted"
window compact range
grep -q 'again within 5 s of the last re-read' "$TMP/log" ||
	fail "compact: not logged: $(head -n 8 "$TMP/log")"
say "ok"
