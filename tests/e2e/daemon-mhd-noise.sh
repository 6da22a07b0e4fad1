#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# At --v=4 libmicrohttpd says nothing: the daemon, alone in a namespace of
# its own (lib/daemon-ns.sh), serves /healthz, /metrics and a LoadBalancer
# service's health-check node port, is asked on each (and sent a request
# that is not HTTP and one cut short), is stopped, and neither its stderr
# nor its --log-file has a line from libmicrohttpd (svcnat passes them on
# as "http: libmicrohttpd: ..." at -v 6, below the details of -v 4) or
# libmicrohttpd's own texts (its option-order warning, "MHD_OPTION_...",
# "Error"/"Failed" lines of its own).  At --v=6 the same requests do bring
# libmicrohttpd's messages, as svcnat passes them on: the check can fail.
. "$(dirname "$0")/lib/daemon-ns.sh"
# shellcheck source=tests/e2e/lib/k8s.sh
. "$(dirname "$0")/lib/k8s.sh"
dn_init daemon-mhd-noise "$@"

HC=32000
ip addr add 198.18.0.1/32 dev lo
k8s_list \
	"$(k8s_service e2e lb '"type":"LoadBalancer","clusterIP":"198.19.0.20","externalTrafficPolicy":"Local","healthCheckNodePort":'$HC',"ports":[
		{"name":"http","protocol":"TCP","port":80,"targetPort":8080,"nodePort":30080}]' \
		'"loadBalancer":{"ingress":[{"ip":"198.18.200.1"}]}')" \
	"$(k8s_slice e2e lb '[{"name":"http","protocol":"TCP","port":8080}]' 198.18.65.10@node-a)" \
	>"$TMP/c.json"

# run V: the daemon at --v=V, every server asked; logs $TMP/V.err and $TMP/V.file
run() {
	local v=$1 code
	rm -f "$TMP/$v.file"
	dn_start direct --v="$v" --logtostderr=false --alsologtostderr --log-file "$TMP/$v.file" \
		--min-sync-period 100ms --sync-period 1s \
		--healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249
	wait_for 30 "/healthz 200 at -v $v" \
		sh -c '[ "$(curl -s -o /dev/null -w %{http_code} http://127.0.0.1:10256/healthz)" = 200 ]'
	wait_for 30 "the health-check node port at -v $v" \
		curl -sf -o /dev/null "http://198.18.0.1:$HC/"
	code=$(curl -s -o "$TMP/metrics" -w '%{http_code}' http://127.0.0.1:10249/metrics)
	[ "$code" = 200 ] || fail "/metrics answered $code at -v $v"
	grep -q '^kubeproxy_sync_proxy_rules_duration_seconds_count' "$TMP/metrics" ||
		fail "/metrics without kube-proxy's sync histogram at -v $v"
	curl -s -o /dev/null http://127.0.0.1:10249/healthz || fail "/healthz on the metrics port"
	# Not HTTP, and a request cut short: what libmicrohttpd has words for.
	printf 'NOT HTTP AT ALL\r\n\r\n' | timeout 5 bash -c 'cat >/dev/tcp/127.0.0.1/10256' 2>/dev/null
	printf 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab' |
		timeout 5 bash -c 'cat >/dev/tcp/127.0.0.1/10249' 2>/dev/null
	printf 'GET / HTTP/1.1\r\nBad Header Line\r\n\r\n' |
		timeout 5 bash -c "cat >/dev/tcp/198.18.0.1/$HC" 2>/dev/null
	sleep 0.5
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "the daemon exited $? at -v $v"
	DAEMON=
	cp "$TMP/log" "$TMP/$v.err"
	[ -s "$TMP/$v.file" ] || fail "no --log-file lines at -v $v"
	grep -q 'exiting, the rules stay' "$TMP/$v.file" || fail "--log-file at -v $v ends early"
}

# mhd_lines FILE: libmicrohttpd's lines in FILE, as svcnat passes them or its own
mhd_lines() {
	grep -i 'libmicrohttpd\|MHD_\|microhttpd' "$1"
}

run 4
for f in "$TMP/4.err" "$TMP/4.file"; do
	if mhd_lines "$f" >"$TMP/noise"; then
		fail "libmicrohttpd's messages at --v=4 in ${f##*/}: $(head -n 3 "$TMP/noise")"
	fi
	# Every line is klog's: nothing printed by a library on its own.
	bad=$(grep -cv '^[IWE][01][0-9][0-3][0-9] ' "$f")
	[ "$bad" = 0 ] || fail "$bad lines in ${f##*/} not klog's: $(grep -v '^[IWE][0-9]\{4\} ' "$f" | head -n 3)"
done
grep -q 'sync parts: ' "$TMP/4.file" || fail "no details at --v=4: not the verbosity asked for"
echo "# --v=4: $(wc -l <"$TMP/4.file") lines, none from libmicrohttpd"

run 6
mhd_lines "$TMP/6.file" >"$TMP/mhd6" || fail "no libmicrohttpd message at --v=6 after the bad requests"
echo "# --v=6: $(wc -l <"$TMP/mhd6") libmicrohttpd lines, e.g. $(head -n 1 "$TMP/mhd6")"
echo "PASS: daemon-mhd-noise"
