# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Name servers and clients for the real-traffic tests (sourced through
# topology.sh).  The servers are tests/e2e/namesrv: every pod answers each
# TCP line / UDP datagram with "NAME PEER-IP", so a client learns which
# backend served it and which source address the backend saw.
#
#   start_servers PORT...           namesrv (TCP+UDP on every PORT) in every pod
#   probe OUT NS IP PORT N [OPT...] N bounded attempts from namespace NS into
#                                   file OUT, one line each: "ok NAME PEER",
#                                   "refused", "timeout", "unreach", ...
#                                   (OPT: --udp, --timeout-ms MS); gives up
#                                   after 5 failed attempts
#   summary OUT                     "name=count ..." for messages
#   expect_spread OUT PCT NAME...   all ok, only NAMEs, each >= PCT% of them
#   expect_only OUT NAME...         all ok, every answer from one of NAMEs
#   expect_outcome OUT WORD         every attempt ended with WORD (refused...)
#   expect_peer OUT IP              every backend saw source address IP
#   expect_single OUT               all ok, all from one backend (prints it)
#   expect_no_answer OUT            no attempt reached any server

# start_servers PORT...: namesrv answering with the pod's name on every port
# (TCP and UDP), in every pod added with topo_add_pod.  Waits until all listen.
start_servers() {
	local pod args=() p i
	for p in "$@"; do
		args+=(--port "$p")
	done
	for pod in "${TOPO_PODS[@]}"; do
		rm -f "$E2E_TMP/ready.$pod"
		ip netns exec "$(ns_name "$pod")" timeout --kill-after=5 $((E2E_SERVER_TIMEOUT + 5)) \
			"$NAMESRV" serve --name "$pod" "${args[@]}" --timeout "$E2E_SERVER_TIMEOUT" \
			--ready "$E2E_TMP/ready.$pod" </dev/null >"$E2E_TMP/server.$pod.log" 2>&1 &
		E2E_BG_PIDS+=($!)
	done
	for pod in "${TOPO_PODS[@]}"; do
		for i in $(seq 1 250); do
			[ -e "$E2E_TMP/ready.$pod" ] && break
			sleep 0.02
		done
		[ -e "$E2E_TMP/ready.$pod" ] || fail "name server in pod $pod did not start: $(cat "$E2E_TMP/server.$pod.log")"
	done
}

probe() {
	local out=$1 ns=$2 ip=$3 port=$4 n=$5
	shift 5
	# --max-fail: a broken path fails after a few 1s attempts, not 300
	in_ns "$ns" "$NAMESRV" client --addr "$ip" --port "$port" --count "$n" --max-fail 5 "$@" >"$out" ||
		fail "client in $ns to $ip:$port failed: $(cat "$out")"
	[ "$(wc -l <"$out")" = "$n" ] || fail "client in $ns to $ip:$port: expected $n lines, got: $(cat "$out")"
}

summary() {
	awk '{ k = ($1 == "ok") ? $2 : $1; c[k]++ } END { for (k in c) printf "%s=%d ", k, c[k] }' "$1" |
		tr ' ' '\n' | sort | tr '\n' ' '
}

_all_ok() {
	local out=$1 what=$2
	if grep -qv '^ok ' "$out"; then
		fail "$what: not every attempt was answered: $(summary "$out")"
	fi
}

_in_list() {
	local x=$1
	shift
	local y
	for y in "$@"; do
		[ "$x" = "$y" ] && return 0
	done
	return 1
}

expect_only() {
	local out=$1 name
	shift
	_all_ok "$out" "expect_only $*"
	for name in $(awk '{print $2}' "$out" | sort -u); do
		_in_list "$name" "$@" || fail "answer from '$name', expected only from: $* ($(summary "$out"))"
	done
}

expect_spread() {
	local out=$1 pct=$2 name total n min
	shift 2
	expect_only "$out" "$@"
	total=$(wc -l <"$out")
	min=$(( (total * pct + 99) / 100 ))
	for name in "$@"; do
		n=$(awk -v n="$name" '$2 == n' "$out" | wc -l)
		[ "$n" -ge "$min" ] || fail "backend '$name' served $n of $total, expected >= $min ($(summary "$out"))"
	done
}

expect_outcome() {
	local out=$1 word=$2
	if grep -qv "^$word\$" "$out"; then
		fail "expected every attempt to end with '$word', got: $(summary "$out")"
	fi
}

expect_peer() {
	local out=$1 ip=$2 seen
	_all_ok "$out" "expect_peer $ip"
	seen=$(awk '{print $3}' "$out" | sort -u | tr '\n' ' ')
	[ "$seen" = "$ip " ] || fail "backends saw source address(es) '$seen', expected $ip only"
}

expect_single() {
	local out=$1 names
	_all_ok "$out" "expect_single"
	names=$(awk '{print $2}' "$out" | sort -u)
	[ "$(echo "$names" | wc -l)" = 1 ] || fail "expected one backend for all attempts, got: $(summary "$out")"
	echo "$names"
}

# expect_no_answer OUT: no attempt reached a server (any failure will do).
expect_no_answer() {
	local out=$1
	if grep -q '^ok ' "$out"; then
		fail "expected no answer, got: $(summary "$out")"
	fi
}
