#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The config churn of tests/e2e/soak-shared-node.sh.

Writes FILE (by rename) as a Kubernetes List of N services from
contrib/bench/gen.py (its mix of ClusterIP, NodePort, LoadBalancer,
affinity, two-port services), each with two endpoints taken from the
real pods PODS, then changes it every INTERVAL seconds until STOPFILE
exists or STEPS changes were written:

  - a window of 50 services (moving by 50 each step) and services 3 and 5
    (the traffic's NodePort and ClusterIP) rotate their two endpoints
    among the pods, so every endpoint stays a live server;
  - 5 extra services (N..N+4) come and go;
  - soak/udp-churn (198.19.100.2:53/UDP) has one endpoint, a different pod
    each step (svcnat deletes the old endpoint's conntrack entries);
  - soak/udp-stable (198.19.100.1:53/UDP) never changes.

Prints "step K" (flushed) after each file is in place; --once writes
step K only.
"""
import argparse
import json
import os
import sys
import time

ROTATE = 50
EXTRA = 5


def udp_service(name, ip, pods):
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "soak"},
           "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip],
                    "ports": [{"name": "dns", "protocol": "UDP", "port": 53,
                               "targetPort": 8080}]}}
    sl = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
          "metadata": {"name": name + "-x", "namespace": "soak",
                       "labels": {"kubernetes.io/service-name": name}},
          "addressType": "IPv4",
          "ports": [{"name": "dns", "protocol": "UDP", "port": 8080}],
          "endpoints": [{"addresses": [p], "nodeName": "node-a",
                         "conditions": {"ready": True}} for p in pods]}
    return [svc, sl]


def rotation(i, step, n):
    """How often service i's endpoints have rotated by step: the window
    of step s (1, 2, ...) covers services (s - 1) % (n / 50) * 50 on."""
    if i in (3, 5):
        return step
    laps = n // ROTATE
    w = (i // ROTATE) % laps
    return 0 if step <= w else (step - 1 - w) // laps + 1


def build(gen, n, step, pods):
    out = []
    for i in range(n + EXTRA):
        if i >= n and (step + i) % 3 == 0:
            continue
        r = rotation(i, step, n) % len(pods)
        targets = pods[r:] + pods[:r]
        out.extend(gen.service(i, 2, 0, targets))
    out += udp_service("udp-stable", "198.19.100.1", [pods[0], pods[-1]])
    out += udp_service("udp-churn", "198.19.100.2", [pods[step % len(pods)]])
    return out


def write(path, items):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write('{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[')
        f.write(",".join(json.dumps(x, separators=(",", ":")) for x in items))
        f.write("]}\n")
    os.rename(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="contrib/bench (gen.py's directory)")
    ap.add_argument("--services", type=int, default=2000)
    ap.add_argument("--pods", required=True, help="comma-separated endpoint addresses")
    ap.add_argument("--interval", type=float, default=0.7)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--stop", default="")
    ap.add_argument("--once", type=int, default=-1, help="write step K only")
    ap.add_argument("file")
    a = ap.parse_args()
    sys.path.insert(0, a.bench)
    import gen  # noqa: E402
    pods = a.pods.split(",")
    if a.services % ROTATE:
        ap.error("--services must be a multiple of %d" % ROTATE)
    if a.once >= 0:
        write(a.file, build(gen, a.services, a.once, pods))
        return
    for step in range(1, a.steps + 1):
        time.sleep(a.interval)
        if a.stop and os.path.exists(a.stop):
            break
        write(a.file, build(gen, a.services, step, pods))
        print("step %d" % step, flush=True)


if __name__ == "__main__":
    main()
