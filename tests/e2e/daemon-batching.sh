#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# --min-sync-period batches (kube-proxy's BoundedFrequencyRunner): ten
# changes of the config file written 0.1 s apart, inside a 3 s
# --min-sync-period, reach the kernel in fewer syncs than changes (counted
# by svcnat_syncs_total{reason="change"}), and the kernel ends with the
# last one's rules.  Without batching every change would be a sync of its
# own.  No timing assertion: however slow the machine, ten changes spread
# over about a second cannot take ten syncs 3 s apart.
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-batching "$@"

CHANGES=10
# (not the localhost node ports' counted copies, -m nfacct)
nat_services() { iptables-legacy-save -t nat | grep -- '-A KUBE-NODEPORTS .*default/s[0-9]*"' | grep -vc -- '-m nfacct'; }
has_all() { [ "$(nat_services)" = "$1" ]; }

run() {
	local backend=$1 n0 n1 i
	legacy_config 1
	dn_start "$backend" --min-sync-period 3s --sync-period 60s
	wait_for 20 "first sync" grep -q 'sync (initial)' "$TMP/log"
	wait_for 10 "/metrics" sh -c "curl -s http://127.0.0.1:10249/metrics | grep -q '^svcnat_syncs_total'"
	n0=$(metric 'svcnat_syncs_total{reason="change"}')
	for i in $(seq 2 $((CHANGES + 1))); do
		legacy_config "$i"
		sleep 0.1
	done
	wait_for 30 "the last change in the kernel" has_all $((CHANGES + 1))
	sleep 0.5
	n1=$(metric 'svcnat_syncs_total{reason="change"}')
	synced=$(( ${n1:-0} - ${n0:-0} ))
	echo "# $backend: $CHANGES changes, $synced syncs"
	[ "$synced" -ge 1 ] || fail "no change sync counted (metric ${n0:-none} -> ${n1:-none})"
	[ "$synced" -lt "$CHANGES" ] || fail "$CHANGES changes took $synced syncs: not batched"
	has_all $((CHANGES + 1)) || fail "the kernel does not hold the last change"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "exit $?"
	DAEMON=
}

for b in ${SVCNAT_E2E_BACKENDS:-libiptc direct restore}; do
	case $b in libiptc | direct) run "$b" ;; esac
done
echo PASS
