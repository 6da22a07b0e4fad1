#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon follows its config file and keeps the kernel in step:
#  - a file replaced by rename (as editors write) and one rewritten in place
#    reach the rules, and traffic, within the batching period;
#  - one of svcnat's chains deleted by hand is restored at the next periodic
#    check, and the repair is logged;
#  - /healthz answers 200 with kube-proxy's JSON, /metrics the Prometheus
#    text (curl on 127.0.0.1 inside the node namespace);
#  - a file that becomes invalid keeps its last good content; deleting the
#    file removes its services (clients are refused);
#  - SIGTERM exits 0 and leaves the rules: traffic still flows.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-follow
command -v curl >/dev/null || e2e_skip "needs 'curl'"

MIN_SYNC=500ms
SYNC_PERIOD=3s
ports='[{"name":"http","protocol":"TCP","port":8080}]'

# config FILE IP@NODE...: service web (ClusterIP 198.19.0.10:80) with those endpoints
config() {
	local f=$1
	shift
	k8s_list \
		"$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[
			{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
		"$(k8s_slice e2e web "$ports" "$@")" >"$f"
}

# save BACKEND: the node's nat table as the backend wrote it
save() { node_nat_save "$1"; }

ipt() {
	if { [ "$1" = restore ] || [ "$1" = nft ]; } && save "$1" | grep -q KUBE && command -v iptables-nft >/dev/null &&
		in_ns node iptables-nft-save -t nat 2>/dev/null | grep -q KUBE-SERVICES; then
		shift
		in_ns node iptables-nft "$@"
	else
		shift
		in_ns node iptables-legacy "$@"
	fi
}

# wait_for (lib/wait.sh): what a failure shows
wait_for_context() { echo "; last probe: $(cat "$E2E_TMP/poll" 2>/dev/null); daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"; }

only_from() {
	local o=$E2E_TMP/poll
	in_ns podclient "$NAMESRV" client --addr 198.19.0.10 --port 80 --count 20 --timeout-ms 500 --max-fail 1 >"$o" 2>&1 || return 1
	! grep -qv '^ok ' "$o" || return 1
	[ "$(awk '{print $2}' "$o" | sort -u | tr '\n' ' ')" = "$* " ]
}

refused() {
	in_ns podclient "$NAMESRV" client --addr 198.19.0.10 --port 80 --count 3 --timeout-ms 500 |
		grep -qv '^ok '
}

daemon_start() {
	ip netns exec "$(ns_name node)" timeout --kill-after=30 120 "$SVCNAT" \
		--backend="$1" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$2" \
		--min-sync-period "$MIN_SYNC" --sync-period "$SYNC_PERIOD" \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
}

run() {
	local backend=$1 cfg=$E2E_TMP/conf/services.json o=$E2E_TMP/out chain t0 rc
	mkdir -p "$E2E_TMP/conf"
	: >"$E2E_TMP/daemon.log"
	topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10
	start_servers 8080

	config "$cfg" 198.18.65.10@node-a
	daemon_start "$backend" "$cfg"
	wait_for 10 "first sync" only_from a1
	say "daemon synced: only a1 serves"

	say "health and metrics answer on 127.0.0.1"
	: >"$o"
	in_ns node curl -sS -o "$o" -w '%{http_code}' http://127.0.0.1:10256/healthz >"$o.code" ||
		fail "curl /healthz: $(cat "$o"); daemon $(kill -0 "$DAEMON" 2>/dev/null && echo running ||
			echo gone); its log: $(tail -n 20 "$E2E_TMP/daemon.log")"
	[ "$(cat "$o.code")" = 200 ] || fail "/healthz: HTTP $(cat "$o.code"): $(cat "$o")"
	grep -q '^{"lastUpdated": "[0-9-]* [0-9:.]* +0000 UTC","currentTime": ' "$o" ||
		fail "/healthz body: $(cat "$o")"
	in_ns node curl -sS http://127.0.0.1:10249/metrics >"$o" || fail "curl /metrics"
	for m in 'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} [0-9]' \
		'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} [1-9]' \
		'svcnat_services 1$' 'svcnat_endpoints 1$'; do
		grep -q "^$m" "$o" || fail "/metrics lacks '$m': $(grep -v '^#' "$o" | head -n 40)"
	done

	say "file replaced by rename: endpoints a2 b1"
	config "$E2E_TMP/conf/.new" 198.18.65.11@node-a 198.18.66.10@node-b
	t0=$(date +%s%N)
	mv "$E2E_TMP/conf/.new" "$cfg"
	wait_for 5 "rename over the file" only_from a2 b1
	say "  followed in $(( ($(date +%s%N) - t0) / 1000000 )) ms (min-sync-period $MIN_SYNC)"

	say "file rewritten in place: endpoint a1"
	config "$cfg" 198.18.65.10@node-a
	wait_for 5 "rewrite in place" only_from a1

	say "invalid content keeps the last good rules"
	echo '{"kind": "List", "items": [' >"$cfg"
	wait_for 5 "error logged" grep -q "rejected, keeping its last good content" "$E2E_TMP/daemon.log"
	only_from a1 || fail "an invalid file changed the rules"
	config "$cfg" 198.18.65.10@node-a

	chain=$(save "$backend" | grep -o '^:KUBE-SVC-[A-Z0-9]*' | head -n 1 | tr -d :)
	[ -n "$chain" ] || fail "no KUBE-SVC chain: $(save "$backend")"
	say "delete $chain by hand: repaired at the next periodic check"
	# The rewrite above may still have its sync coming, which can put the
	# jump to $chain back between the flush and the delete ("Too many
	# links"): flush and delete again, a bounded number of times.
	deleted=
	for try in 1 2 3 4 5; do
		repairs=$(grep -c 'repaired drift.*: [1-9][0-9]* chains re-created' "$E2E_TMP/daemon.log")
		ipt "$backend" -t nat -F KUBE-SERVICES || fail "flush KUBE-SERVICES"
		ipt "$backend" -t nat -F "$chain" || fail "flush $chain"
		if ipt "$backend" -t nat -X "$chain" 2>"$E2E_TMP/x.err"; then
			deleted=1
			break
		fi
		say "  a sync put a jump to $chain back in between (try $try): $(cat "$E2E_TMP/x.err")"
		sleep 1
	done
	[ -n "$deleted" ] || fail "delete $chain: $(cat "$E2E_TMP/x.err"): $(save "$backend" | grep -- "$chain")"
	t0=$(date +%s%N)
	wait_for 8 "repair of $chain" sh -c "[ \$(grep -c 'repaired drift.*: [1-9][0-9]* chains re-created' '$E2E_TMP/daemon.log') -gt $repairs ]"
	save "$backend" | grep -q "^:$chain " || fail "$chain not re-created"
	only_from a1 || fail "traffic after the repair"
	say "  repaired after $(( ($(date +%s%N) - t0) / 1000000 )) ms (sync-period $SYNC_PERIOD)"

	say "deleted file: its services go away"
	rm -f "$cfg"
	wait_for 5 "service removed" refused
	config "$cfg" 198.18.65.10@node-a
	wait_for 5 "file created again" only_from a1

	say "SIGTERM: exit 0, rules stay"
	kill -TERM "$DAEMON"
	wait "$DAEMON"
	rc=$?
	[ "$rc" = 0 ] || fail "daemon exited $rc on SIGTERM: $(tail -n 20 "$E2E_TMP/daemon.log")"
	grep -q "exiting, the rules stay in place" "$E2E_TMP/daemon.log" || fail "no exit message"
	save "$backend" | grep -q "^:$chain " || fail "rules removed on exit"
	only_from a1 || fail "traffic after the daemon exited"
	if [ -n "${E2E_VERBOSE:-}" ]; then cat "$E2E_TMP/daemon.log"; fi
}

e2e_for_each_backend run
