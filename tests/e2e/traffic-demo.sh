#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The README's demo (contrib/demo.sh) runs to the end: svcnat's rules are
# shown, clients reach the example's service shop/web through its cluster
# IP and NodePort, and no namespace is left behind.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-demo
e2e_need_svcnat

timeout --kill-after=5 200 "$top_srcdir/contrib/demo.sh" "$SVCNAT" >"$E2E_TMP/demo.log" 2>&1 &
pid=$!
wait $pid
rc=$?
[ $rc = 0 ] || fail "demo exited $rc: $(tail -n 40 "$E2E_TMP/demo.log")"
grep -q 'KUBE-SERVICES' "$E2E_TMP/demo.log" || fail "demo did not show the rules"
n=$(grep -c '^ok pod-198-18-6[56]-[0-9]* ' "$E2E_TMP/demo.log")
[ "$n" = 18 ] || fail "demo: $n answers from pods, expected 12 + 6: $(tail -n 40 "$E2E_TMP/demo.log")"
grep -q 'demo: finished' "$E2E_TMP/demo.log" || fail "demo did not finish"
# the demo shows its node namespace's name: nothing of its topology is left
prefix=$(grep -o 'svcnat-e2e-[0-9]*-[0-9]*-node' "$E2E_TMP/demo.log" | head -n 1)
[ -n "$prefix" ] || fail "demo did not name its node namespace"
prefix=${prefix%-node}
ip netns list | grep -q "^$prefix-" && fail "demo left namespaces: $(ip netns list | grep "^$prefix-")"
say "demo: $(grep -c . "$E2E_TMP/demo.log") lines of output, 18 answers"
