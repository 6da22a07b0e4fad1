#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The project's API server (tests/kubeapi/kubeapi.py) is honest to the
# protocol: kubectl works against it unchanged, with a token and with a
# client certificate (get --raw, get -A -o json, a watch stream).  And the
# one-shot modes of the API source against it:
#  - svcnat --dump-state / --dry-run --kubeconfig print what the same objects
#    give through a file (client certificate from -data fields), also for a
#    list of several pages;
#    and so does a KubeProxyConfiguration's clientConnection.kubeconfig;
#  - svcnat --once --kubeconfig writes the rules;
#  - this node's Node object: its zone label gives topology hints as --zone;
#  - in-cluster (KUBERNETES_SERVICE_HOST/_PORT, the service account's token
#    and ca.crt under /var/run/secrets/kubernetes.io/serviceaccount);
#  - --detect-local-mode=NodeCIDR takes the Node object's spec.podCIDRs,
#    --nodeport-addresses primary its primary IP;
#  - a wrong kubeconfig: one line naming the file and the field (exit 2); a
#    refused token: one line with the server's 401 (exit 1).
# No real kube-apiserver is involved.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init api-kubectl
kapi_need
e2e_need_svcnat
command -v kubectl >/dev/null ||
	e2e_skip "needs kubectl (Debian: kubernetes-client, or a kubectl package)"

export HOME=$E2E_TMP/home KUBECACHEDIR=$E2E_TMP/home/cache
mkdir -p "$HOME"
K=$E2E_TMP/kapi

kc() { # kubectl in the node namespace with kubeconfig $1
	local cfg=$1
	shift
	in_ns node kubectl --kubeconfig "$cfg" --request-timeout 20s "$@"
}

count_items() {
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["kind"], len(d["items"]))'
}

topo_up
kapi_certs "$K"
for m in token cert data badtoken; do kapi_kubeconfig "$K/kc-$m" "$m"; done

data=$E2E_TMP/objects.json
python3 - "$top_srcdir/contrib/examples/cluster.json" >"$data" <<'EOF'
import json, sys
# The example's Services and EndpointSlices (the API serves no Endpoints).
d = json.load(open(sys.argv[1]))
d["items"] = [i for i in d["items"] if i["kind"] in ("Service", "EndpointSlice")]
print(json.dumps(d))
EOF
nsvc=$(python3 -c 'import json,sys; print(sum(i["kind"] == "Service" for i in json.load(open(sys.argv[1]))["items"]))' "$data")
nslc=$(python3 -c 'import json,sys; print(sum(i["kind"] == "EndpointSlice" for i in json.load(open(sys.argv[1]))["items"]))' "$data")
kapi_start node --data "$data"

for m in token cert; do
	say "kubectl ($m): get --raw /api/v1/services"
	kc "$K/kc-$m" get --raw /api/v1/services >"$E2E_TMP/raw.json" ||
		fail "kubectl get --raw: $(cat "$E2E_TMP/raw.json")"
	[ "$(count_items <"$E2E_TMP/raw.json")" = "ServiceList $nsvc" ] ||
		fail "get --raw: $(head -c 300 "$E2E_TMP/raw.json")"
	say "kubectl ($m): get services -A -o json, get endpointslices -A -o json"
	kc "$K/kc-$m" get services -A -o json >"$E2E_TMP/svc.json" 2>"$E2E_TMP/err" ||
		fail "kubectl get services: $(cat "$E2E_TMP/err")"
	[ "$(count_items <"$E2E_TMP/svc.json")" = "List $nsvc" ] ||
		fail "get services: $(head -c 300 "$E2E_TMP/svc.json")"
	kc "$K/kc-$m" get endpointslices -A -o json >"$E2E_TMP/eps.json" 2>"$E2E_TMP/err" ||
		fail "kubectl get endpointslices: $(cat "$E2E_TMP/err")"
	[ "$(count_items <"$E2E_TMP/eps.json")" = "List $nslc" ] ||
		fail "get endpointslices: $(head -c 300 "$E2E_TMP/eps.json")"
	kc "$K/kc-$m" get services -n shop -o json | count_items | grep -q '^List [1-9]' ||
		fail "get services -n shop"
done

say "kubectl: get --raw '/api/v1/services?watch=1' streams events"
ip netns exec "$(ns_name node)" timeout 8 kubectl --kubeconfig "$K/kc-token" \
	get --raw '/api/v1/services?watch=1' >"$E2E_TMP/watch.out" 2>&1 &
wpid=$!
sleep 2
k8s_list "$(k8s_service e2e streamed '"type":"ClusterIP","clusterIP":"198.19.0.77","ports":[{"port":80}]')" \
	>"$E2E_TMP/new.json"
kapi_apply "$E2E_TMP/new.json"
wait "$wpid"
[ "$(grep -c '"type":"ADDED"' "$E2E_TMP/watch.out")" = $((nsvc + 1)) ] ||
	fail "watch: $(head -c 600 "$E2E_TMP/watch.out")"
grep -q '"name":"streamed"' "$E2E_TMP/watch.out" || fail "watch: no event for the new service"
kapi_delete Service e2e streamed

say "kubectl: a refused token is refused"
kc "$K/kc-badtoken" get --raw /api/v1/services >"$E2E_TMP/out" 2>&1 && fail "a bad token was accepted"
grep -qi "unauthorized" "$E2E_TMP/out" || fail "kubectl with a bad token: $(cat "$E2E_TMP/out")"

say "svcnat --dump-state and --dry-run --kubeconfig (client certificate data) = through a file"
"$SVCNAT" --dump-state --hostname node-a --config "$data" >"$E2E_TMP/file.state" 2>&1 ||
	fail "--dump-state --config: $(cat "$E2E_TMP/file.state")"
in_ns node "$SVCNAT" --dump-state --hostname node-a --kubeconfig "$K/kc-data" >"$E2E_TMP/api.state" 2>&1 ||
	fail "--dump-state --kubeconfig: $(cat "$E2E_TMP/api.state")"
# kube-proxy's label selector: the server never sends the service of another proxy.
grep -q '^shop/legacy-lb:.*service-proxy-name' "$E2E_TMP/file.state" || fail "fixture changed"
grep -q 'legacy-lb' "$E2E_TMP/api.state" && fail "the API source got a service-proxy-name service"
grep -v '^shop/legacy-lb:' "$E2E_TMP/file.state" >"$E2E_TMP/file.state.sel"
mv "$E2E_TMP/file.state.sel" "$E2E_TMP/file.state"
diff -u "$E2E_TMP/file.state" "$E2E_TMP/api.state" >&2 || fail "--dump-state differs"
printf 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclientConnection:\n  kubeconfig: %s\n' \
	"$K/kc-data" >"$E2E_TMP/kube-proxy.yaml"
in_ns node "$SVCNAT" --dump-state --hostname node-a --config "$E2E_TMP/kube-proxy.yaml" \
	>"$E2E_TMP/kpc.state" 2>&1 || fail "--dump-state, clientConnection.kubeconfig: $(cat "$E2E_TMP/kpc.state")"
diff -u "$E2E_TMP/file.state" "$E2E_TMP/kpc.state" >&2 ||
	fail "a KubeProxyConfiguration's clientConnection.kubeconfig is not --kubeconfig"
"$SVCNAT" --dry-run --hostname node-a --node-ip 198.18.0.1 --config "$data" >"$E2E_TMP/file.rules" 2>&1 ||
	fail "--dry-run --config: $(cat "$E2E_TMP/file.rules")"
in_ns node "$SVCNAT" --dry-run --hostname node-a --node-ip 198.18.0.1 --kubeconfig "$K/kc-data" \
	>"$E2E_TMP/api.rules" 2>&1 || fail "--dry-run --kubeconfig: $(cat "$E2E_TMP/api.rules")"
diff -u <(grep -v '^#' "$E2E_TMP/file.rules" | grep -v 'legacy-lb') <(grep -v '^#' "$E2E_TMP/api.rules") >&2 ||
	fail "--dry-run differs"

say "the Node object's zone label: topology hints as with --zone"
cat >"$E2E_TMP/topo.json" <<'EOF'
{"kind": "List", "apiVersion": "v1", "items": [
 {"kind": "Service", "apiVersion": "v1", "metadata": {"namespace": "e2e", "name": "topo",
  "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
  "spec": {"type": "ClusterIP", "clusterIP": "198.19.0.90", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
 {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1", "metadata": {"namespace": "e2e",
  "name": "topo-1", "labels": {"kubernetes.io/service-name": "topo"}}, "addressType": "IPv4",
  "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
  "endpoints": [
   {"addresses": ["198.18.65.90"], "conditions": {"ready": true}, "nodeName": "node-a", "zone": "zone-a",
    "hints": {"forZones": [{"name": "zone-a"}]}},
   {"addresses": ["198.18.66.90"], "conditions": {"ready": true}, "nodeName": "node-b", "zone": "zone-b",
    "hints": {"forZones": [{"name": "zone-b"}]}}]}]}
EOF
cat >"$E2E_TMP/node.json" <<'EOF'
{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "node-a",
 "labels": {"topology.kubernetes.io/zone": "zone-a"}},
 "status": {"addresses": [{"type": "InternalIP", "address": "198.18.0.1"}, {"type": "Hostname", "address": "node-a"}]}}
EOF
"$SVCNAT" --dry-run --hostname node-a --node-ip 198.18.0.1 --zone zone-a --config "$E2E_TMP/topo.json" |
	grep 'e2e/topo' >"$E2E_TMP/zone.rules" || fail "--dry-run --zone"
"$SVCNAT" --dry-run --hostname node-a --node-ip 198.18.0.1 --config "$E2E_TMP/topo.json" |
	grep 'e2e/topo' >"$E2E_TMP/nozone.rules" || fail "--dry-run without --zone"
cmp -s "$E2E_TMP/zone.rules" "$E2E_TMP/nozone.rules" && fail "fixture: the zone changes nothing"
kapi_apply "$E2E_TMP/topo.json"
kapi_apply "$E2E_TMP/node.json"
in_ns node "$SVCNAT" --dry-run --hostname node-a --kubeconfig "$K/kc-token" 2>"$E2E_TMP/err" |
	grep 'e2e/topo' >"$E2E_TMP/api-zone.rules" || fail "--dry-run --kubeconfig: $(cat "$E2E_TMP/err")"
diff -u "$E2E_TMP/zone.rules" "$E2E_TMP/api-zone.rules" >&2 || fail "the Node's zone was not used"
kapi_delete Service e2e topo
kapi_delete EndpointSlice e2e topo-1

say "--detect-local-mode=NodeCIDR takes the Node object's spec.podCIDRs"
cat >"$E2E_TMP/nodecidr.json" <<'EOF'
{"kind": "List", "apiVersion": "v1", "items": [{"kind": "Node", "apiVersion": "v1",
 "metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
 "spec": {"podCIDR": "198.18.65.0/24", "podCIDRs": ["198.18.65.0/24"]},
 "status": {"addresses": [{"type": "InternalIP", "address": "198.18.0.1"}]}}]}
EOF
kapi_apply "$E2E_TMP/nodecidr.json"
in_ns node "$SVCNAT" --dry-run --hostname node-a --node-ip 198.18.0.1 --kubeconfig "$K/kc-data" \
	--detect-local-mode=NodeCIDR >"$E2E_TMP/nodecidr.rules" 2>&1 ||
	fail "--dry-run NodeCIDR: $(cat "$E2E_TMP/nodecidr.rules")"
grep -q -- '^-A KUBE-SVC-[A-Z0-9]* ! -s 198.18.65.0/24 -d ' "$E2E_TMP/nodecidr.rules" ||
	fail "NodeCIDR: no '! -s 198.18.65.0/24' masquerade rule: $(grep -m3 KUBE-MARK-MASQ "$E2E_TMP/nodecidr.rules")"
grep -q -- '198.18.64.0/18' "$E2E_TMP/nodecidr.rules" && fail "NodeCIDR used a cluster CIDR"
say "--nodeport-addresses primary: the Node object's primary IP (InternalIP 198.18.0.1)"
in_ns node "$SVCNAT" --dry-run --diff --hostname node-a --kubeconfig "$K/kc-data" \
	--nodeport-addresses primary >"$E2E_TMP/primary.diff" 2>&1
[ $? = 1 ] || fail "--diff --nodeport-addresses primary: $(tail -n 5 "$E2E_TMP/primary.diff")"
grep -q -- '^+-A KUBE-SERVICES -d 198.18.0.1/32 .*-j KUBE-NODEPORTS' "$E2E_TMP/primary.diff" ||
	fail "primary: no NodePort jump for 198.18.0.1: $(grep KUBE-NODEPORTS "$E2E_TMP/primary.diff" | head -3)"
grep -q -- 'addrtype --dst-type LOCAL -j KUBE-NODEPORTS' "$E2E_TMP/primary.diff" &&
	fail "primary: NodePorts on every local address"
kapi_apply "$E2E_TMP/node.json" # the Node as it was

say "svcnat --once --kubeconfig writes the rules"
in_ns node "$SVCNAT" --once --backend "$(e2e_backends | awk '{print $1}')" --lock-wait 30000 \
	--hostname node-a --node-ip 198.18.0.1 --kubeconfig "$K/kc-cert" >"$E2E_TMP/once.log" 2>&1 ||
	fail "--once --kubeconfig: $(cat "$E2E_TMP/once.log")"
{ in_ns node iptables-legacy-save -t nat; in_ns node iptables-nft-save -t nat; } 2>/dev/null |
	grep -q 'shop/frontend:http' || fail "--once: no rules for shop/frontend"

say "in-cluster: KUBERNETES_SERVICE_HOST/_PORT and the service account's files"
ip netns exec "$(ns_name node)" unshare -m sh -c '
	mount -t tmpfs tmpfs /run || exit 9
	d=/var/run/secrets/kubernetes.io/serviceaccount
	mkdir -p $d && cp "$1/token" "$1/ca.crt" $d/ || exit 9
	KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=6443 exec "$2" --dump-state --hostname node-a
' sh "$K" "$SVCNAT" >"$E2E_TMP/incluster.state" 2>&1 ||
	fail "in-cluster --dump-state ($?): $(cat "$E2E_TMP/incluster.state")"
diff -u "$E2E_TMP/file.state" "$E2E_TMP/incluster.state" >&2 || fail "in-cluster --dump-state differs"

say "dual-stack: --dump-state and --dry-run --kubeconfig (both families) = through a file"
# contrib/examples/dual-stack.json's Services and EndpointSlices (IPv4,
# IPv6 and dual-stack Services, IPv6 slices) in namespaces of their own
# ("ds-" + namespace: cluster.json has a shop/web too), beside cluster.json's.
python3 - "$top_srcdir/contrib/examples/dual-stack.json" >"$E2E_TMP/ds.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["items"] = [i for i in d["items"] if i["kind"] in ("Service", "EndpointSlice")]
for i in d["items"]:
    i["metadata"]["namespace"] = "ds-" + i["metadata"]["namespace"]
print(json.dumps(d))
PY
kapi_apply "$E2E_TMP/ds.json"
ds_args=(--hostname node-a --node-ip 198.18.0.1 --node-ip 2001:2::1
	--cluster-cidr 198.18.64.0/18,2001:2:0:100::/56)
"$SVCNAT" --dry-run "${ds_args[@]}" --config "$data" --config "$E2E_TMP/ds.json" \
	>"$E2E_TMP/ds-file.rules" 2>&1 || fail "--dry-run --config (dual-stack): $(cat "$E2E_TMP/ds-file.rules")"
in_ns node "$SVCNAT" --dry-run "${ds_args[@]}" --kubeconfig "$K/kc-token" >"$E2E_TMP/ds-api.rules" 2>&1 ||
	fail "--dry-run --kubeconfig (dual-stack): $(cat "$E2E_TMP/ds-api.rules")"
grep -q '^-A KUBE-SERVICES -d 2001:2:0:f000::10/128 .*ds-shop/web:http cluster IP' "$E2E_TMP/ds-api.rules" ||
	fail "no IPv6 cluster IP rule of ds-shop/web from the API: $(grep 2001 "$E2E_TMP/ds-api.rules" | head -n 5)"
grep -q -- '--to-destination \[2001:2:0:101::20\]:8080' "$E2E_TMP/ds-api.rules" ||
	fail "no IPv6 endpoint of ds-shop/web from the API's IPv6 EndpointSlice"
[ "$(grep -c '^\*nat' "$E2E_TMP/ds-api.rules")" = 2 ] || fail "not both families' nat tables from the API"
diff -u <(grep -v '^#' "$E2E_TMP/ds-file.rules" | grep -v 'legacy-lb') <(grep -v '^#' "$E2E_TMP/ds-api.rules") >&2 ||
	fail "dual-stack --dry-run differs"
"$SVCNAT" --dump-state --hostname node-a --config "$data" --config "$E2E_TMP/ds.json" 2>&1 |
	grep -v '^shop/legacy-lb:' >"$E2E_TMP/ds-file.state" || fail "--dump-state --config (dual-stack)"
in_ns node "$SVCNAT" --dump-state --hostname node-a --kubeconfig "$K/kc-token" >"$E2E_TMP/ds-api.state" 2>&1 ||
	fail "--dump-state --kubeconfig (dual-stack): $(cat "$E2E_TMP/ds-api.state")"
grep -q '^ds-shop/web:http TCP NodePort 198.19.1.10:80,\[2001:2:0:f000::10\]:80 ' "$E2E_TMP/ds-api.state" ||
	fail "--dump-state: ds-shop/web not dual-stack: $(grep ds-shop/web "$E2E_TMP/ds-api.state")"
diff -u "$E2E_TMP/ds-file.state" "$E2E_TMP/ds-api.state" >&2 || fail "dual-stack --dump-state differs"

say "a list of several pages (1,200 services and slices, 500 a page) = through a file"
python3 "$top_srcdir/contrib/bench/gen.py" -n 1200 -m 2 -o "$E2E_TMP/big.json" || fail "gen.py"
kapi_apply "$E2E_TMP/big.json"
l0=$(kapi_stat 's["lists"].get("services", 0)')
"$SVCNAT" --dump-state --hostname node-a --config "$E2E_TMP/big.json" >"$E2E_TMP/big-file.state" 2>&1 ||
	fail "--dump-state --config big: $(tail -n 5 "$E2E_TMP/big-file.state")"
in_ns node "$SVCNAT" --dump-state --hostname node-a --kubeconfig "$K/kc-token" 2>&1 |
	grep '^bench' >"$E2E_TMP/big-api.state" || fail "--dump-state --kubeconfig big"
grep '^bench' "$E2E_TMP/big-file.state" | diff -u - "$E2E_TMP/big-api.state" >&2 ||
	fail "a list of several pages differs from the file"
[ "$(kapi_stat 's["lists"]["services"]')" -ge $((l0 + 3)) ] || fail "not paged: $(kapi_stats)"
[ "$(wc -l <"$E2E_TMP/big-api.state")" -ge 1200 ] || fail "big: $(wc -l <"$E2E_TMP/big-api.state") lines"

say "a wrong kubeconfig: one line naming the file and the field, exit 2"
sed 's/current-context: test/current-context: nope/' "$K/kc-token" >"$K/kc-wrong"
in_ns node "$SVCNAT" --dump-state --kubeconfig "$K/kc-wrong" >"$E2E_TMP/out" 2>&1
rc=$?
[ $rc = 2 ] || fail "wrong kubeconfig: exit $rc: $(cat "$E2E_TMP/out")"
[ "$(cat "$E2E_TMP/out")" = "error: $K/kc-wrong: current-context: context 'nope' is not in contexts" ] ||
	fail "wrong kubeconfig: $(cat "$E2E_TMP/out")"

say "a refused token: the server's 401 in one line, exit 1"
in_ns node "$SVCNAT" --dump-state --kubeconfig "$K/kc-badtoken" >"$E2E_TMP/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "refused token: exit $rc: $(cat "$E2E_TMP/out")"
[ "$(wc -l <"$E2E_TMP/out")" = 1 ] && grep -q "HTTP 401 Unauthorized: the server refused the credentials of $K/kc-badtoken" "$E2E_TMP/out" ||
	fail "refused token: $(cat "$E2E_TMP/out")"
kapi_stop
topo_down
