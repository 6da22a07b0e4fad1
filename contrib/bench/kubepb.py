#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Bytes and decode time of the API source's two wires (contrib/bench/kubepb.c):
a list of N EndpointSlices of E endpoints, a list of N Services, and a watch
stream of N Service events, each written in JSON and in protobuf (by
tests/kubeapi/kubepb.py).  Usage: kubepb.py BUILDDIR [N] [E] [ITERATIONS]"""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "kubeapi"))
import kubepb  # noqa: E402


def service(i):
    return {"metadata": {"namespace": "bench", "name": f"svc-{i}", "resourceVersion": str(10 + i),
                         "labels": {"app": f"svc-{i}"}},
            "spec": {"type": "ClusterIP", "clusterIP": f"198.19.{i // 250}.{i % 250 + 1}",
                     "clusterIPs": [f"198.19.{i // 250}.{i % 250 + 1}"],
                     "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                     "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                     "ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                "targetPort": 8080}]}}


def slice_(i, e):
    return {"metadata": {"namespace": "bench", "name": f"svc-{i}-abcde",
                         "resourceVersion": str(10 + i),
                         "labels": {"kubernetes.io/service-name": f"svc-{i}",
                                    "endpointslice.kubernetes.io/managed-by":
                                    "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "protocol": "TCP", "port": 8080}],
            "endpoints": [{"addresses": [f"198.18.{(i * e + k) // 250 % 250}.{(i * e + k) % 250 + 1}"],
                           "conditions": {"ready": True, "serving": True, "terminating": False},
                           "nodeName": f"node-{k % 50}", "zone": f"zone-{k % 3}",
                           "targetRef": {"kind": "Pod", "namespace": "bench",
                                         "name": f"svc-{i}-pod-{k}"}}
                          for k in range(e)]}


def main():
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    e = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    iters = sys.argv[4] if len(sys.argv) > 4 else "10"
    binary = os.path.join(build, "contrib", "bench", "kubepb")
    with tempfile.TemporaryDirectory() as d:
        cases = []
        for kind, objs in (("EndpointSlice", [slice_(i, e) for i in range(n)]),
                           ("Service", [service(i) for i in range(n)])):
            av = kubepb.API_VERSION[kind + "List"]
            j = os.path.join(d, kind + ".json")
            with open(j, "w") as f:
                json.dump({"kind": kind + "List", "apiVersion": av,
                           "metadata": {"resourceVersion": "1"}, "items": objs}, f,
                          separators=(",", ":"))
            p = os.path.join(d, kind + ".pb")
            with open(p, "wb") as f:
                f.write(kubepb.encode_list(kind, objs))
            cases.append(("list", f"{n} {kind}s" + (f" x {e} endpoints" if kind == "EndpointSlice" else ""), j, p))
        j, p = os.path.join(d, "watch.json"), os.path.join(d, "watch.pb")
        with open(j, "w") as fj, open(p, "wb") as fp:
            for i in range(n):
                o = dict(service(i), kind="Service", apiVersion="v1")
                fj.write(json.dumps({"type": "ADDED", "object": o}, separators=(",", ":")) + "\n")
                fp.write(kubepb.encode_watch_frame("ADDED", o))
        cases.append(("watch", f"{n} Service ADDED events", j, p))
        for mode, what, j, p in cases:
            print(f"== {what}")
            sys.stdout.flush()
            subprocess.run([binary, mode, j, p, iters], check=True)


if __name__ == "__main__":
    main()
