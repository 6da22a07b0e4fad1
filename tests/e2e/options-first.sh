#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Every option error is found before any side effect, and is exit 2: the
# daemon and --once, in a namespace of their own (lib/daemon-ns.sh), each
# given one bad flag value, bad bind address, bad KubeProxyConfiguration
# field, conflicting options, an unknown flag or an unknown writer.  For
# each: exit status 2, one error line naming the option or field, and
# nothing done: the tables of every flavour, the nfacct counters, the
# namespace's sysctls, the files under /run and the log file, and the
# listening sockets are as they were before.
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init options-first "$@"

legacy_config 2
cat >"$TMP/kp-bad.yaml" <<'EOF'
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
iptables:
  minSyncPeriod: forever
EOF
cat >"$TMP/kp-bind.yaml" <<'EOF'
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
metricsBindAddress: "not-an-address:x"
EOF

# What the namespace looks like: tables, counters, sysctls, /run, sockets.
snapshot() {
	local f
	{
		echo "== legacy"; iptables-legacy-save 2>&1 | grep -v '^#'
		ip6tables-legacy-save 2>&1 | grep -v '^#'
		echo "== nft"; nft list ruleset 2>&1
		echo "== nfacct"; nfacct list 2>&1
		echo "== sysctl"
		for f in /proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established \
			 /proc/sys/net/netfilter/nf_conntrack_tcp_timeout_close_wait \
			 /proc/sys/net/netfilter/nf_conntrack_udp_timeout \
			 /proc/sys/net/netfilter/nf_conntrack_udp_timeout_stream \
			 /proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal \
			 /proc/sys/net/ipv4/conf/all/route_localnet \
			 /proc/sys/net/ipv4/ip_forward; do
			[ -r "$f" ] && echo "$f $(cat "$f")"
		done
		echo "== files"; find /run "$TMP/out" 2>/dev/null | sort
		echo "== listen"; ss -Hltnu 2>&1
	} >"$1"
}

cp "$TMP/c.json" "$TMP/ww.json"
chmod 0666 "$TMP/ww.json"
mkdir -p "$TMP/out"
snapshot "$TMP/before"
n=0

# check NAME PATTERN ARGS...: exit 2, one error line matching PATTERN, no side effect.
check() {
	local name=$1 pat=$2 rc lines
	shift 2
	n=$((n + 1))
	rc=0
	timeout 20 "$SVCNAT" "$@" </dev/null >"$TMP/o" 2>"$TMP/e" || rc=$?
	[ "$rc" = 2 ] || fail "$name: exit $rc, not 2: $(head -n 3 "$TMP/e")"
	# getopt's hint after an unknown flag is not a second error.
	lines=$(grep -v "^Try 'svcnat --help'" "$TMP/e" | grep -c .)
	[ "$lines" = 1 ] || fail "$name: $lines stderr lines, not one: $(head -n 5 "$TMP/e")"
	grep -q -- "$pat" "$TMP/e" || fail "$name: error does not name '$pat': $(cat "$TMP/e")"
	# plain "svcnat: ...", "error: ...", or klog's error line (E...)
	grep -qi "error" "$TMP/e" || grep -q "^\(.*/\)\?svcnat: " "$TMP/e" ||
		grep -q "^E[01][0-9][0-3][0-9] " "$TMP/e" ||
		fail "$name: not an error line: $(cat "$TMP/e")"
	snapshot "$TMP/after"
	diff -u "$TMP/before" "$TMP/after" >"$TMP/d" ||
		fail "$name: a side effect before the error: $(cat "$TMP/d")"
}

# Flags that would each make a side effect, were the run to get that far.
SIDE=(--log-file "$TMP/out/log" --logtostderr=false --set-sysctls
      --conntrack-tcp-timeout-established 1h --conntrack-tcp-timeout-close-wait 30m
      --oom-score-adj 500 --nfacct on --hostname node-a --node-ip 198.18.0.1)

for mode in daemon once; do
	M=()
	[ "$mode" = once ] && M=(--once)
	D=(--healthz-bind-address 127.0.0.1:0 --metrics-bind-address 127.0.0.1:0)
	A=("${M[@]}" --config "$TMP/c.json" "${SIDE[@]}")
	check "$mode bad duration" --conntrack-tcp-timeout-close-wait \
		"${M[@]}" --config "$TMP/c.json" "${SIDE[@]}" --conntrack-tcp-timeout-close-wait 5parsecs
	check "$mode bad masquerade bit" --masquerade-bit "${A[@]}" "${D[@]}" --masquerade-bit 40
	check "$mode bad verbosity" "v" "${A[@]}" "${D[@]}" --v=lots
	check "$mode bad sync period" --sync-period "${A[@]}" "${D[@]}" --sync-period soon
	check "$mode bad healthz address" --healthz-bind-address "${A[@]}" \
		--healthz-bind-address 198.18.0.1:99999 --metrics-bind-address 127.0.0.1:0
	check "$mode bad metrics address" --metrics-bind-address "${A[@]}" \
		--healthz-bind-address 127.0.0.1:0 --metrics-bind-address '[2001:2::1'
	check "$mode bad config field" iptables.minSyncPeriod "${A[@]}" "${D[@]}" \
		--config "$TMP/kp-bad.yaml"
	check "$mode bad config address" metricsBindAddress "${A[@]}" \
		--healthz-bind-address 127.0.0.1:0 --config "$TMP/kp-bind.yaml"
	check "$mode unknown flag" --no-such-flag "${A[@]}" "${D[@]}" --no-such-flag
	check "$mode unknown writer" "--backend" "${A[@]}" "${D[@]}" --backend quantum
	check "$mode bad nfacct mode" --nfacct "${A[@]}" "${D[@]}" --nfacct sometimes
	check "$mode bad proxy mode" "proxy-mode" "${A[@]}" "${D[@]}" --proxy-mode ipvs
	check "$mode two modes" "--cleanup" "${A[@]}" "${D[@]}" --dry-run --cleanup
	check "$mode bridge without interface" --pod-bridge-interface "${A[@]}" "${D[@]}" \
		--detect-local-mode BridgeInterface
	# The sync periods are the daemon's (--once checks only their syntax).
	[ "$mode" = daemon ] &&
		check "$mode sync period below min" --sync-period "${A[@]}" "${D[@]}" \
			--min-sync-period 1m --sync-period 30s
	# A services file others can write: refused before anything is done.
	check "$mode config writable by others" "$TMP/ww.json" "${A[@]}" "${D[@]}" --config "$TMP/ww.json"
	check "$mode config given twice" "$TMP/c.json" "${A[@]}" "${D[@]}" --config "$TMP/c.json"
done
echo "PASS: options-first: $n bad command lines, each exit 2 with nothing done"
