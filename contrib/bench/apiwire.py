#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The API source's two wires through the real client: the same N services x
M endpoints served by the project's API server (tests/kubeapi/kubeapi.py),
read by svcnat with --kube-api-content-type protobuf and json.

In a network namespace of its own:
  1. lists: `svcnat --dump-state --kubeconfig` (list, decode, merge; no
     kernel) per wire, wall time (the least of --reps runs), and the body
     bytes the server sent for the lists (its /stats "bytes");
  2. watch events: a daemon per wire; --events EndpointSlices change (one
     endpoint moves each), the bytes per watch event the server sent and
     the time from the change to the daemon's commit log line.
Run as root from a build directory (optimised, no sanitizers):
    sudo python3 contrib/bench/apiwire.py [-n 2000] [-m 10] [--reps 3] [--events 20]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import api  # noqa: E402
import gen  # noqa: E402

WIRES = (("protobuf", "application/vnd.kubernetes.protobuf"), ("json", "application/json"))


def stats(b):
    return json.loads(b.ctl("/stats"))


def delta(s1, s0, wire, kind):
    return (s1["bytes"].get(wire, {}).get(kind, 0) - s0["bytes"].get(wire, {}).get(kind, 0),
            s1["events"].get(wire, 0) - s0["events"].get(wire, 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--services", type=int, default=2000)
    ap.add_argument("-m", "--endpoints", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--backend", default="direct")
    ap.add_argument("--builddir", default=".")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespace, netfilter)")
    b = api.Bench(a)
    res = {"lists": {}, "watch": {}}
    try:
        b.certs()
        data = os.path.join(b.work, "objects.json")
        lst = gen.build(a.services, a.endpoints)
        with open(data, "w") as f:
            json.dump(lst, f)
        b.server(data)
        objs = len(lst["items"])
        for wire, ct in WIRES:
            walls = []
            for _ in range(a.reps):
                s0 = stats(b)
                wall, mib, rc, err = b.timed([b.svcnat, "--dump-state", "--kubeconfig", b.kc,
                                              "--kube-api-content-type", ct] + b.node_args())
                if rc != 0:
                    raise SystemExit("--dump-state (%s): %s" % (wire, err[-2000:]))
                s1 = stats(b)
                walls.append(wall)
                nbytes, _ = delta(s1, s0, wire, "list")
            res["lists"][wire] = {"bytes": nbytes, "per_object": nbytes / objs,
                                  "wall_s": min(walls), "rss_mib": mib}
        slices = [i for i in lst["items"] if i.get("kind") == "EndpointSlice"]
        for wi, (wire, ct) in enumerate(WIRES):
            b.sh(b.svcnat, "--cleanup", "--backend", a.backend, check=False)
            log = os.path.join(b.work, "daemon-%s.log" % wire)
            p = b.daemon(["--kubeconfig", b.kc, "--kube-api-content-type", ct, "--v=2"], log)
            _, pos = api.wait_line(log, r"sync \(initial\)", 0, 900)
            s0 = stats(b)
            lat = []
            for k in range(a.events):
                sl = json.loads(json.dumps(slices[k % len(slices)]))
                # each wire's changes move to addresses of its own: a change each time
                sl["endpoints"][0]["addresses"] = ["198.18.127.%d" % (10 + 100 * wi + k % 100)]
                ev = os.path.join(b.work, "event.json")
                with open(ev, "w") as f:
                    json.dump(sl, f)
                time.sleep(1.2)  # past --min-sync-period: each change syncs alone
                t0 = time.monotonic()
                b.ctl("/apply", ev)
                _, pos = api.wait_line(log, r"sync \(change\)", pos, 120)
                lat.append(time.monotonic() - t0)
            s1 = stats(b)
            nbytes, nev = delta(s1, s0, wire, "watch")
            res["watch"][wire] = {"bytes": nbytes, "events": nev,
                                  "per_event": nbytes / nev if nev else float("nan"),
                                  "change_to_commit_s": sorted(lat)[len(lat) // 2]}
            p.terminate()
            p.wait(timeout=30)
    finally:
        b.cleanup()
    report(a, res, objs)


def report(a, r, objs):
    print("## The API source's wires: %d services x %d endpoints (%d objects), load %.1f" %
          (a.services, a.endpoints, objs, os.getloadavg()[0]))
    print()
    print("| | protobuf | JSON | JSON/protobuf |")
    print("|---|---|---|---|")
    lp, lj = r["lists"]["protobuf"], r["lists"]["json"]
    print("| list bytes (all pages) | %d | %d | %.2fx |" % (lp["bytes"], lj["bytes"],
                                                          lj["bytes"] / lp["bytes"]))
    print("| list bytes per object | %.0f | %.0f | |" % (lp["per_object"], lj["per_object"]))
    print("| --dump-state wall (least of %d) | %.3f s | %.3f s | %.2fx |" % (
        a.reps, lp["wall_s"], lj["wall_s"], lj["wall_s"] / lp["wall_s"]))
    print("| --dump-state peak RSS | %.1f MiB | %.1f MiB | |" % (lp["rss_mib"], lj["rss_mib"]))
    wp, wj = r["watch"]["protobuf"], r["watch"]["json"]
    print("| watch bytes per event (%d / %d events) | %.0f | %.0f | %.2fx |" % (
        wp["events"], wj["events"], wp["per_event"], wj["per_event"],
        wj["per_event"] / wp["per_event"]))
    print("| change to commit (median) | %.3f s | %.3f s | |" % (
        wp["change_to_commit_s"], wj["change_to_commit_s"]))


if __name__ == "__main__":
    main()
