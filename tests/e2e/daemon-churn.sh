#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Churn against the dispatch tree (issue 13): the daemon follows a file of
# 1,200 services (1 in 4 NodePort) while services are added one at a time
# and removed again.  With --dispatch=tree every sync rewrites a few chains
# (the new service's own, a leaf of the KUBE-SERVICES tree and of the
# KUBE-NODEPORTS tree, sometimes their parent) and few rules, read from the
# daemon's sync line ("N chains changed, M rules written"); the same churn
# with --dispatch=linear rewrites KUBE-SERVICES whole each time (at least
# 1,200 rules) with the direct and restore writers, which shows the figure
# measures what it claims (libiptc and nft edit a changed chain rule by rule).  A client
# reaches the last added service through the tree.  The periodic sync (every
# 2 s here) checks the kept incremental plan and state against full ones: no
# difference may be reported.  Every backend.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-churn

BASE=1200
STEPS=4
MAX_CHAINS=24   # a leaf, its parent, a split (16), per tree, and the service's chains
MAX_RULES=200

# config FILE N: services 0..N-1, service i at 198.19.(i/250).(i%250+1):80,
# 1 in 4 a NodePort (30000 + i/4), one endpoint: pod a1
config() {
	awk -v n="$2" 'BEGIN {
		printf "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
		for (i = 0; i < n; i++) {
			ip = sprintf("198.19.%d.%d", int(i / 250), i % 250 + 1)
			np = i % 4 ? "" : sprintf(",\"nodePort\":%d", 30000 + int(i / 4))
			printf "%s{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s%d\",\"namespace\":\"churn\"},", i ? "," : "", i
			printf "\"spec\":{\"type\":\"%s\",\"clusterIP\":\"%s\",\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080%s}]}},", i % 4 ? "ClusterIP" : "NodePort", ip, np
			printf "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"s%d-x\",\"namespace\":\"churn\",\"labels\":{\"kubernetes.io/service-name\":\"s%d\"}},", i, i
			printf "\"addressType\":\"IPv4\",\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":8080}],\"endpoints\":[{\"addresses\":[\"198.18.65.10\"],\"nodeName\":\"node-a\",\"conditions\":{\"ready\":true}}]}"
		}
		print "]}"
	}' >"$1.tmp" && mv "$1.tmp" "$1"
}

daemon_start() {
	ip netns exec "$(ns_name node)" timeout --kill-after=30 300 "$SVCNAT" \
		--backend="$1" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$2" --dispatch="$3" \
		--min-sync-period 200ms --sync-period 2s --v=2 \
		--healthz-bind-address "" --metrics-bind-address 127.0.0.1:10249 \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
}

# synced N FROM: the first sync line after log line FROM that programmed
# N service ports
synced() {
	tail -n +"$(($2 + 1))" "$E2E_TMP/daemon.log" | grep "sync (.*): $1 service ports" | head -n 1
}

wait_synced() {
	local i
	for i in $(seq 1 300); do
		[ -n "$(synced "$1" "$2")" ] && return 0
		sleep 0.1
	done
	fail "no sync of $1 service ports within 30s: $(tail -n 5 "$E2E_TMP/daemon.log")"
}

# churn BACKEND MODE: the adds and removes; prints "max-chains max-rules"
churn() {
	local backend=$1 mode=$2 cfg=$E2E_TMP/conf/services.json n line c r maxc=0 maxr=0 k from
	: >"$E2E_TMP/daemon.log"
	config "$cfg" $BASE
	daemon_start "$backend" "$cfg" "$mode"
	wait_synced $BASE 0
	for k in $(seq 1 $STEPS) $(seq $((STEPS - 1)) -1 0); do
		n=$((BASE + k))
		from=$(wc -l <"$E2E_TMP/daemon.log")
		config "$cfg" $n
		wait_synced $n "$from"
		line=$(synced $n "$from")
		c=$(sed -n 's/.* \([0-9]*\) chains changed, \([0-9]*\) rules written.*/\1/p' <<<"$line")
		r=$(sed -n 's/.* \([0-9]*\) chains changed, \([0-9]*\) rules written.*/\2/p' <<<"$line")
		[ -n "$c" ] && [ -n "$r" ] || fail "cannot read the sync line: $line"
		say "  $mode, $n services: $c chains changed, $r rules written" >&2
		[ "$c" -gt "$maxc" ] && maxc=$c
		[ "$r" -gt "$maxr" ] && maxr=$r
	done
	# the tree is in the metrics too (the node namespace's own loopback)
	if [ "$mode" = tree ] && command -v curl >/dev/null; then
		in_ns node curl -sS http://127.0.0.1:10249/metrics >"$E2E_TMP/metrics" ||
			fail "curl /metrics"
		grep -q '^svcnat_dispatch_trees [1-9]' "$E2E_TMP/metrics" &&
			grep -q '^svcnat_dispatch_chains [1-9]' "$E2E_TMP/metrics" ||
			fail "no dispatch tree in /metrics: $(grep dispatch "$E2E_TMP/metrics")"
	fi
	# a periodic sync has checked the final state once the second starts
	if command -v curl >/dev/null; then
		local i
		for i in $(seq 1 150); do
			in_ns node curl -sS http://127.0.0.1:10249/metrics 2>/dev/null |
				grep -q '^svcnat_syncs_total{reason="periodic"} [2-9]' && break
			sleep 0.1
		done
		[ "$i" -lt 150 ] || fail "$mode: no second periodic sync within 15 s"
	fi
	kill -TERM "$DAEMON"
	wait "$DAEMON"
	! grep -q "differed from a full" "$E2E_TMP/daemon.log" ||
		fail "$mode: the incremental plan or state differed: $(grep "differed from a full" "$E2E_TMP/daemon.log" | head -n 3)"
	echo "$maxc $maxr"
}

run() {
	local backend=$1 o=$E2E_TMP/out t l
	mkdir -p "$E2E_TMP/conf"
	topo_add_pod a1 198.18.65.10
	start_servers 8080

	say "--dispatch=tree: $BASE services, $STEPS added one at a time, then removed"
	read -r t_chains t_rules <<<"$(churn "$backend" tree)"
	say "tree: at most $t_chains chains and $t_rules rules written per sync"
	[ "$t_chains" -le $MAX_CHAINS ] || fail "tree: a sync changed $t_chains chains (> $MAX_CHAINS)"
	[ "$t_rules" -le $MAX_RULES ] || fail "tree: a sync wrote $t_rules rules (> $MAX_RULES)"
	in_ns node iptables-legacy-save -t nat 2>/dev/null | grep -q '^:KUBE-DSP-' ||
		in_ns node iptables-nft-save -t nat 2>/dev/null | grep -q '^:KUBE-DSP-' ||
		fail "no KUBE-DSP- chain in the kernel"
	# service BASE-1, the last one, through the tree
	in_ns podclient "$NAMESRV" client --addr 198.19.4.200 --port 80 --count 5 --timeout-ms 1000 >"$o" 2>&1
	grep -q '^ok ' "$o" || fail "service s$((BASE - 1)) (198.19.4.200:80) not reached: $(cat "$o")"

	say "--dispatch=linear, the same churn"
	read -r l_chains l_rules <<<"$(churn "$backend" linear)"
	say "linear: at most $l_chains chains and $l_rules rules written per sync"
	# direct and restore write a changed chain whole; libiptc edits it
	# rule by rule (and commits the whole table either way), and so does
	# nft (it sends only the rules that differ)
	if [ "$backend" != libiptc ] && [ "$backend" != nft ] && [ "$l_rules" -lt $BASE ]; then
		fail "linear: a sync wrote only $l_rules rules; KUBE-SERVICES alone has $BASE"
	fi
}

e2e_for_each_backend run
