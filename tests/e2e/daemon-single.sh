#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# One svcnat daemon per network namespace.  Two namespaces made with
# `ip netns` (so /run is shared between them, as on a node), daemon 1 in
# the first:
#  - a second daemon there (another config, other ports: it could run) is
#    refused at once, exit 1, with one line naming daemon 1's pid, and the
#    kernel keeps daemon 1's rules;
#  - --once and --cleanup there are refused the same way (the daemon would
#    undo them); --dry-run --diff still runs (it only reads);
#  - a daemon in the second namespace starts and syncs meanwhile;
#  - after kill -9 of daemon 1 (no clean exit) a new daemon starts there at
#    once and programs its own config; once it is stopped, --once runs;
#  - a process of another uid (nobody) holding the name does not stop
#    --once or a daemon: they warn, naming its pid and uid, and run; nor
#    does one that bound the name without listening.
# One backend (the first of SVCNAT_E2E_BACKENDS): the lock is the daemon's.
. "$(dirname "$0")/lib/topology.sh"
e2e_init daemon-single
e2e_need_svcnat

BACKEND=$(e2e_backends | awk '{print $1}')
TOPO_PREFIX="svcnat-e2e-$$-1"
_ns_add a
_ns_add b

# config FILE IP: service e2e/web at IP:80, one endpoint
config() {
	k8s_list \
		"$(k8s_service e2e web "\"type\":\"ClusterIP\",\"clusterIP\":\"$2\",\"ports\":[
			{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,\"targetPort\":8080}]")" \
		"$(k8s_slice e2e web '[{"name":"http","protocol":"TCP","port":8080}]' \
			198.18.65.10@node-a)" >"$1"
}
config "$E2E_TMP/one.json" 198.19.0.10
config "$E2E_TMP/two.json" 198.19.0.20

ARGS=(--backend="$BACKEND" --hostname node-a --node-ip 198.18.0.1 --lock-wait 30000)

# start NS CONFIG LOG [ARGS...]: a daemon, its pid in STARTED.  No
# timeout(1) in between: the pid is svcnat's own (ip netns exec and
# svcnat's re-exec keep it); the watchdog and topo_down bound it.
start() {
	local ns=$1 cfg=$2 log=$3
	shift 3
	: >"$log"
	ip netns exec "$(ns_name "$ns")" "$SVCNAT" "${ARGS[@]}" --config "$cfg" \
		--min-sync-period 100ms "$@" </dev/null >>"$log" 2>&1 &
	STARTED=$!
	E2E_BG_PIDS+=("$STARTED")
}

synced() {
	grep -q 'sync (initial): ' "$1"
}

# equal NS CONFIG: the kernel holds what CONFIG plans (svcnat --diff)
equal() {
	in_ns "$1" "$SVCNAT" "${ARGS[@]}" --dry-run --diff --config "$2" >"$E2E_TMP/diff" 2>&1
}

start a "$E2E_TMP/one.json" "$E2E_TMP/d1.log"
D1=$STARTED
wait_for 30 "daemon 1's first sync" synced "$E2E_TMP/d1.log"
say "daemon 1 (pid $D1) synced in namespace a"

start a "$E2E_TMP/two.json" "$E2E_TMP/d2.log" \
	--healthz-bind-address 127.0.0.1:10356 --metrics-bind-address 127.0.0.1:10349
D2=$STARTED
wait_for 20 "the second daemon in namespace a to exit" sh -c "! kill -0 $D2"
wait "$D2"
rc=$?
[ "$rc" = 1 ] || fail "the second daemon exited $rc, want 1: $(cat "$E2E_TMP/d2.log")"
[ "$(grep -c . "$E2E_TMP/d2.log")" = 1 ] ||
	fail "the second daemon said more than one line: $(cat "$E2E_TMP/d2.log")"
grep -q "another svcnat (pid $D1) already runs in this network namespace" "$E2E_TMP/d2.log" ||
	fail "the second daemon did not name daemon 1's pid $D1: $(cat "$E2E_TMP/d2.log")"
say "second daemon refused: $(cat "$E2E_TMP/d2.log")"

for mode in --once --cleanup; do
	extra=()
	[ "$mode" = --once ] && extra=(--config "$E2E_TMP/two.json")
	in_ns a "$SVCNAT" "${ARGS[@]}" "$mode" "${extra[@]}" >"$E2E_TMP/m.log" 2>&1
	rc=$?
	[ "$rc" = 1 ] || fail "$mode beside daemon 1 exited $rc, want 1: $(cat "$E2E_TMP/m.log")"
	grep -q -- "$mode: a svcnat daemon (pid $D1) runs in this network namespace" "$E2E_TMP/m.log" ||
		fail "$mode did not name daemon 1's pid $D1: $(cat "$E2E_TMP/m.log")"
done
say "--once and --cleanup refused: $(cat "$E2E_TMP/m.log")"
equal a "$E2E_TMP/one.json" ||
	fail "namespace a does not hold daemon 1's rules (--diff: $?): $(cat "$E2E_TMP/diff")"
kill -0 "$D1" 2>/dev/null || fail "daemon 1 died: $(tail -n 5 "$E2E_TMP/d1.log")"

start b "$E2E_TMP/two.json" "$E2E_TMP/d3.log"
D3=$STARTED
wait_for 30 "the daemon in namespace b to sync" synced "$E2E_TMP/d3.log"
equal b "$E2E_TMP/two.json" || fail "namespace b: --diff $?: $(cat "$E2E_TMP/diff")"
say "a daemon in namespace b (pid $D3) runs beside daemon 1"

kill -KILL "$D1"
wait "$D1" 2>/dev/null
start a "$E2E_TMP/two.json" "$E2E_TMP/d4.log"
D4=$STARTED
wait_for 30 "a new daemon in namespace a after kill -9" synced "$E2E_TMP/d4.log"
equal a "$E2E_TMP/two.json" || fail "after kill -9, the new daemon's rules: --diff $?: $(cat "$E2E_TMP/diff")"
say "after kill -9 of daemon 1, daemon 4 (pid $D4) took namespace a"

kill -TERM "$D4"
wait "$D4" || fail "daemon 4 exited $? on SIGTERM: $(tail -n 5 "$E2E_TMP/d4.log")"
in_ns a "$SVCNAT" "${ARGS[@]}" --once --config "$E2E_TMP/one.json" >"$E2E_TMP/m.log" 2>&1 ||
	fail "--once with no daemon: $(cat "$E2E_TMP/m.log")"
equal a "$E2E_TMP/one.json" || fail "--once with no daemon: --diff $?: $(cat "$E2E_TMP/diff")"
kill -TERM "$D3"
wait "$D3" || fail "the daemon in namespace b exited $? on SIGTERM"

# Anyone may bind an abstract name: a holder of another uid is a squatter,
# not svcnat, and must not keep svcnat from running (a warning names it).
# squat MODE: a process as nobody holding the name (MODE listen: answers
# with its credentials; bind: bound only, never answers); pid in SQUATTER
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
squat() {
	rm -f "$E2E_TMP/squat.ready"
	ip netns exec "$(ns_name a)" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PY" -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0svcnat/netns-lock")
if sys.argv[1] == "listen":
    s.listen(8)
sys.stdout.flush()
print("ready", flush=True)
time.sleep(120)' "$1" >"$E2E_TMP/squat.ready" 2>&1 &
	SQUATTER=$!
	E2E_BG_PIDS+=("$SQUATTER")
	wait_for 10 "the squatter to bind the name" grep -q ready "$E2E_TMP/squat.ready"
}

command -v setpriv >/dev/null || e2e_skip "needs setpriv (a non-root holder of the name)"
squat listen
in_ns a "$SVCNAT" "${ARGS[@]}" --once --config "$E2E_TMP/two.json" >"$E2E_TMP/m.log" 2>&1 ||
	fail "--once beside a non-root holder of the name: $(cat "$E2E_TMP/m.log")"
grep -q "held by pid $SQUATTER uid 65534, not a root svcnat" "$E2E_TMP/m.log" ||
	fail "--once did not name the squatter (pid $SQUATTER uid 65534): $(cat "$E2E_TMP/m.log")"
equal a "$E2E_TMP/two.json" || fail "--once beside a squatter: --diff $?: $(cat "$E2E_TMP/diff")"
start a "$E2E_TMP/one.json" "$E2E_TMP/d5.log"
D5=$STARTED
wait_for 30 "a daemon beside a non-root holder of the name to sync" synced "$E2E_TMP/d5.log"
grep -q "held by pid $SQUATTER uid 65534, not a root svcnat; continuing without the one-daemon guard" \
	"$E2E_TMP/d5.log" || fail "the daemon did not name the squatter: $(head -n 5 "$E2E_TMP/d5.log")"
equal a "$E2E_TMP/one.json" || fail "the daemon beside a squatter: --diff $?: $(cat "$E2E_TMP/diff")"
say "beside a squatter as nobody (pid $SQUATTER): --once and the daemon run, warning"
kill -TERM "$D5"
wait "$D5" || fail "daemon 5 exited $? on SIGTERM"
kill "$SQUATTER"
wait "$SQUATTER" 2>/dev/null

squat bind
start a "$E2E_TMP/two.json" "$E2E_TMP/d6.log"
D6=$STARTED
wait_for 30 "a daemon beside a holder that does not answer to sync" synced "$E2E_TMP/d6.log"
grep -q "held by a process that does not answer as svcnat does; continuing" "$E2E_TMP/d6.log" ||
	fail "the daemon did not warn of the silent holder: $(head -n 5 "$E2E_TMP/d6.log")"
say "beside a holder that never listens: the daemon runs, warning"
kill -TERM "$D6"
wait "$D6" || fail "daemon 6 exited $? on SIGTERM"
