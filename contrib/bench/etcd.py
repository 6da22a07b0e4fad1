#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The etcd source's benchmark (issue 18): one watch event to commit.

In a network namespace of its own (nothing touches the host's network or
tables), a one-member etcd on 198.18.250.1 (on the namespace's
loopback):
  1. N services x M endpoints (gen.py) written by `svcnat etcd-load`;
  2. for each --backend: `svcnat --etcd-endpoints ... -v` as a daemon, its
     first sync awaited; then --events times one EndpointSlice is put with
     one endpoint moved (through etcd's JSON gateway, one kept-alive
     connection, from a helper inside the namespace), past
     --min-sync-period after the last commit ("spaced": no wait for the
     period) and as soon as it is logged ("at once": the event waits for the
     period, the goal's bound --min-sync-period + the sync); the time
     from the put's response to the daemon's commit log line (wall), the
     daemon's own "change to commit" and "took" figures and its -v
     'sync parts' line, medians printed.

Run as root from a build directory (optimised, no sanitizers):
    sudo python3 contrib/bench/etcd.py --builddir . [-n 10000] [-m 10] [--events 5]
Bounded: --timeout seconds in all (default 1200); cleans up (processes,
namespace, temporary files) on exit, on failure and on Ctrl-C/SIGTERM.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
from run import PARTS, daemon_parts  # noqa: E402

ETCD_IP = "198.18.250.1"
URL = "http://%s:2379" % ETCD_IP
PREFIX = "/registry"

# Runs inside the namespace: one line "KEY<TAB>FILE" a put; answers
# "T0 T1" (CLOCK_MONOTONIC before the request and after its response).
PUTTER = r"""
import base64, http.client, json, sys, time
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=30)
b = lambda s: base64.b64encode(s).decode()
for line in sys.stdin:
    key, path = line.rstrip("\n").split("\t")
    with open(path, "rb") as f:
        body = json.dumps({"key": b(key.encode()), "value": b(f.read())})
    t0 = time.monotonic()
    c.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    t1 = time.monotonic()
    if r.status != 200 or b"error" in data:
        print("ERR %d %s" % (r.status, data[:200]), flush=True)
    else:
        print("%.6f %.6f" % (t0, t1), flush=True)
"""


class Bench:
    def __init__(self, a):
        self.a = a
        self.ns = "svcnat-bench-etcd-%d" % os.getpid()
        self.work = tempfile.mkdtemp(prefix="svcnat-bench-etcd.")
        self.svcnat = os.path.join(os.path.abspath(a.builddir), "svcnat")
        self.procs = []
        self.nsmade = False

    def setup(self):
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        self.nsmade = True
        self.sh("ip", "link", "set", "lo", "up")
        self.sh("ip", "addr", "add", ETCD_IP + "/32", "dev", "lo")

    def cleanup(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.nsmade:
            subprocess.run(["ip", "netns", "del", self.ns], check=False)
        shutil.rmtree(self.work, ignore_errors=True)

    def inns(self, cmd):
        return ["ip", "netns", "exec", self.ns] + cmd

    def private(self, cmd):
        """cmd with a private xtables lock (a file of ours bind-mounted over
        /run/xtables.lock in a mount namespace of its own, as runin -l does):
        no waiting for the host's iptables users, nor holding their lock."""
        lock = os.path.join(self.work, "xtables.lock")
        open(lock, "a").close()
        open("/run/xtables.lock", "a").close()  # a bind mount needs the target
        return ["unshare", "-m", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /run/xtables.lock && exec "$@"', lock] + cmd

    def sh(self, *cmd, check=True, timeout=600):
        return subprocess.run(self.inns(list(cmd)), check=check, capture_output=True,
                              text=True, timeout=timeout)

    def spawn(self, cmd, log, **kw):
        f = open(log, "w")
        p = subprocess.Popen(self.inns(cmd), stdout=f, stderr=f,
                             env=dict(os.environ, SVCNAT_NO_REEXEC="1"), **kw)
        self.procs.append(p)
        return p

    def etcd(self):
        d = os.path.join(self.work, "etcd")
        peer = "http://%s:2380" % ETCD_IP
        p = self.spawn(["etcd", "--name", "m1", "--data-dir", d,
                        "--listen-client-urls", URL, "--advertise-client-urls", URL,
                        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                        "--initial-cluster", "m1=" + peer, "--initial-cluster-state", "new",
                        "--initial-cluster-token", self.ns],
                       os.path.join(self.work, "etcd.log"), stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise SystemExit("etcd exited: see %s" % os.path.join(self.work, "etcd.log"))
            r = self.sh("curl", "-sf", "--max-time", "3", URL + "/health", check=False)
            if '"health":"true"' in r.stdout:
                return
            time.sleep(0.2)
        raise SystemExit("etcd not healthy within 60 s")

    def putter(self):
        p = subprocess.Popen(self.inns([sys.executable, "-c", PUTTER, ETCD_IP, "2379"]),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def node_args(self, backend):
        return ["--hostname", "node-a", "--node-ip", "198.18.0.1",
                "--cluster-cidr", "198.18.64.0/18", "--backend", backend]


def wait_line(path, pattern, start, timeout):
    rx = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            f.seek(start)
            while True:
                line = f.readline()
                if not line.endswith("\n"):
                    break
                m = rx.search(line)
                if m:
                    return m, f.tell(), time.monotonic()
        time.sleep(0.002)
    raise SystemExit("no line matching %r in %s within %d s" % (pattern, path, timeout))


def dur_ms(text):
    m = re.match(r"([0-9.]+)(µs|us|ms|s)$", text)
    if not m:
        return float("nan")
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u in ("µs", "us") else v if u == "ms" else v * 1000


def seconds(text):
    m = re.match(r"([0-9.]+)(ms|s)$", text)
    if not m:
        raise SystemExit("--min-sync-period: give e.g. 1s or 500ms")
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


def run_backend(b, backend, lst, res):
    a = b.a
    b.sh(*b.private([b.svcnat, "--cleanup", "--backend", backend]), check=False)
    log = os.path.join(b.work, "daemon-%s.log" % backend)
    t0 = time.monotonic()
    p = b.spawn(b.private([b.svcnat, "-v"] + b.node_args(backend) +
                          ["--etcd-endpoints", URL, "--min-sync-period", a.min_sync_period,
                           "--sync-period", "1h", "--healthz-bind-address", "",
                           "--metrics-bind-address", ""]), log)
    m, pos, t1 = wait_line(log, r"sync \(initial\).*took ([^,\s]+)", 0, 900)
    out = {"start_to_first_sync_s": t1 - t0, "first_sync_ms": dur_ms(m.group(1)), "events": []}
    put = b.putter()
    slice0 = lst["items"][1]
    key = "%s/services/endpointslices/%s/%s" % (PREFIX, slice0["metadata"]["namespace"],
                                               slice0["metadata"]["name"])
    spaced = seconds(a.min_sync_period) + 0.3
    # "spaced": past --min-sync-period, the sync may run at once; "at once":
    # put as soon as the previous commit is logged, the event waits for the
    # period (the goal's bound: --min-sync-period + the sync).
    plan = [("spaced", spaced)] * a.events + [("at once", 0.0)] * a.events
    for k, (mode, gap) in enumerate(plan):
        sl = json.loads(json.dumps(slice0))
        sl["endpoints"][0]["addresses"] = ["198.18.127.%d" % (200 + k % 50)]
        ev = os.path.join(b.work, "event.json")
        with open(ev, "w") as f:
            json.dump(sl, f)
        time.sleep(gap if k else spaced)
        put.stdin.write("%s\t%s\n" % (key, ev))
        put.stdin.flush()
        ans = put.stdout.readline().split()
        if len(ans) != 2 or ans[0] == "ERR":
            raise SystemExit("put failed: %s" % " ".join(ans))
        p0, p1 = float(ans[0]), float(ans[1])
        m, pos, tl = wait_line(log, r"sync \(change\).*took (\S+), change to commit (\S+)",
                               pos, 120)
        out["events"].append({"mode": mode, "put_ms": (p1 - p0) * 1000,
                              "put_to_commit_ms": (tl - p1) * 1000,
                              "change_to_commit_ms": dur_ms(m.group(2)),
                              "sync_ms": dur_ms(m.group(1))})
    put.stdin.close()
    put.wait(timeout=10)
    p.terminate()
    p.wait(timeout=60)
    out["parts"] = daemon_parts(log)
    res["backends"][backend] = out


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def report(r):
    print("## etcd source: one watch event to commit, %d services x %d endpoints"
          % (r["services"], r["endpoints_per"]))
    print()
    print("Machine: %d CPUs, load average %.1f %.1f %.1f at the start, %.1f at the end "
          "(shared and loaded: read the order, not the digits). One-member etcd %s in a "
          "namespace; `svcnat etcd-load` of the %d objects took %.1f s."
          % ((r["cpus"],) + tuple(r["load"]) + (r["load_end"][0], r["etcd_version"],
                                                  2 * r["services"], r["load_s"])))
    print()
    print("`--min-sync-period %s`. \"spaced\": each event put %.1f s after the previous "
          "commit, so it does not wait for the period (the sync's own cost); \"at once\": put "
          "as soon as the previous commit is logged, so it waits for the period (the goal's "
          "bound: `--min-sync-period` + the sync)."
          % (r["min_sync_period"], seconds(r["min_sync_period"]) + 0.3))
    print()
    print("| backend | first sync took | event | put response -> commit line (median; runs) | "
          "daemon: change to commit | daemon: sync took | the put itself |")
    print("|---|---|---|---|---|---|---|")
    for be, o in r["backends"].items():
        for mode in ("spaced", "at once"):
            ev = [e for e in o["events"] if e["mode"] == mode]
            if not ev:
                continue
            f = lambda k: med([e[k] for e in ev])
            print("| %s | %.2f s | %s | %.0f ms (%s) | %.0f ms | %.0f ms | %.1f ms |" % (
                be, o["first_sync_ms"] / 1000, mode, f("put_to_commit_ms"),
                ", ".join("%.0f" % e["put_to_commit_ms"] for e in ev),
                f("change_to_commit_ms"), f("sync_ms"), f("put_ms")))
    print()
    for be, o in r["backends"].items():
        pt = o.get("parts")
        if pt:
            print("%s, the one-change syncs' parts (medians of the -v 'sync parts' lines): %s; "
                  "%d service ports resolved anew, %d planned anew." % (
                      be, ", ".join("%s %.3f s" % (k, pt[k]) for k in PARTS),
                      pt["ports resolved"], pt["ports planned"]))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--services", type=int, default=10000)
    ap.add_argument("-m", "--endpoints", type=int, default=10)
    ap.add_argument("--events", type=int, default=5)
    ap.add_argument("--backend", default="direct", help="comma-separated, e.g. direct,nft")
    ap.add_argument("--min-sync-period", default="1s")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds for the whole run")
    ap.add_argument("--builddir", default=".")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--logs", metavar="DIR", help="keep the daemons' and etcd's logs in DIR")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespace, netfilter)")
    for t in ("etcd", "curl", "ip"):
        if not shutil.which(t):
            raise SystemExit("needs '%s' (contrib/install-deps)" % t)
    seconds(a.min_sync_period)

    def over(*_):
        raise SystemExit("over --timeout %d s" % a.timeout)
    signal.signal(signal.SIGALRM, over)
    signal.alarm(a.timeout)
    b = Bench(a)
    ver = subprocess.run(["etcd", "--version"], capture_output=True, text=True).stdout.split()
    res = {"services": a.services, "endpoints_per": a.endpoints, "load": os.getloadavg(),
           "cpus": os.cpu_count(), "min_sync_period": a.min_sync_period,
           "etcd_version": ver[2] if len(ver) > 2 else "?", "backends": {}}
    try:
        b.setup()
        b.etcd()
        lst = gen.build(a.services, a.endpoints)
        data = os.path.join(b.work, "objects.json")
        with open(data, "w") as f:
            json.dump(lst, f)
        t0 = time.monotonic()
        r = b.sh(b.svcnat, "etcd-load", "--etcd-endpoints", URL, data, check=False)
        if r.returncode != 0:
            raise SystemExit("etcd-load failed: %s" % (r.stdout + r.stderr)[-2000:])
        res["load_s"] = time.monotonic() - t0
        for be in a.backend.split(","):
            run_backend(b, be, lst, res)
        res["load_end"] = os.getloadavg()
    finally:
        signal.alarm(0)
        if a.logs:
            os.makedirs(a.logs, exist_ok=True)
            for f in os.listdir(b.work):
                if f.endswith(".log"):
                    shutil.copy(os.path.join(b.work, f), a.logs)
        b.cleanup()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    report(res)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    main()
