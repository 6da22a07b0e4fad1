#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The fleet benchmark (contrib/bench/fleet) small, as a test: three nodes,
# each its own namespace and svcnat daemon (--backend direct), follow a
# three-member etcd, then the project's API server.  On every node's kernel
# (its nat table read back) the objects arrive at a cold start, each write
# arrives, after the store was stopped and started again every node connects
# again and a write arrives,
# and after all daemons stop, a write is made and they all start at once,
# the new endpoint is there and the old one gone.  Any node that does not
# converge within the step's bound fails the test; the benchmark cleans up
# its namespaces and processes itself (also on TERM from the timeout).
set -u
[ "$(id -u)" = 0 ] || { echo "SKIPPED: fleet: needs root"; exit 77; }
for t in etcd openssl python3 ip unshare; do
	command -v "$t" >/dev/null || { echo "SKIPPED: fleet: needs '$t'"; exit 77; }
done
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$(dirname "${SVCNAT:-./svcnat}")}"
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
timeout --kill-after=20 170 python3 "$top_srcdir/contrib/bench/fleet" --check \
	--builddir "$top_builddir" -n 3 --store etcd,kubeapi --services 20 --endpoints 2 \
	--changes 2 --store-down 1 --step-timeout 60 --timeout 160 >"$out" 2>&1
rc=$?
cat "$out"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || { echo "FAIL: fleet: the benchmark's check failed (exit $rc)"; exit 1; }
for store in etcd kubeapi; do
	grep -q "^| $store | 3 | [0-9]" "$out" || { echo "FAIL: fleet: no $store row"; exit 1; }
	grep -q "^| $store | 3 | 1 s | [0-9.]* s | [0-9.]* / " "$out" ||
		{ echo "FAIL: fleet: no $store store-restart row"; exit 1; }
done
echo "PASS: fleet: 3 nodes converged on etcd and on the API server (cold start, writes, store restart, rollout)"
