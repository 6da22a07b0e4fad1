#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The etcd source against a real three-member etcd cluster, through the
# test driver tests/e2e/etcd-follow (the source + merge engine on the loop,
# printing every merged state).  No netfilter: this is the source's
# protocol behaviour.
#   - initial read (also of `svcnat etcd-load` output) -> SET
#   - --dry-run and --once read the store once; a store that cannot be
#     read (down, an HTTP 404) is exit 1 and leaves the rules
#   - watch: PUT -> ADD, DELETE -> REMOVE, in order, exactly once
#   - the member in use is killed: fail over, resume from the last revision
#   - the whole cluster stopped: state kept; restarted with changes made
#     meanwhile: caught up by the watch (no re-read)
#   - compaction past the revision while the node is cut off: re-read
#   - 10,000 services (+10,000 slices): initial sync time
set -u
: "${E2E_DEBUG:=}"
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/etcd.sh"

e2e_init etcd-source
etcd_need
FOLLOW=${ETCD_FOLLOW:-$top_builddir/tests/e2e/etcd-follow}
[ -x "$FOLLOW" ] || fail "'$FOLLOW' not built (make check builds it)"
e2e_need_svcnat

# wait_for LOG REGEX [TIMEOUT]: bounded wait for a line matching REGEX.
wait_for() {
	local log=$1 re=$2 t=${3:-20} deadline
	deadline=$((SECONDS + t))
	while [ $SECONDS -lt $deadline ]; do
		grep -Eq -- "$re" "$log" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "--- $log ---" >&2
	tail -n 30 "$log" >&2
	fail "no line matching '$re' in $log within ${t}s"
}

elapsed_ms() {
	echo "$1 $2" | tr , . | awk '{ printf "%d", ($2 - $1) * 1000 }'
}

last_state() {
	grep '^STATE' "$1" | tail -n 1
}

# expect_state LOG WORD...: the latest state holds every WORD ("!WORD": not).
expect_state() {
	local log=$1 w s
	shift
	s=" $(last_state "$log") "
	for w in "$@"; do
		case $w in
		!*) case $s in *" ${w#!}"[:\ ]*) fail "state still has ${w#!}: $s" ;; esac ;;
		*) case $s in *" $w "*) ;; *) fail "state lacks $w: $s" ;; esac ;;
		esac
	done
}

svc() { # ns name ip port
	printf '{"apiVersion":"v1","kind":"Service","metadata":{"name":"%s","namespace":"%s"},"spec":{"type":"ClusterIP","clusterIP":"%s","ports":[{"port":%s,"protocol":"TCP","targetPort":8080}]}}' "$2" "$1" "$3" "$4"
}
slice() { # ns name service ip...
	local ns=$1 name=$2 s=$3 eps= ip
	shift 3
	for ip in "$@"; do
		eps="${eps:+$eps,}{\"addresses\":[\"$ip\"],\"conditions\":{\"ready\":true}}"
	done
	printf '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"%s","namespace":"%s","labels":{"kubernetes.io/service-name":"%s"}},"addressType":"IPv4","endpoints":[%s],"ports":[{"name":"","port":8080,"protocol":"TCP"}]}' "$name" "$ns" "$s" "$eps"
}

status_of() { # pid log -> the STATUS line
	local n
	n=$(grep -c '^STATUS' "$2")
	kill -USR1 "$1"
	wait_for "$2" "^STATUS" 5
	for _ in $(seq 1 100); do
		[ "$(grep -c '^STATUS' "$2")" -gt "$n" ] && break
		sleep 0.05
	done
	grep '^STATUS' "$2" | tail -n 1
}

etcd_topo_up
etcd_attach n1 "$ETCD_NET.11"
etcd_attach n2 "$ETCD_NET.12"
etcd_cluster_start
say "etcd up: $ETCD_ENDPOINTS"

# --- initial content: etcd-load of the shipped examples + hand-written keys
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" \
	"$top_srcdir/contrib/examples/cluster.json" "$top_srcdir/contrib/examples/original.json" \
	>"$E2E_TMP/load.out" 2>&1 || fail "etcd-load: $(cat "$E2E_TMP/load.out")"
grep -q "cluster.json: [1-9][0-9]* objects written" "$E2E_TMP/load.out" || fail "etcd-load: $(cat "$E2E_TMP/load.out")"
ectl get /registry/services/specs/nodejs --print-value-only | grep -q '"Port":10000' ||
	fail "etcd-load did not write the original layout's spec key"
# etcd-load walks a file as the file source decodes it: a typed List
# ("ServiceList", items without kind) is loaded; a List over the item
# limit is refused whole, nothing written (under a prefix nobody follows).
printf '{"kind":"ServiceList","apiVersion":"v1","items":[%s]}' \
	"$(svc default typed 198.19.0.77 80 | sed 's/"kind":"Service",//')" >"$E2E_TMP/typed.json"
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" \
	--etcd-prefix /loadtest "$E2E_TMP/typed.json" >"$E2E_TMP/load-typed.out" 2>&1 ||
	fail "etcd-load of a ServiceList: $(cat "$E2E_TMP/load-typed.out")"
grep -q "typed.json: 1 objects written" "$E2E_TMP/load-typed.out" || fail "etcd-load of a ServiceList: $(cat "$E2E_TMP/load-typed.out")"
ectl get /loadtest/services/specs/default/typed --print-value-only | grep -q '198.19.0.77' ||
	fail "etcd-load did not write the ServiceList's item"
awk 'BEGIN { printf "{\"kind\":\"List\",\"items\":["; for (i = 0; i <= 200000; i++) printf "%s{\"kind\":\"Service\",\"metadata\":{\"name\":\"o%d\"}}", i ? "," : "", i; print "]}" }' >"$E2E_TMP/over.json"
rc=0
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" \
	--etcd-prefix /loadtest "$E2E_TMP/over.json" >"$E2E_TMP/load-over.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "etcd-load of 200,001 items: exit $rc, want 2: $(cat "$E2E_TMP/load-over.out")"
grep -q "over.json: items: more than 200000 entries" "$E2E_TMP/load-over.out" || fail "etcd-load of 200,001 items: $(cat "$E2E_TMP/load-over.out")"
[ "$(ectl get --prefix --keys-only /loadtest/ | grep -c .)" = 1 ] ||
	fail "etcd-load of 200,001 items wrote some: $(ectl get --prefix --keys-only /loadtest/ | head -n 3)"
say "etcd-load: a ServiceList loaded; 200,001 items refused whole (exit 2, nothing written)"
ectl_retry put /registry/services/specs/default/web "$(svc default web 198.19.0.10 80)" >/dev/null || fail put
ectl_retry put /registry/services/endpointslices/default/web-a "$(slice default web-a web 198.18.65.1 198.18.65.2)" >/dev/null || fail put
ectl_retry put /registry/pods/default/unrelated '{"kind":"Pod"}' >/dev/null || fail put

LOG=$E2E_TMP/follow.log
ip netns exec "$(ns_name n1)" "$FOLLOW" "$ETCD_ENDPOINTS" >"$LOG" 2>&1 &
FPID=$!
E2E_BG_PIDS+=($FPID)
wait_for "$LOG" '^EVENT synced'
wait_for "$LOG" '^EVENT connected .*from revision'
expect_state "$LOG" S:default/web:80 E:default/web-a:198.18.65.1,198.18.65.2 S:default/nodejs:10000 \
	S:shop/web:80 S:kube-system/kube-dns:53
say "initial read: $(grep '^EVENT synced' "$LOG" | head -n 1)"

# --- the one-shot modes read the store once: --dry-run prints, --once
# writes (direct backend, in n1); an etcd that cannot be read (nothing
# listening, or an HTTP server that is no etcd, as grpc-proxy's 404) is
# exit 1 with one line naming the member, and the rules stay.
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" --dry-run --hostname n1 \
	--etcd-endpoints "$ETCD_ENDPOINTS" >"$E2E_TMP/dry.out" 2>&1 || fail "--dry-run from etcd: $(tail -n 3 "$E2E_TMP/dry.out")"
grep -q 'comment "default/web' "$E2E_TMP/dry.out" || fail "--dry-run from etcd: no default/web in $(head -c 300 "$E2E_TMP/dry.out")"
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" --once --backend direct --hostname n1 \
	--lock-wait 30000 --etcd-endpoints "$ETCD_ENDPOINTS" >"$E2E_TMP/once.out" 2>&1 || fail "--once from etcd: $(tail -n 3 "$E2E_TMP/once.out")"
n1_nat() { ip netns exec "$(ns_name n1)" iptables-legacy-save -t nat | grep -v '^#' | sed 's/ \[[0-9]*:[0-9]*\]$//'; }
n1_nat >"$E2E_TMP/once.rules"
grep -q 'default/web' "$E2E_TMP/once.rules" || fail "--once from etcd: no rules for default/web"
rc=0
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" --once --backend direct --hostname n1 \
	--lock-wait 30000 --etcd-endpoints "http://127.0.0.1:9" >"$E2E_TMP/once-down.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "--once from an unreachable etcd: exit $rc, want 1: $(cat "$E2E_TMP/once-down.out")"
grep -q '^error: etcd: http://127.0.0.1:9: range: ' "$E2E_TMP/once-down.out" ||
	fail "--once from an unreachable etcd: $(cat "$E2E_TMP/once-down.out")"
n1_nat | diff "$E2E_TMP/once.rules" - >&2 ||
	fail "--once from an unreachable etcd changed the rules"
ip netns exec "$(ns_name n1)" python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        b = b"404 page not found\n"
        self.send_response(404); self.send_header("Content-Length", str(len(b))); self.end_headers()
        self.wfile.write(b)
    do_GET = do_POST = answer
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.handle_request(); s.handle_request(); s.handle_request()
' >"$E2E_TMP/notetcd.port" &
E2E_BG_PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$E2E_TMP/notetcd.port" ] && break; sleep 0.1; done
[ -s "$E2E_TMP/notetcd.port" ] || fail "the HTTP 404 server did not start"
url="http://127.0.0.1:$(cat "$E2E_TMP/notetcd.port")"
rc=0
ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" --once --backend direct --hostname n1 \
	--lock-wait 30000 --etcd-endpoints "$url" >"$E2E_TMP/once-404.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "--once from an HTTP 404 server: exit $rc, want 1: $(cat "$E2E_TMP/once-404.out")"
grep -q "^error: etcd: $url: range: HTTP 404" "$E2E_TMP/once-404.out" ||
	fail "--once from an HTTP 404 server: $(cat "$E2E_TMP/once-404.out")"
n1_nat | diff "$E2E_TMP/once.rules" - >&2 ||
	fail "--once from an HTTP 404 server changed the rules"
say "--dry-run/--once read etcd once; an unreachable or non-etcd server: exit 1, rules kept"

# --- watch: add, change, delete
t0=$EPOCHREALTIME
ectl_retry put /registry/services/specs/default/api "$(svc default api 198.19.0.20 443)" >/dev/null || fail put
wait_for "$LOG" 'S:default/api:443'
t1=$EPOCHREALTIME
say "etcd put -> merged state: $(elapsed_ms "$t0" "$t1") ms (incl. etcdctl)"
ectl_retry put /registry/services/endpointslices/default/web-a "$(slice default web-a web 198.18.65.2)" >/dev/null || fail put
wait_for "$LOG" 'E:default/web-a:198.18.65.2( |$)'
ectl_retry del /registry/services/specs/default/api >/dev/null || fail del
wait_for "$LOG" '^STATE .*S:default/web:80' 5
for _ in $(seq 1 100); do
	case "$(last_state "$LOG")" in *S:default/api:*) sleep 0.05 ;; *) break ;; esac
done
expect_state "$LOG" '!S:default/api' S:default/web:80

# --- a value that does not decode: diag, the key's item goes
ectl_retry put /registry/services/specs/default/web '{"kind":"Service","metadata":{"name":"web"},"spec":{"ports":[{"port":70000}]}}' >/dev/null
wait_for "$LOG" '^EVENT diag .*etcd:/registry/services/specs/default/web.*70000'
ectl_retry put /registry/services/specs/default/web "$(svc default web 198.19.0.10 80)" >/dev/null
wait_for "$LOG" '^STATE .*S:default/web:80'
grep -q 'unrelated' "$LOG" && fail "a key outside the layout reached the source's output"

# --- kill the member in use (m1: the first endpoint)
etcd_member_kill 1
ECTL_ENDPOINTS="http://$ETCD_NET.2:2379,http://$ETCD_NET.3:2379" ectl_retry put /registry/services/specs/default/after-kill "$(svc default after-kill 198.19.0.30 81)" >/dev/null || fail "put after kill"
wait_for "$LOG" 'S:default/after-kill:81' 30
wait_for "$LOG" '^EVENT connected watching http://198.18.250.[23]:2379' 5
st=$(status_of "$FPID" "$LOG")
case $st in *full_reads=1\ *) ;; *) fail "failover re-read everything instead of resuming: $st" ;; esac
say "member m1 killed: failed over, resumed ($st)"
etcd_member_start 1
etcd_wait_healthy 1

# --- stop the whole cluster: state kept
before=$(last_state "$LOG")
etcd_cluster_stop
wait_for "$LOG" '^EVENT disconnected' 30
sleep 3
[ "$(last_state "$LOG")" = "$before" ] || fail "state changed while etcd was down"
st=$(status_of "$FPID" "$LOG")
case $st in *connected=0*) ;; *) fail "status says connected while etcd is down: $st" ;; esac
say "etcd down: state kept, status: $st"
# restart, change at once (before the source's next retry): it catches up
for i in 1 2 3; do etcd_member_start "$i"; done
etcd_wait_healthy
ectl_retry put /registry/services/specs/default/during-outage "$(svc default during-outage 198.19.0.31 82)" >/dev/null || fail put
ectl_retry del /registry/services/specs/default/after-kill >/dev/null || fail del
wait_for "$LOG" 'S:default/during-outage:82' 30
for _ in $(seq 1 100); do
	case "$(last_state "$LOG")" in *S:default/after-kill:*) sleep 0.05 ;; *) break ;; esac
done
expect_state "$LOG" '!S:default/after-kill' S:default/during-outage:82 S:default/web:80
st=$(status_of "$FPID" "$LOG")
case $st in *full_reads=1\ *) ;; *) fail "restart re-read everything instead of resuming: $st" ;; esac
say "etcd restarted: caught up from the last revision ($st)"

# --- the member in use loses the quorum (the two others die): it has no
# leader, so it ends the watch (require-leader) instead of going stale
cur=$(echo "$st" | sed -n 's/.* endpoint=http:\/\/198\.18\.250\.\([0-9]\):2379 .*/\1/p')
[ -n "$cur" ] || fail "no current member in: $st"
re="^EVENT disconnected http://$ETCD_NET.$cur:2379: watch"
seen=$(grep -c "$re" "$LOG")
for i in 1 2 3; do [ "$i" = "$cur" ] || etcd_member_kill "$i"; done
for _ in $(seq 1 600); do
	[ "$(grep -c "$re" "$LOG")" -gt "$seen" ] && break
	sleep 0.05
done
[ "$(grep -c "$re" "$LOG")" -gt "$seen" ] || fail "m$cur kept the watch open without a quorum: $(tail -n 3 "$LOG")"
say "member m$cur lost the quorum: $(grep "$re" "$LOG" | tail -n 1 | cut -c1-150)"
for i in 1 2 3; do [ "$i" = "$cur" ] || etcd_member_start "$i"; done
etcd_wait_healthy
ectl_retry put /registry/services/specs/default/after-quorum "$(svc default after-quorum 198.19.0.33 84)" >/dev/null || fail put
wait_for "$LOG" 'S:default/after-quorum:84' 30

# --- compaction while the node is cut off -> re-read
ip -n "$(ns_name n1)" link set eth0 down
ip netns exec "$(ns_name n1)" ss -K dst "$ETCD_NET.0/24" >/dev/null 2>&1
wait_for "$LOG" '^EVENT (disconnected|retry)' 30
ectl_retry put /registry/services/specs/default/while-cut "$(svc default while-cut 198.19.0.32 83)" >/dev/null || fail put
ectl_retry del /registry/services/specs/default/during-outage >/dev/null || fail del
rev=$(etcd_revision)
ectl compact "$rev" --physical >/dev/null || fail "compact $rev"
say "compacted at revision $rev while n1 is cut off"
ip -n "$(ns_name n1)" link set eth0 up
wait_for "$LOG" '^EVENT compacted' 30
wait_for "$LOG" 'S:default/while-cut:83' 30
expect_state "$LOG" '!S:default/during-outage' S:default/web:80
st=$(status_of "$FPID" "$LOG")
case $st in *full_reads=2\ *) ;; *) fail "no re-read after compaction: $st" ;; esac
say "after compaction: $(grep '^EVENT compacted' "$LOG" | tail -n 1)"

# --- compaction exactly one revision past the node's: the watch resumes at
# the node's revision + 1, which is kept, so no re-read.  (Resuming at the
# node's own revision would be refused as compacted and re-read: this is
# the case that tells the two apart.)
st=$(status_of "$FPID" "$LOG")
node_rev=$(echo "$st" | sed -n 's/.* revision=\([0-9]*\).*/\1/p')
[ "$node_rev" = "$(etcd_revision)" ] || fail "n1 not up to date before the cut: $st, etcd at $(etcd_revision)"
reads0=$(echo "$st" | sed -n 's/.*full_reads=\([0-9]*\).*/\1/p')
ncomp=$(grep -c '^EVENT compacted' "$LOG")
ndisc=$(grep -Ec '^EVENT (disconnected|retry)' "$LOG")
ip -n "$(ns_name n1)" link set eth0 down
ip netns exec "$(ns_name n1)" ss -K dst "$ETCD_NET.0/24" >/dev/null 2>&1
for _ in $(seq 1 600); do
	[ "$(grep -Ec '^EVENT (disconnected|retry)' "$LOG")" -gt "$ndisc" ] && break
	sleep 0.05
done
[ "$(grep -Ec '^EVENT (disconnected|retry)' "$LOG")" -gt "$ndisc" ] || fail "n1 did not notice the cut: $(tail -n 3 "$LOG")"
ectl_retry put /registry/services/specs/default/one-past "$(svc default one-past 198.19.0.34 85)" >/dev/null || fail put
rev=$(etcd_revision)
[ "$rev" = $((node_rev + 1)) ] || fail "expected one write past n1's revision $node_rev, etcd is at $rev"
ectl compact "$rev" --physical >/dev/null || fail "compact $rev"
ip -n "$(ns_name n1)" link set eth0 up
wait_for "$LOG" 'S:default/one-past:85' 30
[ "$(grep -c '^EVENT compacted' "$LOG")" = "$ncomp" ] ||
	fail "compaction at $rev, one past n1's revision $node_rev, made n1 re-read (the watch must resume at $rev): $(grep '^EVENT compacted' "$LOG" | tail -n 1)"
st=$(status_of "$FPID" "$LOG")
case $st in *full_reads=$reads0\ *) ;; *) fail "re-read after compaction one past the node ($reads0 before): $st" ;; esac
say "compacted at $rev, one past n1's $node_rev: the watch resumed at $rev, no re-read"
base_svcs=$(last_state "$LOG" | sed -n 's/.* services=\([0-9]*\) .*/\1/p')
base_slices=$(last_state "$LOG" | sed -n 's/.* slices=\([0-9]*\).*/\1/p')
kill "$FPID"
wait "$FPID" 2>/dev/null

# --- TLS (--etcd-cacert/--etcd-cert/--etcd-key) and --etcd-prefix: a
# one-member cluster on 198.18.250.4 that requires client certificates
if command -v openssl >/dev/null; then
	pki=$E2E_TMP/pki
	mkdir -p "$pki"
	(
		cd "$pki" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=svcnat-test-ca \
			-keyout ca.key -out ca.pem
		openssl req -newkey rsa:2048 -nodes -subj /CN=etcd-t1 -keyout server.key -out server.csr
		printf 'subjectAltName=IP:%s.4\n' "$ETCD_NET" >server.ext
		openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-extfile server.ext -out server.pem
		openssl req -newkey rsa:2048 -nodes -subj /CN=svcnat -keyout client.key -out client.csr
		openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
			-out client.pem
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other-ca \
			-keyout other.key -out other.pem
	) >"$E2E_TMP/openssl.log" 2>&1 || fail "openssl: $(tail -n 5 "$E2E_TMP/openssl.log")"
	ip -n "$(ns_name etcd)" addr add "$ETCD_NET.4/24" dev br0 || fail "address for t1"
	tls_url="https://$ETCD_NET.4:2379"
	ip netns exec "$(ns_name etcd)" etcd --name t1 --data-dir "$ETCD_DIR/t1" \
		--listen-client-urls "$tls_url" --advertise-client-urls "$tls_url" \
		--listen-peer-urls "http://$ETCD_NET.4:2380" \
		--initial-advertise-peer-urls "http://$ETCD_NET.4:2380" \
		--initial-cluster "t1=http://$ETCD_NET.4:2380" \
		--cert-file "$pki/server.pem" --key-file "$pki/server.key" \
		--trusted-ca-file "$pki/ca.pem" --client-cert-auth \
		</dev/null >"$ETCD_DIR/t1.log" 2>&1 &
	E2E_BG_PIDS+=($!)
	tls_ectl() {
		ECTL_ENDPOINTS=$tls_url ectl --cacert "$pki/ca.pem" --cert "$pki/client.pem" \
			--key "$pki/client.key" "$@"
	}
	# follow_tls LOG CACERT CERT KEY: etcd-follow on the TLS member, as FPID.
	follow_tls() {
		ip netns exec "$(ns_name n1)" "$FOLLOW" "$tls_url" /custom "$2" "$3" "$4" >"$1" 2>&1 &
		FPID=$!
		E2E_BG_PIDS+=($FPID)
	}
	for _ in $(seq 1 100); do
		tls_ectl endpoint health >/dev/null 2>&1 && break
		sleep 0.2
	done
	tls_ectl put /custom/services/specs/default/tls "$(svc default tls 198.19.0.40 8443)" >/dev/null ||
		fail "put over TLS: $(tail -n 5 "$ETCD_DIR/t1.log")"
	ip netns exec "$(ns_name n1)" timeout 60 "$SVCNAT" etcd-load --etcd-endpoints "$tls_url" \
		--etcd-prefix /custom/ --etcd-cacert "$pki/ca.pem" --etcd-cert "$pki/client.pem" \
		--etcd-key "$pki/client.key" "$top_srcdir/contrib/examples/original.json" \
		>"$E2E_TMP/load-tls.out" 2>&1 || fail "etcd-load over TLS: $(cat "$E2E_TMP/load-tls.out")"
	LOGT=$E2E_TMP/follow-tls.log
	follow_tls "$LOGT" "$pki/ca.pem" "$pki/client.pem" "$pki/client.key"
	wait_for "$LOGT" '^STATE .*S:default/tls:8443' 20
	expect_state "$LOGT" S:default/tls:8443 S:default/nodejs:10000 '!S:default/web'
	tls_ectl del /custom/services/specs/default/tls >/dev/null || fail "del over TLS"
	wait_for "$LOGT" '^STATE rev=[0-9]+ services=3 ' 20
	kill "$FPID"
	wait "$FPID" 2>/dev/null
	# no client certificate, or a CA that did not sign the member: refused
	for args in "$pki/ca.pem||" "$pki/other.pem|$pki/client.pem|$pki/client.key"; do
		LOGB=$E2E_TMP/follow-tls-bad.log
		IFS='|' read -r ca cert key <<<"$args"
		follow_tls "$LOGB" "$ca" "$cert" "$key"
		wait_for "$LOGB" '^EVENT disconnected' 20
		sleep 0.5
		grep -q '^STATE\|^EVENT synced' "$LOGB" && fail "TLS without valid credentials was accepted: $(cat "$LOGB")"
		kill "$FPID"
		wait "$FPID" 2>/dev/null
		say "TLS refused as it should: $(grep -m1 '^EVENT disconnected' "$LOGB" | cut -c1-160)"
	done
	# Rotation: svcnat reads the files itself and again before a new
	# connection when they changed.  A client certificate of the wrong CA
	# is refused; the right pair renamed into place is used at the next
	# attempt, without a restart.  Then the key swapped for a FIFO: the
	# next connection (SIGHUP: a resync) keeps the pair read before and
	# says so, and the loop still answers (SIGUSR1).
	(
		cd "$pki" || exit 1
		openssl req -newkey rsa:2048 -nodes -subj /CN=svcnat-other -keyout wrong.key -out wrong.csr
		openssl x509 -req -in wrong.csr -CA other.pem -CAkey other.key -CAcreateserial -days 2 \
			-out wrong.pem
	) >>"$E2E_TMP/openssl.log" 2>&1 || fail "openssl: $(tail -n 5 "$E2E_TMP/openssl.log")"
	rot=$E2E_TMP/rot
	mkdir -p "$rot"
	chmod 0700 "$rot"
	cp "$pki/ca.pem" "$rot/ca.pem"
	cp "$pki/wrong.pem" "$rot/client.pem"
	cp "$pki/wrong.key" "$rot/client.key"
	LOGR=$E2E_TMP/follow-rotate.log
	follow_tls "$LOGR" "$rot/ca.pem" "$rot/client.pem" "$rot/client.key"
	wait_for "$LOGR" '^EVENT disconnected' 20
	grep -q '^EVENT synced' "$LOGR" && fail "a certificate of the wrong CA was accepted: $(cat "$LOGR")"
	cp "$pki/client.key" "$rot/client.key.new"
	cp "$pki/client.pem" "$rot/client.pem.new"
	mv "$rot/client.key.new" "$rot/client.key"
	mv "$rot/client.pem.new" "$rot/client.pem"
	wait_for "$LOGR" '^EVENT synced' 30
	wait_for "$LOGR" '^STATE .*S:default/nodejs:10000' 20
	say "rotation: the renamed certificate was used at the next attempt ($(grep -c '^EVENT \(disconnected\|retry\)' "$LOGR") refused before)"
	rm "$rot/client.key"
	mkfifo -m 0600 "$rot/client.key"
	kill -HUP "$FPID"
	wait_for "$LOGR" '^EVENT diag --etcd-key: .*client.key: not a regular file \(a FIFO\) \(keeping what was read before\)' 20
	for _ in $(seq 1 100); do
		[ "$(grep -c '^EVENT synced' "$LOGR")" -ge 2 ] && break
		sleep 0.1
	done
	[ "$(grep -c '^EVENT synced' "$LOGR")" -ge 2 ] ||
		fail "no full read after the key became a FIFO: $(tail -n 5 "$LOGR")"
	for _ in $(seq 1 20); do
		status_of "$FPID" "$LOGR" | grep -q 'connected=1' && break
		sleep 0.2
	done
	grep '^STATUS' "$LOGR" | tail -n 1 | grep -q 'connected=1' ||
		fail "the source is not connected with the key read before: $(grep '^STATUS' "$LOGR" | tail -n 1)"
	kill "$FPID"
	wait "$FPID" 2>/dev/null
	say "rotation: a key swapped for a FIFO was refused, the pair read before kept (loop answering)"
	say "TLS with client certificates and --etcd-prefix /custom: followed, etcd-load wrote"
fi

# --- 10,000 services and their slices: initial sync of a fresh node
N=${ETCD_SCALE:-10000}
big=$E2E_TMP/big.json
awk -v n="$N" 'BEGIN {
	printf "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
	for (i = 0; i < n; i++) {
		ip = sprintf("198.19.%d.%d", int(i / 250) + 1, i % 250 + 1);
		ep = sprintf("198.18.%d.%d", 65 + int(i / 250) % 2, i % 250 + 1);
		printf "%s{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"s%d\",\"namespace\":\"scale\"},\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"%s\",\"ports\":[{\"name\":\"http\",\"port\":80,\"protocol\":\"TCP\",\"targetPort\":8080}]}}", (i ? "," : ""), i, ip;
		printf ",{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"s%d-x\",\"namespace\":\"scale\",\"labels\":{\"kubernetes.io/service-name\":\"s%d\"}},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"%s\"],\"conditions\":{\"ready\":true}}],\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"}]}", i, i, ep;
	}
	printf "]}\n";
}' >"$big"
t0=$EPOCHREALTIME
ip netns exec "$(ns_name n2)" timeout 300 "$SVCNAT" etcd-load --etcd-endpoints "$ETCD_ENDPOINTS" "$big" \
	>"$E2E_TMP/load-big.out" 2>&1 || fail "etcd-load of $N services: $(tail -n 5 "$E2E_TMP/load-big.out")"
t1=$EPOCHREALTIME
say "etcd-load: $(cat "$E2E_TMP/load-big.out") in $(elapsed_ms "$t0" "$t1") ms"
LOG2=$E2E_TMP/follow2.log
t0=$EPOCHREALTIME
ip netns exec "$(ns_name n2)" "$FOLLOW" "$ETCD_ENDPOINTS" >"$LOG2" 2>&1 &
FPID=$!
E2E_BG_PIDS+=($FPID)
wait_for "$LOG2" '^EVENT synced' 120
wait_for "$LOG2" '^STATE' 30
t1=$EPOCHREALTIME
grep -q "^STATE .* services=$((N + base_svcs)) slices=$((N + base_slices))" "$LOG2" ||
	fail "scale: unexpected state: $(grep '^STATE' "$LOG2" | head -n 1 | cut -c1-200)"
say "initial sync of $N services + $N slices: $(grep '^EVENT synced' "$LOG2") (process start to merged state: $(elapsed_ms "$t0" "$t1") ms)"
# and the watch still works at that size
ectl_retry del /registry/services/specs/scale/s0 >/dev/null || fail del
wait_for "$LOG2" "^STATE .* services=$((N + base_svcs - 1)) " 20
kill "$FPID"
wait "$FPID" 2>/dev/null
exit 0
