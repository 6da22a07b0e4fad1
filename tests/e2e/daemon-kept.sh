#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The direct writer keeps what it wrote from sync to sync and takes a
# planned chain whose stamp did not change, and whose bytes in the kernel
# are still the kept ones, without comparing it rule by rule (issue 18;
# src/backend/xt/xtkept.h).  What another program changes in between must
# still be seen and repaired at the next sync:
#  - a rule of an owned chain replaced by one of the same size that
#    differs in one address (iptables-legacy -R: only the bytes tell);
#  - a rule deleted from an owned chain (-D), one inserted into another (-I);
#  - a foreign rule inserted at the top of nat PREROUTING, which moves
#    every chain after it (the kept jumps must be recognised relocated,
#    and the foreign rule stays);
# and after the sync `svcnat --dry-run --diff` finds the kernel equal to the
# plan.  The -v notes show that chains were taken as kept at all (else the
# test would prove nothing about the kept copy), and that the table read
# went back to the system while the new one was built from it.
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-kept "$@"

N=12
NODE_ARGS=(--hostname node-a --node-ip 198.18.0.1)

# config MOVED...: services default/s1..sN, each with endpoint
# 198.18.65.I:80 (I its number), or 198.18.66.I:80 for the numbers given.
config() {
	local i ip sep= items=
	for i in $(seq 1 "$N"); do
		ip=198.18.65.$i
		case " $* " in *" $i "*) ip=198.18.66.$i ;; esac
		items="$items$sep{\"Name\":\"s$i\",\"Port\":$((20000 + i)),\"Endpoints\":[\"$ip:80\",\"198.18.67.$i:80\"]}"
		sep=,
	done
	printf '{"Services":[%s]}\n' "$items" >"$TMP/c.tmp"
	mv "$TMP/c.tmp" "$TMP/c.json"
}

syncs() { grep -c 'sync (change)' "$TMP/log"; }
synced() { [ "$(syncs)" -ge "$1" ]; }

# kept_note: "K M" of the last nat note "(K of M planned chains as kept)"
kept_note() {
	grep 'direct: nat: read' "$TMP/log" | tail -n 1 |
		sed -n 's/.*(\([0-9]*\) of \([0-9]*\) planned chains as kept).*/\1 \2/p'
}

# sep_of IP: the KUBE-SEP chain whose DNAT goes to IP:80
sep_of() {
	iptables-legacy-save -t nat | grep -- "-j DNAT --to-destination $1:80" |
		awk '{ print $2 }' | head -n 1
}

run() {
	local k m sep1 sep3 svc2 line n

	config
	dn_start direct "${NODE_ARGS[@]}" --min-sync-period 0s --sync-period 1h \
		--healthz-bind-address "" --metrics-bind-address "" -v
	wait_for 20 "first sync" grep -q 'sync (initial)' "$TMP/log"
	# The first change writes the table the writer then keeps; the
	# second one finds it in the kernel.
	config 10
	wait_for 20 "first change" synced 1
	config 10 11
	wait_for 20 "second change" synced 2
	read -r k m <<<"$(kept_note)"
	echo "# second change: ${k:-?} of ${m:-?} planned nat chains taken as kept"
	[ -n "$k" ] && [ "$k" -gt 0 ] && [ "$k" -lt "$m" ] ||
		fail "the second change took ${k:-no} of ${m:-?} chains as kept: $(grep 'direct: nat' "$TMP/log" | tail -n 1)"
	# The read went back to the system as its chains were copied (its
	# one chunk once the last copy in it was done).
	grep 'direct: nat: gave back' "$TMP/log" | tail -n 1 | grep -q 'gave back [1-9][0-9]* of' ||
		fail "the read was not given back: $(grep 'direct: nat: gave back' "$TMP/log" | tail -n 1)"

	sep1=$(sep_of 198.18.65.1)
	sep3=$(sep_of 198.18.65.3)
	svc2=$(iptables-legacy-save -t nat | grep -- '-A KUBE-SVC-.*default/s2' | awk '{ print $2 }' | head -n 1)
	[ -n "$sep1" ] && [ -n "$sep3" ] && [ -n "$svc2" ] ||
		fail "no chains of s1, s2, s3: $(iptables-legacy-save -t nat)"
	# The same rule with another address: an entry of the same size.
	line=$(iptables-legacy-save -t nat | grep -- "-A $sep1 .*-j DNAT")
	n=$(iptables-legacy-save -t nat | grep -- "^-A $sep1 " | grep -n -- '-j DNAT' | cut -d: -f1)
	# shellcheck disable=SC2086
	iptables-legacy -t nat -R $(echo "$line" | sed "s/^-A $sep1 /$sep1 $n /; s/198\.18\.65\.1:80/198.18.65.99:80/") ||
		fail "iptables-legacy -R $sep1 $n"
	iptables-legacy -t nat -D "$svc2" 1 || fail "iptables-legacy -D $svc2 1"
	iptables-legacy -t nat -I "$sep3" 1 -j ACCEPT || fail "iptables-legacy -I $sep3 1"
	iptables-legacy -t nat -I PREROUTING 1 -s 198.18.7.7/32 -j ACCEPT || fail "-I PREROUTING"
	"$SVCNAT" --dry-run --diff --config "$TMP/c.json" "${NODE_ARGS[@]}" --backend direct \
		>"$TMP/diff" 2>&1 && fail "--diff found nothing of the hand changes"

	config 10 11 12
	wait_for 20 "third change" synced 3
	read -r k m <<<"$(kept_note)"
	echo "# third change, after the hand changes: ${k:-?} of ${m:-?} planned nat chains as kept"
	"$SVCNAT" --dry-run --diff --config "$TMP/c.json" "${NODE_ARGS[@]}" --backend direct \
		>"$TMP/diff" 2>&1 || fail "not repaired: $(cat "$TMP/diff")"
	iptables-legacy-save -t nat | grep -q -- "198.18.65.99" && fail "the replaced DNAT rule stayed"
	[ "$(iptables-legacy-save -t nat | grep -c -- '-A PREROUTING -s 198.18.7.7/32 -j ACCEPT')" = 1 ] ||
		fail "the foreign PREROUTING rule: $(iptables-legacy-save -t nat | grep -- '-A PREROUTING')"
	# The three chains changed by hand and s12's were compared rule by
	# rule; the others (most), moved by the foreign rule, were recognised.
	[ -n "$k" ] && [ "$k" -ge $((m / 2)) ] && [ "$k" -le $((m - 4)) ] ||
		fail "after the hand changes ${k:-no} of ${m:-?} chains were taken as kept"

	# Nothing changed since: a periodic-style sync with nothing to write
	# keeps the table as read, and the next change still finds it.
	config 10 11
	wait_for 20 "fourth change" synced 4
	"$SVCNAT" --dry-run --diff --config "$TMP/c.json" "${NODE_ARGS[@]}" --backend direct \
		>"$TMP/diff" 2>&1 || fail "fourth change: $(cat "$TMP/diff")"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "exit $?"
	DAEMON=
}

run
echo PASS
