# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# A three-member etcd cluster for the cluster-mode tests (tests/e2e/etcd-*.sh;
# bash; source after topology.sh, call e2e_init first).
#
#   etcd members m1..m3 198.18.250.1-3 ──┐ bridge br0 in namespace "etcd"
#   node namespaces  198.18.250.11.. ────┤ (one veth each)
#   pod namespaces   198.18.65.x/24  ────┘
#
# etcd runs in a namespace of its own (the host's loopback is unreachable
# from other namespaces, and nothing may listen on the host's interfaces);
# nodes and pods hang off its bridge on one flat 198.18.x segment.  Data
# dirs live in $E2E_TMP; e2e_cleanup (topology.sh's EXIT trap) kills every
# process in our namespaces, so etcd never outlives the test.
#
#   etcd_topo_up              namespace "etcd" with the bridge (new TOPO_PREFIX)
#   etcd_attach NS IP         namespace NS (created) on the bridge with IP/24
#   etcd_cluster_start        start m1..m3, wait (bounded) until all are healthy
#   etcd_member_start I       (re)start member I with its data
#   etcd_member_kill I [SIG]  kill member I (default KILL) and wait for it
#   etcd_cluster_stop         stop every member (TERM)
#   etcd_wait_healthy [I...]  bounded wait until the members answer /health
#   ectl ARGS...              etcdctl (v3) against every member (or $ECTL_ENDPOINTS)
#   ectl_retry ARGS...        the same, retried while a leader is elected
#   etcd_revision             the cluster's current revision

ETCD_NET=198.18.250
ETCD_MEMBERS=3
ETCD_CLIENT_PORT=2379
ETCD_PEER_PORT=2380
ETCD_START_TIMEOUT=${ETCD_START_TIMEOUT:-60}
ETCD_ENDPOINTS=
ETCD_DIR=
declare -a ETCD_PIDS=()

etcd_need() {
	local t
	for t in etcd etcdctl curl; do
		command -v "$t" >/dev/null || e2e_skip "needs '$t' (Debian: etcd-server, etcd-client, curl)"
	done
}

# _etcd_ns NAME: one of our namespaces (prefix from topology.sh, so its
# cleanup finds it), lo up, ICMP not rate-limited.
_etcd_ns() {
	local ns
	ns=$(ns_name "$1")
	ip netns add "$ns" || fail "ip netns add $ns"
	ip -n "$ns" link set lo up || fail "lo up in $ns"
	ip netns exec "$ns" sysctl -qw net.ipv4.icmp_ratelimit=0 >/dev/null || fail "sysctl in $ns"
}

etcd_topo_up() {
	local i
	TOPO_N=$((TOPO_N + 1))
	TOPO_PREFIX="svcnat-e2e-$$-$TOPO_N"
	_etcd_ns etcd
	ip -n "$(ns_name etcd)" link add br0 type bridge || fail "bridge in etcd ns"
	ip -n "$(ns_name etcd)" link set br0 up || fail "br0 up"
	for i in $(seq 1 "$ETCD_MEMBERS"); do
		ip -n "$(ns_name etcd)" addr add "$ETCD_NET.$i/24" dev br0 || fail "member address $i"
	done
	ETCD_ENDPOINTS=
	for i in $(seq 1 "$ETCD_MEMBERS"); do
		ETCD_ENDPOINTS="${ETCD_ENDPOINTS:+$ETCD_ENDPOINTS,}http://$ETCD_NET.$i:$ETCD_CLIENT_PORT"
	done
	ETCD_DIR="$E2E_TMP/etcd-$TOPO_N"
	mkdir -p "$ETCD_DIR" || fail "mkdir $ETCD_DIR"
}

# etcd_attach NS IP: a namespace on the etcd bridge (veth "eth0" inside).
etcd_attach() {
	local name=$1 ip=$2 ns br
	_etcd_ns "$name"
	ns=$(ns_name "$name")
	br="v$(echo "$ip" | tr . _ | cut -d_ -f3-)"
	ip -n "$(ns_name etcd)" link add "$br" type veth peer name eth0 netns "$ns" || fail "veth for $name"
	ip -n "$(ns_name etcd)" link set "$br" master br0 up || fail "enslave $br"
	ip -n "$ns" addr add "$ip/24" dev eth0 || fail "address $ip on $name"
	ip -n "$ns" link set eth0 up || fail "eth0 up in $name"
}

_etcd_cluster_arg() {
	local i s=
	for i in $(seq 1 "$ETCD_MEMBERS"); do
		s="${s:+$s,}m$i=http://$ETCD_NET.$i:$ETCD_PEER_PORT"
	done
	echo "$s"
}

etcd_member_start() {
	local i=$1 state=new
	[ -d "$ETCD_DIR/m$i" ] && state=existing
	ip netns exec "$(ns_name etcd)" etcd --name "m$i" --data-dir "$ETCD_DIR/m$i" \
		--listen-client-urls "http://$ETCD_NET.$i:$ETCD_CLIENT_PORT" \
		--advertise-client-urls "http://$ETCD_NET.$i:$ETCD_CLIENT_PORT" \
		--listen-peer-urls "http://$ETCD_NET.$i:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls "http://$ETCD_NET.$i:$ETCD_PEER_PORT" \
		--initial-cluster "$(_etcd_cluster_arg)" --initial-cluster-state "$state" \
		--initial-cluster-token "svcnat-e2e-$$" \
		</dev/null >>"$ETCD_DIR/m$i.log" 2>&1 &
	ETCD_PIDS[$i]=$!
	E2E_BG_PIDS+=($!)
}

etcd_wait_healthy() {
	local members=("$@") i deadline ok
	[ ${#members[@]} -eq 0 ] && members=($(seq 1 "$ETCD_MEMBERS"))
	deadline=$((SECONDS + ETCD_START_TIMEOUT))
	while [ $SECONDS -lt $deadline ]; do
		ok=1
		for i in "${members[@]}"; do
			ip netns exec "$(ns_name etcd)" timeout 3 curl -sf \
				"http://$ETCD_NET.$i:$ETCD_CLIENT_PORT/health" 2>/dev/null |
				grep -q '"health":"true"' || { ok=0; break; }
		done
		[ $ok = 1 ] && return 0
		sleep 0.2
	done
	for i in "${members[@]}"; do
		echo "--- etcd m$i log (tail) ---" >&2
		tail -n 20 "$ETCD_DIR/m$i.log" >&2
	done
	fail "etcd members ${members[*]} not healthy within ${ETCD_START_TIMEOUT}s"
}

etcd_cluster_start() {
	local i
	etcd_need
	for i in $(seq 1 "$ETCD_MEMBERS"); do
		etcd_member_start "$i"
	done
	etcd_wait_healthy
}

etcd_member_kill() {
	local i=$1 sig=${2:-KILL} n
	[ -n "${ETCD_PIDS[$i]:-}" ] || return 0
	kill -"$sig" "${ETCD_PIDS[$i]}" 2>/dev/null
	for n in $(seq 1 100); do
		kill -0 "${ETCD_PIDS[$i]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "${ETCD_PIDS[$i]}" 2>/dev/null
	wait "${ETCD_PIDS[$i]}" 2>/dev/null
	ETCD_PIDS[$i]=
}

etcd_cluster_stop() {
	local i
	for i in $(seq 1 "$ETCD_MEMBERS"); do
		etcd_member_kill "$i" TERM
	done
}

ectl() {
	ip netns exec "$(ns_name etcd)" timeout --kill-after=5 "$E2E_CMD_TIMEOUT" \
		env ETCDCTL_API=3 etcdctl --endpoints="${ECTL_ENDPOINTS:-$ETCD_ENDPOINTS}" "$@"
}

# ectl_retry ARGS...: ectl, retried (10 tries, ~20 s) while the cluster
# elects a leader (slow on a loaded machine); only for idempotent commands
# (put, del).
ectl_retry() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		ectl "$@" 2>"$E2E_TMP/ectl.err" && return 0
		sleep 2
	done
	cat "$E2E_TMP/ectl.err" >&2
	return 1
}

etcd_revision() {
	ectl endpoint status -w json | tr ',' '\n' | sed -n 's/.*"revision":\([0-9]*\).*/\1/p' | head -n 1
}
