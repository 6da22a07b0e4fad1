#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Restart without a gap: while a client runs a continuous, bounded loop of
# TCP connections to a ClusterIP service, the daemon is stopped (SIGTERM:
# the rules stay) and started again (it adopts the rules already there and
# changes only what differs).  No connection of the loop may fail.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-restart

cfg=$E2E_TMP/web.json
k8s_list \
	"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
	"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080}]' \
		198.18.65.10@node-a 198.18.66.10@node-b)" >"$cfg"

start_daemon() {
	ip netns exec "$(ns_name node)" timeout --kill-after=30 120 "$SVCNAT" \
		--backend="$1" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$cfg" --min-sync-period 200ms \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
	local want=$2 i
	for i in $(seq 1 100); do
		[ "$(grep -c 'sync (initial)' "$E2E_TMP/daemon.log")" -ge "$want" ] && return 0
		sleep 0.1
	done
	fail "daemon start $want: no initial sync: $(tail -n 20 "$E2E_TMP/daemon.log")"
}

run() {
	local backend=$1 o=$E2E_TMP/loop rc n
	: >"$E2E_TMP/daemon.log"
	topo_add_pod a1 198.18.65.10 b1 198.18.66.10
	start_servers 8080
	start_daemon "$backend" 1

	# 3000 connections, each bounded by 1 s: traffic all through the restart.
	in_ns podclient "$NAMESRV" client --addr 198.19.0.10 --port 80 --count 3000 \
		--timeout-ms 1000 >"$o" 2>&1 &
	local client=$!
	E2E_BG_PIDS+=("$client")
	sleep 0.3
	kill -TERM "$DAEMON"
	wait "$DAEMON"
	rc=$?
	[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM"
	say "daemon stopped while the client loops; restarting"
	start_daemon "$backend" 2
	wait "$client" || fail "client loop failed: $(tail -n 5 "$o")"
	n=$(grep -c '^ok ' "$o")
	[ "$n" = 3000 ] || fail "$((3000 - n)) of 3000 connections failed across the restart: $(summary "$o")"
	grep 'sync (initial)' "$E2E_TMP/daemon.log" | tail -n 1 | grep -q '0 chains changed' ||
		fail "the restarted daemon rewrote chains: $(grep 'sync (initial)' "$E2E_TMP/daemon.log" | tail -n 1)"
	say "3000/3000 connections answered across the restart ($(summary "$o")); restart changed no chain"
	kill -TERM "$DAEMON"
	wait "$DAEMON"
}

e2e_for_each_backend run
