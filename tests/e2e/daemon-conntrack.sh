#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# UDP conntrack cleanup end to end: a client keeps one UDP socket (one
# source port, so one conntrack entry) talking to a ClusterIP service.  The
# endpoint serving it is removed from the config while its server keeps
# running: without cleanup the stale entry would keep DNATing the client's
# datagrams to it.  The daemon deletes the entry over ctnetlink, so the
# client's next datagram on the same socket reaches a live backend, and
# kube-proxy's kubeproxy_conntrack_reconciler_* metrics count it.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-conntrack

ports='[{"name":"dns","protocol":"UDP","port":5353}]'
config() {
	local f=$1
	shift
	k8s_list \
		"$(k8s_service e2e dns '"type":"ClusterIP","clusterIP":"198.19.0.53","ports":[
			{"name":"dns","protocol":"UDP","port":53,"targetPort":5353}]')" \
		"$(k8s_slice e2e dns "$ports" "$@")" >"$f"
}

declare -A ipof=([a1]=198.18.65.10 [a2]=198.18.65.11)

run() {
	local backend=$1 cfg=$E2E_TMP/dns.json first other i ans= rc
	: >"$E2E_TMP/daemon.log"
	topo_add_pod a1 "${ipof[a1]}" a2 "${ipof[a2]}"
	start_servers 5353
	config "$cfg" "${ipof[a1]}@node-a" "${ipof[a2]}@node-a"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 120 "$SVCNAT" \
		--backend="$backend" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$cfg" \
		--min-sync-period 200ms --sync-period 30s --v=2 \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	E2E_BG_PIDS+=($!)
	for i in $(seq 1 100); do
		grep -q 'sync (initial)' "$E2E_TMP/daemon.log" && break
		sleep 0.1
	done
	grep -q 'sync (initial)' "$E2E_TMP/daemon.log" || fail "no initial sync: $(cat "$E2E_TMP/daemon.log")"

	# One UDP socket (bash's /dev/udp: connected, fixed source port) kept
	# open by a client that sends a datagram whenever a file appears.
	rm -f "$E2E_TMP/send."* "$E2E_TMP/udp.out"
	ip netns exec "$(ns_name podclient)" timeout 60 bash -c '
		exec 3<>/dev/udp/198.19.0.53/53 || exit 1
		for n in 1 2 3; do
			for i in $(seq 1 300); do [ -e "$0.$n" ] && break; sleep 0.1; done
			echo hello >&3
			# one read(2) takes one whole datagram (bash reads byte by byte)
			timeout 2 dd bs=512 count=1 status=none <&3 || echo timeout
		done' "$E2E_TMP/send" >"$E2E_TMP/udp.out" 2>&1 &
	E2E_BG_PIDS+=($!)
	touch "$E2E_TMP/send.1"
	for i in $(seq 1 50); do
		[ "$(wc -l <"$E2E_TMP/udp.out")" -ge 1 ] && break
		sleep 0.1
	done
	first=$(awk 'NR == 1 { print $1 }' "$E2E_TMP/udp.out")
	case $first in
	a1) other=a2 ;;
	a2) other=a1 ;;
	*) fail "first datagram: $(cat "$E2E_TMP/udp.out")" ;;
	esac
	say "the client's socket is served by $first"
	touch "$E2E_TMP/send.2"
	for i in $(seq 1 50); do
		[ "$(wc -l <"$E2E_TMP/udp.out")" -ge 2 ] && break
		sleep 0.1
	done
	[ "$(awk 'NR == 2 { print $1 }' "$E2E_TMP/udp.out")" = "$first" ] ||
		fail "the same socket should stick to $first: $(cat "$E2E_TMP/udp.out")"

	say "remove $first from the endpoints (its server keeps running)"
	config "$E2E_TMP/dns.new" "${ipof[$other]}@node-a"
	mv "$E2E_TMP/dns.new" "$cfg"
	for i in $(seq 1 100); do
		grep -q 'conntrack: deleted [1-9]' "$E2E_TMP/daemon.log" && break
		sleep 0.1
	done
	grep -q 'conntrack: deleted [1-9]' "$E2E_TMP/daemon.log" ||
		fail "no conntrack entry deleted: $(tail -n 20 "$E2E_TMP/daemon.log")"
	touch "$E2E_TMP/send.3"
	for i in $(seq 1 50); do
		[ "$(wc -l <"$E2E_TMP/udp.out")" -ge 3 ] && break
		sleep 0.1
	done
	ans=$(awk 'NR == 3 { print $1 }' "$E2E_TMP/udp.out")
	[ "$ans" = "$other" ] ||
		fail "next datagram on the same socket answered by '$ans', expected the live $other: $(cat "$E2E_TMP/udp.out")"
	say "next datagram on the same socket reached $other: $(grep 'conntrack:' "$E2E_TMP/daemon.log" | tail -n 1)"
	# kube-proxy's reconciler metrics count what was deleted, per family.
	in_ns node curl -sS --max-time 5 http://127.0.0.1:10249/metrics >"$E2E_TMP/metrics" ||
		fail "curl /metrics"
	n=$(sed -n 's/.*conntrack: deleted \([0-9]*\) .*/\1/p' "$E2E_TMP/daemon.log" | awk '{ s += $1 } END { print s }')
	grep -qx "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=\"IPv4\"} $n" "$E2E_TMP/metrics" &&
		grep -q '^kubeproxy_conntrack_reconciler_sync_duration_seconds_count{ip_family="IPv4"} [1-9]' "$E2E_TMP/metrics" ||
		fail "reconciler metrics (deleted $n): $(grep -E 'conntrack_reconciler_(deleted|sync_duration_seconds_count)' "$E2E_TMP/metrics")"
	say "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=\"IPv4\"} $n"
}

e2e_for_each_backend run
