#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Restart-to-ready: how long a svcnat process that starts on a kernel left
as svcnat wrote it takes until its rules are known to be in place, with the
state the previous process kept (warm) and without it (cold: it reads and
compares the tables, as every start did before).

For each writer (--backends, default nft: legacy xtables keeps no state) and size (--sizes,
default 10000x10), in a fresh network namespace of its own:
  1. svcnat --once of the generated cluster (gen.py): every rule written,
     the state kept in the run's private runtime directory;
  2. --reps times, in turn: `svcnat --once` with SVCNAT_RUNTIME_DIR empty
     (cold) and with the runtime directory (warm), nothing to change;
  3. --reps times, in turn: the daemon, cold and warm, until its first
     sync's summary line (`sync (initial)`), then SIGTERM.
A warm run that does not say it took the kept state, or any run that
writes, is an error.  Prints a Markdown table (medians, min-max) of wall
seconds, user+sys CPU seconds and peak RSS, and writes every sample to
--out PREFIX.json.

Run as root from a build directory built with optimisation (contrib/bench/
README.md); everything runs in network namespaces it creates and deletes
(svcrestart-PID-*), each command under contrib/bench/runin with a private
xtables lock.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_ARGS = ["--node-ip", "198.18.0.1", "--hostname", "node-a", "--cluster-cidr", "198.18.64.0/18"]
TRUSTED = "the tables are as the previous run left them"


class BenchError(Exception):
    pass


def median_range(xs):
    s = sorted(xs)
    return {"median": s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2,
            "min": s[0], "max": s[-1], "n": len(s)}


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class Bench:
    def __init__(self, a):
        self.a = a
        b = os.path.abspath(a.builddir)
        self.svcnat = os.path.join(b, "svcnat")
        self.runin = os.path.join(b, "contrib/bench/runin")
        for p in (self.svcnat, self.runin):
            if not os.access(p, os.X_OK):
                raise BenchError("%s not found: build first and run from the build directory "
                                 "or pass --builddir" % p)
        self.work = tempfile.mkdtemp(prefix="svcnat-restart-")
        self.lock = os.path.join(self.work, "xtables.lock")
        self.namespaces = []
        self.procs = []
        self.n = 0

    def log(self, msg):
        print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)

    def ns_new(self, tag):
        self.n += 1
        name = "svcrestart-%d-%d-%s" % (os.getpid(), self.n, tag)
        subprocess.run(["ip", "netns", "add", name], check=True)
        self.namespaces.append(name)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        return name

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for name in self.namespaces:
            subprocess.run(["ip", "netns", "del", name], check=False)
        self.namespaces = []
        shutil.rmtree(self.work, ignore_errors=True)

    def env(self, warm):
        e = dict(os.environ)
        e["SVCNAT_RUNTIME_DIR"] = os.path.join(self.work, "run") if warm else ""
        return e

    def once(self, ns, backend, cfg, warm, expect_write=False):
        jf = os.path.join(self.work, "runin.json")
        cmd = [self.runin, "-t", "900", "-o", jf, "-n", ns, "-l", self.lock, "--",
               self.svcnat, "--once", "--backend", backend, "--config", cfg, "-v"] + NODE_ARGS
        p = subprocess.run(cmd, env=self.env(warm), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        with open(jf) as f:
            r = json.load(f)
        os.unlink(jf)
        if p.returncode != 0:
            raise BenchError("svcnat --once (%s) failed: %s" % (backend, p.stderr[-1000:]))
        if not expect_write:
            if warm != (TRUSTED in p.stderr):
                raise BenchError("a %s run %s the kept state:\n%s" % (
                    "warm" if warm else "cold", "did not take" if warm else "took", p.stderr[-1500:]))
            if "0 chains created, 0 replaced, 0 deleted" not in p.stderr:
                raise BenchError("a run with nothing to change wrote:\n" + p.stderr[-1500:])
        return {"seconds": r["seconds"], "cpu_s": r["user_s"] + r["sys_s"], "user_s": r["user_s"],
                "sys_s": r["sys_s"], "maxrss_kb": r["maxrss_kb"]}

    def daemon(self, ns, backend, cfg, warm):
        logf = os.path.join(self.work, "daemon.log")
        cmd = ["ip", "netns", "exec", ns, self.svcnat, "--backend", backend, "--config", cfg,
               "--healthz-bind-address", "", "--metrics-bind-address", "", "--v", "2"] + NODE_ARGS
        t0 = time.monotonic()
        with open(logf, "w") as lf:
            p = subprocess.Popen(cmd, env=self.env(warm), stdin=subprocess.DEVNULL, stdout=lf,
                                 stderr=subprocess.STDOUT)
        self.procs.append(p)
        ready = None
        deadline = t0 + 900
        while time.monotonic() < deadline and p.poll() is None:
            with open(logf) as f:
                text = f.read()
            if "sync (initial)" in text:
                ready = time.monotonic() - t0
                break
            time.sleep(0.02)
        if ready is None:
            p.kill()
            p.wait()
            raise BenchError("the daemon did not sync: " + open(logf).read()[-1500:])
        # The svcnat process: ip netns exec execs it, the pid is the same.
        with open("/proc/%d/stat" % p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / tick
        with open("/proc/%d/status" % p.pid) as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=300)
        self.procs.remove(p)
        text = open(logf).read()
        if warm != (TRUSTED in text):
            raise BenchError("a %s daemon %s the kept state:\n%s" % (
                "warm" if warm else "cold", "did not take" if warm else "took", text[-1500:]))
        return {"seconds": ready, "cpu_s": cpu, "maxrss_kb": rss}

    def size(self, backend, n, m, reps):
        tag = "%dx%d" % (n, m)
        cfg = os.path.join(self.work, tag + ".json")
        if not os.path.exists(cfg):
            self.log("generating %s" % tag)
            subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "-n", str(n), "-m", str(m),
                            "-o", cfg], check=True)
        ns = self.ns_new(backend)
        self.log("%s %s: full sync" % (backend, tag))
        full = self.once(ns, backend, cfg, True, expect_write=True)
        S = {k: [] for k in ("once_cold", "once_warm", "daemon_cold", "daemon_warm")}
        for rep in range(reps):
            self.log("%s %s: repetition %d/%d" % (backend, tag, rep + 1, reps))
            S["once_cold"].append(self.once(ns, backend, cfg, False))
            S["once_warm"].append(self.once(ns, backend, cfg, True))
            if not self.a.no_daemon:
                S["daemon_cold"].append(self.daemon(ns, backend, cfg, False))
                S["daemon_warm"].append(self.daemon(ns, backend, cfg, True))
        subprocess.run(["ip", "netns", "del", ns], check=False)
        self.namespaces.remove(ns)
        return {"backend": backend, "n": n, "m": m, "full": full, "samples": S,
                "loadavg": loadavg(),
                "summary": {k: {f: median_range([x[f] for x in v]) for f in ("seconds", "cpu_s", "maxrss_kb")}
                            for k, v in S.items() if v}}


def fmt(r):
    return "%.2f (%.2f-%.2f)" % (r["median"], r["min"], r["max"])


def markdown(results):
    out = ["| writer | size | start | cold s | warm s | cold/warm | cold CPU s | warm CPU s | "
           "cold RSS MiB | warm RSS MiB |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for kind in ("once", "daemon"):
            c, w = r["summary"].get(kind + "_cold"), r["summary"].get(kind + "_warm")
            if not c:
                continue
            out.append("| %s | %dx%d | %s | %s | %s | %.1fx | %s | %s | %.0f | %.0f |" % (
                r["backend"], r["n"], r["m"], "--once" if kind == "once" else "daemon, first sync",
                fmt(c["seconds"]), fmt(w["seconds"]), c["seconds"]["median"] / w["seconds"]["median"],
                fmt(c["cpu_s"]), fmt(w["cpu_s"]), c["maxrss_kb"]["median"] / 1024,
                w["maxrss_kb"]["median"] / 1024))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir", default=".")
    ap.add_argument("--backends", default="nft")
    ap.add_argument("--sizes", default="10000x10")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-daemon", action="store_true")
    ap.add_argument("--out", default="restart-results")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("restart.py: needs root (network namespaces)", file=sys.stderr)
        return 1
    b = Bench(a)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))
    results = []
    try:
        for size in a.sizes.split(","):
            n, m = (int(x) for x in size.split("x"))
            for backend in a.backends.split(","):
                results.append(b.size(backend, n, m, a.reps))
    except BenchError as e:
        print("restart.py: %s" % e, file=sys.stderr)
        return 1
    finally:
        b.cleanup()
    md = markdown(results)
    print(md)
    with open(a.out + ".json", "w") as f:
        json.dump({"loadavg_end": loadavg(), "nproc": os.cpu_count(), "results": results}, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(md + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
