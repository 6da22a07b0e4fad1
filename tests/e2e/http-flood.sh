#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon's HTTP servers keep answering under connection floods: client1
# holds 1,000 slowloris connections (a header line every 5 s, never the end
# of the headers) and 1,000 idle ones (tests/e2e/flood.py, reopening what
# the server closes), while client2 probes every 0.25 s; every probe must
# answer 200 (each bounded at 4 s: generous, so that a loaded machine does
# not fail it; the latency goal is contrib/bench/http-flood.sh's):
#  - flood on /healthz's port: client2's /healthz and health-check node port;
#  - flood on the health-check node port and on the metrics port at once:
#    client2's health-check node port and /healthz (metrics must not starve
#    the health servers);
#  - a connection that trickles a header byte every 0.5 s is closed by the
#    request deadline (5 s) although every byte would reset an inactivity
#    timeout.
# The daemon's peak RSS over the floods is printed.
. "$(dirname "$0")/lib/topology.sh"
e2e_init http-flood
command -v curl >/dev/null || e2e_skip "needs 'curl'"
command -v python3 >/dev/null || e2e_skip "needs 'python3'"
e2e_need_svcnat
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 2200 ] ||
	e2e_skip "flood.py needs 2,200 descriptors (hard RLIMIT_NOFILE $(ulimit -Hn))"

HC=32000
FLOOD="$top_srcdir/tests/e2e/flood.py"
SECS=${HTTP_FLOOD_SECONDS:-15}
ports='[{"name":"http","protocol":"TCP","port":8080}]'

wait_for_context() {
	echo "; daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"
}

# probe_loop OUT URL...: from client2, every 0.25 s for SECS seconds, each
# URL once on a new connection; one line per probe: "URL CODE SECONDS"
# (CODE 000: no answer within 4 s)
probe_loop() {
	local out=$1 u args=()
	shift
	for u in "$@"; do
		args+=(--probe "$u")
	done
	in_ns client2 python3 "$FLOOD" --seconds "$SECS" --every 0.25 --timeout 4 \
		"${args[@]}" >>"$out" 2>>"$E2E_TMP/flood.log" || fail "probe: $(tail -n 5 "$E2E_TMP/flood.log")"
}

# check_probes OUT WHAT: every probe answered 200
check_probes() {
	local out=$1 what=$2 n bad lat
	n=$(wc -l <"$out")
	bad=$(awk '$2 != 200' "$out" | wc -l)
	lat=$(awk '$3 != "-" { print $3 }' "$out" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "p50 %.3f p99 %.3f max %.3f", v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.99)], v[NR] }')
	say "  $what: $n probes, $bad unanswered; seconds: ${lat:-none}"
	[ "$bad" = 0 ] || fail "$what: $bad of $n probes unanswered: $(awk '$2 != 200' "$out" | head -n 5 | tr '\n' ';')"
	[ "$n" -ge 20 ] || fail "$what: only $n probes ran"
}

# flood PORT ARGS...: flood.py from client1 for SECS seconds, in the background
flood() {
	local port=$1
	shift
	in_ns client1 python3 "$FLOOD" "$E2E_NODE_IP" "$port" --seconds "$SECS" "$@" \
		>>"$E2E_TMP/flood.log" 2>&1 &
	FLOODS+=("$!")
	E2E_BG_PIDS+=("$!")
}

flood_wait() {
	local p
	for p in "${FLOODS[@]}"; do
		wait "$p" || fail "flood.py exited $?: $(cat "$E2E_TMP/flood.log")"
	done
	FLOODS=()
}

# the daemon's peak RSS (DAEMON is timeout(1); svcnat is its child)
peak_rss() {
	local pid
	pid=$(cat "/proc/$DAEMON/task/$DAEMON/children" 2>/dev/null | awk '{ print $1 }')
	awk '/^VmHWM/ { print $2 " " $3 }' "/proc/${pid:-$DAEMON}/status"
}

run() {
	local backend=$1 cfg=$E2E_TMP/services.json t
	FLOODS=()
	: >"$E2E_TMP/daemon.log"
	k8s_list \
		"$(k8s_service e2e lb '"type":"LoadBalancer","clusterIP":"198.19.0.20","externalTrafficPolicy":"Local","healthCheckNodePort":'$HC',"ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}]' \
			'"loadBalancer":{"ingress":[{"ip":"198.18.200.1"}]}')" \
		"$(k8s_slice e2e lb "$ports" 198.18.65.10@node-a)" >"$cfg"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
		--backend="$backend" --hostname node-a --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$cfg" \
		--metrics-bind-address 0.0.0.0:10249 --iptables-sync-period 5s \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
	wait_for 60 "/healthz 200 from client2" in_ns client2 curl -sf -o /dev/null --max-time 2 \
		"http://$E2E_NODE_IP:10256/healthz"
	wait_for 60 "health-check port 200 from client2" in_ns client2 curl -sf -o /dev/null \
		--max-time 2 "http://$E2E_NODE_IP:$HC/"
	say "daemon up: RSS peak $(peak_rss)"

	say "client1 floods /healthz's port 10256 (1,000 slowloris + 1,000 idle), ${SECS}s"
	flood 10256 --slowloris 1000 --idle 1000
	sleep 2
	probe_loop "$E2E_TMP/p1" "http://$E2E_NODE_IP:10256/healthz" "http://$E2E_NODE_IP:$HC/"
	flood_wait
	say "  $(tail -n 1 "$E2E_TMP/flood.log")"
	grep "10256/healthz" "$E2E_TMP/p1" >"$E2E_TMP/p1h"
	grep ":$HC/" "$E2E_TMP/p1" >"$E2E_TMP/p1c"
	check_probes "$E2E_TMP/p1h" "/healthz"
	check_probes "$E2E_TMP/p1c" "health-check port"
	say "  daemon RSS peak $(peak_rss)"

	say "client1 floods the health-check port $HC and the metrics port 10249 at once"
	flood "$HC" --slowloris 1000 --idle 1000
	flood 10249 --slowloris 1000 --idle 1000
	sleep 2
	probe_loop "$E2E_TMP/p2" "http://$E2E_NODE_IP:$HC/" "http://$E2E_NODE_IP:10256/healthz"
	flood_wait
	say "  $(tail -n 2 "$E2E_TMP/flood.log" | tr '\n' ' ')"
	grep "10256/healthz" "$E2E_TMP/p2" >"$E2E_TMP/p2h"
	grep ":$HC/" "$E2E_TMP/p2" >"$E2E_TMP/p2c"
	check_probes "$E2E_TMP/p2c" "health-check port"
	check_probes "$E2E_TMP/p2h" "/healthz"
	say "  daemon RSS peak $(peak_rss)"

	say "a connection trickling a header byte every 0.5 s meets the request deadline"
	: >"$E2E_TMP/flood.log"
	SECS=15 flood 10256 --trickle 0.5
	flood_wait
	say "  $(cat "$E2E_TMP/flood.log")"
	t=$(sed -n 's/.*trickle closed after \([0-9.]*\) s.*/\1/p' "$E2E_TMP/flood.log")
	[ -n "$t" ] || fail "the trickling connection was still open after 15 s"
	awk -v t="$t" 'BEGIN { exit !(t >= 4 && t < 12) }' ||
		fail "the trickling connection closed after $t s, not at the 5 s deadline"

	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "daemon exited $? on SIGTERM: $(tail -n 20 "$E2E_TMP/daemon.log")"
}

e2e_need_svcnat
E2E_BACKEND=$(e2e_backends | awk '{ print $1 }')
say "=== backend $E2E_BACKEND ==="
topo_up
run "$E2E_BACKEND"
topo_down
