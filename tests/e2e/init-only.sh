#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kube-proxy's conntrack flags and --init-only, in the node's network
# namespace: `svcnat --init-only --conntrack-*` writes exactly the sysctls
# given (the TCP established/close-wait and UDP timeouts in seconds,
# tcp_be_liberal) and exits 0; the host's values do not change; a TCP
# timeout not given gets kube-proxy's default (24 h established, 1 h
# CLOSE_WAIT), one given as 0 is left as it was, and so are the UDP ones
# not given; nf_conntrack_max (the host's, one table for every namespace)
# is never written from the node's namespace; --once with the same flags
# writes them too; a
# KubeProxyConfiguration's conntrack fields each reach their own sysctl,
# and a flag given too wins over its field.
. "$(dirname "$0")/lib/topology.sh"
e2e_init init-only
[ -e /proc/sys/net/netfilter/nf_conntrack_tcp_timeout_established ] ||
	e2e_skip "needs nf_conntrack (its sysctls)"

ct=/proc/sys/net/netfilter
host_est=$(cat $ct/nf_conntrack_tcp_timeout_established)
host_lib=$(cat $ct/nf_conntrack_tcp_be_liberal)
host_max=$(cat $ct/nf_conntrack_max)

get() { in_ns node cat "$ct/nf_conntrack_$1"; }

run() {
	local before_cw before_max
	before_cw=$(get tcp_timeout_close_wait)
	before_max=$(get max)
	in_ns node "$SVCNAT" --init-only --conntrack-tcp-timeout-established 2h \
		--conntrack-udp-timeout 45s --conntrack-udp-timeout-stream 3m \
		--conntrack-tcp-be-liberal >"$E2E_TMP/out" 2>&1 ||
		fail "--init-only exited $?: $(cat "$E2E_TMP/out")"
	[ "$(get tcp_timeout_established)" = 7200 ] || fail "established: $(get tcp_timeout_established)"
	[ "$(get udp_timeout)" = 45 ] || fail "udp: $(get udp_timeout)"
	[ "$(get udp_timeout_stream)" = 180 ] || fail "udp stream: $(get udp_timeout_stream)"
	[ "$(get tcp_be_liberal)" = 1 ] || fail "be_liberal: $(get tcp_be_liberal)"
	[ "$(get tcp_timeout_close_wait)" = 3600 ] ||
		fail "close-wait not given: $(get tcp_timeout_close_wait), not kube-proxy's 3600"
	[ "$(get max)" = "$before_max" ] && [ "$(cat $ct/nf_conntrack_max)" = "$host_max" ] ||
		fail "nf_conntrack_max changed: node $(get max) (was $before_max), host $(cat $ct/nf_conntrack_max)"
	say "--init-only wrote the four sysctls given and kube-proxy's 1 h close-wait; nf_conntrack_max left"
	in_ns node sh -c "echo $before_cw >$ct/nf_conntrack_tcp_timeout_close_wait" || fail "cannot reset close-wait"
	in_ns node "$SVCNAT" --init-only --conntrack-tcp-timeout-close-wait 0 >"$E2E_TMP/out" 2>&1 ||
		fail "--init-only --conntrack-tcp-timeout-close-wait 0 exited $?: $(cat "$E2E_TMP/out")"
	[ "$(get tcp_timeout_close_wait)" = "$before_cw" ] || fail "close-wait 0 did not leave it: $(get tcp_timeout_close_wait)"
	[ "$(get tcp_timeout_established)" = 86400 ] ||
		fail "established not given: $(get tcp_timeout_established), not kube-proxy's 86400"
	say "0 leaves close-wait ($before_cw s); established not given: kube-proxy's 24 h"
	svcnat_sync "$1" "$top_srcdir/contrib/examples/cluster.json" --conntrack-tcp-timeout-close-wait 30m
	[ "$(get tcp_timeout_close_wait)" = 1800 ] || fail "--once: close-wait $(get tcp_timeout_close_wait)"
	say "--once wrote --conntrack-tcp-timeout-close-wait 30m"
	[ "$(cat $ct/nf_conntrack_tcp_timeout_established)" = "$host_est" ] &&
		[ "$(cat $ct/nf_conntrack_tcp_be_liberal)" = "$host_lib" ] ||
		fail "the host's conntrack sysctls changed"
	say "the host's values are as they were"

	# The same from a KubeProxyConfiguration: each conntrack field to its
	# own sysctl (values unlike the ones above and unlike each other), a
	# flag given too wins over its field.  maxPerCore 0: nf_conntrack_max
	# is left alone (host-wide on older kernels).
	in_ns node sh -c "echo 0 >$ct/nf_conntrack_tcp_be_liberal" || fail "cannot reset be_liberal"
	printf '%s\n' 'apiVersion: kubeproxy.config.k8s.io/v1alpha1' 'kind: KubeProxyConfiguration' \
		'conntrack:' '  maxPerCore: 0' '  tcpEstablishedTimeout: 3h0m3s' \
		'  tcpCloseWaitTimeout: 17m' '  tcpBeLiberal: true' '  udpTimeout: 41s' \
		'  udpStreamTimeout: 2m7s' >"$E2E_TMP/kp.yaml"
	in_ns node "$SVCNAT" --init-only --config "$E2E_TMP/kp.yaml" >"$E2E_TMP/out" 2>&1 ||
		fail "--init-only --config kp.yaml exited $?: $(cat "$E2E_TMP/out")"
	[ "$(get tcp_timeout_established)" = 10803 ] || fail "file: established $(get tcp_timeout_established)"
	[ "$(get tcp_timeout_close_wait)" = 1020 ] || fail "file: close-wait $(get tcp_timeout_close_wait)"
	[ "$(get udp_timeout)" = 41 ] || fail "file: udp $(get udp_timeout)"
	[ "$(get udp_timeout_stream)" = 127 ] || fail "file: udp stream $(get udp_timeout_stream)"
	[ "$(get tcp_be_liberal)" = 1 ] || fail "file: be_liberal $(get tcp_be_liberal)"
	say "a KubeProxyConfiguration's conntrack fields: each in its own sysctl"
	# The fields without a flag must come from the file again, not stay.
	in_ns node sh -c "echo 99 >$ct/nf_conntrack_udp_timeout_stream; echo 9999 >$ct/nf_conntrack_tcp_timeout_established" ||
		fail "cannot reset udp stream and established"
	in_ns node "$SVCNAT" --init-only --config "$E2E_TMP/kp.yaml" --conntrack-udp-timeout 44s \
		--conntrack-tcp-timeout-close-wait 19m >"$E2E_TMP/out" 2>&1 ||
		fail "--init-only --config kp.yaml with flags exited $?: $(cat "$E2E_TMP/out")"
	[ "$(get udp_timeout)" = 44 ] && [ "$(get tcp_timeout_close_wait)" = 1140 ] ||
		fail "the flags did not win: udp $(get udp_timeout), close-wait $(get tcp_timeout_close_wait)"
	[ "$(get udp_timeout_stream)" = 127 ] && [ "$(get tcp_timeout_established)" = 10803 ] ||
		fail "file+flags: udp stream $(get udp_timeout_stream), established $(get tcp_timeout_established)"
	say "flags given too win over the file's fields"
	[ "$(cat $ct/nf_conntrack_tcp_timeout_established)" = "$host_est" ] &&
		[ "$(cat $ct/nf_conntrack_tcp_be_liberal)" = "$host_lib" ] ||
		fail "the host's conntrack sysctls changed"
}

SVCNAT_E2E_BACKENDS=${SVCNAT_E2E_BACKENDS:-direct}
SVCNAT_E2E_BACKENDS=${SVCNAT_E2E_BACKENDS%% *}
e2e_for_each_backend run
