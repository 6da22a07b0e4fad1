#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Another program writing iptables rules while the daemon syncs, as kubelet
# and CNI plugins do on every node: 100 services, and a loop adding and
# deleting rules in a foreign filter chain (iptables-nft for --backend nft,
# iptables-legacy -w for direct and libiptc) during 20 config changes (10
# for the legacy writers, which share the xtables lock) with
# a periodic sync every second.  Every change must reach the kernel while
# the writer runs (an interrupted nf_tables dump once left its rest in the
# socket and every later request failed with "Protocol error" until a
# restart); once the writer stops, /healthz answers 200, svcnat's rules are
# the dry-run's (and `--dry-run --diff` finds them equal), and the foreign
# chain and its jump hold exactly what the writer left.  Prints the
# writer's rule count, the syncs the daemon logged and how many failed.
# Runs in a network and mount namespace of its own with a private /run.
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-writers "$@"

NODE_ARGS=(--hostname node-a --node-ip 198.18.0.1)
WPID=

# The first errors tell the cause; the tail (fail's) what became of it.
wait_for_context() {
	printf '\n--- first errors ---\n'
	grep -m 5 -E '^E[0-9]{4} |error' "$TMP/log"
}
stop_writer() {
	[ -n "$TMP" ] && touch "$TMP/stop"
	[ -n "$WPID" ] && kill "$WPID" 2>/dev/null && wait "$WPID" 2>/dev/null
	WPID=
}
trap 'stop_writer; _dn_cleanup' EXIT

norm() {
	grep -v '^#' | sed -e 's/ \[[0-9]*:[0-9]*\]$//' \
		-e 's/\(--probability [0-9]\.[0-9]\{5\}\)[0-9]*/\1/'
}

# writer IPTABLES: until $TMP/stop exists (at most 90 s), add a rule to
# FOREIGN and delete it again, keeping every tenth; the rules kept, in
# order, go to $TMP/foreign.want, the count of commands to $TMP/writer.n.
writer() {
	local ipt=$1 i=0 a end=$((SECONDS + 90))
	while [ ! -e "$TMP/stop" ] && [ $SECONDS -lt $end ]; do
		i=$((i + 1))
		a=198.19.$((i / 250)).$((i % 250 + 1))/32
		$ipt -A FOREIGN -s "$a" -j ACCEPT 2>>"$TMP/writer.err" ||
			echo "add $a failed" >>"$TMP/writer.err"
		if [ $((i % 10)) = 0 ]; then
			echo "-A FOREIGN -s $a -j ACCEPT" >>"$TMP/foreign.want"
		else
			$ipt -D FOREIGN -s "$a" -j ACCEPT 2>>"$TMP/writer.err" ||
				echo "delete $a failed" >>"$TMP/writer.err"
		fi
	done
	echo "$i" >"$TMP/writer.n"
}

nat_has() { $1 -t nat | grep -q -- "$2"; }
healthz_ok() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 http://127.0.0.1:10256/healthz)" = 200 ]
}
periodic_after() { [ "$(metric 'svcnat_syncs_total{reason="periodic"}')" -gt "$1" ]; }

run() {
	local backend=$1 flavour=$2 changes=$3 ipt save k port code syncs failed
	case $flavour in
	nft) ipt="iptables-nft" save=iptables-nft-save ;;
	legacy) ipt="iptables-legacy -w 30" save=iptables-legacy-save ;;
	esac
	command -v "$save" >/dev/null || fail "needs $save"
	rm -f "$TMP/stop" "$TMP/foreign.want" "$TMP/writer.err" "$TMP/writer.n"
	: >"$TMP/foreign.want"
	$ipt -N FOREIGN || fail "$ipt -N FOREIGN"
	$ipt -A FOREIGN -s 198.18.9.9/32 -j DROP || fail "$ipt -A FOREIGN"
	$ipt -A INPUT -j FOREIGN || fail "$ipt -A INPUT -j FOREIGN"
	legacy_config 100 20000
	dn_start "$backend" "${NODE_ARGS[@]}" --min-sync-period 100ms --sync-period 1s \
		--lock-wait 30000
	wait_for 30 "first sync" grep -q 'sync (initial)' "$TMP/log"

	writer "$ipt" &
	WPID=$!
	for k in $(seq 1 "$changes"); do
		port=$((20000 + k * 100))
		legacy_config 100 "$port"
		# The last service's node port of this change.
		wait_for 30 "$backend: change $k (node port $((port + 100))) in the kernel" \
			nat_has "$save" "--dport $((port + 100)) "
	done
	touch "$TMP/stop"
	wait "$WPID"
	WPID=
	[ -s "$TMP/writer.err" ] && fail "the foreign writer failed: $(head -n 5 "$TMP/writer.err")"

	wait_for 30 "$backend: /healthz 200 after the writer stopped" healthz_ok
	# A sync that ends after the writer stopped, then the comparisons.
	syncs=$(metric 'svcnat_syncs_total{reason="periodic"}')
	wait_for 30 "$backend: a periodic sync after the writer stopped" periodic_after "${syncs:-0}"
	"$SVCNAT" --dry-run --config "$TMP/c.json" "${NODE_ARGS[@]}" 2>/dev/null |
		norm | grep -- 'KUBE-' | sort >"$TMP/want" || fail "--dry-run"
	$save | norm | grep -- 'KUBE-' | sort >"$TMP/have"
	cmp -s "$TMP/want" "$TMP/have" ||
		fail "$backend: svcnat's rules are not the dry-run's: $(diff -u "$TMP/want" "$TMP/have" | head -n 20)"
	"$SVCNAT" --dry-run --diff --backend "$backend" --config "$TMP/c.json" \
		"${NODE_ARGS[@]}" >"$TMP/diff" 2>&1 ||
		fail "$backend: --dry-run --diff: $(head -n 20 "$TMP/diff")"
	{
		echo "-A FOREIGN -s 198.18.9.9/32 -j DROP"
		cat "$TMP/foreign.want"
	} >"$TMP/foreign.all"
	$save -t filter | grep -- '^-A FOREIGN' >"$TMP/foreign.have"
	cmp -s "$TMP/foreign.all" "$TMP/foreign.have" ||
		fail "$backend: the foreign chain changed: $(diff -u "$TMP/foreign.all" "$TMP/foreign.have" | head -n 20)"
	[ "$($save -t filter | grep -c -- '^-A INPUT -j FOREIGN$')" = 1 ] ||
		fail "$backend: the foreign jump: $($save -t filter | grep -- '-A INPUT')"

	syncs=$(curl -s --max-time 10 http://127.0.0.1:10249/metrics |
		awk '$1 ~ /^svcnat_syncs_total/ { n += $2 } END { print n + 0 }')
	failed=$(grep -c 'sync (.*) failed' "$TMP/log")
	echo "# $backend: $(cat "$TMP/writer.n") writer rounds, $syncs syncs, $failed failed;" \
		"$(grep -c 'changed while svcnat wrote it' "$TMP/log") retries"
	grep -E '^E[0-9]{4} |error' "$TMP/log" | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c | sort -rn | head -n 8 |
		sed 's/^/#   /'
	kill -TERM "$DAEMON"
	wait "$DAEMON"
	code=$?
	DAEMON=
	[ "$code" = 0 ] || fail "$backend: exit $code after SIGTERM"
	"$SVCNAT" --cleanup --backend "$backend" "${NODE_ARGS[@]}" >/dev/null 2>&1
	$ipt -D INPUT -j FOREIGN && $ipt -F FOREIGN && $ipt -X FOREIGN ||
		fail "removing FOREIGN"
	echo "# $backend: ok"
}

for b in ${SVCNAT_E2E_BACKENDS:-nft direct libiptc}; do
	case $b in
	nft) run nft nft 20 ;;
	direct | libiptc) run "$b" legacy 10 ;;
	esac
done
echo PASS
