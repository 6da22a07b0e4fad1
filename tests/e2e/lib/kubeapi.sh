# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# The project's own Kubernetes API server (tests/kubeapi/kubeapi.py) for the
# API source's tests: certificates made at test time with openssl, the
# server started and stopped, test control, kubeconfigs.  Source after
# topology.sh (it uses fail, E2E_TMP and $top_srcdir).
#
#   kapi_need                  skip unless python3 and openssl exist
#   kapi_certs DIR [IP...]     CA, server certificate (127.0.0.1 and the IPs),
#                              client certificate; tokens file with "t0ken"
#   kapi_start [NS] [ARGS...]  start the server (in namespace NS if given and
#                              not "-"), wait until it serves; KAPI_ADDR
#                              (default 127.0.0.1:6443), KAPI_CTL (:6444)
#   kapi_stop [SIG]            stop it (default TERM) and wait
#   kapi_ctl PATH [JSON]       POST JSON (GET without) to the control port
#   kapi_apply FILE|-          create or update the objects of a file (or stdin)
#   kapi_apply_objects JSON... create or update these objects (a List of them)
#   kapi_delete KIND NS NAME
#   kapi_fault NAME [COUNT]
#   kapi_stats                 the control port's /stats JSON
#   kapi_kubeconfig FILE MODE  write a kubeconfig: MODE token | cert | data |
#                              badtoken | tokenfile

KAPI_ADDR=${KAPI_ADDR:-127.0.0.1:6443}
KAPI_CTL=${KAPI_CTL:-127.0.0.1:6444}
KAPI_DIR=
KAPI_NS=
KAPI_PID=
KAPI_PY=${KAPI_PY:-$top_srcdir/tests/kubeapi/kubeapi.py}

kapi_need() {
	command -v python3 >/dev/null || e2e_skip "needs python3"
	command -v openssl >/dev/null || e2e_skip "needs openssl"
	command -v curl >/dev/null || e2e_skip "needs curl"
}

kapi_certs() {
	local d=$1 san="IP:127.0.0.1" ip
	shift
	for ip in "$@"; do san="$san,IP:$ip"; done
	mkdir -p "$d" || fail "mkdir $d"
	KAPI_DIR=$d
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
			-subj "/CN=svcnat-test-ca" 2>/dev/null || exit 1
		openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
			-subj "/CN=kube-apiserver" 2>/dev/null || exit 1
		printf 'subjectAltName=%s\n' "$san" >server.ext
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out server.crt -days 2 -extfile server.ext 2>/dev/null || exit 1
		openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr \
			-subj "/CN=system:kube-proxy" 2>/dev/null || exit 1
		openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out client.crt -days 2 2>/dev/null || exit 1
		echo t0ken >tokens
		echo t0ken >token
	) || fail "openssl: cannot make the test certificates"
}

kapi_start() {
	local ns=${1:--} deadline
	[ $# -gt 0 ] && shift
	KAPI_NS=$ns
	rm -f "$KAPI_DIR/pid"
	if [ "$ns" = - ]; then
		python3 "$KAPI_PY" --listen "$KAPI_ADDR" --ctl "$KAPI_CTL" \
			--cert "$KAPI_DIR/server.crt" --key "$KAPI_DIR/server.key" \
			--client-ca "$KAPI_DIR/ca.crt" --tokens "$KAPI_DIR/tokens" \
			--state "$KAPI_DIR/state.json" --pidfile "$KAPI_DIR/pid" "$@" \
			>>"$KAPI_DIR/server.log" 2>&1 &
	else
		ip netns exec "$(ns_name "$ns")" python3 "$KAPI_PY" --listen "$KAPI_ADDR" \
			--ctl "$KAPI_CTL" --cert "$KAPI_DIR/server.crt" --key "$KAPI_DIR/server.key" \
			--client-ca "$KAPI_DIR/ca.crt" --tokens "$KAPI_DIR/tokens" \
			--state "$KAPI_DIR/state.json" --pidfile "$KAPI_DIR/pid" "$@" \
			>>"$KAPI_DIR/server.log" 2>&1 &
	fi
	KAPI_PID=$!
	deadline=$((SECONDS + 60))
	until [ -s "$KAPI_DIR/pid" ] && kapi_stats >/dev/null 2>&1; do
		kill -0 "$KAPI_PID" 2>/dev/null || { cat "$KAPI_DIR/server.log" >&2; fail "kubeapi.py exited"; }
		[ $SECONDS -lt $deadline ] || fail "kubeapi.py did not start within 60 s"
		sleep 0.1
	done
}

kapi_stop() {
	local sig=${1:-TERM}
	[ -n "$KAPI_PID" ] || return 0
	kill "-$sig" "$KAPI_PID" 2>/dev/null
	wait "$KAPI_PID" 2>/dev/null
	KAPI_PID=
}

_kapi_curl() {
	if [ "$KAPI_NS" = - ] || [ -z "$KAPI_NS" ]; then
		curl -sS --max-time 10 "$@"
	else
		ip netns exec "$(ns_name "$KAPI_NS")" curl -sS --max-time 10 "$@"
	fi
}

kapi_ctl() {
	if [ $# -gt 1 ]; then
		_kapi_curl -f -X POST --data-binary "$2" "http://$KAPI_CTL$1"
	else
		_kapi_curl -f "http://$KAPI_CTL$1"
	fi
}

kapi_apply() {
	_kapi_curl -f -X POST --data-binary "@$1" "http://$KAPI_CTL/apply" >/dev/null ||
		fail "kubeapi: apply $1 refused"
}

kapi_apply_objects() {
	k8s_list "$@" >"$E2E_TMP/apply.json"
	kapi_apply "$E2E_TMP/apply.json"
}

kapi_delete() {
	kapi_ctl /delete "{\"kind\": \"$1\", \"namespace\": \"$2\", \"name\": \"$3\"}" >/dev/null ||
		fail "kubeapi: delete $*"
}

kapi_fault() {
	kapi_ctl /fault "{\"name\": \"$1\", \"count\": ${2:-1}}" >/dev/null || fail "kubeapi: fault $1"
}

kapi_stats() {
	kapi_ctl /stats
}

# kapi_stat EXPR: one value of /stats, by a Python expression over `s`.
kapi_stat() {
	kapi_stats | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

kapi_kubeconfig() {
	local f=$1 mode=$2 user
	case $mode in
	token) user="token: t0ken" ;;
	badtoken) user="token: wrong" ;;
	tokenfile) user="tokenFile: token" ;;
	cert) user="client-certificate: client.crt
    client-key: client.key" ;;
	data) user="client-certificate-data: $(base64 -w0 <"$KAPI_DIR/client.crt")
    client-key-data: $(base64 -w0 <"$KAPI_DIR/client.key")" ;;
	*) fail "kapi_kubeconfig: mode $mode" ;;
	esac
	if [ "$mode" = data ]; then
		ca="certificate-authority-data: $(base64 -w0 <"$KAPI_DIR/ca.crt")"
	else
		ca="certificate-authority: ca.crt"
	fi
	cat >"$f" <<EOF
apiVersion: v1
kind: Config
current-context: test
contexts:
- name: test
  context:
    cluster: test
    user: test
clusters:
- name: test
  cluster:
    server: https://$KAPI_ADDR
    $ca
users:
- name: test
  user:
    $user
EOF
}
