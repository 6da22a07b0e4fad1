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
#
# The checks read OUT with bash builtins only: they run hundreds of times
# per test on machines where every fork counts.

# start_servers PORT...: namesrv answering with the pod's name on every port
# (TCP and UDP), in every pod added with topo_add_pod.  Returns once all
# listen; each server ends by itself after E2E_SERVER_TIMEOUT seconds, and
# topo_down ends it earlier.
start_servers() {
	local pod args=() p pids=() bad=0
	for p in "$@"; do
		args+=(--port "$p")
	done
	for pod in "${TOPO_PODS[@]}"; do
		ip netns exec "$TOPO_PREFIX-$pod" "$NAMESRV" serve --daemon --name "$pod" "${args[@]}" \
			--timeout "$E2E_SERVER_TIMEOUT" </dev/null >>"$E2E_TMP/server.$pod.log" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || bad=1
	done
	[ $bad = 0 ] || fail "a name server did not start: $(cat "$E2E_TMP"/server.*.log)"
}

# _read OUT: the lines of OUT into _lines
_read() {
	_lines=()
	mapfile -t _lines <"$1"
}

probe() {
	local out=$1 ns=$2 ip=$3 port=$4 n=$5
	shift 5
	# --max-fail: a broken path fails after a few attempts, not N
	in_ns "$ns" "$NAMESRV" client --addr "$ip" --port "$port" --count "$n" --max-fail 5 "$@" >"$out" ||
		fail "client in $ns to $ip:$port failed: $(cat "$out")"
	_read "$out"
	[ "${#_lines[@]}" = "$n" ] ||
		fail "client in $ns to $ip:$port: $n attempts expected, got ${#_lines[@]}: $(summary "$out")"
}

summary() {
	local l k name out=
	local -A c=()
	_read "$1"
	for l in "${_lines[@]}"; do
		read -r k name _ <<<"$l"
		[ "$k" = ok ] && k=$name
		c[$k]=$((${c[$k]:-0} + 1))
	done
	for k in "${!c[@]}"; do
		out+="$k=${c[$k]} "
	done
	echo "$out"
}

# _all_ok OUT WHAT: every attempt answered
_all_ok() {
	local l
	_read "$1"
	for l in "${_lines[@]}"; do
		[ "${l%% *}" = ok ] || fail "$2: not every attempt was answered: $(summary "$1")"
	done
}

_in_list() {
	local x=$1 y
	shift
	for y in "$@"; do
		[ "$x" = "$y" ] && return 0
	done
	return 1
}

expect_only() {
	local out=$1 l name
	shift
	_all_ok "$out" "expect_only $*"
	for l in "${_lines[@]}"; do
		read -r _ name _ <<<"$l"
		_in_list "$name" "$@" || fail "answer from '$name', expected only from: $* ($(summary "$out"))"
	done
}

expect_spread() {
	local out=$1 pct=$2 l name total min
	local -A c=()
	shift 2
	expect_only "$out" "$@"
	for l in "${_lines[@]}"; do
		read -r _ name _ <<<"$l"
		c[$name]=$((${c[$name]:-0} + 1))
	done
	total=${#_lines[@]}
	min=$(( (total * pct + 99) / 100 ))
	for name in "$@"; do
		[ "${c[$name]:-0}" -ge "$min" ] ||
			fail "backend '$name' served ${c[$name]:-0} of $total, expected >= $min ($(summary "$out"))"
	done
}

expect_outcome() {
	local out=$1 word=$2 l
	_read "$out"
	for l in "${_lines[@]}"; do
		[ "$l" = "$word" ] || fail "expected every attempt to end with '$word', got: $(summary "$out")"
	done
}

expect_peer() {
	local out=$1 ip=$2 l peer
	_all_ok "$out" "expect_peer $ip"
	for l in "${_lines[@]}"; do
		read -r _ _ peer <<<"$l"
		[ "$peer" = "$ip" ] || fail "a backend saw source address $peer, expected $ip only"
	done
}

expect_single() {
	local out=$1 l name first=
	_all_ok "$out" "expect_single"
	for l in "${_lines[@]}"; do
		read -r _ name _ <<<"$l"
		: "${first:=$name}"
		[ "$name" = "$first" ] || fail "expected one backend for all attempts, got: $(summary "$out")"
	done
	echo "$first"
}

# expect_no_answer OUT: no attempt reached a server (any failure will do).
expect_no_answer() {
	local out=$1 l
	_read "$out"
	for l in "${_lines[@]}"; do
		[ "${l%% *}" = ok ] && fail "expected no answer, got: $(summary "$out")"
	done
	return 0
}
