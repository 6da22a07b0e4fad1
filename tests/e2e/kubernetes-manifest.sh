#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# contrib/kubernetes/ cannot drift from the binary:
#  - svcnat.yaml deploys svcnat as kube-proxy is deployed (manifest.py check);
#  - the Dockerfile's runtime stage installs every library the binary links,
#    its build stage every library configure needs (manifest.py image);
#  - the ConfigMap, laid out as kubelet lays it out (0777 volume root,
#    ..data symlinks), and the container's command, unchanged but for the
#    mount points, the binary's path and the API server's address: the
#    service account's token and CA as kubelet mounts them too; the command
#    passes --dry-run, then runs as the daemon against the project's API
#    server (tests/kubeapi/kubeapi.py): the first sync programs the
#    served Service and a client reaches its endpoint through it;
#  - every request the daemon made is allowed by system:node-proxier (the
#    role the manifest binds), read from the server's own record of the
#    (verb, resource) of each request.
# No real kube-apiserver or container runtime is involved.
. "$(dirname "$0")/lib/topology.sh"
. "$(dirname "$0")/lib/kubeapi.sh"
e2e_init kubernetes-manifest
kapi_need
e2e_need_svcnat

PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" -c 'import yaml' 2>/dev/null || e2e_skip "needs python3-yaml"
for t in readelf dpkg pkg-config; do
	command -v "$t" >/dev/null || e2e_skip "needs $t"
done
MF=$top_srcdir/tests/e2e/manifest.py
M=$top_srcdir/contrib/kubernetes/svcnat.yaml
DAEMON=

wait_for_context() { echo "; daemon log: $(tail -n 20 "$E2E_TMP/daemon.log" 2>/dev/null)"; }

say "the DaemonSet, ServiceAccount, binding and ConfigMap are kube-proxy's shape"
"$PY" "$MF" check "$M" || fail "manifest check"

say "the image installs every library the binary and the build need"
"$PY" "$MF" image "$top_srcdir/contrib/kubernetes/Dockerfile" "$SVCNAT" "$top_srcdir/configure.ac" ||
	fail "image check"

topo_up
topo_add_pod a1 198.18.65.10
start_servers 8080
kapi_certs "$E2E_TMP/kapi"
kapi_start node

ROOT=$E2E_TMP/root
"$PY" "$MF" sa "$ROOT" "$E2E_TMP/kapi/ca.crt" "$E2E_TMP/kapi/token" || fail "service account volume"
"$PY" "$MF" render "$M" "$ROOT" "https://$KAPI_ADDR" "$E2E_HOSTNAME" "$SVCNAT" >"$E2E_TMP/cmd" ||
	fail "render"
mapfile -d '' cmd <"$E2E_TMP/cmd"

ports='[{"name":"http","protocol":"TCP","port":8080}]'
k8s_list "$(k8s_service e2e web '"type":"ClusterIP","clusterIP":"198.19.0.10","ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080}]')" \
	"$(k8s_slice e2e web "$ports" "198.18.65.10@$E2E_HOSTNAME")" \
	'{"apiVersion":"v1","kind":"Node","metadata":{"name":"'"$E2E_HOSTNAME"'"},"status":{"addresses":[{"type":"InternalIP","address":"'"$E2E_NODE_IP"'"}]}}' \
	>"$E2E_TMP/objects.json"
kapi_apply "$E2E_TMP/objects.json"

say "the container's command with --dry-run: the served Service is planned"
in_ns node "${cmd[@]}" --dry-run >"$E2E_TMP/dry.rules" 2>"$E2E_TMP/dry.err" ||
	fail "--dry-run exited $?: $(cat "$E2E_TMP/dry.err")"
grep -q -- '-A KUBE-SERVICES -d 198.19.0.10/32 .*--dport 80 .*-j KUBE-SVC-' "$E2E_TMP/dry.rules" ||
	fail "--dry-run does not plan e2e/web: $(head -c 2000 "$E2E_TMP/dry.rules")"

say "the container's command as the daemon: first sync, then traffic"
: >"$E2E_TMP/daemon.log"
ip netns exec "$(ns_name node)" timeout --kill-after=10 300 "${cmd[@]}" \
	</dev/null >>"$E2E_TMP/daemon.log" 2>&1 &
DAEMON=$!
E2E_BG_PIDS+=("$DAEMON")
healthy() { in_ns node curl -sf --max-time 3 http://127.0.0.1:10256/healthz >/dev/null; }
wait_for 60 "the daemon's /healthz answers 200" healthy
reached() {
	in_ns podclient "$NAMESRV" client --addr 198.19.0.10 --port 80 --count 5 --timeout-ms 1000 \
		>"$E2E_TMP/poll" 2>&1 && ! grep -qv '^ok a1' "$E2E_TMP/poll"
}
wait_for 30 "198.19.0.10:80 answered by a1" reached
kill -TERM "$DAEMON" 2>/dev/null
wait "$DAEMON" 2>/dev/null
DAEMON=

say "every request fits system:node-proxier"
kapi_stats >"$E2E_TMP/stats.json" || fail "kubeapi stats"
"$PY" "$MF" rbac "$E2E_TMP/stats.json" || fail "rbac check"
grep -q '"watch endpointslices"' "$E2E_TMP/stats.json" ||
	fail "the daemon never watched EndpointSlices: $(cat "$E2E_TMP/stats.json")"
kapi_stop
topo_down
