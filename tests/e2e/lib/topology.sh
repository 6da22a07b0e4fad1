# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# A throwaway network-namespace topology for svcnat's real-traffic tests
# (sourced by tests/e2e/traffic-*.sh and contrib/demo.sh; bash).  Also
# sources servers.sh (name servers, clients, checks), k8s.sh (config JSON)
# and wait.sh (wait_for).
#
#   client1 198.18.1.100 ─┐                              ┌─ pod 198.18.65.x (one ns per pod)
#   client2 198.18.1.200 ─┼─ node (node-a) 198.18.0.1 ───┼─ podclient 198.18.65.200
#                         │   svcnat runs here,          │
#                         │   ip_forward=1               └─ node-b 198.18.0.2 ── pod 198.18.66.x
#
# Every link is a point-to-point veth made directly between two of our
# namespaces (nothing is created in the caller's namespace).  The node side
# of a link carries the node's address as /32 with a /32 route to the peer,
# as Calico-style CNIs do; pods and clients route everything via their node.
# node-a's default route points to node-b, so locally generated traffic to
# cluster IPs has a route before OUTPUT's DNAT (node-b has no default route:
# undelivered packets die there with "unreachable", never loop).
#
# Namespaces are named "$TOPO_PREFIX-<name>" with TOPO_PREFIX unique per
# process and topology, so parallel runs never collide; topo_down (and the
# EXIT/INT/TERM trap set by e2e_init) kills every process inside them and
# deletes them.
#
# Functions:
#   e2e_init NAME          root check (exit 77 "SKIPPED", or failure under
#                          CI=true), tools, temp dir, traps, watchdog
#   e2e_backends           the svcnat backends to run each test with
#   e2e_for_each_backend FN   FN BACKEND on a fresh topology per backend
#   topo_up                node, node-b, client1, client2, podclient (with
#                          TOPO_IPV6=1 dual-stack: e2e_ip6 maps the addresses)
#   topo_add_pod NAME IP [NAME IP...]  pods on node-a (198.18.65.x) or
#                          node-b (198.18.66.x)
#   topo_down              kill everything inside, delete the namespaces
#   ns_name NAME           the real namespace name of a logical one
#   in_ns NAME CMD...      run CMD in namespace NAME, bounded by timeout(1)
#   svcnat_sync BACKEND CONFIG  svcnat --once, the test fails unless it succeeds
#   svcnat_run BACKEND ARGS...  svcnat in the node namespace with the
#                          node's settings (node-a, 198.18.0.1, cluster CIDR)
#   wait_for SECONDS DESC CMD...  poll CMD every 0.1 s (lib/wait.sh)
#   node_nat_save BACKEND  the node's nat table as BACKEND wrote it
#   e2e_save6 BACKEND      the ip6tables-*-save that shows what BACKEND writes
#   e2e_writes_ipv6 BACKEND  whether BACKEND writes ip6tables on this host
#                          (asked of svcnat itself); e2e_for_each_ipv6_backend
#                          FN: e2e_for_each_backend over those that do
#   e2e_first_ipv6_backend  E2E_BACKEND6: the first backend that does (or skip)

_e2e_lib=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=tests/e2e/lib/servers.sh
. "$_e2e_lib/servers.sh"
# shellcheck source=tests/e2e/lib/k8s.sh
. "$_e2e_lib/k8s.sh"
# shellcheck source=tests/e2e/lib/wait.sh
. "$_e2e_lib/wait.sh"

E2E_NODE_IP=198.18.0.1
E2E_NODEB_IP=198.18.0.2
E2E_CLIENT1_IP=198.18.1.100
E2E_CLIENT2_IP=198.18.1.200
E2E_PODCLIENT_IP=198.18.65.200
E2E_CLUSTER_CIDR=198.18.64.0/18
E2E_HOSTNAME=node-a
# IPv6 (TOPO_IPV6=1 before topo_up: every link dual-stack), from 2001:2::/48
# only, nodad: 198.18.65.X -> 2001:2:0:65::X, 198.18.66.X -> 2001:2:0:66::X.
E2E_NODE_IP6=2001:2::1
E2E_NODEB_IP6=2001:2::2
E2E_CLIENT1_IP6=2001:2:1::100
E2E_CLIENT2_IP6=2001:2:1::200
E2E_PODCLIENT_IP6=2001:2:0:65::200
E2E_CLUSTER_CIDR6=2001:2:0:64::/62
TOPO_IPV6=${TOPO_IPV6:-}

E2E_CMD_TIMEOUT=${E2E_CMD_TIMEOUT:-60}
E2E_SERVER_TIMEOUT=${E2E_SERVER_TIMEOUT:-300}
E2E_SCRIPT_TIMEOUT=${E2E_SCRIPT_TIMEOUT:-600}

TOPO_N=0
TOPO_PREFIX=
TOPO_PODS=()
E2E_BG_PIDS=()
E2E_WATCHDOG=
E2E_TMP=
E2E_NAME=e2e
E2E_FAILED=0

# microseconds since the epoch, without forking (bash 5)
_e2e_us() {
	local t=${EPOCHREALTIME:-0.000000}
	echo $((10#${t//[!0-9]/}))
}
E2E_T0=$(_e2e_us)

say() {
	local t=${EPOCHREALTIME:-0.000000}
	local ms=$(( (10#${t//[!0-9]/} - E2E_T0) / 10000 ))
	printf '# [%4d.%02ds] %s\n' $((ms / 100)) $((ms % 100)) "$*"
}

# Print the node's tables and the logs we have, then exit 1 (the EXIT trap
# removes the topology).
# node_nat_save BACKEND: the node's nat table as BACKEND wrote it: where the
# restore backend used iptables-nft-restore (iptables is nft-based) or the
# nft backend wrote, iptables-nft-save's view, else iptables-legacy-save's
node_nat_save() {
	if { [ "$1" = restore ] || [ "$1" = nft ]; } && command -v iptables-nft-save >/dev/null &&
		in_ns node iptables-nft-save -t nat 2>/dev/null | grep -q KUBE-SERVICES; then
		in_ns node iptables-nft-save -t nat
	else
		in_ns node iptables-legacy-save -t nat
	fi
}

fail() {
	printf 'FAIL: %s: %s\n' "$E2E_NAME" "$*" >&2
	E2E_FAILED=1
	if [ -n "$TOPO_PREFIX" ] && ip netns list 2>/dev/null | grep -q "^$TOPO_PREFIX-node "; then
		echo "--- nat/filter tables in the node namespace (legacy) ---" >&2
		ip netns exec "$TOPO_PREFIX-node" timeout 10 iptables-legacy-save 2>&1 | \
			grep -v '^#' | head -n 200 >&2
		if command -v iptables-nft-save >/dev/null; then
			echo "--- (nft) ---" >&2
			ip netns exec "$TOPO_PREFIX-node" timeout 10 iptables-nft-save 2>&1 | \
				grep -v '^#' | head -n 200 >&2
		fi
	fi
	exit 1
}

e2e_skip() {
	if [ "${CI:-}" = true ]; then
		printf 'FAIL: %s: cannot run under CI: %s\n' "$E2E_NAME" "$*" >&2
		exit 1
	fi
	printf '\n*** SKIPPED: %s: %s ***\n\n' "$E2E_NAME" "$*" >&2
	exit 77
}

e2e_init() {
	E2E_NAME=$1
	local t

	if [ "$(id -u)" != 0 ]; then
		e2e_skip "needs root (network namespaces, netfilter)"
	fi
	for t in ip timeout iptables-legacy iptables-legacy-save; do
		command -v "$t" >/dev/null || e2e_skip "needs '$t'"
	done
	top_builddir=${top_builddir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
	top_srcdir=${top_srcdir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
	SVCNAT=${SVCNAT:-$top_builddir/svcnat}
	NAMESRV=${NAMESRV:-$top_builddir/tests/e2e/namesrv}
	[ -x "$NAMESRV" ] || fail "name server '$NAMESRV' not built (make check builds it)"

	umask 022
	E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/svcnat-e2e.XXXXXX") || fail "mktemp"
	# The state svcnat keeps for its next start goes with the test, not
	# into the host's /run/svcnat (shared by every namespace).
	export SVCNAT_RUNTIME_DIR=$E2E_TMP/run
	trap e2e_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	# A bound on the whole script, whatever hangs.  Killing the watchdog
	# ends its sleep too (by pid, from its trap).
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$E2E_SCRIPT_TIMEOUT" &
		s=$!
		wait "$s" || exit 0
		echo "FAIL: $E2E_NAME: watchdog: over ${E2E_SCRIPT_TIMEOUT}s" >&2
		kill -TERM $$
	) </dev/null &
	E2E_WATCHDOG=$!

	if ! ip netns add "svcnat-e2e-probe-$$" 2>/dev/null; then
		e2e_skip "cannot create network namespaces"
	fi
	ip netns del "svcnat-e2e-probe-$$"
}

e2e_need_svcnat() {
	[ -x "$SVCNAT" ] || fail "svcnat binary '$SVCNAT' not found"
}

e2e_cleanup() {
	local rc=$?

	trap - EXIT INT TERM
	topo_down_all
	if [ -n "$E2E_WATCHDOG" ]; then
		kill "$E2E_WATCHDOG" 2>/dev/null
		wait "$E2E_WATCHDOG" 2>/dev/null
	fi
	[ -n "$E2E_TMP" ] && rm -rf "$E2E_TMP"
	if [ "$rc" = 0 ]; then
		echo "${E2E_PASS_MSG:-PASS: $E2E_NAME}"
	fi
	exit "$rc"
}

e2e_backends() {
	echo "${SVCNAT_E2E_BACKENDS:-libiptc direct restore nft}"
}

# e2e_for_each_backend FN: FN BACKEND on a fresh topology, once per backend
# (SVCNAT_E2E_BACKENDS, default "libiptc direct restore nft").  FN adds pods, starts
# servers and runs svcnat; the topology is removed after it.
e2e_for_each_backend() {
	local fn=$1 b
	e2e_need_svcnat
	for b in $(e2e_backends); do
		say "=== backend $b ==="
		E2E_BACKEND=$b
		topo_up
		"$fn" "$b"
		topo_down
	done
}

# e2e_save6 BACKEND: the ip6tables-save flavour BACKEND writes in (restore:
# that of the host's iptables; nft: nf_tables; direct, libiptc: legacy)
e2e_save6() {
	case $1 in
	restore) iptables --version 2>/dev/null | grep -q legacy &&
		echo ip6tables-legacy-save || echo ip6tables-nft-save ;;
	nft) echo ip6tables-nft-save ;;
	*) echo ip6tables-legacy-save ;;
	esac
}

# The writers with IPv6 code (issue 14): under CI=true each must write
# ip6tables here, else the IPv6 tests fail instead of leaving it out.  A
# writer that lands its IPv6 part adds its name.
SVCNAT_E2E_IPV6_EXPECTED=${SVCNAT_E2E_IPV6_EXPECTED:-restore libiptc direct nft}

# e2e_writes_ipv6 BACKEND: true when `svcnat --once --backend=BACKEND` of one
# IPv6-only service, in a scratch network namespace with a private /run,
# puts its rule into ip6tables (what the backend says it can, on this host:
# writer and tools).
e2e_writes_ipv6() {
	local cfg=$E2E_TMP/writes-ipv6.json
	[ -s "$cfg" ] || k8s_list \
		"$(k8s_service e2e probe6 '"type":"ClusterIP","clusterIP":"2001:2:0:f000::1",
			"clusterIPs":["2001:2:0:f000::1"],"ipFamilies":["IPv6"],
			"ports":[{"protocol":"TCP","port":80}]')" \
		"$(k8s_slice6 e2e probe6 '[{"name":"","protocol":"TCP","port":80}]' 2001:2:0:65::10@node-a)" >"$cfg"
	timeout --kill-after=5 60 unshare -n -m sh -c '
		mount -t tmpfs -o mode=0755 tmpfs /run && ip link set lo up &&
		"$0" --backend="$1" --once --config "$2" --hostname node-a \
			--node-ip 198.18.0.1 --node-ip 2001:2::1 >"$2.log" 2>&1 &&
		$3 -t nat 2>/dev/null | grep -q "^-A KUBE-SERVICES -d 2001:2:0:f000::1/128"' \
		"$SVCNAT" "$1" "$cfg" "$(e2e_save6 "$1")"
}

# e2e_first_ipv6_backend: E2E_BACKEND6, the first of e2e_backends that
# writes ip6tables here; none: the test is skipped (e2e_skip)
e2e_first_ipv6_backend() {
	local b
	for b in $(e2e_backends); do
		if e2e_writes_ipv6 "$b"; then
			E2E_BACKEND6=$b
			return 0
		fi
	done
	e2e_skip "no backend of '$(e2e_backends)' writes ip6tables here"
}

# e2e_for_each_ipv6_backend FN: e2e_for_each_backend FN over the backends
# that write ip6tables here; each one left out is said (and under CI=true
# one in SVCNAT_E2E_IPV6_EXPECTED fails the test).
e2e_for_each_ipv6_backend() {
	local b run=()
	e2e_need_svcnat
	for b in $(e2e_backends); do
		if e2e_writes_ipv6 "$b"; then
			run+=("$b")
		elif [ "${CI:-}" = true ] && _in_list "$b" $SVCNAT_E2E_IPV6_EXPECTED; then
			fail "backend $b should write ip6tables (SVCNAT_E2E_IPV6_EXPECTED) but does not: $(cat "$E2E_TMP/writes-ipv6.json.log")"
		else
			say "backend $b does not write ip6tables here: not run ($(grep -m1 'this run' \
				"$E2E_TMP/writes-ipv6.json.log" || tail -n 1 "$E2E_TMP/writes-ipv6.json.log"))"
		fi
	done
	[ ${#run[@]} -gt 0 ] || e2e_skip "no backend of '$(e2e_backends)' writes ip6tables here"
	SVCNAT_E2E_BACKENDS="${run[*]}" e2e_for_each_backend "$1"
}

ns_name() {
	printf '%s-%s' "$TOPO_PREFIX" "$1"
}

# in_ns NAME CMD...: bounded command inside one of our namespaces.
in_ns() {
	local ns=$TOPO_PREFIX-$1
	shift
	ip netns exec "$ns" timeout --kill-after=5 "$E2E_CMD_TIMEOUT" "$@"
}

# Commands for `ip -n NS -batch`, collected per namespace and run by _flush
# (one process per namespace instead of one per command: the topology is
# made several times per test, and process start-up is most of its cost).
_b() {
	printf '%s\n' "$2" >>"$E2E_TMP/batch.$1"
}

_flush() {
	local f=$E2E_TMP/batch.$1
	[ -s "$f" ] || return 0
	ip -n "$TOPO_PREFIX-$1" -batch "$f" >"$f.log" 2>&1 ||
		fail "setting up namespace $1: $(cat "$f.log") (commands: $(tr '\n' ';' <"$f"))"
	: >"$f"
}

# _par CMD...: start CMD in the background; _par_wait waits for all of them
# and fails the test if one failed.
_par_pids=()
_par() {
	"$@" &
	_par_pids+=($!)
}

_par_wait() {
	local p bad=0
	for p in "${_par_pids[@]}"; do
		wait "$p" || bad=1
	done
	_par_pids=()
	[ $bad = 0 ] || fail "setting up the topology failed (see above)"
}

# _ns_create NAME...: the namespaces (one `ip -batch`), lo up queued.
_ns_create() {
	local n
	for n in "$@"; do
		printf 'netns add %s\n' "$TOPO_PREFIX-$n"
		echo "link set lo up" >"$E2E_TMP/batch.$n"
	done | ip -batch - >"$E2E_TMP/netns.log" 2>&1 ||
		fail "ip netns add $*: $(cat "$E2E_TMP/netns.log")"
}

# _ns_sysctl NAME [SYSCTL...]: ICMP errors not rate-limited (and SYSCTLs)
_ns_sysctl() {
	local v6=()
	[ -n "$TOPO_IPV6" ] && v6=(net.ipv6.icmp.ratelimit=0 net.ipv6.conf.all.forwarding=1
		net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0)
	ip netns exec "$TOPO_PREFIX-$1" sysctl -qw net.ipv4.icmp_ratelimit=0 "${v6[@]}" "${@:2}" \
		>/dev/null || fail "sysctl in $1"
}

# The IPv6 address of a topology IPv4 address (pods: 2001:2:0:65::X).
e2e_ip6() {
	case $1 in
	"$E2E_NODE_IP") echo "$E2E_NODE_IP6" ;;
	"$E2E_NODEB_IP") echo "$E2E_NODEB_IP6" ;;
	"$E2E_CLIENT1_IP") echo "$E2E_CLIENT1_IP6" ;;
	"$E2E_CLIENT2_IP") echo "$E2E_CLIENT2_IP6" ;;
	198.18.65.* | 198.18.66.*) local r=${1#198.18.}; echo "2001:2:0:${r%%.*}::${r#*.}" ;;
	*) fail "no IPv6 address for $1" ;;
	esac
}

# _ns_add NAME [SYSCTL...]: one namespace, ready at once (lo up, ICMP
# not rate-limited) - for libraries such as etcd.sh that add their own
# namespaces under TOPO_PREFIX.
_ns_add() {
	_ns_create "$1"
	_ns_sysctl "$@"
	_flush "$1"
}

# _link A IF_A ADDR_A B IF_B ADDR_B: a veth between namespaces A and B, each
# side with its /32 address and a /32 route to the other (queued: A's
# commands must be flushed before B's, as A's create the pair).
_link() {
	_b "$1" "link add $2 type veth peer name $5 netns $TOPO_PREFIX-$4"
	_b "$1" "addr add $3/32 dev $2"
	_b "$1" "link set $2 up"
	_b "$1" "route add $6/32 dev $2 src $3"
	_b "$4" "addr add $6/32 dev $5"
	_b "$4" "link set $5 up"
	_b "$4" "route add $3/32 dev $5 src $6"
	if [ -n "$TOPO_IPV6" ]; then
		local a6 b6
		a6=$(e2e_ip6 "$3") b6=$(e2e_ip6 "$6")
		_b "$1" "addr add $a6/128 dev $2 nodad"
		_b "$1" "route add $b6/128 dev $2 src $a6"
		_b "$4" "addr add $b6/128 dev $5 nodad"
		_b "$4" "route add $a6/128 dev $5 src $b6"
	fi
}

# _route6 NS ROUTE: an IPv6 route when the topology has IPv6.
_route6() {
	[ -n "$TOPO_IPV6" ] && _b "$1" "route add $2"
	return 0
}

# Wait (bounded: 10 s) until no IPv6 address of our namespaces is
# tentative.  The test addresses are nodad, but the link-local ones the
# kernel adds to each veth go through DAD (about a second).
_ipv6_settle() {
	local n i
	[ -n "$TOPO_IPV6" ] || return 0
	for ((i = 0; i < 100; i++)); do
		for n in $(ip netns list | awk '{print $1}' | grep "^$TOPO_PREFIX-"); do
			if [ -n "$(ip -n "$n" -6 addr show tentative 2>/dev/null)" ]; then
				sleep 0.1
				continue 2
			fi
		done
		return 0
	done
	fail "IPv6 addresses stayed tentative for 10 s: $(for n in $(ip netns list | awk '{print $1}' | grep "^$TOPO_PREFIX-"); do ip -n "$n" -6 addr show tentative; done 2>&1 | tr '\n' ' ')"
}

topo_up() {
	local n
	TOPO_N=$((TOPO_N + 1))
	TOPO_PREFIX="svcnat-e2e-$$-$TOPO_N"
	TOPO_PODS=()

	_ns_create node nodeb client1 client2 podclient
	_par _ns_sysctl node net.ipv4.ip_forward=1
	_par _ns_sysctl nodeb net.ipv4.ip_forward=1
	_par _ns_sysctl client1
	_par _ns_sysctl client2
	_par _ns_sysctl podclient

	_link node vnb "$E2E_NODE_IP" nodeb eth0 "$E2E_NODEB_IP"
	_b node "route add 198.18.66.0/24 via $E2E_NODEB_IP"
	_b node "route add default via $E2E_NODEB_IP"
	_b nodeb "route add 198.18.0.0/16 via $E2E_NODE_IP"
	_route6 node "2001:2:0:66::/64 via $E2E_NODEB_IP6"
	_route6 node "::/0 via $E2E_NODEB_IP6"
	_route6 nodeb "2001:2::/48 via $E2E_NODE_IP6"

	_link node vc1 "$E2E_NODE_IP" client1 eth0 "$E2E_CLIENT1_IP"
	_b client1 "route add default via $E2E_NODE_IP"
	_route6 client1 "::/0 via $E2E_NODE_IP6"
	_link node vc2 "$E2E_NODE_IP" client2 eth0 "$E2E_CLIENT2_IP"
	_b client2 "route add default via $E2E_NODE_IP"
	_route6 client2 "::/0 via $E2E_NODE_IP6"

	_pod_link podclient "$E2E_PODCLIENT_IP"
	_flush node
	for n in nodeb client1 client2 podclient; do
		_par _flush "$n"
	done
	_par_wait
	_ipv6_settle
}

# _pod_link NAME IP: queue the pod's link to its node (by its address)
_pod_link() {
	local name=$1 ip=$2 node gw
	case $ip in
	198.18.65.*) node=node gw=$E2E_NODE_IP ;;
	198.18.66.*) node=nodeb gw=$E2E_NODEB_IP ;;
	*) fail "pod $name: $ip is not in a node's pod range (198.18.65.0/24, 198.18.66.0/24)" ;;
	esac
	# interface name on the node: "p" + the last two octets (<= 15 chars)
	_link "$node" "p${ip#198.18.}" "$gw" "$name" eth0 "$ip"
	_b "$name" "route add default via $gw"
	[ -n "$TOPO_IPV6" ] && _route6 "$name" "::/0 via $(e2e_ip6 "$gw")"
	return 0
}

# topo_add_pod NAME IP [NAME IP...]: backend pods that start_servers will
# serve in.
topo_add_pod() {
	local names=() ips=() i
	while [ $# -ge 2 ]; do
		names+=("$1")
		ips+=("$2")
		shift 2
	done
	[ $# = 0 ] || fail "topo_add_pod: NAME IP pairs expected"
	_ns_create "${names[@]}"
	for i in "${!names[@]}"; do
		_pod_link "${names[$i]}" "${ips[$i]}"
	done
	_par _flush node
	_par _flush nodeb
	_par_wait
	for i in "${names[@]}"; do
		_par _flush "$i"
	done
	_par_wait
	_ipv6_settle
	TOPO_PODS+=("${names[@]}")
}

# Kill every process inside our namespaces (they are all ours), delete them.
_ns_del_all() {
	local prefix=$1 nss pids i
	nss=$(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$prefix-")
	[ -n "$nss" ] || return 0
	for ((i = 1; i <= 30; i++)); do
		pids=$(printf 'netns pids %s\n' $nss | ip -force -batch - 2>/dev/null)
		[ -z "$pids" ] && break
		if [ "$i" -lt 25 ]; then
			kill -TERM $pids 2>/dev/null
		else
			kill -KILL $pids 2>/dev/null
		fi
		[ -n "${E2E_DEBUG:-}" ] && echo "teardown round $i: $pids $(ps -o pid,stat,args -p "${pids//$'\n'/,}" | tail -n +2)" >&2
		sleep 0.05
	done
	printf 'netns del %s\n' $nss | ip -force -batch - >/dev/null 2>&1
}

topo_down() {
	[ -n "$TOPO_PREFIX" ] && _ns_del_all "$TOPO_PREFIX"
	if [ ${#E2E_BG_PIDS[@]} -gt 0 ]; then
		wait "${E2E_BG_PIDS[@]}" 2>/dev/null
	fi
	E2E_BG_PIDS=()
	TOPO_PODS=()
	TOPO_PREFIX=
}

# Everything this process ever made (also a topology half built when a
# step failed).
topo_down_all() {
	local p
	for p in "${E2E_BG_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	_ns_del_all "svcnat-e2e-$$"
	if [ ${#E2E_BG_PIDS[@]} -gt 0 ]; then
		wait "${E2E_BG_PIDS[@]}" 2>/dev/null
	fi
	E2E_BG_PIDS=()
	TOPO_PREFIX=
}

# svcnat_run BACKEND ARGS...: svcnat in the node namespace with node-a's
# settings (and --dispatch=$SVCNAT_E2E_DISPATCH when that is set: the
# traffic tests run again with the tree, tests/e2e/traffic-tree.sh);
# stdout+stderr to $E2E_TMP/svcnat.log; returns svcnat's status.
# The xtables lock (/run/xtables.lock) is one for all namespaces: tests
# running in parallel wait for each other's commits.
svcnat_run() {
	local backend=$1 rc
	shift
	in_ns node "$SVCNAT" --backend="$backend" --lock-wait 30000 --hostname "$E2E_HOSTNAME" \
		--node-ip "$E2E_NODE_IP" --cluster-cidr "$E2E_CLUSTER_CIDR" \
		${SVCNAT_E2E_DISPATCH:+--dispatch="$SVCNAT_E2E_DISPATCH"} "$@" \
		>"$E2E_TMP/svcnat.log" 2>&1
	rc=$?
	return $rc
}

# svcnat_sync BACKEND CONFIG [ARGS...]: svcnat --once, failing the test
# when it does not exit 0.
svcnat_sync() {
	local backend=$1 config=$2
	shift 2
	svcnat_run "$backend" --once --config "$config" "$@" ||
		fail "svcnat --once --backend=$backend --config $config failed ($?): $(cat "$E2E_TMP/svcnat.log")"
	# A tree run must have put a tree into the kernel (whichever flavour
	# the backend writes).
	if [ "${SVCNAT_E2E_DISPATCH:-}" = tree ]; then
		{ in_ns node iptables-legacy-save; in_ns node iptables-nft-save; } 2>/dev/null |
			grep -q '^:KUBE-DSP-' ||
			fail "--dispatch=tree: no KUBE-DSP- chain in the kernel after svcnat --once"
	fi
}
