#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kube-proxy's metrics of the API source, scraped from a daemon that follows
# the project's API server (tests/kubeapi/kubeapi.py) on a dual-stack node:
#   - kubeproxy_network_programming_duration_seconds{ip_family} measures
#     from each EndpointSlice's endpoints.kubernetes.io/last-change-trigger-time
#     (set 2 s and 5 s in the past here) to the commit, in the slice's own
#     family only; the first list's old trigger times and an unreadable
#     annotation are not measured;
#   - client-go's rest_client_requests_total{code,host,method} and
#     rest_client_request_duration_seconds{host,verb} count the lists and
#     watches by status code, and move when the server drops the watches
#     and answers one request 500; kubernetes_build_info
#     names svcnat's version;
#   - the scrape passes promtool check metrics.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init api-metrics
kapi_need
e2e_need_svcnat
TOPO_IPV6=1

ports='[{"name":"http","protocol":"TCP","port":8080}]'
e2e_first_ipv6_backend

web() {
	k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10",
		"clusterIPs":["198.19.0.10","2001:2:0:f000::10"],"ipFamilies":["IPv4","IPv6"],
		"ipFamilyPolicy":"RequireDualStack","ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]'
}

apply() { kapi_apply_objects "$@"; }

# ago SECONDS: that long before now, as the EndpointSlice controller writes it
ago() { date -u -d "-$1 seconds" +%Y-%m-%dT%H:%M:%S.%NZ; }

scrape() { in_ns node curl -sS --max-time 5 "http://127.0.0.1:10249/metrics" >"$E2E_TMP/metrics"; }

# value SERIES: its value in the last scrape (empty when absent)
value() { awk -v k="$1" '$1 == k { print $2 }' "$E2E_TMP/metrics"; }

# is SERIES VALUE: a fresh scrape has SERIES at VALUE
is() { scrape && [ "$(value "$1")" = "$2" ]; }

synced() { scrape && awk -v k='kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"}' \
	'$1 == k && $2 > 0 { ok = 1 } END { exit !ok }' "$E2E_TMP/metrics"; }

wait_for_context() { echo "; scrape: $(grep -E 'network_programming_duration_seconds_(count|sum)' "$E2E_TMP/metrics" 2>/dev/null | tr '\n' ' '); daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"; }

NP=kubeproxy_network_programming_duration_seconds
V4='ip_family="IPv4"'
V6='ip_family="IPv6"'

topo_up
kapi_certs "$E2E_TMP/kapi"
kapi_kubeconfig "$E2E_TMP/kapi/kc-token" token
# The first list: an old trigger time (before the daemon started) and none.
k8s_list "$(web)" \
	"$(K8S_TRIGGER_TIME=2026-01-01T00:00:00Z k8s_slice e2e web "$ports" 198.18.65.10@node-a 198.18.65.11@node-a)" \
	"$(k8s_slice6 e2e web "$ports" 2001:2:0:65::10@node-a 2001:2:0:65::11@node-a)" \
	>"$E2E_TMP/initial.json"
kapi_start node --data "$E2E_TMP/initial.json"
: >"$E2E_TMP/daemon.log"
say "daemon on backend $E2E_BACKEND6 following the API server, dual-stack node"
ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
	--backend="$E2E_BACKEND6" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
	--node-ip "$E2E_NODE_IP6" --cluster-cidr "$E2E_CLUSTER_CIDR,$E2E_CLUSTER_CIDR6" \
	--kubeconfig "$E2E_TMP/kapi/kc-token" --min-sync-period 200ms --sync-period 30s \
	--lock-wait 30000 </dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
E2E_BG_PIDS+=($!)
wait_for 60 "the first sync" synced
[ "$(value "${NP}_count{$V4}")" = 0 ] && [ "$(value "${NP}_count{$V6}")" = 0 ] ||
	fail "the first list was measured: $(grep "${NP}_count" "$E2E_TMP/metrics")"
say "first sync: nothing measured (the listed slices' trigger times predate the daemon)"

# Trigger times from before the daemon started are ignored (as kube-proxy
# does): let 5 s pass since the first sync, so "5 s ago" is after the start.
sleep 5
say "the IPv4 slice changes, its trigger time 2 s ago"
apply "$(K8S_TRIGGER_TIME=$(ago 2) k8s_slice e2e web "$ports" 198.18.65.10@node-a)"
wait_for 30 "one IPv4 observation" is "${NP}_count{$V4}" 1
[ "$(value "${NP}_count{$V6}")" = 0 ] || fail "the IPv4 change was counted as IPv6 too"
# At least the 2 s since the trigger time, so not in a bucket below 2 s:
# svcnat's own view (the change seen, ~0.2 s to the commit) would be.
[ "$(value "${NP}_bucket{$V4,le=\"1\"}")" = 0 ] &&
	[ "$(value "${NP}_bucket{$V4,le=\"0\"}")" = 0 ] &&
	awk -v s="$(value "${NP}_sum{$V4}")" 'BEGIN { exit !(s >= 2 && s < 60) }' ||
	fail "IPv4 latency not from the trigger time: $(grep "${NP}_sum\|${NP}_bucket{$V4,le=\"[0-3]\"}" "$E2E_TMP/metrics")"
[ "$(value "${NP}_bucket{$V4,le=\"+Inf\"}")" = 1 ] || fail "+Inf bucket: $(value "${NP}_bucket{$V4,le=\"+Inf\"}")"
say "  IPv4: 1 observation of $(value "${NP}_sum{$V4}") s; IPv6: 0"

say "the IPv6 slice changes, its trigger time 5 s ago"
apply "$(K8S_TRIGGER_TIME=$(ago 5) k8s_slice6 e2e web "$ports" 2001:2:0:65::10@node-a)"
wait_for 30 "one IPv6 observation" is "${NP}_count{$V6}" 1
[ "$(value "${NP}_count{$V4}")" = 1 ] || fail "the IPv6 change was counted as IPv4 too"
[ "$(value "${NP}_bucket{$V6,le=\"4\"}")" = 0 ] &&
	awk -v s="$(value "${NP}_sum{$V6}")" 'BEGIN { exit !(s >= 5 && s < 60) }' ||
	fail "IPv6 latency not from the trigger time: $(grep "${NP}_sum" "$E2E_TMP/metrics")"
say "  IPv6: 1 observation of $(value "${NP}_sum{$V6}") s; IPv4 still 1"

say "an unreadable trigger time: synced, not measured"
apply "$(K8S_TRIGGER_TIME=yesterday k8s_slice e2e web "$ports" 198.18.65.11@node-a)"
want_log() { grep -q 'last-change-trigger-time.*not an RFC 3339 time' "$E2E_TMP/daemon.log"; }
wait_for 30 "a note about the annotation" want_log
scrape
[ "$(value "${NP}_count{$V4}")" = 1 ] || fail "an unreadable annotation was measured"
[ "$(value 'svcnat_change_to_commit_duration_seconds_count')" -ge 3 ] ||
	fail "svcnat's own change-to-commit: $(grep change_to_commit_duration_seconds_count "$E2E_TMP/metrics")"

# client-go's rest_client_* for the API source's requests: the lists and
# watches so far.
H="host=\"$KAPI_ADDR\""
lists=$(value "rest_client_requests_total{code=\"200\",$H,method=\"GET\"}")
[ "${lists:-0}" -ge 6 ] || fail "rest_client_requests_total: $(grep '^rest_client_requests_total' "$E2E_TMP/metrics")"
n=$(value "rest_client_request_duration_seconds_count{$H,verb=\"GET\"}")
[ "${n:-0}" -ge 6 ] && [ "$(value "rest_client_request_duration_seconds_bucket{$H,verb=\"GET\",le=\"+Inf\"}")" = "$n" ] ||
	fail "rest_client_request_duration_seconds: $(grep '^rest_client_request_duration' "$E2E_TMP/metrics" | tail -3)"
more() { scrape && [ "$(value "rest_client_requests_total{code=\"500\",$H,method=\"GET\"}")" = 1 ] &&
	[ "$(value "rest_client_requests_total{code=\"200\",$H,method=\"GET\"}")" -gt "$lists" ]; }
# The server ends every watch; the next request is answered 500, the
# retries 200.
kapi_fault 500 1
kapi_fault drop 1
wait_for 30 "a 500 and more 200s counted" more
say "rest_client_requests_total{code=\"200\"}: $lists, then $(value "rest_client_requests_total{code=\"200\",$H,method=\"GET\"}") and one 500 after the watches were dropped"
grep -qF "kubernetes_build_info{build_date=\"1970-01-01T00:00:00Z\",compiler=" "$E2E_TMP/metrics" &&
	grep -q "^kubernetes_build_info{.*git_version=\"v$("$SVCNAT" --version | awk '{print $NF; exit}')\".*platform=\"linux/[a-z0-9]*\"} 1$" "$E2E_TMP/metrics" ||
	fail "kubernetes_build_info: $(grep kubernetes_build_info "$E2E_TMP/metrics"); svcnat --version: $("$SVCNAT" --version)"

if command -v promtool >/dev/null; then
	scrape
	promtool check metrics <"$E2E_TMP/metrics" >"$E2E_TMP/promtool" 2>&1
	rc=$?
	# Exit 3 is lint advice only; kube-proxy's gauges named ..._total are
	# kept by name for its dashboards.
	if [ "$rc" = 3 ]; then
		! grep -Ev '^kubeproxy_sync_proxy_rules_(iptables|no_local_endpoints)_total non-counter metrics should not have "_total" suffix$' \
			"$E2E_TMP/promtool" | grep -q . || rc=1
	fi
	[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "promtool check metrics (exit $rc): $(cat "$E2E_TMP/promtool")"
	say "promtool check metrics: clean"
elif [ "${CI:-}" = true ]; then
	fail "promtool missing (contrib/install-deps installs Debian's prometheus)"
fi
kapi_stop
topo_down
