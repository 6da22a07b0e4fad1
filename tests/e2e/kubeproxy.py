#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What kube-proxy writes, for tests/e2e/kube-proxy-takeover.sh.

    kubeproxy.py rules RULES        kube-proxy's iptables-restore input for
                                    the test's services (addresses moved to
                                    the test ranges), with the jump rules it
                                    puts in the built-in chains and its
                                    canary chains
    kubeproxy.py rules6             what its IPv6 proxier writes beside
                                    them on a dual-stack node with no IPv6
                                    services (its base chains and jumps)
    kubeproxy.py objects            the same services as a v1 List
                                    (Services and EndpointSlices) for svcnat

RULES is tests/data/kube-proxy/overall.rules: kube-proxy's own expected
output of TestOverallIPTablesRules (pkg/proxy/iptables/proxier_test.go).
Before anything is printed, every KUBE-SVC/EXT/FW/SEP name in it is checked
against the services below (transcribed from the same test) with
kube-proxy's hash (servicePortChainName, servicePortEndpointChainName in
proxier.go: base32 of the SHA-256 of port name, protocol and endpoint, 16
characters), so a mistyped transcription fails here.  The addresses are then
moved out of kube-proxy's test ranges into the ones this machine's tests may
put on the wire, and the KUBE-SEP- names, the only ones that depend on an
address, are computed again for the new endpoints, as kube-proxy would.
"""
import base64
import hashlib
import json
import re
import sys

NODE = "test-node"
# kube-proxy's test services (TestOverallIPTablesRules), one port each: p80/TCP/80.
SERVICES = [
    {"ns": "ns1", "name": "svc1", "type": "ClusterIP", "ip": "172.30.0.41",
     "eps": [("10.180.0.1", None)]},
    {"ns": "ns2", "name": "svc2", "type": "LoadBalancer", "ip": "172.30.0.42", "etp": "Local",
     "nodePort": 3001, "lb": ["1.2.3.4"], "ext": ["192.168.99.22"], "hcnp": 30000,
     "eps": [("10.180.0.2", None)]},
    {"ns": "ns3", "name": "svc3", "type": "NodePort", "ip": "172.30.0.43", "nodePort": 3003,
     "eps": [("10.180.0.3", None)]},
    {"ns": "ns4", "name": "svc4", "type": "NodePort", "ip": "172.30.0.44",
     "ext": ["192.168.99.33"], "eps": [("10.180.0.4", None), ("10.180.0.5", NODE)]},
    {"ns": "ns5", "name": "svc5", "type": "LoadBalancer", "ip": "172.30.0.45", "etp": "Cluster",
     "nodePort": 3002, "lb": ["5.6.7.8"], "hcnp": 30000, "ranges": ["203.0.113.0/25"],
     "affinity": 10800, "eps": [("10.180.0.3", None)]},
    {"ns": "ns6", "name": "svc6", "type": "ClusterIP", "ip": "172.30.0.46", "eps": []},
]
CLUSTER_CIDR = "10.0.0.0/8"

# kube-proxy's test ranges -> the test topology's (tests/e2e/lib/topology.sh):
# endpoints become pods on node-a, the cluster CIDR its pod range; cluster,
# external and load-balancer IPs stay off every interface.
MOVE = [
    ("10.180.0.", "198.18.65."),
    ("10.0.0.0/8", "198.18.64.0/18"),
    ("172.30.0.", "198.19.0."),
    ("192.168.99.", "198.19.1."),
    ("1.2.3.4", "198.19.2.4"),
    ("5.6.7.8", "198.19.2.8"),
    ("203.0.113.0/25", "198.19.128.0/25"),
]

# The jump rules kube-proxy keeps in the built-in chains (proxier.go,
# iptablesJumpChains and the KUBE-FIREWALL jumps, each inserted with -I, so
# the last inserted is first), and its canary chains (ipt.Monitor).
BUILTIN = {
    "filter": [
        '-A INPUT -j KUBE-FIREWALL',
        '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
        '-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS',
        '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
        '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
        '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
        '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
        '-A OUTPUT -j KUBE-FIREWALL',
        '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
        '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    ],
    "nat": [
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    ],
}
CANARY = ":KUBE-PROXY-CANARY - [0:0]"

# kube-proxy's IPv6 proxier with no IPv6 service (proxier.go syncProxyRules:
# the base chains declared at every sync, the KUBE-FORWARD, KUBE-MARK-MASQ
# and KUBE-POSTROUTING rules, the tail call to KUBE-NODEPORTS with
# "! -d ::1/128", since localhost node ports never work for IPv6, and no
# localnet rule in KUBE-FIREWALL, which is IPv4's).
RULES6 = """*filter
:KUBE-NODEPORTS - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
*nat
:KUBE-NODEPORTS - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL ! -d ::1/128 -j KUBE-NODEPORTS
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
COMMIT
"""


def chain_hash(port_name, proto, endpoint=""):
    h = hashlib.sha256((port_name + proto + endpoint).encode()).digest()
    return base64.b32encode(h).decode()[:16]


def expected_chains():
    # Every per-service chain kube-proxy's text must hold, by name.
    want = {}
    for s in SERVICES:
        pn = "%s/%s:p80" % (s["ns"], s["name"])
        if not s["eps"]:
            continue
        want["KUBE-SVC-" + chain_hash(pn, "tcp")] = pn
        if s.get("nodePort") or s.get("ext") or s.get("lb"):
            want["KUBE-EXT-" + chain_hash(pn, "tcp")] = pn
        if s.get("ranges"):
            want["KUBE-FW-" + chain_hash(pn, "tcp")] = pn
        for ip, _ in s["eps"]:
            want["KUBE-SEP-" + chain_hash(pn, "tcp", ip + ":80")] = pn
    return want


def die(msg):
    print("kubeproxy.py: " + msg, file=sys.stderr)
    sys.exit(1)


def move_ip(text):
    for old, new in MOVE:
        text = text.replace(old, new)
    return text


def rules(path):
    with open(path) as f:
        text = f.read()
    have = set(re.findall(r"^:(KUBE-(?:SVC|EXT|FW|SEP)-[A-Z0-9]{16}) ", text, re.M))
    want = expected_chains()
    if have != set(want):
        die("%s: chains %s not kube-proxy's hashes of the test's services; expected %s"
            % (path, sorted(have ^ set(want)), sorted(want)))
    # New SEP names for the moved endpoints.
    for s in SERVICES:
        pn = "%s/%s:p80" % (s["ns"], s["name"])
        for ip, _ in s["eps"]:
            old = "KUBE-SEP-" + chain_hash(pn, "tcp", ip + ":80")
            new = "KUBE-SEP-" + chain_hash(pn, "tcp", move_ip(ip) + ":80")
            text = text.replace(old, new)
    text = move_ip(text)
    sys.stdout.write(with_builtins(text))


def with_builtins(text):
    out, table = [], None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if line == "COMMIT":
            out.extend(BUILTIN.get(table, []))
        out.append(line)
        if line.startswith("*"):
            table = line[1:]
            out.append(CANARY)
    out += ["*mangle", CANARY, "COMMIT"]
    return "\n".join(out) + "\n"


def objects():
    items = []
    for s in SERVICES:
        port = {"name": "p80", "protocol": "TCP", "port": 80, "targetPort": 80}
        if s.get("nodePort"):
            port["nodePort"] = s["nodePort"]
        spec = {"type": s["type"], "clusterIP": move_ip(s["ip"]), "ports": [port]}
        if s.get("etp"):
            spec["externalTrafficPolicy"] = s["etp"]
        if s.get("ext"):
            spec["externalIPs"] = [move_ip(x) for x in s["ext"]]
        if s.get("hcnp"):
            spec["healthCheckNodePort"] = s["hcnp"]
        if s.get("ranges"):
            spec["loadBalancerSourceRanges"] = [move_ip(x) for x in s["ranges"]]
        if s.get("affinity"):
            spec["sessionAffinity"] = "ClientIP"
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": s["affinity"]}}
        status = {}
        if s.get("lb"):
            status = {"loadBalancer": {"ingress": [{"ip": move_ip(x)} for x in s["lb"]]}}
        items.append({"apiVersion": "v1", "kind": "Service",
                      "metadata": {"namespace": s["ns"], "name": s["name"]},
                      "spec": spec, "status": status})
        if not s["eps"]:
            continue
        eps = []
        for ip, node in s["eps"]:
            ep = {"addresses": [move_ip(ip)], "conditions": {"ready": True}}
            if node:
                ep["nodeName"] = node
            eps.append(ep)
        items.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                      "metadata": {"namespace": s["ns"], "name": s["name"] + "-1",
                                   "labels": {"kubernetes.io/service-name": s["name"]}},
                      "addressType": "IPv4", "endpoints": eps,
                      "ports": [{"name": "p80", "protocol": "TCP", "port": 80}]})
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout, indent=1)
    sys.stdout.write("\n")


def main():
    a = sys.argv[1:]
    if a[:1] == ["rules"] and len(a) == 2:
        rules(a[1])
    elif a == ["rules6"]:
        sys.stdout.write(with_builtins(RULES6))
    elif a == ["objects"]:
        objects()
    else:
        die("usage: kubeproxy.py rules RULES | rules6 | objects")


if __name__ == "__main__":
    main()
