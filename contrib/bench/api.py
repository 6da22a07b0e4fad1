#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Kubernetes API source's benchmark (issue 15), against the project's
own API server (tests/kubeapi/kubeapi.py), not a real kube-apiserver.

In a network namespace of its own (nothing touches the host's tables):
  1. initial sync: `svcnat --once` of N services x M endpoints listed from
     the server (paged, 500 a page) beside the same objects through a file:
     wall time and peak RSS;
  2. one watch event to commit: a daemon following the server at N
     services; one EndpointSlice changes (an endpoint moves), the time from
     the change at the server to the daemon's commit (its "change to commit"
     log figure and the wall time to that log line), several times;
  3. memory of the source: the daemon's resident memory after its first
     sync, following the server beside following the file.

Run as root from a build directory (optimised, no sanitizers):
    sudo python3 contrib/bench/api.py [-n 10000] [-m 10] [--reps 3] [--events 5]
Short runs; the figures of a loaded machine say little beyond their order.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402

SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
KUBEAPI = os.path.join(SRC, "tests", "kubeapi", "kubeapi.py")
ADDR, CTL = "127.0.0.1:6443", "127.0.0.1:6444"


class Bench:
    def __init__(self, a):
        self.a = a
        self.ns = "svcnat-bench-api-%d" % os.getpid()
        self.work = tempfile.mkdtemp(prefix="svcnat-bench-api.")
        # svcnat's kept state (nft-*.keep) stays in the run's directory, removed
        # with it, not in the host's /run/svcnat (files of deleted namespaces).
        os.environ["SVCNAT_RUNTIME_DIR"] = os.path.join(self.work, "run")
        self.svcnat = os.path.join(os.path.abspath(a.builddir), "svcnat")
        self.procs = []
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        self.sh("ip", "link", "set", "lo", "up")

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        subprocess.run(["ip", "netns", "del", self.ns], check=False)
        shutil.rmtree(self.work, ignore_errors=True)

    def inns(self, cmd):
        return ["ip", "netns", "exec", self.ns] + cmd

    def sh(self, *cmd, check=True):
        return subprocess.run(self.inns(list(cmd)), check=check, capture_output=True, text=True)

    def timed(self, cmd):
        """Run cmd in the namespace: (wall seconds, peak RSS MiB, exit code, stderr)."""
        ef = os.path.join(self.work, "stderr")
        with open(ef, "w") as err:
            t0 = time.monotonic()
            p = subprocess.Popen(self.inns(cmd), stdout=subprocess.DEVNULL, stderr=err,
                                 env=dict(os.environ, SVCNAT_NO_REEXEC="1"))
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        with open(ef) as f:
            return wall, ru.ru_maxrss / 1024.0, p.returncode, f.read()

    def certs(self):
        d = self.work
        run = lambda *c: subprocess.run(c, cwd=d, check=True, capture_output=True)
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-days", "1", "-subj", "/CN=bench-ca")
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=kube-apiserver")
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.crt", "-days", "1", "-extfile", "ext")
        with open(os.path.join(d, "tokens"), "w") as f:
            f.write("bench\n")
        self.kc = os.path.join(d, "kubeconfig")
        with open(self.kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: b\n"
                    "contexts: [{name: b, context: {cluster: b, user: b}}]\n"
                    "clusters: [{name: b, cluster: {server: 'https://%s', "
                    "certificate-authority: ca.crt}}]\n"
                    "users: [{name: b, user: {token: bench}}]\n" % ADDR)

    def ctl(self, path, body=None):
        cmd = ["curl", "-sSf", "--max-time", "600"]
        if body is not None:
            cmd += ["-X", "POST", "--data-binary", "@" + body]
        return self.sh(*(cmd + ["http://%s%s" % (CTL, path)])).stdout

    def server(self, data):
        log = open(os.path.join(self.work, "server.log"), "w")
        p = subprocess.Popen(self.inns([sys.executable, KUBEAPI, "--listen", ADDR, "--ctl", CTL,
                                        "--cert", os.path.join(self.work, "server.crt"),
                                        "--key", os.path.join(self.work, "server.key"),
                                        "--tokens", os.path.join(self.work, "tokens"),
                                        "--data", data, "--bookmark-interval", "60"]),
                             stdout=log, stderr=log)
        self.procs.append(p)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise SystemExit("kubeapi.py exited; see its log")
            if self.sh("curl", "-sf", "http://%s/stats" % CTL, check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise SystemExit("kubeapi.py did not start")

    def node_args(self):
        return ["--hostname", "node-a", "--node-ip", "198.18.0.1",
                "--cluster-cidr", "198.18.64.0/18", "--backend", self.a.backend]

    def once(self, src):
        self.sh(self.svcnat, "--cleanup", "--backend", self.a.backend, check=False)
        return self.timed([self.svcnat, "--once"] + self.node_args() + src)

    def daemon(self, src, log):
        f = open(log, "w")
        p = subprocess.Popen(self.inns([self.svcnat] + self.node_args() + src +
                                       ["--min-sync-period", "1s", "--sync-period", "10m",
                                        "--healthz-bind-address", "",
                                        "--metrics-bind-address", ""]),
                             stdout=f, stderr=f, env=dict(os.environ, SVCNAT_NO_REEXEC="1"))
        self.procs.append(p)
        return p


def wait_line(path, pattern, start, timeout):
    rx = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as f:
            f.seek(start)
            while True:
                line = f.readline()
                if not line.endswith("\n"):
                    break
                m = rx.search(line)
                if m:
                    return m, f.tell()
        time.sleep(0.005)
    raise SystemExit("no line matching %r in %s within %d s" % (pattern, path, timeout))


def rss(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) / 1024.0
    return out


def dur_ms(text):
    m = re.match(r"([0-9.]+)(µs|us|ms|s)$", text)
    if not m:
        return float("nan")
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u in ("µs", "us") else v if u == "ms" else v * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--services", type=int, default=10000)
    ap.add_argument("-m", "--endpoints", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--events", type=int, default=5)
    ap.add_argument("--backend", default="direct")
    ap.add_argument("--builddir", default=".")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root (network namespace, netfilter)")
    b = Bench(a)
    res = {"services": a.services, "endpoints": a.services * a.endpoints,
           "load": os.getloadavg(), "cpus": os.cpu_count()}
    try:
        b.certs()
        data = os.path.join(b.work, "objects.json")
        lst = gen.build(a.services, a.endpoints)
        lst["items"] = [i for i in lst["items"]]
        with open(data, "w") as f:
            json.dump(lst, f)
        t0 = time.monotonic()
        b.server(data)
        res["server_load_s"] = time.monotonic() - t0
        runs = {"file": [], "api": []}
        for _ in range(a.reps):
            for kind, src in (("file", ["--config", data]), ("api", ["--kubeconfig", b.kc])):
                wall, mib, rc, err = b.once(src)
                if rc != 0:
                    raise SystemExit("svcnat --once (%s) failed: %s" % (kind, err[-2000:]))
                runs[kind].append((wall, mib))
        res["once"] = runs
        # The server's share: every page of both lists fetched, nothing decoded.
        t0 = time.monotonic()
        for path in ("/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices"):
            cont = ""
            while True:
                out = b.sh("curl", "-sSf", "--cacert", os.path.join(b.work, "ca.crt"),
                           "-H", "Authorization: Bearer bench",
                           "https://%s%s?limit=500%s" % (ADDR, path, cont)).stdout
                c = json.loads(out)["metadata"].get("continue")
                if not c:
                    break
                cont = "&continue=" + c
        res["server_list_s"] = time.monotonic() - t0

        # The daemon: memory after the first sync, then single events.
        mem = {}
        for kind, src in (("file", ["--config", data]), ("api", ["--kubeconfig", b.kc])):
            b.sh(b.svcnat, "--cleanup", "--backend", a.backend, check=False)
            log = os.path.join(b.work, "daemon-%s.log" % kind)
            p = b.daemon(src, log)
            _, pos = wait_line(log, r"sync \(initial\)", 0, 900)
            time.sleep(1)
            mem[kind] = rss(p.pid)
            if kind == "api":
                lat = []
                for k in range(a.events):
                    sl = dict(lst["items"][1])
                    sl = json.loads(json.dumps(sl))
                    sl["endpoints"][0]["addresses"] = ["198.18.127.%d" % (200 + k)]
                    ev = os.path.join(b.work, "event.json")
                    with open(ev, "w") as f:
                        json.dump(sl, f)
                    time.sleep(1.2)  # past --min-sync-period: the sync runs at once
                    t0 = time.monotonic()
                    b.ctl("/apply", ev)
                    m, pos = wait_line(log, r"sync \(change\).*took (\S+), change to commit (\S+)",
                                       pos, 120)
                    lat.append((time.monotonic() - t0, dur_ms(m.group(2)), dur_ms(m.group(1))))
                res["events"] = lat
                mem["api_after_events"] = rss(p.pid)
            p.terminate()
            p.wait(timeout=30)
        res["memory"] = mem
    finally:
        b.cleanup()
    report(res)


def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else float("nan")


def report(r):
    o = r["once"]
    print("## Kubernetes API source: %d services, %d endpoints (the project's test API server)"
          % (r["services"], r["endpoints"]))
    print()
    print("Machine: %d CPUs, load average %.1f %.1f %.1f at the start (shared and loaded: the "
          "figures give the order only)." % ((r["cpus"],) + tuple(r["load"])))
    print()
    print("| initial sync (`--once`, backend direct) | wall s (median, runs) | peak RSS MiB |")
    print("|---|---|---|")
    for k, label in (("file", "--config FILE"), ("api", "--kubeconfig (list from the server)")):
        print("| %s | %.2f (%s) | %.0f |" % (label, med([w for w, _ in o[k]]),
                                           ", ".join("%.2f" % w for w, _ in o[k]),
                                           med([m for _, m in o[k]])))
    print()
    print("The server's share of the API list: fetching every page of both lists with curl "
          "(nothing decoded) took %.2f s." % r["server_list_s"])
    print()
    ev = r.get("events", [])
    print("One watch event (an endpoint of one EndpointSlice moves) to commit, daemon at "
          "--min-sync-period 1s, events 1.2 s apart: wall from the change at the server to the "
          "commit's log line %s ms (median %.0f); the daemon's change-to-commit %s ms (median "
          "%.0f), of which the sync itself took %s ms (median %.0f)." % (
              ", ".join("%.0f" % (e[0] * 1000) for e in ev), med([e[0] * 1000 for e in ev]),
              ", ".join("%.0f" % e[1] for e in ev), med([e[1] for e in ev]),
              ", ".join("%.0f" % e[2] for e in ev), med([e[2] for e in ev])))
    print()
    m = r["memory"]
    print("Daemon memory after its first sync: following the file %.0f MiB resident (peak %.0f), "
          "following the API server %.0f MiB resident (peak %.0f); after the events %.0f MiB." % (
              m["file"]["VmRSS"], m["file"]["VmHWM"], m["api"]["VmRSS"], m["api"]["VmHWM"],
              m["api_after_events"]["VmRSS"]))
    print()
    print("(The test server took %.0f s to load the objects; its own time is not in the figures "
          "but its list answers are: Python's JSON, 500 objects a page.)" % r["server_load_s"])


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
