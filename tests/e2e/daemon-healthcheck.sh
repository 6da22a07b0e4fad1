#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kube-proxy's service health checks, end to end in a node namespace: a
# LoadBalancer service with externalTrafficPolicy Local and
# healthCheckNodePort 32000
#  - answers 200 with kube-proxy's JSON (localEndpoints 1) on the node that
#    has one of its endpoints;
#  - answers 503 (localEndpoints 0) once that endpoint moves to another node
#    (the daemon follows the file), and 200 again when it is back;
#  - answers 503 on a node without local endpoints (the daemon run as node-b);
#  - moves when healthCheckNodePort changes (the old port closes, the new
#    one opens), and back;
#  - is closed (connection refused) when the service goes away;
#  - without node ports (allocateLoadBalancerNodePorts false), listens on a
#    node address learnt inside --nodeport-addresses at once (a sync follows).
# Also: READY=1 to systemd after the first sync, WATCHDOG=1 from the loop,
# STOPPING=1; a KubeProxyConfiguration's settings hold in the daemon, which
# exits 1 when the file changes (kube-proxy's behaviour); /proxyMode says iptables, /configz
# serves the running KubeProxyConfiguration, /livez answers, and the metrics text
# passes `promtool check metrics` (when promtool is installed; contrib/install-deps
# installs it).
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-healthcheck
command -v curl >/dev/null || e2e_skip "needs 'curl'"

HC=32000
ports='[{"name":"http","protocol":"TCP","port":8080}]'

# config FILE [IP@NODE...]: the LoadBalancer service (no endpoints: none given;
# "none": no service at all)
config() {
	local f=$1
	shift
	if [ "${1:-}" = none ]; then
		k8s_list >"$f"
		return
	fi
	k8s_list \
		"$(k8s_service e2e lb '"type":"LoadBalancer","clusterIP":"198.19.0.20","externalTrafficPolicy":"Local","healthCheckNodePort":'$HC',"ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}]' \
			'"loadBalancer":{"ingress":[{"ip":"198.18.200.1"}]}')" \
		"$(k8s_slice e2e lb "$ports" "$@")" >"$f"
}

# wait_for (lib/wait.sh): what a failure shows
wait_for_context() {
	echo "; last answer: $(cat "$E2E_TMP/hc" 2>/dev/null) ($(cat "$E2E_TMP/hc.code" 2>/dev/null)); daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"
}

# hc CODE LOCAL: the health check answers HTTP CODE with localEndpoints LOCAL
# and kube-proxy's X-Load-Balancing-Endpoint-Weight: LOCAL
hc() {
	in_ns node curl -sS -D "$E2E_TMP/hc.hdr" -o "$E2E_TMP/hc" -w '%{http_code}' \
		"http://$E2E_NODE_IP:$HC/" >"$E2E_TMP/hc.code" 2>&1 || return 1
	[ "$(cat "$E2E_TMP/hc.code")" = "$1" ] || return 1
	grep -q "\"localEndpoints\": $2," "$E2E_TMP/hc" &&
		tr -d '\r' <"$E2E_TMP/hc.hdr" | grep -qix "x-load-balancing-endpoint-weight: $2"
}

hc_closed() {
	! in_ns node curl -sS -o /dev/null "http://$E2E_NODE_IP:$HC/" 2>/dev/null
}

daemon_start() {
	ip netns exec "$(ns_name node)" env ${NOTIFY_SOCKET:+NOTIFY_SOCKET=$NOTIFY_SOCKET} \
		${WATCHDOG_USEC:+WATCHDOG_USEC=$WATCHDOG_USEC} timeout --kill-after=30 120 "$SVCNAT" \
		--backend="$1" --hostname "$2" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$3" \
		--iptables-min-sync-period 200ms --iptables-sync-period 5s \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
}

# masq_bit13: the node's nat table marks with kube-proxy's bit 13
masq_bit13() {
	in_ns node iptables-legacy-save -t nat 2>/dev/null | grep -q -- '--set-xmark 0x2000/0x2000' ||
		in_ns node iptables-nft-save -t nat 2>/dev/null | grep -q -- '--set-xmark 0x2000/0x2000'
}

daemon_stop() {
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "daemon exited $? on SIGTERM: $(tail -n 20 "$E2E_TMP/daemon.log")"
}

run() {
	local backend=$1 cfg=$E2E_TMP/conf/services.json want rc
	mkdir -p "$E2E_TMP/conf"
	: >"$E2E_TMP/daemon.log"

	config "$cfg" 198.18.65.10@node-a 198.18.66.10@node-b
	daemon_start "$backend" node-a "$cfg"
	wait_for 10 "200 with one local endpoint on node-a" hc 200 1
	want=$(printf '{\n\t"service": {\n\t\t"namespace": "e2e",\n\t\t"name": "lb"\n\t},\n\t"localEndpoints": 1,\n\t"serviceProxyHealthy": true\n}')
	[ "$(cat "$E2E_TMP/hc")" = "$want" ] || fail "body differs from kube-proxy's: $(cat "$E2E_TMP/hc")"
	grep -qi '^content-type: application/json' "$E2E_TMP/hc.hdr" || fail "headers: $(cat "$E2E_TMP/hc.hdr")"
	grep -qi '^x-content-type-options: nosniff' "$E2E_TMP/hc.hdr" || fail "headers: $(cat "$E2E_TMP/hc.hdr")"
	say "node-a: 200, localEndpoints 1, kube-proxy's body and headers"

	config "$E2E_TMP/conf/.new" 198.18.66.10@node-b
	mv "$E2E_TMP/conf/.new" "$cfg"
	wait_for 10 "503 once the local endpoint left" hc 503 0
	say "the local endpoint left: 503, localEndpoints 0"
	config "$cfg" 198.18.65.10@node-a 198.18.65.11@node-a
	wait_for 10 "200 with two local endpoints" hc 200 2
	say "two local endpoints: 200, localEndpoints 2"

	# healthCheckNodePort changed: the old port closes, the new one opens
	# (kube-proxy's server set follows the port, not the service).
	HC=32001
	config "$cfg" 198.18.65.10@node-a 198.18.65.11@node-a
	wait_for 10 "the health check on the new port $HC" hc 200 2
	HC=32000 wait_for 10 "the old port 32000 closed" hc_closed
	say "healthCheckNodePort 32000 -> 32001: 32001 answers, 32000 is closed"
	HC=32000
	config "$cfg" 198.18.65.10@node-a 198.18.65.11@node-a
	wait_for 10 "the health check back on $HC" hc 200 2
	HC=32001 wait_for 10 "port 32001 closed again" hc_closed

	[ "$(in_ns node curl -sS "http://127.0.0.1:10249/proxyMode")" = iptables ] || fail "/proxyMode"
	in_ns node curl -sS "http://127.0.0.1:10249/configz" >"$E2E_TMP/configz" || fail "curl /configz"
	python3 - "$E2E_TMP/configz" <<-'EOF' || fail "/configz: $(cat "$E2E_TMP/configz")"
		import json, sys
		c = json.load(open(sys.argv[1]))["kubeproxy.config.k8s.io"]
		assert c["Mode"] == "iptables" and c["HealthzBindAddress"] == "0.0.0.0:10256", c
		assert c["IPTables"]["MasqueradeBit"] == 14 and c["SyncPeriod"], c
	EOF
	in_ns node curl -sS -o /dev/null -w '%{http_code}' "http://$E2E_NODE_IP:10256/livez" | grep -q 200 ||
		fail "/livez on the node IP (default bind 0.0.0.0:10256)"
	in_ns node curl -sS "http://127.0.0.1:10249/metrics" >"$E2E_TMP/metrics" || fail "curl /metrics"
	if command -v promtool >/dev/null; then
		# Exit 3 is lint advice only; the only advice allowed is about
		# kube-proxy's own gauges named ..._total (the names are kept for
		# kube-proxy's dashboards).  Exit 1: a parse error.
		promtool check metrics <"$E2E_TMP/metrics" >"$E2E_TMP/promtool" 2>&1
		rc=$?
		if [ "$rc" = 3 ]; then
			! grep -Ev '^kubeproxy_sync_proxy_rules_(iptables|no_local_endpoints)_total non-counter metrics should not have "_total" suffix$' \
				"$E2E_TMP/promtool" | grep -q . || rc=1
		fi
		# Every kube-proxy series is there, with its labels.
		for m in 'kubeproxy_sync_proxy_rules_duration_seconds_bucket{ip_family="IPv4",le="0.001"}' \
			'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}' \
			'kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family="IPv4"}' \
			'kubeproxy_network_programming_duration_seconds_bucket{ip_family="IPv4",le="0.25"}' \
			'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"}' \
			'kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"}' \
			'kubeproxy_sync_proxy_rules_iptables_last{ip_family="IPv4",table="filter"}' \
			'kubeproxy_sync_proxy_rules_endpoint_changes_total ' \
			'kubeproxy_sync_proxy_rules_endpoint_changes_pending ' \
			'kubeproxy_sync_proxy_rules_service_changes_total ' \
			'kubeproxy_sync_proxy_rules_service_changes_pending ' \
			'kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family="IPv4",traffic_policy="external"}' \
			'kubeproxy_sync_proxy_rules_iptables_restore_failures_total{ip_family="IPv4"}' \
			'kubeproxy_proxy_healthz_total{code="503"}' 'kubeproxy_proxy_livez_total{code="200"}' \
			'process_cpu_seconds_total ' 'process_resident_memory_bytes ' 'process_start_time_seconds ' \
			'process_open_fds ' 'process_max_fds '; do
			grep -qF "$m" "$E2E_TMP/metrics" || fail "/metrics lacks $m"
		done
		grep -q '^kubeproxy_sync_proxy_rules_endpoint_changes_total [1-9]' "$E2E_TMP/metrics" ||
			fail "endpoint changes not counted: $(grep endpoint_changes "$E2E_TMP/metrics")" 
		[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "promtool check metrics (exit $rc): $(cat "$E2E_TMP/promtool")"
		say "/proxyMode iptables, /livez 200, metrics pass promtool check metrics"
	elif [ "${CI:-}" = true ]; then
		fail "promtool missing (contrib/install-deps installs Debian's prometheus)"
	fi

	config "$cfg" none
	wait_for 10 "health check closed with its service" hc_closed
	say "service gone: the health-check port is closed"
	daemon_stop

	say "node-b (no local endpoint): 503; sd_notify READY=1 and WATCHDOG=1"
	config "$cfg" 198.18.65.10@node-a
	# systemd's side of Type=notify: a datagram socket (bounded: 30 s).
	timeout 30 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(10)
with open(sys.argv[2], "a") as f:
    while True:
        try:
            f.write(s.recv(4096).decode() + "\n")
            f.flush()
        except socket.timeout:
            break
' "$E2E_TMP/notify.sock" "$E2E_TMP/notify" &
	E2E_BG_PIDS+=("$!")
	wait_for 5 "notify socket" test -S "$E2E_TMP/notify.sock"
	NOTIFY_SOCKET=$E2E_TMP/notify.sock WATCHDOG_USEC=400000 daemon_start "$backend" node-b "$cfg"
	wait_for 10 "503 on node-b" hc 503 0
	wait_for 10 "READY=1" grep -qx READY=1 "$E2E_TMP/notify"
	wait_for 10 "WATCHDOG=1" grep -qx WATCHDOG=1 "$E2E_TMP/notify"
	daemon_stop
	grep -qx STOPPING=1 "$E2E_TMP/notify" || fail "no STOPPING=1: $(cat "$E2E_TMP/notify")"

	say "a KubeProxyConfiguration: its settings hold; changed, the daemon exits 1 (as kube-proxy)"
	printf '%s\n' 'apiVersion: kubeproxy.config.k8s.io/v1alpha1' 'kind: KubeProxyConfiguration' \
		'healthzBindAddress: 0.0.0.0:10257' 'iptables:' '  masqueradeBit: 13' >"$E2E_TMP/kp.yaml"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 120 "$SVCNAT" --backend="$backend" \
		--hostname node-a --node-ip "$E2E_NODE_IP" --config "$E2E_TMP/kp.yaml" --config "$cfg" \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
	wait_for 10 "/healthz on the file's 10257" in_ns node curl -sf -o /dev/null \
		"http://$E2E_NODE_IP:10257/healthz"
	# /healthz answers before the first sync has written the rules.
	wait_for 10 "masqueradeBit 13 in the rules" masq_bit13
	echo '  masqueradeAll: true' >>"$E2E_TMP/kp.yaml"
	rc=0
	wait "$DAEMON" || rc=$?
	[ "$rc" = 1 ] || fail "exit $rc after the KubeProxyConfiguration changed: $(tail -n 5 "$E2E_TMP/daemon.log")"
	grep -q 'the KubeProxyConfiguration changed: exiting' "$E2E_TMP/daemon.log" ||
		fail "no message: $(tail -n 5 "$E2E_TMP/daemon.log")"

	say "health check without node ports (allocateLoadBalancerNodePorts false): a learnt address"
	# No --node-ip: the daemon follows the node's addresses; the health
	# check listens on those inside --nodeport-addresses, and no periodic
	# sync comes within the test (--iptables-sync-period 1h).
	k8s_list \
		"$(k8s_service e2e lb '"type":"LoadBalancer","clusterIP":"198.19.0.20","externalTrafficPolicy":"Local","healthCheckNodePort":'$HC',"allocateLoadBalancerNodePorts":false,"ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]' \
			'"loadBalancer":{"ingress":[{"ip":"198.18.200.1"}]}')" \
		"$(k8s_slice e2e lb "$ports" 198.18.65.10@node-a)" >"$cfg"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 120 "$SVCNAT" --backend="$backend" \
		--hostname node-a --cluster-cidr "$E2E_CLUSTER_CIDR" --config "$cfg" \
		--nodeport-addresses 198.18.0.0/24 --iptables-min-sync-period 200ms \
		--iptables-sync-period 1h </dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
	wait_for 10 "200 on $E2E_NODE_IP" hc 200 1
	in_ns node ip addr add 198.18.0.9/32 dev vc1 || fail "ip addr add 198.18.0.9"
	wait_for 10 "the health check on the new address 198.18.0.9" \
		in_ns node curl -sf -o /dev/null "http://198.18.0.9:$HC/"
	say "  198.18.0.9 added: the health check answers there at once"
	in_ns node ip addr del 198.18.0.9/32 dev vc1 || fail "ip addr del 198.18.0.9"
	daemon_stop
	if [ -n "${E2E_VERBOSE:-}" ]; then cat "$E2E_TMP/daemon.log"; fi
}

# The health checks do not depend on the rule writer: one backend.
SVCNAT_E2E_BACKENDS=${SVCNAT_E2E_BACKENDS:-direct}
SVCNAT_E2E_BACKENDS=${SVCNAT_E2E_BACKENDS%% *}
e2e_for_each_backend run
