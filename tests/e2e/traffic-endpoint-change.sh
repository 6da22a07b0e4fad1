#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A change of endpoints (svcnat --once again with a new config) takes effect
# for new connections, while an established connection to a remaining
# endpoint keeps working: one TCP connection is held open across the
# re-sync and exchanges data after it.  The new config drops another
# endpoint and adds a new one; new connections never reach the dropped one
# and do reach the new one.  A third sync removes the service: refused.
. "$(dirname "$0")/lib/topology.sh"
e2e_init traffic-endpoint-change

ports='[{"name":"http","protocol":"TCP","port":8080},{"name":"dns","protocol":"UDP","port":8080}]'
svc=$(k8s_service e2e web '"type":"NodePort","clusterIP":"198.19.0.10","ports":[
	{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080},
	{"name":"dns","protocol":"UDP","port":53,"targetPort":8080,"nodePort":30080}]')

declare -A ip=([a1]=198.18.65.10 [a2]=198.18.65.11 [a3]=198.18.65.12 [b1]=198.18.66.10)

# config FILE POD...: the service with those pods as endpoints
config() {
	local f=$1 p eps=()
	shift
	for p in "$@"; do
		if [ "${ip[$p]#198.18.66.}" != "${ip[$p]}" ]; then
			eps+=("${ip[$p]}@node-b")
		else
			eps+=("${ip[$p]}@node-a")
		fi
	done
	k8s_list "$svc" "$(k8s_slice e2e web "$ports" "${eps[@]}")" >"$f"
}

run() {
	local backend=$1 o=$E2E_TMP/out held hold p dropped= keep=() i
	topo_add_pod a1 "${ip[a1]}" \
		a2 "${ip[a2]}" \
		a3 "${ip[a3]}" \
		b1 "${ip[b1]}"
	start_servers 8080

	config "$E2E_TMP/v1.json" a1 a2 b1
	svcnat_sync "$backend" "$E2E_TMP/v1.json"
	say "v1: a1 a2 b1"
	probe "$o" client1 "$E2E_NODE_IP" 30080 150
	expect_spread "$o" 5 a1 a2 b1

	# The previous backend's hold file must not be read as this one's (the
	# background shell truncates it only when it gets to run).
	rm -f "$E2E_TMP/go" "$E2E_TMP/hold"
	in_ns client1 "$NAMESRV" hold --addr "$E2E_NODE_IP" --port 30080 \
		--wait-file "$E2E_TMP/go" --timeout 40 >"$E2E_TMP/hold" 2>&1 &
	hold=$!
	E2E_BG_PIDS+=("$hold")
	for i in $(seq 1 200); do
		[ -s "$E2E_TMP/hold" ] && break
		sleep 0.05
	done
	held=$(awk 'NR == 1 && $1 == "ok" { print $2 }' "$E2E_TMP/hold")
	[ -n "$held" ] || fail "held connection: $(cat "$E2E_TMP/hold")"
	say "held connection is served by $held"

	for p in a1 a2 b1; do
		if [ "$p" != "$held" ] && [ -z "$dropped" ]; then
			dropped=$p
		else
			keep+=("$p")
		fi
	done
	config "$E2E_TMP/v2.json" "${keep[@]}" a3
	svcnat_sync "$backend" "$E2E_TMP/v2.json"
	say "v2: ${keep[*]} a3 (dropped $dropped)"
	probe "$o" client1 "$E2E_NODE_IP" 30080 150
	expect_spread "$o" 5 "${keep[@]}" a3
	probe "$o" podclient 198.19.0.10 53 150 --udp
	expect_spread "$o" 5 "${keep[@]}" a3

	touch "$E2E_TMP/go"
	wait "$hold" || fail "held connection broke across the re-sync: $(cat "$E2E_TMP/hold")"
	[ "$(awk '$1 == "ok" { print $2 }' "$E2E_TMP/hold" | tr '\n' ' ')" = "$held $held " ] ||
		fail "held connection: expected two answers from $held, got: $(cat "$E2E_TMP/hold")"
	say "held connection answered again by $held after the re-sync"

	say "v3: no endpoints: refused"
	config "$E2E_TMP/v3.json"
	svcnat_sync "$backend" "$E2E_TMP/v3.json"
	probe "$o" client1 "$E2E_NODE_IP" 30080 3 --timeout-ms 1000
	expect_outcome "$o" refused
	say "v1 again: every backend of v1, none of a3"
	svcnat_sync "$backend" "$E2E_TMP/v1.json"
	probe "$o" podclient 198.19.0.10 80 150
	expect_spread "$o" 5 a1 a2 b1
}

e2e_for_each_backend run
