#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The floor the benchmarks print (contrib/bench/touch, cores.py's tables in
# wall time): touch's JSON and its refusals, and the floor's arithmetic on
# made-up rows (the kernel's part plus the first touch of the table, and of
# the peak RSS for the direct writer only, at the rate of the row's
# threads), and the nfacct counters cores.py makes before a restore tool
# runs.  No kernel, no namespace: touch only maps memory of its own.
set -eu

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
TOUCH=$top_builddir/contrib/bench/touch
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

for t in 1 2; do
	"$TOUCH" 16 $t > "$T/touch.json" || fail "touch 16 $t exited $?"
	python3 - "$T/touch.json" $t <<'PY' || fail "touch 16 $t: $(cat "$T/touch.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["mib"] == 16 and r["threads"] == int(sys.argv[2]), r
for k in ("fresh_wall", "fresh_cpu", "again_wall", "again_cpu"):
    assert r[k] > 0, k
assert abs(r["fresh_mib_per_s"] - 16 / r["fresh_wall"]) < 0.05 * r["fresh_mib_per_s"], r
assert abs(r["again_mib_per_s"] - 16 / r["again_wall"]) < 0.05 * r["again_mib_per_s"], r
PY
done

for args in "" "0" "16 0" "16 65" "x" "16 2 3"; do
	# shellcheck disable=SC2086
	if "$TOUCH" $args > "$T/out" 2> "$T/err"; then
		fail "touch $args succeeded"
	fi
	grep -q "touch" "$T/err" || fail "touch $args: no message"
done

PYTHONPATH=$top_srcdir/contrib/bench python3 - > "$T/floors.txt" <<'PY' || fail "wall_floors"
import cores
# size, writer, label, threads, wall, kernel's part, table bytes, peak RSS KiB
cores.wall_floors({1: 400.0, 2: 800.0}, [
    ("10000x10", "direct", "1", 1, 2.0, 0.8, 122 << 20, 300 << 10),
    ("10000x10", "direct", "2", 2, 1.5, 0.8, 122 << 20, 300 << 10),
    ("10000x10", "nft", "2", 2, 7.0, 6.0, 240 << 20, 330 << 10),
])
PY
# Without a rate measured on 2 threads: the 1-thread rate twice (the fastest).
PYTHONPATH=$top_srcdir/contrib/bench python3 - >> "$T/floors.txt" <<'PY' || fail "wall_floors"
import cores
cores.wall_floors({1: 400.0}, [("1000x10", "direct", "2", 2, 1.0, 0.5, 40 << 20, 80 << 10)])
PY
cat "$T/floors.txt"
# 0.5 + 40/800 = 0.55 (1.10x); 0.5 + 80/800 = 0.6 (1.20x)
grep -q '| 1000x10 | direct | 2 | 2.00x | 0.500 s | 40, 0.550 s, 1.10x | 80, 0.600 s, 1.20x |' \
	"$T/floors.txt" || fail "direct, 2 threads, no 2-thread rate"
# The counters cores.py makes before a restore tool runs svcnat's dry-run
# text (here the golden text of a run with kube-proxy's two counters).
PYTHONPATH=$top_srcdir/contrib/bench python3 - "$top_srcdir/tests/data/golden/cluster@nfacct.rules" \
	<<'PY' || fail "nfacct_names"
import sys, cores
names = cores.nfacct_names(open(sys.argv[1]).read())
assert names == ["ct_state_invalid_dropped_pkts", "localhost_nps_accepted_pkts"], names
assert cores.nfacct_names("-A X -j DROP\n") == []
PY
# 0.8 + 122/400 = 1.105 (1.38x); 0.8 + 300/400 = 1.550 (1.94x)
grep -q '| 10000x10 | direct | 1 | 2.50x | 0.800 s | 122, 1.105 s, 1.38x | 300, 1.550 s, 1.94x |' \
	"$T/floors.txt" || fail "direct, 1 thread"
# 0.8 + 122/800 = 0.9525; 0.8 + 300/800 = 1.175 (1.47x)
grep -q '| 10000x10 | direct | 2 | 1.88x | 0.800 s | 122, 0.953 s, 1.19x | 300, 1.175 s, 1.47x |' \
	"$T/floors.txt" || fail "direct, 2 threads"
# nft: the batch's floor, none from its peak (it writes after the commit)
grep -q '| 10000x10 | nft | 2 | 1.17x | 6.000 s | 240, 6.300 s, 1.05x | - |' \
	"$T/floors.txt" || fail "nft"
echo "PASS: bench-floor"
