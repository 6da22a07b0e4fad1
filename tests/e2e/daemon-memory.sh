#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# svcnat_memory_bytes{part}: after the first sync a daemon says what holds
# its memory.  plan_store and kernel_state (direct and nft: their writers
# keep what they wrote) are nonzero, other is there, the parts add up to
# no more than process_resident_memory_bytes, and the page passes
# `promtool check metrics` (when promtool is installed; CI has it).
# The nft writer keeps its own chains between syncs as their compact
# kept-file bytes: at 400 services its kernel_state is well below the plan
# store's decoded rules (it was above them when it kept decoded copies).
# A change after the first sync is planned alone: the plan stores made
# their first plan after that sync.
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-memory "$@"

scrape() { curl -s --max-time 30 http://127.0.0.1:10249/metrics >"$TMP/metrics"; }
synced() { scrape && grep -q '^kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} [1-9]' "$TMP/metrics" &&
	grep -q '^svcnat_memory_bytes{part="plan_store"} [1-9]' "$TMP/metrics"; }
val() { awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics"; }
second_sync() { scrape && grep -q '^kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} [2-9]' "$TMP/metrics"; }

run() {
	local backend=$1 plan kept other rss rc
	if [ "$backend" = nft ]; then legacy_config 400; else legacy_config 50; fi
	dn_start "$backend" --min-sync-period 0s --sync-period 60s
	wait_for 60 "first sync and its memory figures" synced
	plan=$(val 'svcnat_memory_bytes{part="plan_store"}')
	kept=$(val 'svcnat_memory_bytes{part="kernel_state"}')
	other=$(val 'svcnat_memory_bytes{part="other"}')
	rss=$(val 'process_resident_memory_bytes')
	echo "# $backend: plan_store $plan, kernel_state $kept, other $other, resident $rss"
	[ -n "$other" ] || fail "$backend: no svcnat_memory_bytes{part=\"other\"}"
	awk -v k="$kept" 'BEGIN { exit !(k > 0) }' || fail "$backend: kernel_state is '$kept'"
	awk -v p="$plan" -v k="$kept" -v o="$other" -v r="$rss" 'BEGIN { exit !(p + k + o <= r + 1) }' ||
		fail "$backend: the parts add up to more than the resident memory"
	if [ "$backend" = nft ]; then
		awk -v p="$plan" -v k="$kept" 'BEGIN { exit !(k < 0.75 * p) }' ||
			fail "nft: kernel_state $kept is not below 3/4 of plan_store $plan (decoded copies kept?)"
	fi
	if command -v promtool >/dev/null; then
		promtool check metrics <"$TMP/metrics" >"$TMP/promtool" 2>&1
		rc=$?
		# Exit 3 is lint advice: only kube-proxy's own ..._total gauges may draw it.
		if [ "$rc" = 3 ]; then
			! grep -Ev '^kubeproxy_sync_proxy_rules_(iptables|no_local_endpoints)_total non-counter metrics should not have "_total" suffix$' \
				"$TMP/promtool" | grep -q . || rc=1
		fi
		[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "promtool check metrics (exit $rc): $(cat "$TMP/promtool")"
	elif [ "${CI:-}" = true ]; then
		fail "promtool missing (contrib/install-deps installs Debian's prometheus)"
	fi
	# The first sync planned without the plan stores; they made their
	# first plan after it, so one changed service is planned alone.
	sed 's/"s1","Port":20001,"Endpoints":\["198.18.65.10:80"\]/"s1","Port":20001,"Endpoints":["198.18.65.11:80"]/' \
		"$TMP/c.json" >"$TMP/c.tmp" && mv "$TMP/c.tmp" "$TMP/c.json"
	wait_for 60 "the sync of one changed service" second_sync
	planned=$(val 'svcnat_sync_service_ports_rebuilt{step="plan"}')
	awk -v p="$planned" 'BEGIN { exit !(p == 1) }' || fail "$backend: the change's sync planned '$planned' service ports anew (want 1)"
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$backend: exit $?"
	DAEMON=
}

for b in ${SVCNAT_E2E_BACKENDS:-direct nft}; do
	case $b in direct | nft) run "$b" ;; esac
done
echo PASS
