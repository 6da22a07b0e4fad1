#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon and bad or missing sources (issue 17, items 3, 4, 5, 7):
#  - started while one of its config files does not exist yet, it writes
#    nothing (the rules a previous run left stay), warns every few seconds
#    naming the file, and /healthz answers 503; once the file exists it
#    syncs and /healthz answers 200;
#  - a directory source keeps the last good content per file: with a.json
#    truncated, a c.json added later is programmed (also after SIGHUP) and
#    a's rules stay;
#  - a world-writable file inside the directory, and a symlink in it to a
#    world-writable file elsewhere, are refused (logged, not programmed);
#  - a service defined by two sources: one warning naming both sources and
#    the object, however many syncs follow, and svcnat_source_conflicts_total 1.
# The rules are checked in the node's nat table (iptables-legacy-save or
# the nft flavour for the restore backend); one backend (the first of
# SVCNAT_E2E_BACKENDS) is enough: this is the daemon's logic.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-sources
command -v curl >/dev/null || e2e_skip "needs 'curl'"

# svc NAME IP: a ClusterIP service e2e/NAME on IP:80 with one endpoint
svc() {
	printf '%s,\n%s' \
		"$(k8s_service e2e "$1" "\"type\":\"ClusterIP\",\"clusterIP\":\"$2\",\"ports\":[
			{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080}]")" \
		"$(k8s_slice e2e "$1" '[{"name":"http","protocol":"TCP","port":8080}]' 198.18.65.10@node-a)"
}

# list ITEMS: the items (from svc) as a List
list() {
	local IFS=,
	printf '{"apiVersion":"v1","kind":"List","items":[%s]}\n' "$*"
}

save() { node_nat_save "$E2E_BACKEND"; }

has_rule() { save | grep -q -- "--comment \"e2e/$1:http cluster IP\""; }
lacks_rule() { ! has_rule "$1"; }
log_has() { grep -q -- "$1" "$E2E_TMP/daemon.log"; }
healthz() { in_ns node curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:10256/healthz; }
healthz_is() { [ "$(healthz)" = "$1" ]; }

# wait_for (lib/wait.sh): what a failure shows
wait_for_context() { echo "; daemon log: $(tail -n 30 "$E2E_TMP/daemon.log")"; }

run() {
	local backend=$1 late=$E2E_TMP/late.json dir=$E2E_TMP/conf n
	mkdir -p "$dir" "$E2E_TMP/elsewhere"
	: >"$E2E_TMP/daemon.log"

	say "a previous run left e2e/keep"
	list "$(svc keep 198.19.0.20)" >"$E2E_TMP/old.json"
	svcnat_sync "$backend" "$E2E_TMP/old.json"
	has_rule keep || fail "--once did not program e2e/keep: $(save)"

	list "$(svc a 198.19.0.21)" >"$dir/a.json"
	list "$(svc dup 198.19.0.29)" >"$dir/d.json"
	ip netns exec "$(ns_name node)" timeout --kill-after=30 120 "$SVCNAT" \
		--backend="$backend" --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$late" --config "$dir" \
		--min-sync-period 200ms --sync-period 2s \
		</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")

	say "late.json missing: a warning naming it, no write, /healthz 503"
	wait_for 15 "warning about late.json" log_has "$late: still not read"
	wait_for 10 "/healthz answering" sh -c "[ \"\$(ip netns exec $(ns_name node) curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:10256/healthz)\" != 000 ]"
	healthz_is 503 || fail "/healthz answered $(healthz) while a source was never read"
	has_rule keep || fail "the daemon removed e2e/keep before reading every source: $(save)"
	lacks_rule a || fail "the daemon wrote before reading every source"

	say "late.json appears: synced, /healthz 200"
	list "$(svc keep 198.19.0.20)" "$(svc dup 198.19.0.28)" >"$late.tmp"
	mv "$late.tmp" "$late"
	wait_for 10 "sync after late.json appeared" has_rule a
	has_rule keep || fail "e2e/keep lost"
	wait_for 5 "/healthz 200" healthz_is 200
	save | grep -q -- '-d 198.19.0.28/32 .*e2e/dup:http cluster IP' ||
		fail "e2e/dup: the first source (late.json) must win: $(save | grep dup)"

	say "a.json truncated, c.json added: c programmed, a kept"
	head -c 40 "$dir/a.json" >"$dir/a.tmp" && mv "$dir/a.tmp" "$dir/a.json"
	wait_for 5 "a.json rejected" log_has "$dir: 1 file rejected"
	list "$(svc c 198.19.0.23)" >"$dir/c.tmp"
	mv "$dir/c.tmp" "$dir/c.json"
	wait_for 5 "c.json programmed while a.json is broken" has_rule c
	has_rule a || fail "a.json's last good content was dropped"
	say "SIGHUP: the same"
	n=$(grep -c "sync (" "$E2E_TMP/daemon.log")
	kill -HUP "$DAEMON"
	wait_for 5 "a sync after SIGHUP" sh -c "[ \$(grep -c 'sync (' '$E2E_TMP/daemon.log') -gt $n ] || grep -q 'SIGHUP' '$E2E_TMP/daemon.log'"
	sleep 1
	has_rule a || fail "a lost after SIGHUP"
	has_rule c || fail "c lost after SIGHUP"

	say "world-writable files are refused, inside the directory and via a symlink"
	list "$(svc ww 198.19.0.24)" >"$dir/.ww" && chmod 0666 "$dir/.ww" && mv "$dir/.ww" "$dir/ww.json"
	list "$(svc viasym 198.19.0.25)" >"$E2E_TMP/elsewhere/t.json"
	chmod 0646 "$E2E_TMP/elsewhere/t.json"
	ln -s "$E2E_TMP/elsewhere/t.json" "$dir/l.json"
	wait_for 5 "ww.json refused" log_has "$dir/ww.json: writable by users other than its owner (mode 0666): refusing it"
	wait_for 5 "l.json refused" log_has "$dir/l.json: writable by users other than its owner (mode 0646): refusing it"
	kill -HUP "$DAEMON"
	sleep 1.5
	lacks_rule ww || fail "a world-writable file was programmed"
	lacks_rule viasym || fail "a symlink to a world-writable file was programmed"
	has_rule c || fail "c lost"

	say "the conflict over e2e/dup was reported once"
	kill -HUP "$DAEMON"
	sleep 1
	n=$(grep -c "$dir: e2e/dup: service also defined by source '$late', which takes precedence" "$E2E_TMP/daemon.log")
	[ "$n" = 1 ] || fail "conflict warning seen $n times (want 1): $(grep -i 'also defined' "$E2E_TMP/daemon.log")"
	in_ns node curl -s http://127.0.0.1:10249/metrics | grep -q '^svcnat_source_conflicts_total 2$' ||
		fail "metric: $(in_ns node curl -s http://127.0.0.1:10249/metrics | grep conflicts)"

	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "daemon exit $?"
	if [ -n "${E2E_VERBOSE:-}" ]; then cat "$E2E_TMP/daemon.log"; fi
}

E2E_BACKEND=$(e2e_backends | awk '{print $1}')
e2e_need_svcnat
topo_up
run "$E2E_BACKEND"
topo_down
