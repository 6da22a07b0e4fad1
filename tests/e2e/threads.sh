#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The first sync on more than one thread writes the same bytes as on one.
# A generated cluster (contrib/bench/gen.py, 300 services x 10 endpoints:
# NodePorts, two-port services, affinity, load balancers) and a dual-stack
# one are synced by `svcnat --once --backend=direct` into empty tables,
# each run in a fresh network namespace of its own: with SVCNAT_THREADS=1
# the verbose note says the nat table was encoded in 1 part, with
# SVCNAT_THREADS=2 and 3 in 2 and 3 parts, and every entry of the four
# tables (tests/e2e/xtdump: counters and comefrom aside, jump offsets
# included) is the same in all three.  The 3-part sync run again on its
# own tables finds nothing to write.
# Every namespace is the test's own (backend-common.sh's re-exec).

. "$(dirname "$0")/backend-common.sh"
bk_init "$@"
: "${SVCNAT:=$top_builddir/svcnat}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
XTDUMP=${XTDUMP:-$top_builddir/tests/e2e/xtdump}
[ -x "$SVCNAT" ] || fail "no svcnat at $SVCNAT"
[ -x "$XTDUMP" ] || fail "no xtdump at $XTDUMP (make check builds it)"
command -v python3 >/dev/null || fail "no python3"
T=$BK_TMP

python3 "$top_srcdir/contrib/bench/gen.py" -n 300 -m 10 -o "$T/v4.json" || fail "gen.py"
python3 "$top_srcdir/contrib/bench/gen.py" -n 150 -m 10 --family dual -o "$T/dual.json" ||
	fail "gen.py --family dual"
SET4=(--node-ip 198.18.0.1 --hostname node-a --cluster-cidr 198.18.64.0/18)
SETD=(--node-ip 198.18.0.1 --node-ip 2001:2::c612:1 --hostname node-a
	--cluster-cidr 198.18.64.0/18,2001:2::c612:4000/114)

# sync_dump THREADS NAME CONFIG SETTINGS...: in a fresh namespace, the
# sync's stderr in $T/NAME.err and the four tables' entries in $T/NAME.dump.
# The second sync's stderr is in $T/NAME.again.err.
sync_dump() {
	local n=$1 name=$2 cfg=$3
	shift 3
	SVCNAT_THREADS=$n unshare -n sh -c '
		svcnat=$1 xtdump=$2 err=$3 cfg=$4
		shift 4
		ip link set lo up
		"$svcnat" --once --backend=direct -v --config "$cfg" "$@" 2>"$err.err" || exit 1
		# A second sync of the same input writes nothing.
		"$svcnat" --once --backend=direct -v --config "$cfg" "$@" 2>"$err.again.err" ||
			exit 1
		for t in filter nat; do
			echo "ip $t" && "$xtdump" 4 "$t" || exit 1
			echo "ip6 $t" && "$xtdump" 6 "$t" || exit 1
		done' sh "$SVCNAT" "$XTDUMP" "$T/$name" "$cfg" "$@" >"$T/$name.dump" ||
		fail "$name: sync or dump failed: $(cat "$T/$name.err" 2>/dev/null)"
}

check_config() {
	local cfg=$1 tag=$2 n parts
	shift 2
	for n in 1 2 3; do
		sync_dump "$n" "$tag$n" "$cfg" "$@"
		parts=$(sed -n 's/.*direct: nat: .* bytes in [0-9.]* s (\([0-9]*\) parts\?).*/\1/p' \
			"$T/$tag$n.err")
		[ "$parts" = "$n" ] ||
			fail "$tag: SVCNAT_THREADS=$n encoded nat in '$parts' parts: $(cat "$T/$tag$n.err")"
		# The kernel's part and its CPU time (contrib/bench/cores.py reads it).
		grep -q 'direct: nat: .*, replaced in [0-9.]* s (CPU [0-9.]* s)$' "$T/$tag$n.err" ||
			fail "$tag: no CPU time of the replace: $(grep 'direct: nat:' "$T/$tag$n.err")"
		if grep -q 'direct: nat: .*replaced' "$T/$tag$n.again.err"; then
			fail "$tag: SVCNAT_THREADS=$n: the second sync wrote nat again"
		fi
		[ "$(grep -c '^' "$T/$tag$n.dump")" -gt 3000 ] || fail "$tag: too few entries"
	done
	cmp -s "$T/${tag}1.dump" "$T/${tag}2.dump" ||
		fail "$tag: 1 and 2 threads wrote different tables: $(diff "$T/${tag}1.dump" "$T/${tag}2.dump" | head -5)"
	cmp -s "$T/${tag}1.dump" "$T/${tag}3.dump" ||
		fail "$tag: 1 and 3 threads wrote different tables: $(diff "$T/${tag}1.dump" "$T/${tag}3.dump" | head -5)"
	echo "ok: $tag: the same $(grep -c '^' "$T/${tag}1.dump") lines of entries from 1, 2 and 3 parts"
}

check_config "$T/v4.json" v4 "${SET4[@]}"
check_config "$T/dual.json" dual "${SETD[@]}"
echo PASS
