#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A directory source in the daemon reads again only what changed (issue 18):
# 60 files of one service each (the 2014 format: a NodePort each), then
#  - one endpoint moved (one file renamed over): 1 of 60 files read, its
#    objects alone (the -v line), 1 service port resolved again
#    (svcnat_sync_service_ports_rebuilt{step="resolve"}), the new endpoint
#    in the kernel, the other services as they were;
#  - a file removed: exactly its service goes, nothing is read;
#  - a file made invalid: one error naming it, its service's rules stay,
#    nothing else read; SIGHUP reads every file and keeps them still;
#  - an object made invalid: one error naming the file, the object and the
#    field.
# svcnat_source_files_read_total counts the files read.  Then the node's
# addresses (on lo, both families) change under
# --nodeport-addresses: the node port jumps follow, nothing is resolved
# again.  No topology and no traffic: the daemon alone in a namespace
# (lib/daemon-ns.sh).
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-directory "$@"

N=60
D=

# svcfile I [EP [PORT]]: conf.d/fIII.json, service default/sI on node port
# 20000+I with endpoint 198.18.65.EP:80, written by a rename over it
svcfile() {
	local f
	f=$D/f$(printf %03d "$1").json
	printf '{"Services":[{"Name":"s%d","Port":%d,"Endpoints":["198.18.65.%d:80"]}]}\n' \
		"$1" "${3:-$((20000 + $1))}" "${2:-10}" >"$D/.tmp"
	mv "$D/.tmp" "$f"
}

# (not the localhost node ports' counted copies, -m nfacct)
nodeports() { iptables-legacy-save -t nat | grep -- '-A KUBE-NODEPORTS .*default/s[0-9]*"' | grep -vc -- '-m nfacct'; }
has_nodeports() { [ "$(nodeports)" = "$1" ]; }
has_service() { iptables-legacy-save -t nat | grep -q -- "-A KUBE-NODEPORTS .*\"default/s$1\""; }
has_dnat() { iptables-legacy-save -t nat | grep -q -- "--to-destination $1"; }
log_has() { grep -q -- "$1" "$TMP/log"; }
log_count() { grep -c -- "$1" "$TMP/log"; }

run() {
	local backend=$1 n
	D=$TMP/conf.d
	rm -rf "$D"
	mkdir -p "$D"
	for i in $(seq 1 $N); do svcfile "$i"; done
	echo '{"Services":[]}' >"$TMP/c.json"
	# Files changed less than 0.1 s before a read are read again at the
	# next one: let them age, so the first change reads one file.
	sleep 0.3
	dn_start "$backend" --config "$D" -v --min-sync-period 100ms --sync-period 1h
	wait_for 30 "first sync" grep -q 'sync (initial)' "$TMP/log"
	wait_for 10 "$N services" has_nodeports $N
	log_has "$D: $N of $N files read ($((2 * N)) objects)" ||
		fail "the first read: $(grep 'files read' "$TMP/log")"
	wait_for 10 "/metrics" sh -c "curl -s http://127.0.0.1:10249/metrics | grep -q '^svcnat_syncs_total'"

	echo "# $backend: one endpoint moved"
	n=$(log_count 'sync (change)')
	svcfile 7 11
	wait_for 20 "the moved endpoint in the kernel" has_dnat 198.18.65.11:80
	wait_for 10 "the sync logged" sh -c "[ \$(grep -c 'sync (change)' '$TMP/log') -gt $n ]"
	log_has "$D: 1 of $N files read (2 objects)" ||
		fail "not one file read: $(grep 'files read' "$TMP/log" | tail -n 2)"
	[ "$(metric 'svcnat_sync_service_ports_rebuilt{step="resolve"}')" = 1 ] ||
		fail "service ports resolved again: $(metric 'svcnat_sync_service_ports_rebuilt{step="resolve"}') (want 1)"
	has_nodeports $N || fail "services lost: $(nodeports) of $N"

	echo "# $backend: a file removed"
	rm "$D/f010.json"
	wait_for 20 "s10 gone" sh -c "! iptables-legacy-save -t nat | grep -q '\"default/s10\"'"
	has_nodeports $((N - 1)) || fail "removing f010.json left $(nodeports) services"
	wait_for 10 "the load logged" log_has "$D: 1 of $((N - 1)) files read\|$D: 0 of $((N - 1)) files read"

	echo "# $backend: a file made invalid keeps its rules"
	head -c 30 "$D/f020.json" >"$D/.tmp" && mv "$D/.tmp" "$D/f020.json"
	wait_for 20 "the rejection logged" log_has "$D/f020.json: not JSON"
	log_has "$D: 1 file rejected, each keeping its last good content" || fail "no rejection summary"
	has_service 20 || fail "f020.json's service lost"
	has_nodeports $((N - 1)) || fail "$(nodeports) services after f020.json broke"
	kill -HUP "$DAEMON"
	# every file but the invalid one, which is not taken
	wait_for 20 "SIGHUP's read" log_has "$D: $((N - 2)) of $((N - 1)) files read"
	sleep 0.5
	has_service 20 || fail "f020.json's service lost after SIGHUP"
	has_nodeports $((N - 1)) || fail "$(nodeports) services after SIGHUP"

	echo "# $backend: an invalid object is named with its file and field"
	svcfile 30 10 70000
	wait_for 20 "the object error" log_has "^E[0-9]\{4\} .*\] $D/f030.json: default/s30: Port: 70000 is not a valid port"
	[ "$(log_count "$D/f030.json: default/s30: Port")" = 1 ] || fail "the object error repeated"
	n=$(metric "svcnat_source_files_read_total{source=\"$D\"}")
	[ "${n:-0}" -ge $((N + 1 + N - 2 + 1)) ] || fail "svcnat_source_files_read_total: ${n:-none}"

	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "exit $?"
	DAEMON=
}

# The node's addresses change (netlink): with --nodeport-addresses, the node
# ports' KUBE-SERVICES jumps follow them, of both families, and the sync
# resolves no service again.
anew0() { grep -c 'resolve [0-9.]* s (0 service ports anew)' "$TMP/log"; }
addresses() {
	local backend=$1 n v6=
	rm -rf "$D"
	mkdir -p "$D"
	for i in 1 2 3; do svcfile "$i"; done
	# on lo: the namespace is the test's, and dummy interfaces need a module
	ip addr add 198.18.0.1/32 dev lo || fail "address"
	ip addr add 2001:2::1/128 dev lo nodad 2>/dev/null && v6=1
	: >"$TMP/log"
	"$SVCNAT" --backend="$backend" --config "$D" --hostname node-a -v \
		--nodeport-addresses 198.18.0.0/15,2001:2::/48 \
		--min-sync-period 100ms --sync-period 1h </dev/null >>"$TMP/log" 2>&1 &
	DAEMON=$!
	wait_for 30 "first sync" grep -q 'sync (initial)' "$TMP/log"
	wait_for 10 "the node port jump for 198.18.0.1" sh -c "[ \$(iptables-legacy-save -t nat | grep -c -- '-A KUBE-SERVICES -d 198.18.0.1/32 .*-j KUBE-NODEPORTS') = 1 ]"
	# ip6tables only where the writer writes it
	ip6tables-legacy-save -t nat 2>/dev/null | grep -q -- '-d 2001:2::1/128 .*-j KUBE-NODEPORTS' || v6=
	echo "# $backend: node addresses added${v6:+ (both families)}"
	n=$(anew0)
	ip addr add 198.18.0.2/32 dev lo || fail "address"
	[ -n "$v6" ] && ip addr add 2001:2::2/128 dev lo nodad
	wait_for 20 "a jump for 198.18.0.2" sh -c "[ \$(iptables-legacy-save -t nat | grep -c -- '-A KUBE-SERVICES -d 198.18.0.2/32 .*-j KUBE-NODEPORTS') = 1 ]"
	[ -z "$v6" ] || wait_for 20 "a jump for 2001:2::2" sh -c "[ \$(ip6tables-legacy-save -t nat | grep -c -- '-A KUBE-SERVICES -d 2001:2::2/128 .*-j KUBE-NODEPORTS') = 1 ]"
	wait_for 10 "a sync resolving nothing again" sh -c "[ \$(grep -c 'resolve [0-9.]* s (0 service ports anew)' '$TMP/log') -gt $n ]"
	grep -q 'node addresses changed' "$TMP/log" || fail "the change was not seen"
	echo "# $backend: node addresses removed"
	ip addr del 198.18.0.1/32 dev lo
	wait_for 20 "198.18.0.1's jump gone" sh -c "! iptables-legacy-save -t nat | grep -q -- '-A KUBE-SERVICES -d 198.18.0.1/32 '"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "exit $?"
	DAEMON=
}

for b in ${SVCNAT_E2E_BACKENDS:-direct libiptc restore}; do
	case $b in libiptc | direct)
		run "$b"
		addresses "$b"
		break
		;;
	esac
done
echo PASS
