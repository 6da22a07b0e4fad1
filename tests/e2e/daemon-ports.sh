#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every change of a served port reaches the kernel in the daemon (which
# plans changes incrementally and keeps what its writer wrote), with real
# traffic; after each change the new port answers and the old one no
# longer does:
#  - a nodePort changed (30080 -> 30081);
#  - a service port changed (cluster IP port 80 -> 81), the node port kept;
#  - two services swap their node ports (each port must reach the other
#    service's endpoint now);
#  - a port's protocol changed (TCP -> UDP, same node port and port);
#  - the node port removed (type ClusterIP): the cluster IP still answers.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-ports

CIP=198.19.0.30
CIP2=198.19.0.31

# svc NAME CIP PROTO PORT NODEPORT (NODEPORT empty: ClusterIP)
svc() {
	local type=NodePort np=,\"nodePort\":$5
	[ -n "$5" ] || { type=ClusterIP; np=; }
	k8s_service e2e "$1" '"type":"'$type'","clusterIP":"'$2'","ports":[
		{"name":"p","protocol":"'$3'","port":'$4',"targetPort":8080'$np'}]'
}

# config FILE WEB-ARGS API-ARGS: web (endpoint a1) and api (endpoint a2)
config() {
	local f=$1
	k8s_list "$(svc web $CIP $2)" "$(svc api $CIP2 $3)" \
		"$(k8s_slice e2e web '[{"name":"p","protocol":"'${2%% *}'","port":8080}]' 198.18.65.10@node-a)" \
		"$(k8s_slice e2e api '[{"name":"p","protocol":"'${3%% *}'","port":8080}]' 198.18.65.11@node-a)" \
		>"$f.tmp"
	mv "$f.tmp" "$f"
}

# wait_for (lib/wait.sh): what a failure shows
wait_for_context() { echo "; last probe: $(cat "$E2E_TMP/poll" 2>/dev/null); daemon log: $(tail -n 20 "$E2E_TMP/daemon.log")"; }

# answers NS IP PORT POD [--udp]: 5 attempts, every one answered by POD
answers() {
	local o=$E2E_TMP/poll
	in_ns "$1" "$NAMESRV" client --addr "$2" --port "$3" --count 5 --timeout-ms 500 \
		--max-fail 1 ${5:-} >"$o" 2>&1 || return 1
	[ "$(grep -c "^ok $4 " "$o")" = 5 ]
}

# silent NS IP PORT [--udp]: 2 attempts, none answered
silent() {
	local o=$E2E_TMP/poll
	in_ns "$1" "$NAMESRV" client --addr "$2" --port "$3" --count 2 --timeout-ms 500 \
		--max-fail 2 ${4:-} >"$o" 2>&1
	! grep -q '^ok ' "$o"
}

run() {
	local backend=$1 cfg=$E2E_TMP/services.json
	: >"$E2E_TMP/daemon.log"
	topo_add_pod a1 198.18.65.10 a2 198.18.65.11
	start_servers 8080

	config "$cfg" "TCP 80 30080" "TCP 80 30090"
	# --sync-period 1h: no periodic full sync comes to hide a wrong
	# incremental one.
	ip netns exec "$(ns_name node)" timeout --kill-after=30 150 "$SVCNAT" \
		--backend="$backend" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$cfg" \
		--min-sync-period 200ms --sync-period 1h </dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	E2E_BG_PIDS+=($!)
	wait_for 15 "first sync: web on node port 30080" answers client1 "$E2E_NODE_IP" 30080 a1
	answers podclient $CIP 80 a1 || fail "web's cluster IP: $(cat "$E2E_TMP/poll")"
	answers client1 "$E2E_NODE_IP" 30090 a2 || fail "api's node port: $(cat "$E2E_TMP/poll")"
	say "web: $CIP:80 and node port 30080; api: node port 30090"

	config "$cfg" "TCP 80 30081" "TCP 80 30090"
	wait_for 10 "web on the new node port 30081" answers client1 "$E2E_NODE_IP" 30081 a1
	silent client1 "$E2E_NODE_IP" 30080 || fail "the old node port 30080 still answers: $(cat "$E2E_TMP/poll")"
	answers podclient $CIP 80 a1 || fail "the cluster IP after the node port change: $(cat "$E2E_TMP/poll")"
	say "nodePort 30080 -> 30081: 30081 answers, 30080 does not"

	config "$cfg" "TCP 81 30081" "TCP 80 30090"
	wait_for 10 "web on the new port $CIP:81" answers podclient $CIP 81 a1
	silent podclient $CIP 80 || fail "the old port $CIP:80 still answers: $(cat "$E2E_TMP/poll")"
	answers client1 "$E2E_NODE_IP" 30081 a1 || fail "the node port after the port change: $(cat "$E2E_TMP/poll")"
	say "port 80 -> 81: $CIP:81 answers, :80 does not; node port 30081 kept"

	config "$cfg" "TCP 81 30090" "TCP 80 30081"
	wait_for 10 "node port 30081 now api's" answers client1 "$E2E_NODE_IP" 30081 a2
	answers client1 "$E2E_NODE_IP" 30090 a1 || fail "node port 30090 not web's: $(cat "$E2E_TMP/poll")"
	say "the two services swapped node ports: 30081 -> api, 30090 -> web"

	config "$cfg" "UDP 81 30090" "TCP 80 30081"
	wait_for 10 "web over UDP on node port 30090" answers client1 "$E2E_NODE_IP" 30090 a1 --udp
	silent client1 "$E2E_NODE_IP" 30090 || fail "TCP node port 30090 still answers: $(cat "$E2E_TMP/poll")"
	answers podclient $CIP 81 a1 --udp || fail "web's cluster IP over UDP: $(cat "$E2E_TMP/poll")"
	silent podclient $CIP 81 || fail "web's cluster IP still answers TCP: $(cat "$E2E_TMP/poll")"
	say "protocol TCP -> UDP: UDP answers on both, TCP on neither"

	config "$cfg" "UDP 81" "TCP 80 30081"
	wait_for 10 "node port 30090 gone" silent client1 "$E2E_NODE_IP" 30090 --udp
	answers podclient $CIP 81 a1 --udp || fail "the cluster IP without a node port: $(cat "$E2E_TMP/poll")"
	answers client1 "$E2E_NODE_IP" 30081 a2 || fail "api's node port: $(cat "$E2E_TMP/poll")"
	say "type ClusterIP: node port 30090 closed, the cluster IP answers"
	! grep -q 'sync ([a-z]*) failed' "$E2E_TMP/daemon.log" || fail "a sync failed: $(grep 'sync ([a-z]*) failed' "$E2E_TMP/daemon.log")"
}

e2e_for_each_backend run
