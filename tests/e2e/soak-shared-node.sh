#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A shared node, bounded (25 s of churn per backend, longer on a loaded
# machine until every writer has deleted something): the daemon follows
# 2,000 services (contrib/bench/gen.py's mix; tests/e2e/soakgen.py's churn:
# a change every 0.7 s moving endpoints among live pods, services coming
# and going, a UDP service's endpoint moving) while, in the same namespace
# and about once a second each, one commit per step,
#  - "kubelet" (iptables-nft-restore --noflush) adds and deletes rules in
#    KUBELET-FIREWALL (jumped from INPUT and OUTPUT) and in its
#    KUBE-KUBELET-CANARY chains (mangle, nat, filter);
#  - "portmap" (iptables-legacy-restore -w --noflush: the xtables lock)
#    adds and deletes per-pod CNI-DN- chains and their jumps in
#    CNI-HOSTPORT-DNAT (jumped from PREROUTING and OUTPUT), as CNI portmap;
#  - "firewalld" (nft -f) adds and deletes rules and set elements in a
#    native inet table, and every 15th step replaces the table whole;
#  - "conntrack" deletes the flows of UDP sent straight to a pod
#    (conntrack -D) and lists the table;
#  - clients loop over bounded connection attempts: TCP to a ClusterIP and
#    to a NodePort whose endpoints move, UDP to a stable UDP service and
#    straight to a pod (and unchecked UDP load on the churned UDP service,
#    so the daemon has conntrack entries to delete).
# At the end (after one more change on a quiet node): every foreign rule,
# chain and nft object is as its writer left it (compared with its final
# state rebuilt in a scratch namespace), every writer command succeeded,
# svcnat's rules equal the final config's plan (--dry-run --diff), no sync
# failed twice in a row and the last one succeeded (the daemon's -v log),
# no drift was repaired, the daemon deleted stale UDP flows without error,
# and every checked connection attempt was answered.  Every backend.
# SOAK_SECONDS, SOAK_SERVICES, SOAK_KEEP=DIR (keep the logs) for runs by hand.
# The name servers and the whole script outlast a slow run (a loaded
# machine); on an idle one a backend takes about 40 s.
E2E_SERVER_TIMEOUT=${E2E_SERVER_TIMEOUT:-900}
E2E_SCRIPT_TIMEOUT=${E2E_SCRIPT_TIMEOUT:-1200}
. "$(dirname "$0")/lib/topology.sh"
e2e_init soak-shared-node

for t in python3 nft conntrack iptables-nft iptables-nft-save curl; do
	command -v "$t" >/dev/null || e2e_skip "needs '$t'"
done

SERVICES=${SOAK_SERVICES:-2000}
CHURN_SECONDS=${SOAK_SECONDS:-25}
MAX_SECONDS=${SOAK_MAX_SECONDS:-$((CHURN_SECONDS + 90))}
MIN_CHANGES=5
INTERVAL=0.7
PODS=198.18.65.10,198.18.65.11,198.18.66.10
WINDOW=5        # rules (pods, elements) each writer keeps alive
# Every line of the foreign writers' iptables state mentions one of these.
FOREIGN_RE='KUBELET-FIREWALL|KUBE-KUBELET-CANARY|CNI-'
FW_TABLE=soak_firewalld

# ---- the foreign writers (run inside the node namespace: bash -c with
# these functions; each op that fails is logged as "FAIL ...") ----

# op CMD...: run CMD, log a failure
op() {
	local err
	err=$("$@" 2>&1 >/dev/null) || echo "FAIL $*: $err"
}

# kubelet_setup / kubelet_step ADD [DEL] / kubelet_add K (iptables-nft)
kubelet_setup() {
	local t
	for t in mangle nat filter; do
		op iptables-nft -t "$t" -N KUBE-KUBELET-CANARY
	done
	op iptables-nft -N KUBELET-FIREWALL
	op iptables-nft -A INPUT -m comment --comment "kubelet firewall" -j KUBELET-FIREWALL
	op iptables-nft -A OUTPUT -m comment --comment "kubelet firewall" -j KUBELET-FIREWALL
}
kubelet_rule() { # K: table and rule
	if [ $(($1 % 2)) = 0 ]; then
		echo "filter KUBELET-FIREWALL -s 198.18.250.$(($1 % 250))/32 -p tcp --dport 9 -m comment --comment kubelet-$1 -j DROP"
	else
		echo "nat KUBE-KUBELET-CANARY -s 198.18.250.$(($1 % 250))/32 -m comment --comment kubelet-$1 -j RETURN"
	fi
}
# one commit per step (iptables-nft-restore --noflush): ADD and DEL (0: none)
kubelet_step() {
	local t c rest k
	: >"$SOAK_DIR/kubelet.rules"
	for k in "$@"; do
		[ "$k" -ge 1 ] || continue
		read -r t c rest <<<"$(kubelet_rule "$k")"
		printf '*%s\n%s %s %s\nCOMMIT\n' "$t" "$([ "$k" = "$1" ] && echo -A || echo -D)" \
			"$c" "$rest" >>"$SOAK_DIR/kubelet.rules"
	done
	op iptables-nft-restore --noflush "$SOAK_DIR/kubelet.rules"
}
kubelet_add() {
	kubelet_step "$1"
}

# portmap_setup / portmap_step ADD [DEL] / portmap_add K (iptables-legacy: the
# xtables lock, and a whole-table replace per commit; one commit per pod as
# an iptables-restore --noflush of its chain and jump)
portmap_setup() {
	local c
	for c in CNI-HOSTPORT-DNAT CNI-HOSTPORT-SETMARK CNI-HOSTPORT-MASQ; do
		op iptables-legacy -w 60 -t nat -N "$c"
	done
	op iptables-legacy -w 60 -t nat -A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
	op iptables-legacy -w 60 -t nat -A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
	op iptables-legacy -w 60 -t nat -A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ
	op iptables-legacy -w 60 -t nat -A CNI-HOSTPORT-SETMARK -m comment --comment "CNI portfwd masquerade mark" -j MARK --set-xmark 0x2000/0x2000
	op iptables-legacy -w 60 -t nat -A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE
}
portmap_jump() { # K: the jump's rule spec
	echo "-p tcp -m comment --comment soak-pod-$1 -m multiport --dports $((40000 + $1 % 1000)) -j CNI-DN-$1"
}
portmap_restore() {
	printf '%s\n' "$@" >"$SOAK_DIR/portmap.rules"
	op iptables-legacy-restore -w 60 --noflush "$SOAK_DIR/portmap.rules"
}
# portmap_step ADD [DEL]: pod ADD's chain and jump in, pod DEL's out, one
# commit (0: none)
portmap_step() {
	local k=$1 p=$((40000 + $1 % 1000)) lines=('*nat')
	if [ "$k" -ge 1 ]; then
		lines+=(":CNI-DN-$k - [0:0]"
			"-A CNI-DN-$k -s 198.18.65.250/32 -p tcp -m tcp --dport $p -j CNI-HOSTPORT-SETMARK"
			"-A CNI-DN-$k -p tcp -m tcp --dport $p -j DNAT --to-destination 198.18.65.250:80"
			"-A CNI-HOSTPORT-DNAT $(portmap_jump "$k")")
	fi
	if [ "${2:-0}" -ge 1 ]; then
		lines+=(":CNI-DN-$2 - [0:0]" "-D CNI-HOSTPORT-DNAT $(portmap_jump "$2")" "-X CNI-DN-$2")
	fi
	portmap_restore "${lines[@]}" COMMIT
}
portmap_add() {
	portmap_step "$1"
}

# firewalld: the table with the rules and elements FROM..TO (a reload's,
# and the scratch rebuild's, one transaction)
fw_table() {
	local k
	echo "table inet $FW_TABLE {"
	echo "  set allowed { type ipv4_addr; }"
	echo "  chain filter_INPUT { type filter hook input priority filter + 10; policy accept; }"
	echo "}"
	for ((k = $1; k <= $2; k++)); do
		[ "$k" -ge 1 ] || continue
		echo "add element inet $FW_TABLE allowed { 198.18.251.$((k % 250)) }"
		echo "add rule inet $FW_TABLE filter_INPUT ip saddr 198.18.252.$((k % 250)) tcp dport 9 accept comment \"fw-$k\""
	done
}
# One transaction per change, as firewalld sends them: add element and
# rule K, delete those of K - WINDOW (the rule by its handle, looked up
# first).  (Not nft --echo: it reads the whole ruleset back, svcnat's
# too, about 2 s at 2,000 services.)
fw_step() {
	local k=$1 old=$(($1 - WINDOW)) h=
	if [ "$old" -ge 1 ]; then
		h=$(nft -a list chain inet "$FW_TABLE" filter_INPUT |
			sed -n "s/.*comment \"fw-$old\" # handle \([0-9]*\)$/\1/p")
		[ -n "$h" ] || echo "FAIL nft: rule fw-$old not found to delete"
	fi
	{
		echo "add element inet $FW_TABLE allowed { 198.18.251.$((k % 250)) }"
		echo "add rule inet $FW_TABLE filter_INPUT ip saddr 198.18.252.$((k % 250)) tcp dport 9 accept comment \"fw-$k\""
		if [ -n "$h" ]; then
			echo "delete element inet $FW_TABLE allowed { 198.18.251.$((old % 250)) }"
			echo "delete rule inet $FW_TABLE filter_INPUT handle $h"
		fi
	} >"$SOAK_DIR/fw.step"
	fw_apply "$SOAK_DIR/fw.step"
}
fw_apply() {
	local out
	out=$(nft -f "$1" 2>&1) || echo "FAIL nft -f $(tr '\n' ';' <"$1"): $out"
}
fw_reload() { # K: firewalld's reload: the table replaced whole
	{ echo "delete table inet $FW_TABLE"; fw_table $(($1 - WINDOW + 1)) "$1"; } >"$SOAK_DIR/fw.nft"
	fw_apply "$SOAK_DIR/fw.nft"
}

# writer NAME: setup, then K = 1, 2, ... add K and delete K - WINDOW, until
# the stop file (bounded: 2000 steps); the last K in $SOAK_DIR/NAME.last
writer() {
	local name=$1 k
	for ((k = 1; k <= 2000; k++)); do
		[ -e "$SOAK_DIR/stop" ] && break
		"${name}_step" "$k" $((k - WINDOW))
		[ "$name" = fw ] && [ $((k % 15)) = 0 ] && fw_reload "$k"
		echo "$k" >"$SOAK_DIR/$name.last"
		sleep 0.8
	done
}
fw_setup() {
	fw_table 1 0 >"$SOAK_DIR/fw.nft"
	op nft -f "$SOAK_DIR/fw.nft"
}

# conntrack's churn: UDP straight to pod a2 from client2 (checked like
# every client), its flows deleted and the table listed in the node
ct_churn() {
	local i
	for ((i = 0; i < 2000; i++)); do
		[ -e "$SOAK_DIR/stop" ] && break
		conntrack -D -p udp -d 198.18.65.11 >/dev/null 2>&1
		op conntrack -L -p udp
		sleep 0.5
	done
}

# The writers' final state rebuilt in a scratch namespace (unshare -n):
# the same commands, K - WINDOW + 1 .. K.
scratch_state() {
	local k
	kubelet_setup
	for ((k = $(($1 - WINDOW + 1)); k <= $1; k++)); do
		[ "$k" -ge 1 ] && kubelet_add "$k"
	done
	portmap_setup
	for ((k = $(($2 - WINDOW + 1)); k <= $2; k++)); do
		[ "$k" -ge 1 ] && portmap_add "$k"
	done
	fw_table $(($3 - WINDOW + 1)) "$3" >"$SOAK_DIR/fw-scratch.nft"
	op nft -f "$SOAK_DIR/fw-scratch.nft"
	foreign_state
}

# What the writers own, as the save tools and nft print it: the lines of
# iptables-nft-save (mangle, nat, filter) and iptables-legacy-save (nat)
# that name a foreign chain, and the firewalld table (JSON, handles
# dropped, set elements sorted).
foreign_state() {
	local t
	for t in mangle nat filter; do
		echo "== nft $t"
		iptables-nft-save -t "$t" 2>/dev/null | grep -E "$FOREIGN_RE" |
			sed -E 's/^(:[^ ]+ [^ ]+) \[[0-9]+:[0-9]+\]$/\1/'
	done
	echo "== legacy nat"
	iptables-legacy-save -t nat | grep -E "$FOREIGN_RE" |
		sed -E 's/^(:[^ ]+ [^ ]+) \[[0-9]+:[0-9]+\]$/\1/'
	echo "== nft table"
	nft -j -s list table inet "$FW_TABLE" | python3 -c '
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "handle"}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
for o in json.load(sys.stdin)["nftables"]:
    if "metainfo" in o:
        continue
    o = strip(o)
    if "set" in o and "elem" in o["set"]:
        o["set"]["elem"] = sorted(o["set"]["elem"], key=json.dumps)
    print(json.dumps(o, sort_keys=True))'
}

FUNCS="$(declare -f op kubelet_setup kubelet_rule kubelet_step kubelet_add portmap_setup \
	portmap_jump portmap_restore portmap_step portmap_add fw_table fw_step fw_apply fw_reload fw_setup writer \
	ct_churn scratch_state foreign_state)"

# in_node_bash CMD: CMD in the node namespace with the functions above
in_node_bash() {
	ip netns exec "$(ns_name node)" timeout --kill-after=5 300 env SOAK_DIR="$SOAK_DIR" \
		WINDOW="$WINDOW" FW_TABLE="$FW_TABLE" FOREIGN_RE="$FOREIGN_RE" \
		bash -c "$FUNCS; $1"
}

# traffic NAME NS ADDR PORT [OPT...]: rounds of 20 attempts (5 s each) until the
# traffic stop file, into $SOAK_DIR/traffic.NAME (bounded: 400 rounds)
traffic() {
	local name=$1 ns=$2 addr=$3 port=$4 i
	shift 4
	for ((i = 0; i < 400; i++)); do
		[ -e "$SOAK_DIR/stop-traffic" ] && break
		in_ns "$ns" "$NAMESRV" client --addr "$addr" --port "$port" --count 20 \
			--timeout-ms 5000 "$@" >>"$SOAK_DIR/traffic.$name" 2>&1
		sleep 0.3
	done
}

# wait_until SECONDS DESC CMD...: as wait_for, but SECONDS of wall time
# (each --diff reads the tables: seconds on a loaded machine)
wait_until() {
	local end=$((SECONDS + $1)) desc=$2
	shift 2
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	fail "$desc: not within $1 s$(wait_for_context)"
}

# steps NAME: how many steps writer NAME made
steps() {
	local k=
	read -r k 2>/dev/null <"$SOAK_DIR/$1.last"
	echo "${k:-0}"
}

# enough: every writer deleted a rule and the config changed a few times
enough() {
	local w
	for w in kubelet portmap fw; do
		[ "$(steps $w)" -gt "$WINDOW" ] || return 1
	done
	[ "$(grep -c '^step' "$SOAK_DIR/churn.log")" -ge "$MIN_CHANGES" ]
}

metric() {
	in_ns node curl -s --max-time 30 http://127.0.0.1:10249/metrics |
		awk -v m="$1" '$1 == m { print $2 }'
}

run() {
	local backend=$1 t0 pid pids=() f n bad k last
	t0=$(_e2e_us)
	# SOAK_KEEP=DIR keeps the logs and states there (for reading a failure)
	SOAK_DIR=${SOAK_KEEP:-$E2E_TMP}/$backend
	rm -rf "$SOAK_DIR"
	mkdir -p "$SOAK_DIR"
	CFG=$SOAK_DIR/services.json
	topo_add_pod a1 198.18.65.10 a2 198.18.65.11 b1 198.18.66.10
	start_servers 8080
	python3 "$top_srcdir/tests/e2e/soakgen.py" --bench "$top_srcdir/contrib/bench" \
		--services "$SERVICES" --pods "$PODS" --once 0 "$CFG" || fail "soakgen.py"

	# the other writers were there first, as on a node
	in_node_bash 'kubelet_setup; portmap_setup; fw_setup' >"$SOAK_DIR/setup.log" 2>&1
	! grep -q FAIL "$SOAK_DIR/setup.log" || fail "setting up the foreign writers: $(cat "$SOAK_DIR/setup.log")"

	ip netns exec "$(ns_name node)" timeout --kill-after=30 "$E2E_SERVER_TIMEOUT" "$SVCNAT" \
		--backend="$backend" -v --hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" \
		--cluster-cidr "$E2E_CLUSTER_CIDR" --config "$CFG" --lock-wait 30000 \
		--min-sync-period 200ms --sync-period 5s \
		--healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249 \
		</dev/null >"$SOAK_DIR/daemon.log" 2>&1 &
	DAEMON=$!
	E2E_BG_PIDS+=("$DAEMON")
	wait_for_context() { echo; tail -n 20 "$SOAK_DIR/daemon.log"; }
	wait_for 120 "the daemon's first sync of $SERVICES services" \
		grep -q "sync (initial): [0-9]* service ports" "$SOAK_DIR/daemon.log"
	say "$backend: first sync: $(grep -m1 'sync (initial): ' "$SOAK_DIR/daemon.log" | sed 's/.*sync (initial): //')"

	# everything at once, each bounded by a stop file and a count
	local writers=() clients=()
	in_node_bash 'writer kubelet' >"$SOAK_DIR/kubelet.log" 2>&1 &
	writers+=($!)
	in_node_bash 'writer portmap' >"$SOAK_DIR/portmap.log" 2>&1 &
	writers+=($!)
	in_node_bash 'writer fw' >"$SOAK_DIR/fw.log" 2>&1 &
	writers+=($!)
	in_node_bash 'ct_churn' >"$SOAK_DIR/ct.log" 2>&1 &
	writers+=($!)
	python3 "$top_srcdir/tests/e2e/soakgen.py" --bench "$top_srcdir/contrib/bench" \
		--services "$SERVICES" --pods "$PODS" --interval "$INTERVAL" \
		--steps 200 --stop "$SOAK_DIR/stop" "$CFG" >"$SOAK_DIR/churn.log" 2>&1 &
	local churner=$!
	traffic clusterip podclient 198.19.0.6 80 &
	clients+=($!)
	traffic nodeport client1 "$E2E_NODE_IP" 30006 &
	clients+=($!)
	traffic udp-stable client2 198.19.100.1 53 --udp &
	clients+=($!)
	traffic udp-direct client2 198.18.65.11 8080 --udp &
	clients+=($!)
	traffic udp-churn podclient 198.19.100.2 53 --udp --timeout-ms 300 &
	clients+=($!)
	E2E_BG_PIDS+=("${writers[@]}" "$churner" "${clients[@]}")

	# CHURN_SECONDS, and longer (up to MAX_SECONDS) until each writer has
	# deleted one of its objects and the config changed a few times
	local start=$SECONDS
	while [ $((SECONDS - start)) -lt "$MAX_SECONDS" ]; do
		[ $((SECONDS - start)) -ge "$CHURN_SECONDS" ] && enough && break
		kill -0 "$DAEMON" 2>/dev/null || break
		sleep 1
	done
	touch "$SOAK_DIR/stop"
	wait "$churner" || fail "soakgen.py: $(cat "$SOAK_DIR/churn.log")"
	for pid in "${writers[@]}"; do
		wait "$pid"
	done
	kill -0 "$DAEMON" 2>/dev/null || fail "the daemon died: $(tail -n 20 "$SOAK_DIR/daemon.log")"
	last=$(grep -c '^step' "$SOAK_DIR/churn.log")
	say "$backend: writers stopped after $((SECONDS - start)) s: $last config changes; $(steps kubelet) kubelet, $(steps portmap) portmap, $(steps fw) firewalld steps"
	enough || fail "$backend: too little happened in $MAX_SECONDS s (a loaded machine?): $last config changes, writers' steps $(steps kubelet) $(steps portmap) $(steps fw) (want >= $MIN_CHANGES and > $WINDOW)"

	# The kernel holds the last config's plan once the daemon has caught up
	# (the clients still run) ...
	wait_for_context() { echo; cat "$SOAK_DIR/diff"; tail -n 20 "$SOAK_DIR/daemon.log"; }
	diff_equal() {
		in_ns node "$SVCNAT" --backend="$backend" --hostname "$E2E_HOSTNAME" \
			--node-ip "$E2E_NODE_IP" --cluster-cidr "$E2E_CLUSTER_CIDR" \
			--dry-run --diff --config "$CFG" >"$SOAK_DIR/diff" 2>&1
	}
	wait_until 120 "$backend: svcnat's rules equal the last config's --dry-run (--diff)" diff_equal
	# ... and one change more, on a quiet node: udp-churn's endpoint moves
	# away from the pod its client has been reaching since, so the daemon
	# has fresh flows to delete.
	local t1=$(_e2e_us)
	python3 "$top_srcdir/tests/e2e/soakgen.py" --bench "$top_srcdir/contrib/bench" \
		--services "$SERVICES" --pods "$PODS" --once $((last + 1)) "$CFG" || fail "soakgen.py"
	wait_until 120 "$backend: svcnat's rules equal the final config's --dry-run (--diff)" diff_equal
	local quiet_ms=$(( ($(_e2e_us) - t1) / 1000 ))
	touch "$SOAK_DIR/stop-traffic"
	for pid in "${clients[@]}"; do
		wait "$pid"
	done

	# Every foreign object as its writer left it.
	in_node_bash foreign_state >"$SOAK_DIR/foreign.live" 2>&1
	timeout --kill-after=5 120 unshare -n env SOAK_DIR="$SOAK_DIR" WINDOW="$WINDOW" \
		FW_TABLE="$FW_TABLE" FOREIGN_RE="$FOREIGN_RE" bash -c "$FUNCS; scratch_state \
		$(steps kubelet) $(steps portmap) $(steps fw)" \
		>"$SOAK_DIR/foreign.want" 2>&1
	diff -u "$SOAK_DIR/foreign.want" "$SOAK_DIR/foreign.live" >&2 ||
		fail "$backend: a foreign writer's rules are not as it left them (above: - its state, + the node's)"
	[ "$(grep -c . "$SOAK_DIR/foreign.live")" -gt 30 ] ||
		fail "$backend: the foreign state is too small to be right: $(cat "$SOAK_DIR/foreign.live")"
	for f in kubelet portmap fw ct; do
		! grep -q '^FAIL' "$SOAK_DIR/$f.log" ||
			fail "$backend: $f: $(grep -c '^FAIL' "$SOAK_DIR/$f.log") commands failed: $(grep -m3 '^FAIL' "$SOAK_DIR/$f.log")"
	done

	# Every checked connection attempt answered (udp-churn is load only:
	# its in-flight answers may be lost when the daemon deletes the old
	# endpoint's flows, as kube-proxy's do).
	local total=0 summary=
	for f in clusterip nodeport udp-stable udp-direct; do
		n=$(grep -c . "$SOAK_DIR/traffic.$f")
		bad=$(grep -vc '^ok ' "$SOAK_DIR/traffic.$f")
		[ "$n" -ge 20 ] || fail "$backend: $f: only $n attempts"
		[ "$bad" = 0 ] || fail "$backend: $f: $bad of $n attempts failed: $(summary "$SOAK_DIR/traffic.$f")"
		total=$((total + n))
		summary+="$f $n, "
	done
	say "$backend: every one of $total attempts answered (${summary%, }; udp-churn load: $(grep -c '^ok ' "$SOAK_DIR/traffic.udp-churn") of $(grep -c . "$SOAK_DIR/traffic.udp-churn") answered)"

	# The syncs: never two failures in a row, the last one good; nothing
	# repaired (nobody touched svcnat's rules); the kept state right.
	grep -E 'sync \([a-z]+\)( failed|: [0-9]+ service ports|: kernel already matches)' \
		"$SOAK_DIR/daemon.log" | sed -E 's/.*sync \(([a-z]+)\)( failed|).*/\1\2/' >"$SOAK_DIR/syncs"
	awk '/failed/ { if (prev) { print "two failed syncs in a row at sync " NR; bad = 1 } prev = 1; next }
		{ prev = 0 } END { if (prev) print "the last sync failed"; exit bad || prev }' \
		"$SOAK_DIR/syncs" >"$SOAK_DIR/syncs.bad" ||
		fail "$backend: $(cat "$SOAK_DIR/syncs.bad"): $(grep -m5 'failed' "$SOAK_DIR/daemon.log")"
	! grep -q 'repaired drift' "$SOAK_DIR/daemon.log" ||
		fail "$backend: the daemon repaired drift nobody made: $(grep -m3 'repaired drift' "$SOAK_DIR/daemon.log")"
	! grep -q 'differed from a full' "$SOAK_DIR/daemon.log" ||
		fail "$backend: $(grep -m3 'differed from a full' "$SOAK_DIR/daemon.log")"
	# (the daemon deletes flows after the commit --diff saw)
	local deleted errors failures
	deleted_some() {
		deleted=$(metric svcnat_conntrack_entries_deleted_total)
		[ "${deleted:-0}" -gt 0 ]
	}
	wait_for_context() { echo " (udp-churn's endpoint moved $((last + 1)) times)"; }
	wait_for 60 "$backend: the daemon's deletion of conntrack entries" deleted_some
	errors=$(metric svcnat_conntrack_errors_total)
	failures=$(grep -c failed "$SOAK_DIR/syncs")
	[ "${errors:-1}" = 0 ] || fail "$backend: $errors conntrack errors"
	in_ns node curl -sf --max-time 30 http://127.0.0.1:10256/healthz >/dev/null ||
		fail "$backend: /healthz is not 200 at the end"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$backend: the daemon exited $? on SIGTERM: $(tail -n 5 "$SOAK_DIR/daemon.log")"
	say "$backend: $(grep -c . "$SOAK_DIR/syncs") syncs ($failures failed, each followed by a good one), $deleted conntrack entries deleted; the quiet change in $quiet_ms ms (with --diff's polling); $(( ($(_e2e_us) - t0) / 1000000 )) s in all"
}

e2e_for_each_backend run
