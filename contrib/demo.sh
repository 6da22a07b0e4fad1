#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The svcnat demo: svcnat's main job, end to end, in a throwaway
# network-namespace topology (tests/e2e/lib/topology.sh):
#   - a "node" namespace (node-a, 198.18.0.1), pods for the endpoints of the
#     example's service shop/web (each answers with its own name), a second
#     node (node-b) for the remote ones, a pod-like client and an outside one;
#   - `svcnat --once` on contrib/examples/cluster.json inside the node;
#   - the NAT table as `iptables -t nat -L -n` shows it there;
#   - clients reaching shop/web by its cluster IP (and its NodePort);
#   - every namespace removed again, also on failure or Ctrl-C.
# Nothing outside the namespaces is touched; all addresses are from
# 198.18.0.0/15.  It builds nothing: run it after ./configure && make.
#
# Usage (as root): contrib/demo.sh [PATH-TO-BUILT-svcnat]   (default ./svcnat)

svcnat=${1:-./svcnat}
if [ ! -x "$svcnat" ]; then
	echo "demo: no svcnat binary at '$svcnat': build first (./configure && make) and give its path" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root: it creates network namespaces (nothing outside them is touched)." >&2
	echo "      Without root, try: $svcnat --dry-run --config contrib/examples/cluster.json" >&2
	exit 1
fi
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$(cd "$(dirname "$svcnat")" && pwd)
SVCNAT=$top_builddir/$(basename "$svcnat")
NAMESRV=$top_builddir/tests/e2e/namesrv
export top_srcdir top_builddir SVCNAT NAMESRV
config=$top_srcdir/contrib/examples/cluster.json
service=shop/web

# shellcheck source=tests/e2e/lib/topology.sh
. "$top_srcdir/tests/e2e/lib/topology.sh"
E2E_PASS_MSG="demo: finished; every namespace it made is gone."
E2E_SCRIPT_TIMEOUT=180
e2e_init demo
e2e_need_svcnat

show() {
	printf '\n$ %s\n' "$*"
}

# What svcnat understood of the example's service (one line per port):
# "shop/web:http TCP NodePort 198.19.0.10:80 nodePort=30080 ... -> IP:PORT (ready,...) ..."
state=$("$SVCNAT" --dump-state --config "$config" --hostname "$E2E_HOSTNAME" 2>/dev/null |
	grep -E "^$service(:[^ ]*)? TCP " | head -n 1)
[ -n "$state" ] || fail "$config has no TCP service $service"
read -r _ _ _ vip _ <<<"$state"
cluster_ip=${vip%:*}
cluster_port=${vip#*:}
node_port=$(grep -o 'nodePort=[0-9]*' <<<"$state" | cut -d= -f2)
endpoints=$(sed 's/.*-> //' <<<"$state" | grep -oE '198\.18\.6[56]\.[0-9]+:[0-9]+ \(ready' | cut -d' ' -f1)
[ -n "$endpoints" ] || fail "$service has no ready endpoint on node-a/node-b pods in $config"

say "$service: cluster IP $cluster_ip:$cluster_port${node_port:+, NodePort $node_port}, endpoints: $(echo $endpoints)"
say "building the topology: node-a $E2E_NODE_IP (svcnat runs here), node-b $E2E_NODEB_IP, one namespace per pod"
topo_up
pods=() ports=()
for ep in $endpoints; do
	ip=${ep%:*}
	pods+=("pod-${ip//./-}" "$ip")
	ports+=("${ep#*:}")
done
topo_add_pod "${pods[@]}"
start_servers $(printf '%s\n' "${ports[@]}" | sort -u)
say "namespaces: $(ip netns list | awk '{print $1}' | grep "^$TOPO_PREFIX-" | sed "s/^$TOPO_PREFIX-//" | tr '\n' ' ')"

show ip netns exec "$(ns_name node)" svcnat --once --config contrib/examples/cluster.json \
	--hostname "$E2E_HOSTNAME" --node-ip "$E2E_NODE_IP" --cluster-cidr "$E2E_CLUSTER_CIDR"
in_ns node "$SVCNAT" --once --config "$config" --hostname "$E2E_HOSTNAME" \
	--node-ip "$E2E_NODE_IP" --cluster-cidr "$E2E_CLUSTER_CIDR" -v ||
	fail "svcnat --once failed"

# libiptc writes the legacy tables; on an nft-based host the restore backend
# may have written through iptables-nft: show whichever holds the rules.
ipt=iptables-legacy
if command -v iptables-nft-save >/dev/null &&
	in_ns node iptables-nft-save -t nat 2>/dev/null | grep -q KUBE-SERVICES; then
	ipt=iptables-nft
fi
show ip netns exec "$(ns_name node)" "$ipt" -t nat -L -n
in_ns node "$ipt" -w 10 -t nat -L -n || fail "$ipt -t nat -L -n"

out=$E2E_TMP/client
show ip netns exec "$(ns_name podclient)" namesrv client --addr "$cluster_ip" --port "$cluster_port" --count 12
say "a pod-like client ($E2E_PODCLIENT_IP) connects to $service by its cluster IP, 12 times;"
say "each line: the pod that answered and the source address it saw"
in_ns podclient "$NAMESRV" client --addr "$cluster_ip" --port "$cluster_port" --count 12 --max-fail 3 |
	tee "$out"
grep -qv '^ok ' "$out" && fail "not every connection was answered"
[ "$(wc -l <"$out")" = 12 ] || fail "the client gave up"
say "served by: $(summary "$out")"

if [ -n "$node_port" ]; then
	show ip netns exec "$(ns_name client1)" namesrv client --addr "$E2E_NODE_IP" --port "$node_port" --count 6
	say "an outside client ($E2E_CLIENT1_IP) through the NodePort: masqueraded to the node's address"
	in_ns client1 "$NAMESRV" client --addr "$E2E_NODE_IP" --port "$node_port" --count 6 --max-fail 3 |
		tee "$out"
	grep -qv '^ok ' "$out" && fail "not every connection was answered"
fi

say "removing the namespaces"
topo_down
left=$(ip netns list | grep -c "^svcnat-e2e-$$-")
[ "$left" = 0 ] || fail "$left namespaces left behind"
