#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Generate a Kubernetes List (Services + EndpointSlices) of N services x M
endpoints, as `kubectl get services,endpointslices -A -o json` prints it.

The mix: ClusterIP; about 1 in 4 NodePort; 1 in 100 LoadBalancer with
loadBalancerSourceRanges and an ingress IP; 1 in 100 with ClientIP session
affinity (--affinity-every); 1 in 8 with two ports (http and https); 1 in 20 endpoints on this
node (node-a), the rest on other nodes.  Addresses follow svcnat's address
plan (198.18.0.0/15 only): cluster IPs in 198.19.0.0/16, endpoints in
198.18.64.0/18, LB IPs in 198.18.200.0/24.

Variants for sync benchmarks:
  --change endpoint   service 0's first endpoint moves to another address
  --change add        one more service (N+1 services)
  --change all        every endpoint moves (every KUBE-SEP chain is new,
                      every KUBE-SVC chain changes)
  --change endpoint,add   both of these (comma-separated)

For the data path, --target-ips A,B,... makes endpoint e of every service
use address A, B, ... in turn (the benchmark's real backends), so any
service reaches them.

--family ipv6 turns every address into IPv6 (2001:2::/48 only: the IPv4
address in the low 32 bits, 198.19.0.1 -> 2001:2::c613:1, a /N range ->
/96+N); --family dual makes every service dual-stack (PreferDualStack: both
cluster IPs, LB ingress IPs and source ranges, an IPv4 and an IPv6
EndpointSlice).  For those runs the node is 2001:2::c612:1 and the cluster
CIDR 2001:2::c612:4000/114 (198.18.0.1 and 198.18.64.0/18 mapped).

Importable: build(n, m, change, target_ips) returns the List as a dict.
"""
import argparse
import ipaddress
import json
import sys

CLUSTER_NET = ipaddress.ip_network("198.19.0.0/16")
POD_NET = ipaddress.ip_network("198.18.64.0/18")
LB_NET = ipaddress.ip_network("198.18.200.0/24")


def cluster_ip(i):
    return str(CLUSTER_NET.network_address + 1 + i)


def pod_ip(n):
    return str(POD_NET.network_address + 1 + (n % (POD_NET.num_addresses - 2)))


AFFINITY_EVERY = 100  # 1 in AFFINITY_EVERY services has ClientIP affinity (0: none)


def service(i, n_endpoints, shift=0, target_ips=None):
    name = "svc-%05d" % i
    ports = [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]
    if i % 8 == 7:
        ports.append({"name": "https", "protocol": "TCP", "port": 443, "targetPort": 8443})
    spec = {"type": "ClusterIP", "clusterIP": cluster_ip(i), "clusterIPs": [cluster_ip(i)],
            "ports": ports, "sessionAffinity": "None",
            "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"]}
    status = {"loadBalancer": {}}
    if i % 100 == 99:
        spec["type"] = "LoadBalancer"
        spec["loadBalancerSourceRanges"] = ["198.18.1.0/25"]
        status = {"loadBalancer": {"ingress": [{"ip": str(LB_NET.network_address + 1 + (i // 100) % 250)}]}}
    elif i % 4 == 3:
        spec["type"] = "NodePort"
    if spec["type"] != "ClusterIP":
        spec["externalTrafficPolicy"] = "Cluster"
        for k, p in enumerate(ports):
            p["nodePort"] = 30000 + (2 * i + k) % 2768
    if AFFINITY_EVERY and i % AFFINITY_EVERY == AFFINITY_EVERY // 2:
        spec["sessionAffinity"] = "ClientIP"
        spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "bench", "uid": "svc-uid-%d" % i,
                        "resourceVersion": str(1000 + i)},
           "spec": spec, "status": status}
    eps = []
    for e in range(n_endpoints):
        if target_ips:
            addr = target_ips[e % len(target_ips)]
        else:
            addr = pod_ip(i * n_endpoints + e + shift)
        eps.append({"addresses": [addr],
                    "conditions": {"ready": True, "serving": True, "terminating": False},
                    "nodeName": "node-a" if (i + e) % 20 == 0 else "node-%d" % (2 + (i + e) % 50),
                    "zone": "zone-a"})
    slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
              "metadata": {"name": name + "-abcde", "namespace": "bench",
                           "labels": {"kubernetes.io/service-name": name,
                                      "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
              "addressType": "IPv4", "endpoints": eps,
              "ports": [{"name": p["name"], "protocol": "TCP", "port": p["targetPort"]} for p in ports]}
    return svc, slice_


def items(n_services, n_endpoints, change="none", target_ips=None):
    """The List's items, one Service then its EndpointSlice, per service."""
    changes = set(change.split(","))
    n = n_services + (1 if "add" in changes else 0)
    # Moving every endpoint by one service's worth of addresses keeps the
    # addresses of one service distinct and changes every one of them.
    shift = n_endpoints if "all" in changes else 0
    for i in range(n):
        svc, sl = service(i, n_endpoints, shift, target_ips)
        if "endpoint" in changes and i == 0:
            sl["endpoints"][0]["addresses"] = ["198.18.127.250"]
        yield svc
        yield sl


def build(n_services, n_endpoints, change="none", target_ips=None):
    """The List for n_services x n_endpoints with the given change."""
    return {"apiVersion": "v1", "kind": "List",
            "items": list(items(n_services, n_endpoints, change, target_ips)),
            "metadata": {"resourceVersion": ""}}


def v6(a):
    """An IPv4 address or CIDR mapped into 2001:2::/48 (low 32 bits)."""
    if "/" in a:
        net = ipaddress.ip_network(a)
        return "%s/%d" % (v6(str(net.network_address)), 96 + net.prefixlen)
    return str(ipaddress.IPv6Address((0x20010002 << 96) | int(ipaddress.IPv4Address(a))))


def to_family(item, family):
    """The item as an IPv6-only or a dual-stack object (a list of items)."""
    if family == "ipv4":
        return [item]
    if item["kind"] == "EndpointSlice":
        s6 = json.loads(json.dumps(item))
        s6["addressType"] = "IPv6"
        for e in s6["endpoints"]:
            e["addresses"] = [v6(x) for x in e["addresses"]]
        if family == "ipv6":
            return [s6]
        s6["metadata"]["name"] += "-v6"
        return [item, s6]
    spec, st = item["spec"], item["status"].get("loadBalancer", {})
    if family == "ipv6":
        spec["clusterIP"] = v6(spec["clusterIP"])
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec["ipFamilies"] = ["IPv6"]
        spec.get("loadBalancerSourceRanges", []) and spec.update(
            loadBalancerSourceRanges=[v6(x) for x in spec["loadBalancerSourceRanges"]])
        for ing in st.get("ingress", []):
            ing["ip"] = v6(ing["ip"])
    else:
        spec["clusterIPs"] = [spec["clusterIP"], v6(spec["clusterIP"])]
        spec["ipFamilies"] = ["IPv4", "IPv6"]
        spec["ipFamilyPolicy"] = "PreferDualStack"
        if "loadBalancerSourceRanges" in spec:
            spec["loadBalancerSourceRanges"] += [v6(x) for x in spec["loadBalancerSourceRanges"]]
        if st.get("ingress"):
            st["ingress"] += [{"ip": v6(ing["ip"])} for ing in st["ingress"]]
    return [item]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--services", type=int, required=True)
    ap.add_argument("-m", "--endpoints", type=int, default=10)
    ap.add_argument("--change", default="none", help="none, endpoint, add, all, or a comma-separated mix")
    ap.add_argument("--target-ips", default="",
                    help="comma-separated endpoint addresses used by every service (data path)")
    ap.add_argument("--affinity-every", type=int, default=AFFINITY_EVERY,
                    help="1 in K services has ClientIP affinity (default 100; 0: none)")
    ap.add_argument("--family", default="ipv4", choices=["ipv4", "ipv6", "dual"],
                    help="ipv4 (default), ipv6 (every address IPv6) or dual (dual-stack services)")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    if a.affinity_every < 0:
        ap.error("--affinity-every must be >= 0")
    globals()["AFFINITY_EVERY"] = a.affinity_every
    if a.services < 1 or a.endpoints < 1:
        ap.error("--services and --endpoints must be at least 1")
    if not set(a.change.split(",")) <= {"none", "endpoint", "add", "all"}:
        ap.error("--change: none, endpoint, add, all, or a comma-separated mix")
    target_ips = [ip.strip() for ip in a.target_ips.split(",") if ip.strip()]
    for ip in target_ips:
        ipaddress.IPv4Address(ip)
    out = sys.stdout if a.output == "-" else open(a.output, "w")
    # Streamed item by item: json.dumps of one small object is fast (C),
    # json.dump of the whole List is not, and 20,000 x 50 is 1M endpoints.
    out.write('{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[')
    k = 0
    for item in items(a.services, a.endpoints, a.change, target_ips or None):
        for it in to_family(item, a.family):
            if k:
                out.write(",")
            out.write(json.dumps(it, separators=(",", ":")))
            k += 1
    out.write("]}\n")
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
