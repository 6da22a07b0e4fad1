#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The HTTP servers under a flood, measured, with a build without sanitizers:
#  1. tests/e2e/http-flood.sh with longer floods (1,000 slowloris + 1,000 idle
#     connections from one client namespace, probes every 0.25 s from
#     another): each probe set's latency (p50, p99, max; the goal: every
#     probe within 1 s) and the daemon's peak RSS;
#  2. the pool filled: 3,000 slowloris + 3,000 idle connections to /healthz's
#     port from 200 addresses of client1 (32 each would be 6,400, over the
#     pool's total of a quarter of RLIMIT_NOFILE): the daemon's RSS and
#     descriptors at the full pool, and client2's probes (answered or not,
#     latency) while the pool is full.
# Needs root (network namespaces).
#
#   contrib/bench/http-flood.sh [BUILDDIR] [SECONDS]
#   (BUILDDIR: a build without --enable-sanitizers; SECONDS per flood, default 30)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-.}" && pwd)
secs=${2:-30}
[ -x "$build/svcnat" ] || { echo "no svcnat in $build" >&2; exit 1; }
[ -x "$build/tests/e2e/namesrv" ] || { echo "no tests/e2e/namesrv in $build (make)" >&2; exit 1; }
export SVCNAT=$build/svcnat top_builddir=$build top_srcdir=$top E2E_SCRIPT_TIMEOUT=900
HTTP_FLOOD_SECONDS=$secs "$top/tests/e2e/http-flood.sh"

set +e
. "$top/tests/e2e/lib/topology.sh"
e2e_init http-flood-bench
FLOOD=$top/tests/e2e/flood.py
topo_up
for i in $(seq 1 200); do
	echo "address add 198.19.128.$i/32 dev eth0"
done | ip -n "$(ns_name client1)" -batch - || fail "client1's addresses"
ip -n "$(ns_name node)" route add 198.19.128.0/24 dev vc1 || fail "route"
k8s_list >"$E2E_TMP/services.json"
ip netns exec "$(ns_name node)" "$SVCNAT" --backend=libiptc --hostname node-a \
	--node-ip "$E2E_NODE_IP" --cluster-cidr "$E2E_CLUSTER_CIDR" \
	--config "$E2E_TMP/services.json" >"$E2E_TMP/daemon.log" 2>&1 &
D=$!
E2E_BG_PIDS+=("$D")
wait_for 20 "/healthz" in_ns client2 curl -s -o /dev/null --max-time 2 "http://$E2E_NODE_IP:10256/healthz"
mem() {
	echo "RSS $(awk '/^VmRSS/ { print $2 " " $3 }' "/proc/$D/status"), peak" \
		"$(awk '/^VmHWM/ { print $2 " " $3 }' "/proc/$D/status"), $(ls "/proc/$D/fd" | wc -l) fds"
}
say "daemon up: $(mem), max fds $(awk '/^Max open files/ { print $4 }' "/proc/$D/limits")"
say "client1 floods from 200 addresses (3,000 slowloris + 3,000 idle), ${secs}s"
in_ns client1 python3 "$FLOOD" "$E2E_NODE_IP" 10256 --seconds "$secs" --idle 3000 \
	--slowloris 3000 --source-base 198.19.128.1 --sources 200 --reopen 0.5 \
	>"$E2E_TMP/flood.log" 2>&1 &
F=$!
E2E_BG_PIDS+=("$F")
sleep 8
say "  pool full: $(mem)"
in_ns client2 python3 "$FLOOD" --seconds $((secs - 12)) --every 0.5 --timeout 4 \
	--probe "http://$E2E_NODE_IP:10256/healthz" >"$E2E_TMP/probes"
wait "$F"
say "  $(cat "$E2E_TMP/flood.log")"
say "  client2's probes: $(awk '{ print $2 }' "$E2E_TMP/probes" | sort | uniq -c | tr '\n' ' ')" \
	"seconds: $(awk '$3 != "-" { print $3 }' "$E2E_TMP/probes" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "p50 %.3f max %.3f", v[int((NR + 1) / 2)], v[NR] }')"
sleep 6
say "  after the flood: $(mem)"
kill "$D"
wait "$D"
topo_down
