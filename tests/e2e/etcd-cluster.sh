#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cluster mode end to end: three nodes (namespaces n1..n3, each running its
# own svcnat daemon with --etcd-endpoints) follow one three-member etcd
# cluster; three backend pods serve on the same segment.
#   - a service written to etcd (svcnat etcd-load) becomes reachable from a
#     client on every node; the time from the write to the rules on each
#     node is logged
#   - an endpoint removed stops receiving new connections on every node
#   - one etcd member killed: the nodes carry on through the others
#   - etcd stopped: rules stay, traffic flows; restarted with changes made
#     meanwhile: every node catches up
#   - compaction past a node's revision while it is cut off: it re-reads
#   - 10,000 services in etcd: a node's initial sync (time logged); then one
#     endpoint moved over the watch is one service port resolved again
set -u
: "${E2E_DEBUG:=}"
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/etcd.sh"

e2e_init etcd-cluster
etcd_need
e2e_need_svcnat
NODES="1 2 3"
SVC_IP=198.19.0.10
API_IP=198.19.0.20

elapsed_ms() {
	echo "$1 $2" | tr , . | awk '{ printf "%d", ($2 - $1) * 1000 }'
}

# The node's nat table, whichever backend wrote it (libiptc: legacy tables;
# restore on an nft-based host: nft).
nat_of() {
	ip netns exec "$(ns_name "n$1")" timeout 10 iptables-legacy-save -t nat 2>/dev/null
	if command -v iptables-nft-save >/dev/null; then
		ip netns exec "$(ns_name "n$1")" timeout 10 iptables-nft-save -t nat 2>/dev/null
	fi
}

# wait_rules WHAT TIMEOUT CHECK: poll every node of $NODES until "CHECK NODE"
# holds; logs the time from $T_WRITE to each node's first success (the
# resolution is one polling round: iptables-save on every node).
wait_rules() {
	local what=$1 t=$2 check=$3 deadline n done_nodes=" " report=
	deadline=$((SECONDS + t))
	while [ $SECONDS -lt $deadline ]; do
		for n in $NODES; do
			case $done_nodes in *" $n "*) continue ;; esac
			if $check "$n"; then
				done_nodes="$done_nodes$n "
				report="$report n$n=$(elapsed_ms "$T_WRITE" "$EPOCHREALTIME")ms"
			fi
		done
		[ "$(echo $done_nodes | wc -w)" = "$(echo $NODES | wc -w)" ] && break
		sleep 0.05
	done
	[ "$(echo $done_nodes | wc -w)" = "$(echo $NODES | wc -w)" ] ||
		fail "$what: only nodes [$done_nodes] within ${t}s; $(for n in $NODES; do echo "--- n$n log:"; tail -n 8 "$E2E_TMP/svcnat.n$n.log"; done)"
	say "$what: etcd write -> rules:$report"
}

# The node's nat table sends service web (SVC_IP) to exactly the endpoints given.
has_eps() { # node ip...
	local node=$1 t ip want got
	shift
	t=$(nat_of "$node")
	echo "$t" | grep -q -- "-d $SVC_IP/32 .*--dport 80 " || return 1
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	got=$(echo "$t" | grep -F -- '--comment "default/web:http" ' |
		sed -n 's/.*-j DNAT --to-destination \(198\.18\.65\.[0-9]*\):8080.*/\1/p' | sort -u | tr '\n' ' ')
	[ "$got" = "$want" ]
}
eps_123() { has_eps "$1" 198.18.65.1 198.18.65.2 198.18.65.3; }
eps_12() { has_eps "$1" 198.18.65.1 198.18.65.2; }
eps_23() { has_eps "$1" 198.18.65.2 198.18.65.3; }
has_api() { nat_of "$1" | grep -q -- "-d $API_IP/32"; }
no_api() { ! has_api "$1"; }

svc_json() { # name ip
	printf '{"apiVersion":"v1","kind":"Service","metadata":{"name":"%s","namespace":"default"},"spec":{"type":"ClusterIP","clusterIP":"%s","ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":8080}]}}' "$1" "$2"
}
slice_json() { # name service ip...
	local name=$1 s=$2 eps= ip
	shift 2
	for ip in "$@"; do
		eps="${eps:+$eps,}{\"addresses\":[\"$ip\"],\"conditions\":{\"ready\":true}}"
	done
	printf '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"%s","namespace":"default","labels":{"kubernetes.io/service-name":"%s"}},"addressType":"IPv4","endpoints":[%s],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}' "$name" "$s" "$eps"
}

probe_all() { # N NAME...: N connections from every node, answered only by NAMEs
	local n=$1 node
	shift
	for node in $NODES; do
		probe "$E2E_TMP/probe.n$node" "n$node" "$SVC_IP" 80 "$n"
		expect_only "$E2E_TMP/probe.n$node" "$@"
	done
}

start_daemon() { # node [extra args]
	local n=$1 eps
	shift
	# Each node lists a different member first, so they spread over the cluster.
	case $n in
	1) eps="http://$ETCD_NET.1:2379,http://$ETCD_NET.2:2379,http://$ETCD_NET.3:2379" ;;
	2) eps="http://$ETCD_NET.2:2379,http://$ETCD_NET.3:2379,http://$ETCD_NET.1:2379" ;;
	*) eps="http://$ETCD_NET.3:2379,http://$ETCD_NET.1:2379,http://$ETCD_NET.2:2379" ;;
	esac
	ip netns exec "$(ns_name "n$n")" timeout --kill-after=5 "$E2E_SCRIPT_TIMEOUT" \
		"$SVCNAT" --backend="${SVCNAT_E2E_BACKEND:-auto}" --hostname "node$n" --node-ip "$ETCD_NET.1$n" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --min-sync-period 200ms -v \
		--etcd-endpoints "$eps" "$@" </dev/null >>"$E2E_TMP/svcnat.n$n.log" 2>&1 &
	E2E_BG_PIDS+=($!)
	DAEMON_PID[$n]=$!
}

stop_daemon() {
	kill -TERM "${DAEMON_PID[$1]}" 2>/dev/null
	wait "${DAEMON_PID[$1]}" 2>/dev/null
}

wait_log() { # file regex timeout
	local deadline=$((SECONDS + $3))
	while [ $SECONDS -lt $deadline ]; do
		grep -Eq -- "$2" "$1" && return 0
		sleep 0.05
	done
	fail "no '$2' in $1 within $3s: $(tail -n 20 "$1")"
}

declare -a DAEMON_PID=()

# --- topology: etcd, 3 nodes, 3 pods on one segment
etcd_topo_up
for n in $NODES; do
	etcd_attach "n$n" "$ETCD_NET.1$n"
	ip -n "$(ns_name "n$n")" route add 198.18.64.0/18 dev eth0 || fail "pod route on n$n"
	# locally generated traffic to cluster IPs needs a route before DNAT
	ip -n "$(ns_name "n$n")" route add 198.19.0.0/16 dev eth0 || fail "service route on n$n"
done
TOPO_PODS=()
for p in 1 2 3; do
	etcd_attach "p$p" "198.18.65.$p"
	ip -n "$(ns_name "p$p")" route add "$ETCD_NET.0/24" dev eth0 || fail "route in p$p"
	TOPO_PODS+=("p$p")
done
start_servers 8080
etcd_cluster_start
say "etcd up: $ETCD_ENDPOINTS"
# A cluster store always holds something (the API server's own service).
ectl_retry put /registry/services/specs/default/kubernetes "$(svc_json kubernetes 198.19.0.1)" >/dev/null || fail put
ectl_retry put /registry/services/endpointslices/default/kubernetes "$(slice_json kubernetes kubernetes 198.18.65.1)" >/dev/null || fail put
for n in $NODES; do start_daemon "$n"; done
for n in $NODES; do wait_log "$E2E_TMP/svcnat.n$n.log" 'etcd: watching' 30; done

# --- a service written to etcd reaches every node
cat >"$E2E_TMP/web.json" <<EOF
{"apiVersion":"v1","kind":"List","items":[$(svc_json web $SVC_IP),$(slice_json web-a web 198.18.65.1 198.18.65.2 198.18.65.3)]}
EOF
T_WRITE=$EPOCHREALTIME
ip netns exec "$(ns_name n1)" timeout 30 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" \
	"$E2E_TMP/web.json" >"$E2E_TMP/load.out" 2>&1 || fail "etcd-load: $(cat "$E2E_TMP/load.out")"
wait_rules "new service web" 30 eps_123
probe_all 30 p1 p2 p3

# --- an endpoint removed: no new connections to it, on any node
T_WRITE=$EPOCHREALTIME
ectl_retry put /registry/services/endpointslices/default/web-a "$(slice_json web-a web 198.18.65.1 198.18.65.2)" >/dev/null || fail put
wait_rules "endpoint p3 removed" 30 eps_12
probe_all 30 p1 p2

# --- one member killed: the nodes carry on through the others
etcd_member_kill 1
ECTL_ENDPOINTS="http://$ETCD_NET.2:2379,http://$ETCD_NET.3:2379" ectl_retry put /registry/services/endpointslices/default/api-a "$(slice_json api-a api 198.18.65.2)" >/dev/null || fail "put with m1 down"
T_WRITE=$EPOCHREALTIME
ECTL_ENDPOINTS="http://$ETCD_NET.2:2379,http://$ETCD_NET.3:2379" ectl_retry put /registry/services/specs/default/api "$(svc_json api $API_IP)" >/dev/null || fail "put with m1 down"
wait_rules "service api with member m1 killed" 60 has_api
etcd_member_start 1
etcd_wait_healthy 1

# --- etcd stopped: rules stay, traffic flows
etcd_cluster_stop
for n in $NODES; do wait_log "$E2E_TMP/svcnat.n$n.log" 'etcd: .*keeping the last rules' 30; done
sleep 2
probe_all 20 p1 p2
for n in $NODES; do
	ip netns exec "$(ns_name "n$n")" timeout 5 curl -s http://127.0.0.1:10249/metrics >"$E2E_TMP/metrics.n$n" ||
		fail "metrics on n$n"
	grep -q '^svcnat_etcd_connected 0' "$E2E_TMP/metrics.n$n" ||
		fail "n$n metrics do not say etcd is disconnected: $(grep etcd "$E2E_TMP/metrics.n$n")"
	ip netns exec "$(ns_name "n$n")" timeout 5 curl -s http://127.0.0.1:10256/healthz >"$E2E_TMP/healthz.n$n" ||
		fail "healthz on n$n"
	grep -q '"etcd": {"connected": false' "$E2E_TMP/healthz.n$n" ||
		fail "n$n /healthz does not say etcd is disconnected: $(cat "$E2E_TMP/healthz.n$n")"
done
say "etcd down: rules kept, traffic flows, metrics and /healthz say etcd is disconnected"
# a node restarted while etcd is down keeps its rules until it can read etcd
stop_daemon 2
start_daemon 2
wait_log "$E2E_TMP/svcnat.n2.log" 'etcd: .*keeping the last rules' 30
sleep 2
eps_12 2 || fail "n2 restarted while etcd is down lost its rules: $(nat_of 2 | grep -c KUBE-SEP) SEP lines"
probe "$E2E_TMP/probe.n2" n2 "$SVC_IP" 80 10
expect_only "$E2E_TMP/probe.n2" p1 p2
say "n2 restarted while etcd is down: no sync before etcd's first read, rules and traffic kept"
# restart with changes made meanwhile (before the nodes' next retry)
for i in 1 2 3; do etcd_member_start "$i"; done
etcd_wait_healthy
T_WRITE=$EPOCHREALTIME
ectl_retry put /registry/services/endpointslices/default/web-a "$(slice_json web-a web 198.18.65.1 198.18.65.2 198.18.65.3)" >/dev/null || fail put
ectl_retry del /registry/services/specs/default/api >/dev/null || fail del
wait_rules "etcd restarted, p3 back" 60 eps_123
wait_rules "etcd restarted, api gone" 30 no_api
probe_all 30 p1 p2 p3

# --- compaction past n3's revision while n3 is cut off: n3 re-reads
# Noticed: the disconnect warning, or a retry line where n3's watch made no
# progress since its last failure (its state came from a re-read after
# etcd's restart), as etcd-source.sh counts both.
cut_re='etcd: .*keeping the last (rules|state)'
before=$(grep -Ec "$cut_re" "$E2E_TMP/svcnat.n3.log")
ip -n "$(ns_name n3)" link set eth0 down
ip netns exec "$(ns_name n3)" ss -K dst "$ETCD_NET.0/24" >/dev/null 2>&1
for _ in $(seq 1 600); do
	[ "$(grep -Ec "$cut_re" "$E2E_TMP/svcnat.n3.log")" -gt "$before" ] && break
	sleep 0.05
done
[ "$(grep -Ec "$cut_re" "$E2E_TMP/svcnat.n3.log")" -gt "$before" ] ||
	fail "n3 did not notice it was cut off: $(tail -n 5 "$E2E_TMP/svcnat.n3.log")"
# two revisions past n3's, so the one it resumes from is compacted
ectl_retry put /registry/services/endpointslices/default/web-a "$(slice_json web-a web 198.18.65.2 198.18.65.3)" >/dev/null || fail put
ectl_retry put /registry/services/specs/default/while-cut "$(svc_json while-cut 198.19.0.30)" >/dev/null || fail put
ectl_retry put /registry/services/endpointslices/default/while-cut "$(slice_json while-cut while-cut 198.18.65.3)" >/dev/null || fail put
rev=$(etcd_revision)
ectl compact "$rev" --physical >/dev/null || fail "compact $rev"
T_WRITE=$EPOCHREALTIME
ip -n "$(ns_name n3)" link set eth0 up
ip -n "$(ns_name n3)" route add 198.18.64.0/18 dev eth0 2>/dev/null
ip -n "$(ns_name n3)" route add 198.19.0.0/16 dev eth0 2>/dev/null
wait_log "$E2E_TMP/svcnat.n3.log" 'etcd: .*compacted.*re-reading' 30
NODES=3 wait_rules "n3 re-read after compaction at revision $rev (link up -> rules)" 30 eps_23
wait_rules "n1, n2 followed live" 5 eps_23
probe_all 30 p2 p3

# --- 10,000 services: a node's initial sync
N=${ETCD_SCALE:-10000}
awk -v n="$N" 'BEGIN {
	printf "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
	for (i = 0; i < n; i++) {
		ip = sprintf("198.19.%d.%d", int(i / 250) + 1, i % 250 + 1);
		ep = sprintf("198.18.%d.%d", 65 + int(i / 250) % 2, i % 250 + 1);
		printf "%s{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s%d\",\"namespace\":\"scale\"},\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"%s\",\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\",\"targetPort\":8080}]}}", (i ? "," : ""), i, ip;
		printf ",{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"s%d-x\",\"namespace\":\"scale\",\"labels\":{\"kubernetes.io/service-name\":\"s%d\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"%s\"],\"conditions\":{\"ready\":true}}],\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"}]}", i, i, ep;
	}
	printf "]}\n";
}' >"$E2E_TMP/big.json"
stop_daemon 1
stop_daemon 2
t0=$EPOCHREALTIME
ip netns exec "$(ns_name n1)" timeout 300 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" \
	"$E2E_TMP/big.json" >"$E2E_TMP/load-big.out" 2>&1 || fail "etcd-load of $N: $(tail -n 3 "$E2E_TMP/load-big.out")"
say "etcd-load: $(cat "$E2E_TMP/load-big.out") in $(elapsed_ms "$t0" "$EPOCHREALTIME") ms"
# n3 follows the load live; n1 starts fresh on the full store
: >"$E2E_TMP/svcnat.n1.log"
t0=$EPOCHREALTIME
start_daemon 1
wait_log "$E2E_TMP/svcnat.n1.log" 'etcd: read [0-9]+ keys' 120
t1=$EPOCHREALTIME
wait_log "$E2E_TMP/svcnat.n1.log" "sync \(.*\): $((N + 3)) service ports" 300
t2=$EPOCHREALTIME
say "n1 initial sync with $N services: $(grep -Eo 'etcd: read [0-9]+ keys.*' "$E2E_TMP/svcnat.n1.log" | head -n 1); start -> etcd read $(elapsed_ms "$t0" "$t1") ms, start -> rules committed $(elapsed_ms "$t0" "$t2") ms"
say "n1: $(grep -Eo "sync \(.*\): $((N + 3)) service ports.*" "$E2E_TMP/svcnat.n1.log" | head -n 1)"
wait_log "$E2E_TMP/svcnat.n3.log" "sync \(.*\): $((N + 3)) service ports" 300
probe "$E2E_TMP/probe.big" n1 "$SVC_IP" 80 10
expect_only "$E2E_TMP/probe.big" p2 p3

# --- one watch event at N services: one service port resolved again
# (-v: "sync parts: ... resolve S s (1 service ports anew)"; a full resolve
# would say N + 3)
grep -q '(1 service ports anew)' "$E2E_TMP/svcnat.n1.log" && fail "n1 logged a one-port resolve before the event"
t0=$EPOCHREALTIME
ectl_retry put /registry/services/endpointslices/scale/s5-x '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s5-x","namespace":"scale","labels":{"kubernetes.io/service-name":"s5"}},"addressType":"IPv4","endpoints":[{"addresses":["198.18.66.6"],"conditions":{"ready":true}}],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}' >/dev/null || fail put
wait_log "$E2E_TMP/svcnat.n1.log" 'resolve [0-9.]+ s \(1 service ports anew\)' 120
wait_log "$E2E_TMP/svcnat.n1.log" 'sync \(change\)' 120
say "n1: one endpoint moved over the watch at $N services: $(grep -Eo 'sync parts: .*' "$E2E_TMP/svcnat.n1.log" | tail -n 1); put -> $(grep -Eo 'sync \(change\): .*' "$E2E_TMP/svcnat.n1.log" | tail -n 1) (observed $(elapsed_ms "$t0" "$EPOCHREALTIME") ms)"
exit 0
