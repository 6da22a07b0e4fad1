#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The nft writer on two threads updates its kept state while the kernel
# commits a big batch, and that state is the one a single thread keeps:
#  - `svcnat --once --backend=nft` of a generated cluster (contrib/bench/gen.py,
#    100 services x 10 endpoints: thousands of messages) with SVCNAT_THREADS=1
#    and =2, each in a fresh namespace: the 2-thread note says the batch was
#    encoded in 2 parts at once and the kept state updated beside the commit,
#    the 1-thread one says neither, and the four tables (tests/e2e/nftdump)
#    are the same;
#  - a daemon with SVCNAT_THREADS=2 syncs the cluster (beside the commit),
#    then one endpoint moved and one service added: each change is diffed
#    against the kept state, and after each the tables hold the chains and
#    rules a one-thread --once of the same input writes into a fresh
#    namespace (new chains sit elsewhere in the kernel's order), and
#    `--dry-run --diff` finds nothing to do.
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init threads-nft "$@"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
NFTDUMP=${NFTDUMP:-$top_builddir/tests/e2e/nftdump}
[ -x "$NFTDUMP" ] || fail "no nftdump at $NFTDUMP (make check builds it)"
command -v python3 >/dev/null || fail "no python3"
GEN=$top_srcdir/contrib/bench/gen.py
SET=(--node-ip 198.18.0.1 --hostname node-a --cluster-cidr 198.18.64.0/18)

python3 "$GEN" -n 100 -m 10 -o "$TMP/base.json" || fail "gen.py"
python3 "$GEN" -n 100 -m 10 --change endpoint -o "$TMP/moved.json" || fail "gen.py"
python3 "$GEN" -n 100 -m 10 --change endpoint,add -o "$TMP/added.json" || fail "gen.py"

# The tables, each chain's rules as one block, blocks sorted: a daemon
# adds a new chain where a fresh sync's sorted creation puts it elsewhere.
dump() {
	"$NFTDUMP" nat filter ip6:nat ip6:filter |
		awk '/^[^ ]/ { if (b != "") print b; b = $0; next } { b = b "\x01" $0 } END { if (b != "") print b }' |
		LC_ALL=C sort
}

# once_dump THREADS CONFIG OUT: --once in a fresh namespace; its tables in
# OUT, its stderr in OUT.err.
once_dump() {
	SVCNAT_THREADS=$1 unshare -n sh -c '
		ip link set lo up
		"$1" --once --backend=nft -v --config "$2" --node-ip 198.18.0.1 --hostname node-a \
			--cluster-cidr 198.18.64.0/18 2>"$3.err" || exit 1
		"$4" nat filter ip6:nat ip6:filter' sh "$SVCNAT" "$2" "$3" "$NFTDUMP" >"$3.raw" ||
		fail "--once with $1 thread(s): $(cat "$3.err")"
	awk '/^[^ ]/ { if (b != "") print b; b = $0; next } { b = b "\x01" $0 } END { if (b != "") print b }' \
		"$3.raw" | LC_ALL=C sort >"$3"
}

once_dump 1 "$TMP/base.json" "$TMP/once1"
once_dump 2 "$TMP/base.json" "$TMP/once2"
grep -q 'beside the commit' "$TMP/once2.err" ||
	fail "2 threads: the kept state was not updated beside the commit: $(grep 'nft:' "$TMP/once2.err")"
grep -q 'beside the commit' "$TMP/once1.err" && fail "1 thread updated the kept state beside the commit"
grep -q 'bytes, 2 parts at once)' "$TMP/once2.err" ||
	fail "2 threads: the batch was not encoded in 2 parts: $(grep 'nft:' "$TMP/once2.err")"
grep -q 'bytes, 1 part at once)' "$TMP/once1.err" ||
	fail "1 thread: the batch was encoded in parts: $(grep 'nft:' "$TMP/once1.err")"
for n in 1 2; do
	grep -q 'committed in [0-9.]* s (CPU [0-9.]* s), kept state updated in' "$TMP/once$n.err" ||
		fail "$n thread(s): no CPU time of the commit: $(grep 'nft:' "$TMP/once$n.err")"
done
[ "$(grep -c '^' "$TMP/once1.raw")" -gt 1000 ] || fail "too few rules: $(wc -l <"$TMP/once1")"
cmp -s "$TMP/once1.raw" "$TMP/once2.raw" ||
	fail "1 and 2 threads wrote different tables: $(diff "$TMP/once1.raw" "$TMP/once2.raw" | head -5)"
echo "ok: --once: the same $(grep -c '^' "$TMP/once1.raw") lines from 1 and 2 threads"

syncs() { grep -c 'sync (change)' "$TMP/log"; }
synced() { [ "$(syncs)" -ge "$1" ]; }

cp "$TMP/base.json" "$TMP/c.json"
export SVCNAT_THREADS=${DAEMON_THREADS:-2}
dn_start nft --cluster-cidr 198.18.64.0/18 --min-sync-period 0s \
	--sync-period 1h --healthz-bind-address "" --metrics-bind-address "" -v
unset SVCNAT_THREADS
wait_for 120 "first sync" grep -q 'sync (initial)' "$TMP/log"
[ "${DAEMON_THREADS:-2}" = 1 ] || grep -q 'beside the commit' "$TMP/log" || fail "the daemon's first sync was not beside the commit"
n=0
for c in moved added; do
	n=$((n + 1))
	cp "$TMP/$c.json" "$TMP/c.tmp" && mv "$TMP/c.tmp" "$TMP/c.json"
	wait_for 120 "change $c" synced "$n"
	dump >"$TMP/daemon.$c" || fail "nftdump after $c"
	once_dump 1 "$TMP/$c.json" "$TMP/once.$c"
	cmp -s "$TMP/daemon.$c" "$TMP/once.$c" ||
		fail "after $c the daemon's tables differ from a fresh sync's: $(diff "$TMP/daemon.$c" "$TMP/once.$c" | head -5)"
	"$SVCNAT" --dry-run --diff --backend nft --config "$TMP/c.json" "${SET[@]}" >"$TMP/diff" 2>&1 ||
		fail "after $c --diff: $(head -5 "$TMP/diff")"
	echo "ok: $c: the daemon's tables are a fresh sync's"
done
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "exit $?"
DAEMON=
echo PASS
