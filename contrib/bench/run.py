#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""svcnat benchmark suite (issue 7): sync cost and data path at scale, beside
iptables-legacy-restore and the libiptc floor, in one run.

Run as root from a build directory (`make` builds svcnat and the helpers):

    sudo python3 /path/to/svcnat/contrib/bench/run.py            # full, ~30 min
    sudo python3 /path/to/svcnat/contrib/bench/run.py --quick    # ~5 min

Everything happens inside network namespaces this script creates (named
svcbench-PID-*) and deletes on exit, also on failure or Ctrl-C; addresses
come from 198.18.0.0/15; every traffic loop is bounded in count and time.
Prints a Markdown report and writes it with the raw figures as JSON
(--out, default ./bench-results.{md,json}).  contrib/bench/README.md says
what every figure means.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.dirname(os.path.dirname(HERE))

NODE_ARGS = ["--node-ip", "198.18.0.1", "--hostname", "node-a",
             "--cluster-cidr", "198.18.64.0/18"]
# The full rewrite: every endpoint moved and another cluster CIDR, so every
# service's chains differ from what is loaded.
REWRITE_CIDR = "198.18.0.0/17"
XT_MAX_TABLE_SIZE = 512 * 1024 * 1024

FULL_SIZES = [(1000, 10), (5000, 10), (10000, 10), (20000, 10), (10000, 2), (10000, 20)]
QUICK_SIZES = [(1000, 10), (10000, 10)]
SCALE_SIZE = (20000, 50)

# Data path topology (all inside namespaces of our own).
CLIENT_IP, CLIENT_GW = "198.18.1.2", "198.18.1.1"
BACKENDS = ["198.18.65.10", "198.18.65.11"]
BACKEND_GW = "198.18.65.1"
IPERF_CLUSTER_IP = "198.19.255.1"
SERVER_PORTS = (8080, 8443)  # the generator's targetPorts for 80 and 443


PARTS = ("decode", "merge", "resolve", "plan", "encode", "kernel read", "kernel write")


# The daemon phase's changes, in words (gen.py --change).
CHANGE_WORDS = {"endpoint": "one endpoint moved, then back", "add": "one service added, then removed"}

def daemon_parts(path):
    """Medians of the daemon's -v 'sync parts:' lines after the first sync
    (the one-change syncs), with the service ports resolved anew."""
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            if "sync parts:" not in line:
                continue
            v = dict((k, float(x)) for k, x in re.findall(r"([a-z ]+?) ([0-9.]+) s", line.split("sync parts:", 1)[1]))
            n = re.search(r"\((\d+) service ports anew\), plan [0-9.]+ s \((\d+) anew", line)
            v = {k.strip(): x for k, x in v.items()}
            if n:
                v["ports resolved"], v["ports planned"] = float(n.group(1)), float(n.group(2))
            rows.append(v)
    rows = rows[1:]
    if not rows:
        return None
    return {k: statistics.median([r.get(k, 0.0) for r in rows])
            for k in PARTS + ("ports resolved", "ports planned")}


class BenchError(Exception):
    pass


def median_range(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs),
            "samples": xs}


def machine_info():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_kb = 0
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "mem_gib": round(mem_kb / 1048576, 1),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def tool_version(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


class Suite:
    def __init__(self, a):
        self.a = a
        b = os.path.abspath(a.builddir)
        self.bin = {"svcnat": os.path.join(b, "svcnat"),
                    "floor": os.path.join(b, "contrib/bench/floor"),
                    "connrate": os.path.join(b, "contrib/bench/connrate"),
                    "runin": os.path.join(b, "contrib/bench/runin")}
        for name, path in self.bin.items():
            if not os.access(path, os.X_OK):
                raise BenchError("%s not found at %s: build first (./configure CFLAGS='-O2 -g' && make) "
                                 "and run from the build directory or pass --builddir" % (name, path))
        for tool in ["ip", "iptables-legacy-restore"]:
            if not shutil.which(tool):
                raise BenchError("%s is needed (contrib/install-deps)" % tool)
        self.work = tempfile.mkdtemp(prefix="svcnat-bench-", dir=a.workdir)
        # svcnat's kept state (nft-*.keep) stays in the run's directory, removed
        # with it, not in the host's /run/svcnat (files of deleted namespaces).
        os.environ["SVCNAT_RUNTIME_DIR"] = os.path.join(self.work, "run")
        self.lock = os.path.join(self.work, "xtables.lock")
        self.namespaces = []
        self.procs = []
        self.nfacct_names = {}   # restore file -> the nfacct counters it names
        self.nfacct_made = set()  # (namespace, counter)
        self.nscount = 0
        self.t0 = time.monotonic()
        self.warnings = []
        self.res = {"machine": machine_info(), "command": " ".join(sys.argv),
                    "svcnat": tool_version([self.bin["svcnat"], "--version"]),
                    "git": tool_version(["git", "-C", SRCDIR, "describe", "--always", "--dirty"]),
                    "iptables": tool_version(["iptables-nft-restore" if a.backend == "nft" else
                                              "iptables-legacy-restore", "--version"]),
                    "reps": a.reps, "backend": a.backend, "quick": a.quick, "affinity_every": a.affinity_every, "loadavg_start": loadavg(),
                    "control": [], "daemon": None, "scale": None, "datapath": None, "goals": None}

    # ---- plumbing ----
    def log(self, msg):
        print("[%6.1fs] %s" % (time.monotonic() - self.t0, msg), file=sys.stderr, flush=True)

    def warn(self, msg):
        self.warnings.append(msg)
        self.log("WARNING: " + msg)

    def ns_new(self, tag):
        self.nscount += 1
        name = "svcbench-%d-%d-%s" % (os.getpid(), self.nscount, tag)
        subprocess.run(["ip", "netns", "add", name], check=True)
        self.namespaces.append(name)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        return name

    def ns_del(self, name):
        if name in self.namespaces:
            self.namespaces.remove(name)
            subprocess.run(["ip", "netns", "del", name], check=False)

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        self.procs = []
        for name in list(self.namespaces):
            self.ns_del(name)
        shutil.rmtree(self.work, ignore_errors=True)

    def ns_sh(self, ns, *cmd, check=True):
        """A setup command inside ns (never the host's)."""
        return subprocess.run(["ip", "netns", "exec", ns] + list(cmd), check=check,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)

    def bg(self, ns, cmd):
        """A bounded background process inside ns, killed at cleanup."""
        p = subprocess.Popen(["ip", "netns", "exec", ns] + cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.procs:
            self.procs.remove(p)

    def nfacct_counters(self, txt, ns):
        """The nfacct counters a restore file's rules count in (kube-proxy's
        ct_state_invalid_dropped_pkts, localhost_nps_accepted_pkts), made in ns
        before the peer's restore, as kube-proxy makes them at start: without
        them the kernel refuses the rule (RULE_APPEND ... No such file)."""
        if txt not in self.nfacct_names:
            names = set()
            with open(txt) as f:
                for line in f:
                    if "--nfacct-name" in line:
                        names.update(re.findall(r"--nfacct-name\s+(\S+)", line))
            self.nfacct_names[txt] = sorted(names)
        for name in self.nfacct_names[txt]:
            if (ns, name) in self.nfacct_made:
                continue
            subprocess.run(["ip", "netns", "exec", ns, "nfacct", "add", name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.nfacct_made.add((ns, name))

    def run(self, cmd, ns=None, stdin=None, stdout=None, timeout=900, check=True):
        """Run cmd through runin: wall seconds, its own peak RSS, exit code."""
        if ns and stdin and os.path.basename(cmd[0]).endswith("-restore"):
            self.nfacct_counters(stdin, ns)
        jf = os.path.join(self.work, "runin.json")
        ef = os.path.join(self.work, "stderr.txt")
        full = [self.bin["runin"], "-t", str(timeout), "-o", jf]
        if ns:
            full += ["-n", ns, "-l", self.lock]
        full += ["--"] + cmd
        fin = open(stdin) if stdin else subprocess.DEVNULL
        fout = open(stdout, "w") if stdout else subprocess.DEVNULL
        try:
            with open(ef, "w") as ferr:
                p = subprocess.run(full, stdin=fin, stdout=fout, stderr=ferr)
        finally:
            if stdin:
                fin.close()
            if stdout:
                fout.close()
        with open(ef) as f:
            err = f.read()
        try:
            with open(jf) as f:
                r = json.load(f)
            os.unlink(jf)
        except (OSError, ValueError):
            raise BenchError("%s: no result (%s)" % (os.path.basename(cmd[0]), err.strip()[-300:]))
        r["stderr"] = err[-2000:]
        r["rc"] = p.returncode
        if check and p.returncode != 0:
            raise BenchError("%s failed (exit %d%s): %s" % (
                " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd[:4])),
                p.returncode, ", timed out" if r.get("timed_out") else "", errors_of(err)))
        return r

    # ---- generators ----
    def gen(self, path, n, m, change="none", target_ips=None, extra=None):
        if os.path.exists(path):
            return path
        cmd = [sys.executable, os.path.join(HERE, "gen.py"), "-n", str(n), "-m", str(m),
               "--change", change, "--affinity-every", str(self.a.affinity_every), "-o", path + ".tmp"]
        if target_ips:
            cmd += ["--target-ips", ",".join(target_ips)]
        subprocess.run(cmd, check=True, timeout=1800)
        if extra:
            with open(path + ".tmp") as f:
                doc = json.load(f)
            doc["items"].extend(extra)
            with open(path + ".tmp", "w") as f:
                json.dump(doc, f, separators=(",", ":"))
        os.rename(path + ".tmp", path)
        return path

    def svcnat_args(self, mode, config, cidr=None, dispatch=None):
        args = [self.bin["svcnat"], mode, "--config", config] + NODE_ARGS
        if cidr:
            args[args.index("--cluster-cidr") + 1] = cidr
        if mode == "--once":
            args += ["--backend", self.a.backend, "-v"]
        if dispatch or self.a.dispatch:
            args += ["--dispatch", dispatch or self.a.dispatch]
        return args

    def render(self, config, out, cidr=None, dispatch=None):
        return self.run(self.svcnat_args("--dry-run", config, cidr, dispatch), stdout=out)

    def partial(self, triples):
        """kube-proxy's partial-sync inputs, one (old, new, out) each; their statistics."""
        p = subprocess.run([sys.executable, os.path.join(HERE, "partial.py"), "--batch"],
                           input="".join("%s %s %s\n" % t for t in triples),
                           check=True, capture_output=True, text=True, timeout=1800)
        return [json.loads(line) for line in p.stdout.splitlines()]

    def table_info(self, ns):
        r = subprocess.run(["ip", "netns", "exec", ns, self.bin["floor"], "--info", "nat", "filter"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise BenchError("floor --info: " + r.stderr.strip())
        d = json.loads(r.stdout)
        return {t["table"]: {"size_bytes": t["size_bytes"], "entries": t["entries"]} for t in d["tables"]}

    def count_commits(self, ns, cmd):
        """Number of IPT_SO_SET_REPLACE calls (kernel table writes) cmd makes."""
        if not shutil.which("strace"):
            return None
        out = os.path.join(self.work, "strace.txt")
        self.run(["strace", "-f", "-qq", "-e", "trace=setsockopt", "-o", out] + cmd, ns=ns)
        with open(out) as f:
            n = sum(1 for line in f if "IPT_SO_SET_REPLACE" in line)
        os.unlink(out)
        return n

    @staticmethod
    def svcnat_split(stderr):
        m = re.search(r"in ([0-9.]+)s \(plan ([0-9.]+)s\)", stderr)
        return (float(m.group(1)), float(m.group(2))) if m else (None, None)

    # ---- control plane ----
    def control(self, n, m, reps):
        tag = "%dx%d" % (n, m)
        d = os.path.join(self.work, tag)
        os.makedirs(d, exist_ok=True)
        self.log("control plane %s: generating inputs" % tag)
        # The sequence of one repetition: base (full sync, no change), one
        # endpoint moved, then one service added on top, then everything moved.
        cfg = {c: self.gen(os.path.join(d, c.replace(",", "+") + ".json"), n, m, c)
               for c in ("none", "endpoint", "endpoint,add", "all")}
        txt = {c: os.path.join(d, c.replace(",", "+") + ".txt") for c in cfg}
        for c in cfg:
            self.render(cfg[c], txt[c], REWRITE_CIDR if c == "all" else None)
        pairs = [("endpoint", "none", "endpoint"), ("add", "endpoint", "endpoint,add")]
        if self.a.peer_rewrite:
            pairs.append(("all", "none", "all"))
        part = {name: os.path.join(d, "partial-%s.txt" % name) for name, _, _ in pairs}
        stats = self.partial([(txt[old], txt[new], part[name]) for name, old, new in pairs])
        stats = dict(zip([name for name, _, _ in pairs], stats))
        once = lambda c, cidr=None: self.svcnat_args("--once", cfg[c], cidr)  # noqa: E731
        restore = ["iptables-legacy-restore"]
        noflush = ["iptables-legacy-restore", "--noflush"]
        S = {k: [] for k in ("svcnat_full", "svcnat_nochange", "svcnat_endpoint", "svcnat_add",
                             "svcnat_rewrite", "floor", "restore_full", "restore_partial_endpoint",
                             "restore_partial_add", "restore_rewrite", "dry_run")}
        extra = {"svcnat_full_plan_s": [], "svcnat_endpoint_plan_s": [], "floor_nat_init_s": [],
                 "floor_nat_commit_s": [], "floor_filter_s": []}
        info = {}
        for rep in range(reps):
            self.log("control plane %s: repetition %d/%d (svcnat)" % (tag, rep + 1, reps))
            A = self.ns_new("ctl")
            r = self.run(once("none"), ns=A)
            S["svcnat_full"].append(r)
            extra["svcnat_full_plan_s"].append(self.svcnat_split(r["stderr"])[1])
            if rep == 0:
                info["svcnat_loaded"] = self.table_info(A)
            S["svcnat_nochange"].append(self.run(once("none"), ns=A))
            if rep == 0:
                info["nochange_commits"] = self.count_commits(A, once("none"))
                if info["nochange_commits"] is None:  # no strace: svcnat's own word
                    info["nochange_commits"] = 0 if "nothing written" in S["svcnat_nochange"][-1]["stderr"] else 1
                    info["nochange_commits_source"] = "svcnat -v"
            jf = os.path.join(self.work, "floor.json")
            r = self.run([self.bin["floor"], "nat", "filter"], ns=A, stdout=jf)
            with open(jf) as f:
                fl = {t["table"]: t for t in json.load(f)["tables"]}
            extra["floor_nat_init_s"].append(fl["nat"]["init_s"])
            extra["floor_nat_commit_s"].append(fl["nat"]["commit_s"])
            extra["floor_filter_s"].append(fl["filter"]["total_s"])
            S["floor"].append(r)
            r = self.run(once("endpoint"), ns=A)
            S["svcnat_endpoint"].append(r)
            extra["svcnat_endpoint_plan_s"].append(self.svcnat_split(r["stderr"])[1])
            if rep == 0:
                info["svcnat_endpoint"] = self.table_info(A)
            S["svcnat_add"].append(self.run(once("endpoint,add"), ns=A))
            if rep == 0:
                info["svcnat_added"] = self.table_info(A)
            S["svcnat_rewrite"].append(self.run(once("all", REWRITE_CIDR), ns=A))
            if rep == 0:
                info["svcnat_rewritten"] = self.table_info(A)
            self.ns_del(A)

            self.log("control plane %s: repetition %d/%d (iptables-legacy-restore)" % (tag, rep + 1, reps))
            B = self.ns_new("peer")
            S["restore_full"].append(self.run(restore, ns=B, stdin=txt["none"]))
            if rep == 0:
                info["restore_loaded"] = self.table_info(B)
            S["restore_partial_endpoint"].append(self.run(noflush, ns=B, stdin=part["endpoint"]))
            if rep == 0:
                info["restore_endpoint"] = self.table_info(B)
            S["restore_partial_add"].append(self.run(noflush, ns=B, stdin=part["add"]))
            if rep == 0:
                info["restore_added"] = self.table_info(B)
            self.ns_del(B)
            if self.a.peer_rewrite:
                B = self.ns_new("peer")
                self.run(restore, ns=B, stdin=txt["none"])
                S["restore_rewrite"].append(self.run(noflush, ns=B, stdin=part["all"]))
                if rep == 0:
                    info["restore_rewritten"] = self.table_info(B)
                self.ns_del(B)
            S["dry_run"].append(self.run(self.svcnat_args("--dry-run", cfg["none"])))
        # Cross-checks: both writers must have loaded the same tables.
        for a_, b_ in (("svcnat_loaded", "restore_loaded"), ("svcnat_endpoint", "restore_endpoint"),
                       ("svcnat_added", "restore_added"), ("svcnat_rewritten", "restore_rewritten")):
            if a_ in info and b_ in info and info[a_]["nat"]["entries"] != info[b_]["nat"]["entries"]:
                self.warn("%s: nat entries differ: %s %d, %s %d" % (
                    tag, a_, info[a_]["nat"]["entries"], b_, info[b_]["nat"]["entries"]))
        out = {"n": n, "m": m, "info": info, "partial": stats,
               "rules": sum(1 for line in open(txt["none"]) if line.startswith("-A ")),
               "dry_run_bytes": os.path.getsize(txt["none"]),
               "seconds": {k: median_range([r["seconds"] for r in v]) for k, v in S.items()},
               "user_sys_s": {k: median_range([r["user_s"] + r["sys_s"] for r in v]) for k, v in S.items()},
               "rss_kb": {k: median_range([r["maxrss_kb"] for r in v]) for k, v in S.items()},
               "extra": {k: median_range(v) for k, v in extra.items()},
               "loadavg": loadavg()}
        self.res["control"].append(out)
        for c in cfg.values():
            os.unlink(c)
        return out

    def count_sendmsg(self, ns, cmd):
        """Number of sendmsg calls cmd makes: the nft writer sends each batch
        (its only writes) with one sendmsg, its reads with sendto."""
        if not shutil.which("strace"):
            return None
        out = os.path.join(self.work, "strace.txt")
        self.run(["strace", "-f", "-qq", "-e", "trace=sendmsg", "-o", out] + cmd, ns=ns)
        with open(out) as f:
            n = sum(1 for line in f if "sendmsg(" in line)
        os.unlink(out)
        return n

    def control_nft(self, n, m, reps):
        """--backend nft: svcnat's nf_tables writer beside iptables-nft-restore."""
        tag = "%dx%d" % (n, m)
        d = os.path.join(self.work, tag)
        os.makedirs(d, exist_ok=True)
        self.log("nft control plane %s: generating inputs" % tag)
        cfg = {c: self.gen(os.path.join(d, c + ".json"), n, m, c) for c in ("none", "endpoint")}
        txt = {c: os.path.join(d, c + ".txt") for c in cfg}
        for c in cfg:
            self.render(cfg[c], txt[c])
        part = os.path.join(d, "partial-endpoint.txt")
        stats = self.partial([(txt["none"], txt["endpoint"], part)])[0]
        once = lambda c: self.svcnat_args("--once", cfg[c])  # noqa: E731
        S = {k: [] for k in ("svcnat_full", "svcnat_nochange", "svcnat_endpoint",
                             "restore_full", "restore_partial_endpoint")}
        info = {}
        for rep in range(reps):
            self.log("nft control plane %s: repetition %d/%d (svcnat)" % (tag, rep + 1, reps))
            A = self.ns_new("nft")
            S["svcnat_full"].append(self.run(once("none"), ns=A))
            S["svcnat_nochange"].append(self.run(once("none"), ns=A))
            if rep == 0:
                info["nochange_batches"] = self.count_sendmsg(A, once("none"))
            S["svcnat_endpoint"].append(self.run(once("endpoint"), ns=A))
            self.ns_del(A)
            self.log("nft control plane %s: repetition %d/%d (iptables-nft-restore)" % (tag, rep + 1, reps))
            B = self.ns_new("nftpeer")
            S["restore_full"].append(self.run(["iptables-nft-restore"], ns=B, stdin=txt["none"]))
            S["restore_partial_endpoint"].append(
                self.run(["iptables-nft-restore", "--noflush"], ns=B, stdin=part))
            self.ns_del(B)
        out = {"n": n, "m": m, "info": info, "partial": stats,
               "rules": sum(1 for line in open(txt["none"]) if line.startswith("-A ")),
               "seconds": {k: median_range([r["seconds"] for r in v]) for k, v in S.items()},
               "user_sys_s": {k: median_range([r["user_s"] + r["sys_s"] for r in v]) for k, v in S.items()},
               "rss_kb": {k: median_range([r["maxrss_kb"] for r in v]) for k, v in S.items()},
               "loadavg": loadavg()}
        self.res.setdefault("nft", []).append(out)
        for c in cfg.values():
            os.unlink(c)
        return out

    def scale(self, n, m):
        tag = "%dx%d" % (n, m)
        d = os.path.join(self.work, tag)
        os.makedirs(d, exist_ok=True)
        self.log("scale %s: generating input" % tag)
        cfg = self.gen(os.path.join(d, "none.json"), n, m)
        txt = os.path.join(d, "none.txt")
        dr = self.render(cfg, txt)
        A = self.ns_new("scale")
        self.log("scale %s: svcnat --once" % tag)
        r = self.run(self.svcnat_args("--once", cfg), ns=A, timeout=1800, check=False)
        out = {"n": n, "m": m, "ok": r["rc"] == 0, "svcnat": {k: r[k] for k in ("seconds", "maxrss_kb", "rc")},
               "error": None if r["rc"] == 0 else errors_of(r["stderr"]),
               "rules": sum(1 for line in open(txt) if line.startswith("-A ")),
               "dry_run": {"seconds": dr["seconds"], "maxrss_kb": dr["maxrss_kb"],
                           "bytes": os.path.getsize(txt)}}
        if out["ok"]:
            out["tables"] = self.table_info(A)
            jf = os.path.join(self.work, "floor.json")
            f = self.run([self.bin["floor"], "nat", "filter"], ns=A, stdout=jf, check=False)
            if f["rc"] == 0:
                out["floor"] = {"seconds": f["seconds"], "maxrss_kb": f["maxrss_kb"]}
        self.ns_del(A)
        if not out["ok"]:
            # What would it have taken?  The layout repeats every 100
            # services, so a tenth of the services gives a tenth of the table.
            n10 = max(100, n // 10)
            cfg10 = self.gen(os.path.join(d, "tenth.json"), n10, m)
            A = self.ns_new("scale10")
            r = self.run(self.svcnat_args("--once", cfg10), ns=A, timeout=1800, check=False)
            if r["rc"] == 0:
                t = self.table_info(A)["nat"]
                out["estimate"] = {"from_services": n10, "size_bytes": t["size_bytes"],
                                   "entries": t["entries"],
                                   "estimated_size_bytes": t["size_bytes"] * n // n10,
                                   "estimated_entries": t["entries"] * n // n10}
            self.ns_del(A)
            os.unlink(cfg10)
        if self.a.scale_peer:
            B = self.ns_new("scalepeer")
            self.log("scale %s: iptables-legacy-restore" % tag)
            r = self.run(["iptables-legacy-restore"], ns=B, stdin=txt, timeout=1800, check=False)
            out["restore"] = {k: r[k] for k in ("seconds", "maxrss_kb", "rc")}
            self.ns_del(B)
        os.unlink(cfg)
        self.res["scale"] = out
        return out

    # ---- the daemon ----
    def metrics(self, ns):
        r = subprocess.run(["ip", "netns", "exec", ns, "curl", "-s", "--max-time", "5",
                            "http://127.0.0.1:10249/metrics"], capture_output=True, text=True, timeout=30)
        out = {}
        for line in r.stdout.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            k, v = line.rsplit(" ", 1)
            # kube-proxy's families carry ip_family (always IPv4 here)
            k = k.replace('{ip_family="IPv4"}', "")
            try:
                out[k] = float(v)
            except ValueError:
                pass
        return out

    def wait_syncs(self, ns, p, count, timeout):
        """Metrics once the daemon has done `count` syncs (bounded wait)."""
        end = time.monotonic() + timeout
        key = "kubeproxy_sync_proxy_rules_duration_seconds_count"
        while time.monotonic() < end:
            if p.poll() is not None:
                raise BenchError("the daemon exited (%d)" % p.returncode)
            m = self.metrics(ns)
            if m.get(key, 0) >= count:
                return m
            time.sleep(0.2)
        raise BenchError("the daemon did not finish sync %d within %d s" % (count, timeout))

    @staticmethod
    def split_config(path, k):
        """The List at path as files of k services each (every Service with
        its EndpointSlices, the generator's order kept): {name: text}."""
        with open(path) as f:
            doc = json.load(f)
        groups, order = {}, []
        for it in doc["items"]:
            md = it.get("metadata", {})
            svc = md.get("name") if it.get("kind") == "Service" else \
                md.get("labels", {}).get("kubernetes.io/service-name")
            key = (md.get("namespace"), svc)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(it)
        files = {}
        for c in range(0, len(order), k):
            items = [it for key in order[c:c + k] for it in groups[key]]
            files["s%06d.json" % (c // k)] = json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": items}, separators=(",", ":"))
        return files

    @staticmethod
    def write_split(live, files, current):
        """Replace (rename over) the files of live that differ from current
        and remove those files no longer holds; returns how many were
        written or removed."""
        n = 0
        for name in [x for x in current if x not in files]:
            os.unlink(os.path.join(live, name))
            del current[name]
            n += 1
        for name, text in files.items():
            if current.get(name) == text:
                continue
            tmp = os.path.join(live, "." + name + ".tmp")
            with open(tmp, "w") as f:
                f.write(text)
            os.rename(tmp, os.path.join(live, name))
            current[name] = text
            n += 1
        return n

    def daemon(self, n, m, reps, split=0, change="endpoint"):
        """The daemon's own sync time for one change: it keeps state between
        syncs, --once cannot.  From its kube-proxy metrics.  split: 0, one
        file replaced; K, a directory of files of K services each, of which
        the one holding the change is replaced.  change: gen.py's --change,
        "endpoint" (one endpoint moved, then back) or "add" (one service
        added, then removed again)."""
        if not shutil.which("curl"):
            self.warn("curl not installed: no daemon figures")
            return None
        tag = "%dx%d" % (n, m) + ("-dir%d" % split if split else "") + ("-" + change if change != "endpoint" else "")
        d = os.path.join(self.work, "daemon-" + tag)
        os.makedirs(os.path.join(d, "src"), exist_ok=True)
        cfg = {c: self.gen(os.path.join(d, c + ".json"), n, m, c) for c in ("none", change)}
        if split:
            live = os.path.join(d, "src", "conf.d")
            os.makedirs(live, exist_ok=True)
            parts = {c: self.split_config(cfg[c], split) for c in cfg}
            current = {}
            self.write_split(live, parts["none"], current)
            # Files changed less than 0.1 s before they are read are read
            # again at the next change: let them age.
            time.sleep(0.5)
        else:
            live = os.path.join(d, "src", "services.json")
            shutil.copyfile(cfg["none"], live)
        D = self.ns_new("daemon")
        self.log("daemon %s: initial sync" % tag)
        errlog = open(os.path.join(d, "daemon.log"), "w")
        p = subprocess.Popen(["ip", "netns", "exec", D, self.bin["svcnat"], "--config", live] + NODE_ARGS +
                             ["--backend", self.a.backend, "--min-sync-period", "0s", "--sync-period", "1h",
                              "--healthz-bind-address", "", "--metrics-bind-address", "127.0.0.1:10249",
                              "-v"],  # -v: each sync's parts (daemon_parts())
                             stdout=subprocess.DEVNULL, stderr=errlog)
        self.procs.append(p)
        out = {"n": n, "m": m, "split": split, "change": change, "sync_s": [], "programming_s": [],
               "files_written": []}
        try:
            mt = self.wait_syncs(D, p, 1, 1800)
            out["initial_sync_s"] = mt.get("kubeproxy_sync_proxy_rules_duration_seconds_sum")
            with open("/proc/%d/status" % p.pid) as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
            out["vmrss_initial_kb"] = int(st["VmRSS"].split()[0])
            k = 1
            for rep in range(reps):
                src = change if rep % 2 == 0 else "none"
                if split:
                    out["files_written"].append(self.write_split(live, parts[src], current))
                else:
                    shutil.copyfile(cfg[src], live + ".tmp")
                    os.rename(live + ".tmp", live)  # one atomic change: one endpoint moved
                m1 = self.wait_syncs(D, p, k + 1, 600)
                dc = m1["kubeproxy_sync_proxy_rules_duration_seconds_count"] - k
                out["sync_s"].append((m1["kubeproxy_sync_proxy_rules_duration_seconds_sum"] -
                                      mt["kubeproxy_sync_proxy_rules_duration_seconds_sum"]) / dc)
                pk = "svcnat_change_to_commit_duration_seconds_sum"
                if pk in m1 and pk in mt:
                    out["programming_s"].append(m1[pk] - mt[pk])
                k = int(m1["kubeproxy_sync_proxy_rules_duration_seconds_count"])
                mt = m1
            with open("/proc/%d/status" % p.pid) as f:
                st = dict(line.split(":", 1) for line in f if ":" in line)
            out["vmhwm_kb"] = int(st["VmHWM"].split()[0])
            out["vmrss_kb"] = int(st["VmRSS"].split()[0])
            # The floor on the same tables, for a ratio within this phase.
            fl = [self.run([self.bin["floor"], "nat", "filter"], ns=D) for _ in range(reps)]
            out["floor_s"] = median_range([r["seconds"] for r in fl])
            # The raw kernel floor: IPT_SO_GET_ENTRIES + IPT_SO_SET_REPLACE, no change.
            fr = [self.run([self.bin["floor"], "--raw", "nat", "filter"], ns=D) for _ in range(reps)]
            out["raw_floor_s"] = median_range([r["seconds"] for r in fr])
        finally:
            self.stop(p)
            errlog.close()
            self.ns_del(D)
        out["sync_s"] = median_range(out["sync_s"])
        out["programming_s"] = median_range(out["programming_s"])
        out["parts"] = daemon_parts(os.path.join(d, "daemon.log"))
        with open(os.path.join(d, "daemon.log"), errors="replace") as f:
            # -v: "PATH: N of M files read (K objects)", the first is the initial read
            out["files_read"] = [[int(x) for x in r] for r in
                                 re.findall(r": (\d+) of (\d+) files? read \((\d+) objects\)", f.read())][1:]
        self.res.setdefault("daemons", []).append(out)
        if not self.res.get("daemon"):
            self.res["daemon"] = out
        self.log("daemon %s: %s: %.3f s (plan + apply)" % (tag, CHANGE_WORDS[change], out["sync_s"]["median"]))
        for c in cfg.values():
            os.unlink(c)
        return out

    # ---- data path ----
    def topology(self):
        C, N = self.ns_new("client"), self.ns_new("node")
        Bs = [self.ns_new("be%d" % i) for i in range(len(BACKENDS))]
        sh = lambda ns, *c: subprocess.run(["ip", "-n", ns] + list(c), check=True)  # noqa: E731
        sh(C, "link", "add", "c0", "type", "veth", "peer", "name", "n0", "netns", N)
        sh(C, "addr", "add", CLIENT_IP + "/24", "dev", "c0")
        sh(C, "link", "set", "c0", "up")
        sh(C, "route", "add", "default", "via", CLIENT_GW)
        sh(N, "addr", "add", CLIENT_GW + "/24", "dev", "n0")
        sh(N, "link", "set", "n0", "up")
        sh(N, "addr", "add", "198.18.0.1/32", "dev", "lo")
        sh(N, "link", "add", "br0", "type", "bridge")
        sh(N, "addr", "add", BACKEND_GW + "/24", "dev", "br0")
        sh(N, "link", "set", "br0", "up")
        for i, (B, ip) in enumerate(zip(Bs, BACKENDS)):
            sh(B, "link", "add", "b0", "type", "veth", "peer", "name", "nb%d" % i, "netns", N)
            sh(B, "addr", "add", ip + "/24", "dev", "b0")
            sh(B, "link", "set", "b0", "up")
            sh(B, "route", "add", "default", "via", BACKEND_GW)
            sh(N, "link", "set", "nb%d" % i, "master", "br0", "up")
        self.ns_sh(N, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        self.ns_sh(C, "sysctl", "-qw", "net.ipv4.ip_local_port_range=1024 65535")
        return C, N, Bs

    def connrate(self, C, N, ip, port, reps, label):
        count, secs = self.a.conn_count, self.a.conn_seconds
        runs = []
        for _ in range(reps):
            if shutil.which("conntrack"):
                self.ns_sh(N, "conntrack", "-F", check=False)
            of = os.path.join(self.work, "conn.json")
            self.run([self.bin["connrate"], "client", ip, str(port), str(count), str(secs)],
                     ns=C, stdout=of, timeout=secs + 30, check=False)
            with open(of) as f:
                runs.append(json.load(f))
            if not runs[-1]["ok"]:
                break  # the path does not work: no use repeating it
        if any(r["failed"] for r in runs):
            self.warn("%s: %d failed connections (%s)" % (label, sum(r["failed"] for r in runs),
                                                        runs[0]["first_error"] or "timeout"))
        out = {"case": label, "target": "%s:%d" % (ip, port),
               "conn_per_s": median_range([r["conn_per_s"] for r in runs]),
               "p50_us": median_range([r["p50_us"] for r in runs]),
               "p99_us": median_range([r["p99_us"] for r in runs]),
               "failed": sum(r["failed"] for r in runs), "loadavg": loadavg()}
        self.log("  %-44s %8.0f conn/s  p50 %6.1f us  failed %d" % (
            label, out["conn_per_s"]["median"], out["p50_us"]["median"], out["failed"]))
        return out

    def iperf(self, C, B, ip, port, server_port, reps, label):
        runs = []
        for _ in range(reps):
            srv = self.bg(B, ["iperf3", "-s", "-1", "-p", str(server_port)])
            time.sleep(0.3)
            of = os.path.join(self.work, "iperf.json")
            r = self.run(["iperf3", "-c", ip, "-p", str(port), "-t", str(self.a.iperf_seconds), "-J"],
                         ns=C, stdout=of, timeout=self.a.iperf_seconds + 30, check=False)
            self.stop(srv)
            try:
                with open(of) as f:
                    runs.append(json.load(f)["end"]["sum_received"]["bits_per_second"] / 1e9)
            except (OSError, ValueError, KeyError):
                self.warn("%s: iperf3 failed (exit %d)" % (label, r["rc"]))
        out = {"case": label, "gbit_s": median_range(runs)}
        if runs:
            self.log("  %-44s %8.2f Gbit/s" % (label, out["gbit_s"]["median"]))
        return out

    @staticmethod
    def first_last(txt):
        """(ip, port) of the best- and the worst-placed cluster-IP rule reached from
        nat KUBE-SERVICES for the generator's ports (80, 443: the backends serve
        their targets), and the rules a packet to the worst one passes: its rule's
        position in each chain on the way, summed (linear: the last rule; the
        dispatch tree: the last leaf rule of the last sub-range at every level).
        Services with ClientIP affinity are left out: their -m recent rules cost
        more than the dispatch (and the 1-service reference has none)."""
        chains = {}
        table = None
        with open(txt) as f:
            for line in f:
                if line.startswith("*"):
                    table = line[1:].strip()
                elif table == "nat" and line.startswith("-A "):
                    name, rest = line[3:].split(" ", 1)
                    chains.setdefault(name, []).append(rest)
        found = []
        recent = {name for name, rules in chains.items() if any("-m recent" in r for r in rules)}

        def walk(name, cost, depth):
            for i, rest in enumerate(chains.get(name, [])):
                m = re.search(r"-j (KUBE-DSP-\S+)", rest)
                if m and depth < 64:
                    walk(m.group(1), cost + i + 1, depth + 1)
                elif "cluster IP" in rest and rest.split()[-1] not in recent:
                    m = re.search(r"-d ([0-9.]+)/32 .*--dport ([0-9]+)", rest)
                    if m and int(m.group(2)) in (80, 443):
                        found.append((cost + i + 1, m.group(1), int(m.group(2))))
        walk("KUBE-SERVICES", 0, 0)
        best = min(found)
        worst = max(found)
        return best[1:], worst[1:], worst[0]

    def datapath(self, reps):
        d = os.path.join(self.work, "datapath")
        os.makedirs(d, exist_ok=True)
        dp = {"cases": [], "iperf": [], "loader": self.a.dp_loader, "topology": "client ns -> veth -> node ns (svcnat's rules, "
              "forwarding) -> bridge -> 2 backend ns; connrate/iperf3 servers in the backends"}
        self.res["datapath"] = dp
        C, N, Bs = self.topology()
        for B in Bs:
            for port in SERVER_PORTS:
                self.bg(B, [self.bin["connrate"], "serve", str(port), "3600"])
        time.sleep(0.5)
        cases = dp["cases"]
        self.log("data path: direct, no rules in the node")
        cases.append(self.connrate(C, N, BACKENDS[0], SERVER_PORTS[0], reps, "direct to the backend (no rules)"))
        many = [int(x) for x in self.a.dp_services.split(",")]
        if self.a.quick:
            phases = [(many[0], True, False)]
        else:  # target first only at the first size, as the issue asks
            phases = [(1, False, True)] + [(k, True, i == 0) for i, k in enumerate(many)]
        for n, last, first in phases:
            extra = None
            if n == 1:
                extra = iperf_service()
            cfg = self.gen(os.path.join(d, "dp-%d.json" % n), n, len(BACKENDS), target_ips=BACKENDS,
                           extra=extra)
            txt = os.path.join(d, "dp-%d.txt" % n)
            self.render(cfg, txt)
            (fip, fport), (lip, lport), nrules = self.first_last(txt)
            self.log("data path: %d service(s), loading the rules (%s)" % (n, self.a.dp_loader))
            if self.a.dp_loader == "svcnat":
                self.run(self.svcnat_args("--once", cfg), ns=N)
            else:  # the same rules, written by the peer
                self.run(["iptables-legacy-restore"], ns=N, stdin=txt)
            label = "%d service%s" % (n, "s" if n > 1 else "")
            if n == 1:
                cases.append(self.connrate(C, N, fip, fport, reps, "ClusterIP, 1 service"))
            else:
                if first:
                    cases.append(self.connrate(C, N, fip, fport, reps,
                                               "ClusterIP, %s, target first" % label))
                if last:
                    cases.append(self.connrate(C, N, lip, lport, reps,
                                               "ClusterIP, %s, target last (%d rules on its path)" % (
                                                   label, nrules)))
            if not self.a.quick:
                cases.append(self.connrate(C, N, BACKENDS[0], SERVER_PORTS[0], reps,
                                           "direct through the node, %s loaded" % label))
            if n == 1 and not self.a.quick:
                self.userspace(C, N, Bs, reps)
        self.res["datapath"] = dp

    def dispatch_curve(self, sizes, reps):
        """New connections/s through kube-proxy's linear chains and through the
        dispatch tree (issue 13): to the worst-placed service and, not a service
        packet, through the node to a backend, at each size.  The reference is a
        second, identical topology with 1 service loaded, measured in turn with
        each case (reference, case, reference, case, ...), so that a machine
        whose load drifts compares like with like; the ratios are medians of the
        pairs."""
        d = os.path.join(self.work, "curve")
        os.makedirs(d, exist_ok=True)
        cv = {"rows": [], "base": None, "paired": True}
        self.res["curve"] = cv
        tops = []
        for _ in range(2):
            C, N, Bs = self.topology()
            for B in Bs:
                for port in SERVER_PORTS:
                    self.bg(B, [self.bin["connrate"], "serve", str(port), "3600"])
            tops.append((C, N, Bs))
        time.sleep(0.5)
        (C0, N0, _), (C, N, _) = tops
        cfg1 = self.gen(os.path.join(d, "c-1.json"), 1, len(BACKENDS), target_ips=BACKENDS)
        txt1 = os.path.join(d, "c-1.txt")
        self.render(cfg1, txt1, dispatch="linear")
        _, (bip, bport), _ = self.first_last(txt1)
        self.run(self.svcnat_args("--once", cfg1, dispatch="linear"), ns=N0)

        def pairs(ip, port, ref_ip, ref_port, label):
            case, ref = [], []
            for _ in range(reps):
                ref.append(self.connrate(C0, N0, ref_ip, ref_port, 1, "  reference, 1 service"))
                case.append(self.connrate(C, N, ip, port, 1, label))
            agg = lambda runs, k: median_range([r[k]["median"] for r in runs])  # noqa: E731
            return {"case": label, "conn_per_s": agg(case, "conn_per_s"), "p50_us": agg(case, "p50_us"),
                    "p99_us": agg(case, "p99_us"), "ref_conn_per_s": agg(ref, "conn_per_s"),
                    "ref_p50_us": agg(ref, "p50_us"), "ref_p99_us": agg(ref, "p99_us"),
                    "ratio": median_range([c["conn_per_s"]["median"] / r["conn_per_s"]["median"]
                                           for c, r in zip(case, ref) if r["conn_per_s"]["median"]]),
                    "failed": sum(r["failed"] for r in case), "loadavg": loadavg()}
        for n in sizes:
            cfg = self.gen(os.path.join(d, "c-%d.json" % n), n, len(BACKENDS), target_ips=BACKENDS)
            for mode in ("linear", "tree"):
                txt = os.path.join(d, "c-%d-%s.txt" % (n, mode))
                self.render(cfg, txt, dispatch=mode)
                _, (lip, lport), cost = self.first_last(txt)
                self.log("curve: %d services, %s, loading" % (n, mode))
                r = self.run(self.svcnat_args("--once", cfg, dispatch=mode), ns=N)
                svc = pairs(lip, lport, bip, bport, "%d, %s, worst-placed service (%d rules)" % (n, mode, cost))
                other = pairs(BACKENDS[0], SERVER_PORTS[0], BACKENDS[0], SERVER_PORTS[0],
                              "%d, %s, non-service through the node" % (n, mode))
                cv["rows"].append({"services": n, "mode": mode, "path_rules": cost, "service": svc,
                                   "other": other, "once_s": r["seconds"]})
        for ns in [x for t in tops for x in [t[0], t[1]] + t[2]]:
            self.ns_del(ns)

    def userspace(self, C, N, Bs, reps):
        dp = self.res["datapath"]
        have_socat = shutil.which("socat")
        if have_socat:
            s = self.bg(N, ["socat", "TCP-LISTEN:8081,bind=%s,fork,reuseaddr,backlog=4096" % CLIENT_GW,
                            "TCP:%s:%d" % (BACKENDS[0], SERVER_PORTS[0])])
            time.sleep(0.3)
            dp["cases"].append(self.connrate(C, N, CLIENT_GW, 8081, reps, "through socat in the node"))
            self.stop(s)
        else:
            self.warn("socat not installed: no userspace-proxy figures")
        if not shutil.which("iperf3"):
            self.warn("iperf3 not installed: no bulk throughput figures")
            return
        self.log("data path: bulk throughput (iperf3 -t %d)" % self.a.iperf_seconds)
        dp["iperf"].append(self.iperf(C, Bs[0], BACKENDS[0], 5201, 5201, reps, "direct to the backend"))
        dp["iperf"].append(self.iperf(C, Bs[0], IPERF_CLUSTER_IP, 5201, 5201, reps, "through DNAT (ClusterIP)"))
        if have_socat:
            s = self.bg(N, ["socat", "TCP-LISTEN:5202,bind=%s,fork,reuseaddr" % CLIENT_GW,
                            "TCP:%s:5201" % BACKENDS[0]])
            time.sleep(0.3)
            dp["iperf"].append(self.iperf(C, Bs[0], CLIENT_GW, 5202, 5201, reps, "through socat in the node"))
            self.stop(s)

    # ---- goals ----
    def goals(self):
        ctl = {(c["n"], c["m"]): c for c in self.res["control"]}
        g = []
        c = ctl.get((10000, 10))

        def ratio(a, b, what="seconds"):
            x, y = c.get(what, {}).get(a), c.get(what, {}).get(b)
            if not x or not y or not y["median"]:
                return None
            return x["median"] / y["median"]

        def cpu(a, b):
            return ratio(a, b, "user_sys_s")

        if c:
            g.append(("full sync into an empty table vs iptables-legacy-restore", "<= 0.2x",
                      ratio("svcnat_full", "restore_full"), lambda v: v <= 0.2,
                      cpu("svcnat_full", "restore_full")))
            g.append(("full rewrite of a loaded table vs the libiptc floor", "<= 1.3x",
                      ratio("svcnat_rewrite", "floor"), lambda v: v <= 1.3, cpu("svcnat_rewrite", "floor")))
            g.append(("one endpoint changed vs the libiptc floor", "<= 1.1x",
                      ratio("svcnat_endpoint", "floor"), lambda v: v <= 1.1, cpu("svcnat_endpoint", "floor")))
            g.append(("one endpoint changed vs kube-proxy's partial restore", "<= 1x",
                      ratio("svcnat_endpoint", "restore_partial_endpoint"), lambda v: v <= 1.0,
                      cpu("svcnat_endpoint", "restore_partial_endpoint")))
            nc = c["info"].get("nochange_commits")
            g.append(("nothing changed: kernel table writes", "0", nc, lambda v: v == 0, None))
            g.append(("peak RSS of the full sync vs the floor program", "<= 1.2x",
                      ratio("svcnat_full", "floor", "rss_kb"), lambda v: v <= 1.2, None))
            g.append(("peak RSS of the full sync vs iptables-legacy-restore", "< 1x",
                      ratio("svcnat_full", "restore_full", "rss_kb"), lambda v: v < 1.0, None))
        nc_ = {(x["n"], x["m"]): x for x in self.res.get("nft") or []}.get((10000, 10))
        if nc_:
            def nratio(a, b, what="seconds"):
                x, y = nc_[what].get(a), nc_[what].get(b)
                return x["median"] / y["median"] if x and y and y["median"] else None

            g.append(("nft: full sync vs iptables-nft-restore (no --noflush)", "<= 0.25x",
                      nratio("svcnat_full", "restore_full"), lambda v: v <= 0.25,
                      nratio("svcnat_full", "restore_full", "user_sys_s")))
            g.append(("nft: one endpoint changed (--once) vs kube-proxy's partial iptables-nft-restore "
                      "--noflush", "<= 0.15x", nratio("svcnat_endpoint", "restore_partial_endpoint"),
                      lambda v: v <= 0.15,
                      nratio("svcnat_endpoint", "restore_partial_endpoint", "user_sys_s")))
            g.append(("nft: nothing changed: write batches sent", "0", nc_["info"].get("nochange_batches"),
                      lambda v: v == 0, None))
            g.append(("nft: peak RSS of the full sync vs iptables-nft-restore", "< 1x",
                      nratio("svcnat_full", "restore_full", "rss_kb"), lambda v: v < 1.0, None))
        dm = self.res.get("daemon")
        if dm and dm.get("sync_s") and dm.get("floor_s"):
            g.append(("one endpoint changed, daemon (plan + apply) vs the libiptc floor, %d x %d"
                      % (dm["n"], dm["m"]), "<= 1.1x",
                      dm["sync_s"]["median"] / dm["floor_s"]["median"], lambda v: v <= 1.1, None))
        s = self.res.get("scale")
        if s:
            size = s.get("tables", {}).get("nat", {}).get("size_bytes")
            if not s["ok"] and s.get("estimate"):
                size = s["estimate"]["estimated_size_bytes"]
            g.append(("%d x %d programs under the 512 MiB limit (nat table bytes%s)" % (
                s["n"], s["m"], "" if s["ok"] else ", estimated: the commit failed"),
                      "ok, < %d" % XT_MAX_TABLE_SIZE, size,
                      lambda v: s["ok"] and v < XT_MAX_TABLE_SIZE, None))
        self.res["goals"] = [{"goal": a, "target": t, "measured": v, "cpu_ratio": cr,
                              "met": (bool(f(v)) if v is not None else None)} for a, t, v, f, cr in g]


def errors_of(stderr):
    """The error lines of a tool's stderr (its warnings are not the news)."""
    lines = [l for l in stderr.splitlines() if "error" in l.lower()]
    return " / ".join(lines)[-400:] if lines else stderr.strip()[-400:]


def iperf_service():
    """A Service + EndpointSlice forwarding IPERF_CLUSTER_IP:5201 to the first backend."""
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "iperf", "namespace": "bench", "uid": "iperf-uid"},
           "spec": {"type": "ClusterIP", "clusterIP": IPERF_CLUSTER_IP, "clusterIPs": [IPERF_CLUSTER_IP],
                    "ports": [{"name": "iperf", "protocol": "TCP", "port": 5201, "targetPort": 5201}]}}
    sl = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
          "metadata": {"name": "iperf-abcde", "namespace": "bench",
                       "labels": {"kubernetes.io/service-name": "iperf"}},
          "addressType": "IPv4",
          "endpoints": [{"addresses": [BACKENDS[0]], "conditions": {"ready": True}, "nodeName": "node-b"}],
          "ports": [{"name": "iperf", "protocol": "TCP", "port": 5201}]}
    return [svc, sl]


# ---- report ----
def fmt_s(x):
    if x is None:
        return "-"
    m, lo, hi = x["median"], x["min"], x["max"]
    f = (lambda v: "%.3f" % v) if m < 10 else (lambda v: "%.2f" % v)
    return "%s (%s–%s)" % (f(m), f(lo), f(hi))


def fmt_mib(x):
    if x is None:
        return "-"
    return "%.0f" % (x["median"] / 1024)


def fmt_ratio(a, b):
    if not a or not b or not b["median"]:
        return "-"
    return "%.2fx" % (a["median"] / b["median"])


def markdown(res):
    mi = res["machine"]
    o = []
    o.append("Machine: %s cores, %s, %s GiB, Linux %s; %s; load average %s at the start, %s at the end."
             % (mi["nproc"], mi["cpu"], mi["mem_gib"], mi["kernel"], mi["date"],
                res.get("loadavg_start"), res.get("loadavg_end")))
    o.append("svcnat %s (%s), %s. Medians of %d repetitions (min–max), ratios of medians "
             "from this run." % (res.get("svcnat") or "?", res.get("git") or "?",
                                 res.get("iptables") or "?", res["reps"]))
    o.append("Command: `%s`" % res["command"])
    o.append("svcnat's writer: `--backend=%s`." % res.get("backend", "libiptc"))
    if res.get("affinity_every", 100) != 100:
        o.append("Inputs: 1 in %s services with ClientIP affinity (the default is 1 in 100)." % (
            res["affinity_every"] or "no"))
    if res.get("nft"):
        o.append("")
        o.append("**nf_tables control plane** (`--backend nft` beside `iptables-nft-restore`), seconds "
                 "(wall clock of the whole process), peak RSS in MiB:")
        o.append("")
        o.append("| services x endpoints | rules | svcnat full sync | iptables-nft-restore (no --noflush) | "
                 "full / restore | svcnat 1 endpoint (--once) | restore --noflush partial (1 endpoint) | "
                 "1 endpoint / partial | svcnat no change | no-change write batches | RSS svcnat full | "
                 "RSS restore full |")
        o.append("|" + "---|" * 12)
        for c in res["nft"]:
            s, r = c["seconds"], c["rss_kb"]
            nb = c["info"].get("nochange_batches")
            o.append("| %d x %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                c["n"], c["m"], c["rules"], fmt_s(s["svcnat_full"]), fmt_s(s["restore_full"]),
                fmt_ratio(s["svcnat_full"], s["restore_full"]), fmt_s(s["svcnat_endpoint"]),
                fmt_s(s["restore_partial_endpoint"]),
                fmt_ratio(s["svcnat_endpoint"], s["restore_partial_endpoint"]),
                fmt_s(s["svcnat_nochange"]), "-" if nb is None else nb,
                fmt_mib(r["svcnat_full"]), fmt_mib(r["restore_full"])))
    if res["control"]:
        o.append("")
        o.append("**Control plane**, seconds (wall clock of the whole process):")
        o.append("")
        cols = [("svcnat_full", "svcnat full sync"), ("restore_full", "iptables-legacy-restore"),
                ("svcnat_rewrite", "svcnat full rewrite"), ("restore_rewrite", "restore --noflush rewrite"),
                ("floor", "libiptc floor"), ("svcnat_endpoint", "svcnat 1 endpoint"),
                ("restore_partial_endpoint", "restore partial (1 endpoint)"),
                ("svcnat_add", "svcnat 1 service added"), ("restore_partial_add", "restore partial (added)"),
                ("svcnat_nochange", "svcnat no change"), ("dry_run", "--dry-run")]
        cols = [(k, t) for k, t in cols if any(c["seconds"].get(k) for c in res["control"])]
        o.append("| services x endpoints | rules | nat table | " + " | ".join(t for _, t in cols) + " |")
        o.append("|" + "---|" * (3 + len(cols)))
        for c in res["control"]:
            s = c["seconds"]
            size = c["info"]["svcnat_loaded"]["nat"]["size_bytes"]
            o.append("| %d x %d | %d | %.0f MB | %s |" % (c["n"], c["m"], c["rules"], size / 1e6, " | ".join(
                fmt_s(s.get(k)) for k, _ in cols)))
        o.append("")
        o.append("**Ratios** (same run) and **peak RSS** (MiB):")
        o.append("")
        o.append("| services x endpoints | full / restore | rewrite / floor | 1 endpoint / floor | "
                 "1 endpoint / partial restore | no-change table writes | RSS svcnat full | "
                 "RSS svcnat 1 endpoint | RSS floor | RSS restore full | RSS restore partial | RSS --dry-run |")
        o.append("|" + "---|" * 12)
        for c in res["control"]:
            s, r = c["seconds"], c["rss_kb"]
            nc = c["info"].get("nochange_commits")
            o.append("| %d x %d | %s | %s | %s | %s | %s | %s |" % (
                c["n"], c["m"], fmt_ratio(s["svcnat_full"], s["restore_full"]),
                fmt_ratio(s["svcnat_rewrite"], s["floor"]), fmt_ratio(s["svcnat_endpoint"], s["floor"]),
                fmt_ratio(s["svcnat_endpoint"], s["restore_partial_endpoint"]),
                "-" if nc is None else nc,
                " | ".join(fmt_mib(r[k]) for k in ("svcnat_full", "svcnat_endpoint", "floor", "restore_full",
                                                    "restore_partial_endpoint", "dry_run"))))
        if all("user_sys_s" in c for c in res["control"]):
            o.append("")
            o.append("The same ratios in CPU time (user + sys of the process, less sensitive to a busy machine): " +
                     "; ".join("%d x %d: full/restore %s, rewrite/floor %s, 1 endpoint/floor %s, "
                               "1 endpoint/partial restore %s" % (
                                   c["n"], c["m"],
                                   fmt_ratio(c["user_sys_s"]["svcnat_full"], c["user_sys_s"]["restore_full"]),
                                   fmt_ratio(c["user_sys_s"]["svcnat_rewrite"], c["user_sys_s"]["floor"]),
                                   fmt_ratio(c["user_sys_s"]["svcnat_endpoint"], c["user_sys_s"]["floor"]),
                                   fmt_ratio(c["user_sys_s"]["svcnat_endpoint"],
                                             c["user_sys_s"]["restore_partial_endpoint"]))
                               for c in res["control"]) + ".")
        o.append("")
        o.append("Floor split (nat): " + "; ".join(
            "%d x %d: iptc_init %.3f s + iptc_commit %.3f s (filter %.3f s)" % (
                c["n"], c["m"], c["extra"]["floor_nat_init_s"]["median"],
                c["extra"]["floor_nat_commit_s"]["median"], c["extra"]["floor_filter_s"]["median"])
            for c in res["control"]) + ".")
        plans = ["%d x %d: %.3f s of %.3f s" % (c["n"], c["m"], c["extra"]["svcnat_full_plan_s"]["median"],
                                                c["seconds"]["svcnat_full"]["median"])
                 for c in res["control"] if c["extra"].get("svcnat_full_plan_s")]
        if plans:
            o.append("svcnat's own planning share of the full sync (its -v line): " + "; ".join(plans) + ".")
    for dm in res.get("daemons") or ([res["daemon"]] if res.get("daemon") else []):
        if not dm.get("sync_s"):
            continue
        o.append("")
        cw = CHANGE_WORDS[dm.get("change", "endpoint")]
        where = ("`svcnat --config FILE`, the file replaced (%s)" % cw if not dm.get("split") else
                 "`svcnat --config DIR`, %d services per file, the file holding the change replaced (%s) "
                 "(files written per change: %s; read by the daemon: %s)" % (
                     dm["split"], cw, ",".join(str(x) for x in dm.get("files_written", [])),
                     ", ".join("%d of %d (%d objects)" % tuple(r) for r in dm.get("files_read", []))))
        o.append("**Daemon** at %d x %d (%s, "
                 "%d times): its sync (plan + apply, kubeproxy_sync_proxy_rules_duration_seconds) %s s; "
                 "change to commit (svcnat_change_to_commit_duration_seconds, includes reading the "
                 "file) %s s; the libiptc floor on the same tables %s s (the raw kernel floor, "
                 "IPT_SO_GET_ENTRIES + IPT_SO_SET_REPLACE, %s s); initial sync %.2f s; peak RSS %.0f MiB, "
                 "RSS after the initial sync %.0f MiB, after the changes %.0f MiB." % (
                     dm["n"], dm["m"], where, dm["sync_s"]["n"], fmt_s(dm["sync_s"]), fmt_s(dm.get("programming_s")),
                     fmt_s(dm.get("floor_s")), fmt_s(dm.get("raw_floor_s")),
                     dm.get("initial_sync_s") or 0, dm.get("vmhwm_kb", 0) / 1024,
                     dm.get("vmrss_initial_kb", 0) / 1024, dm.get("vmrss_kb", 0) / 1024))
        pt = dm.get("parts")
        if pt:
            o.append("Its parts (medians of the -v 'sync parts' lines): " +
                     ", ".join("%s %.3f s" % (k, pt[k]) for k in PARTS) +
                     "; service ports resolved anew %d, planned anew %d." %
                     (pt["ports resolved"], pt["ports planned"]))
    s = res.get("scale")
    if s:
        o.append("")
        if s["ok"]:
            t = s["tables"]["nat"]
            o.append("**Scale**: %d x %d (%d rules): svcnat --once programmed it in %.1f s, peak RSS %.0f MiB; "
                     "nat table %d bytes (%.1f%% of the 512 MiB limit), %d entries; floor on it %s."
                     % (s["n"], s["m"], s["rules"], s["svcnat"]["seconds"], s["svcnat"]["maxrss_kb"] / 1024,
                        t["size_bytes"], 100.0 * t["size_bytes"] / XT_MAX_TABLE_SIZE, t["entries"],
                        "%.1f s" % s["floor"]["seconds"] if s.get("floor") else "failed"))
        else:
            o.append("**Scale**: %d x %d (%d rules): svcnat --once FAILED: %s" % (
                s["n"], s["m"], s["rules"], s["error"]))
            e = s.get("estimate")
            if e:
                o.append("%d x %d programs: nat table %d bytes, %d entries; so %d x %d needs about %d bytes "
                         "(%.2fx the 512 MiB limit), %d entries." % (
                             e["from_services"], s["m"], e["size_bytes"], e["entries"], s["n"], s["m"],
                             e["estimated_size_bytes"], e["estimated_size_bytes"] / XT_MAX_TABLE_SIZE,
                             e["estimated_entries"]))
        if s.get("restore"):
            o.append("iptables-legacy-restore of the same text: %s in %.1f s, peak RSS %.0f MiB." % (
                "ok" if s["restore"]["rc"] == 0 else "FAILED (exit %d)" % s["restore"]["rc"],
                s["restore"]["seconds"], s["restore"]["maxrss_kb"] / 1024))
    dp = res.get("datapath")
    if dp:
        o.append("")
        o.append("**Data path** (%s), one client thread, connect + 1-byte request/response + close:" % dp["topology"])
        o.append("")
        o.append("| case | connections/s | p50 connect (us) | p99 connect (us) | failed |")
        o.append("|---|---|---|---|---|")
        for c in dp["cases"]:
            r = c["conn_per_s"]
            o.append("| %s | %.0f (%.0f–%.0f) | %.1f | %.1f | %d |" % (
                c["case"], r["median"], r["min"], r["max"], c["p50_us"]["median"], c["p99_us"]["median"],
                c["failed"]))
        if dp["iperf"]:
            o.append("")
            o.append("| bulk throughput (iperf3, one stream) | Gbit/s |")
            o.append("|---|---|")
            for c in dp["iperf"]:
                o.append("| %s | %s |" % (c["case"], fmt_s(c["gbit_s"])))
    cv = res.get("curve")
    if cv and cv.get("rows"):
        o.append("")
        o.append("**Dispatch** (issue 13; the data-path topology, one client thread): new connections/s to the "
                 "worst-placed service and for non-service traffic through the node, linear (kube-proxy's "
                 "chains) and the tree, each measured in turn with the same figure through an identical "
                 "topology with 1 service loaded (ratio: median of the pairs' ratios).")
        o.append("")
        o.append("| services | layout | rules on the worst path | worst-placed service conn/s | vs 1 service "
                 "| p50 / p99 connect (us), 1 service | non-service conn/s | vs 1 service | p50 / p99 (us), 1 service |")
        o.append("|---|---|---|---|---|---|---|---|---|")
        for r in cv["rows"]:
            s, t = r["service"], r["other"]
            o.append("| %d | %s | %d | %.0f | %.2fx (%.2f–%.2f) | %.1f / %.1f, %.1f / %.1f | %.0f | %.2fx (%.2f–%.2f) | %.1f / %.1f, %.1f / %.1f |" % (
                r["services"], r["mode"], r["path_rules"], s["conn_per_s"]["median"],
                s["ratio"]["median"], s["ratio"]["min"], s["ratio"]["max"],
                s["p50_us"]["median"], s["p99_us"]["median"], s["ref_p50_us"]["median"], s["ref_p99_us"]["median"],
                t["conn_per_s"]["median"], t["ratio"]["median"], t["ratio"]["min"], t["ratio"]["max"],
                t["p50_us"]["median"], t["p99_us"]["median"], t["ref_p50_us"]["median"], t["ref_p99_us"]["median"]))
    if res.get("goals"):
        o.append("")
        o.append("**Goals** (issue 7, at 10,000 x 10 unless said):")
        o.append("")
        o.append("| goal | target | measured (wall) | met | same ratio in CPU time |")
        o.append("|---|---|---|---|---|")
        for g in res["goals"]:
            v = g["measured"]
            vs = "-" if v is None else ("%.2fx" % v if isinstance(v, float) else str(v))
            cr = g.get("cpu_ratio")
            o.append("| %s | %s | %s | %s | %s |" % (g["goal"], g["target"], vs,
                                                    {True: "yes", False: "**no**", None: "-"}[g["met"]],
                                                    "-" if cr is None else "%.2fx" % cr))
    if res.get("family"):
        o.append("")
        o.append("**IPv6 and dual-stack** (issue 14; `family.sh`, every writer that writes "
                 "ip6tables, side by side):")
        o.append("")
        o.extend(res["family"].rstrip("\n").split("\n"))
    if res.get("warnings"):
        o.append("")
        o.append("Warnings: " + "; ".join(res["warnings"]))
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 and 10,000 x 10, one data-path case")
    ap.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    ap.add_argument("--sizes", help="control-plane sizes, e.g. 1000x10,10000x10")
    ap.add_argument("--no-control", action="store_true")
    ap.add_argument("--no-datapath", action="store_true")
    ap.add_argument("--no-daemon", action="store_true", help="skip the daemon's one-endpoint sync")
    ap.add_argument("--daemon-size", default="10000x10",
                    help="sizes of the daemon runs, e.g. 1000x10,10000x10,20000x10 (default 10000x10)")
    ap.add_argument("--daemon-change", default="endpoint", metavar="C[,C...]",
                    help="the daemon runs' changes: endpoint (one endpoint moved, then back), add (one "
                         "service added, then removed); default endpoint")
    ap.add_argument("--daemon-split", default="0,100", metavar="K[,K...]",
                    help="the daemon run's layouts: 0, one --config FILE replaced; K, a --config DIR of "
                         "files of K services each, one file replaced (default 0,100)")
    ap.add_argument("--no-scale", action="store_true", help="skip the 20,000 x 50 run")
    ap.add_argument("--scale", action="store_true", help="run 20,000 x 50 also with --sizes or --quick")
    ap.add_argument("--scale-peer", action="store_true", help="also iptables-legacy-restore at 20,000 x 50")
    ap.add_argument("--affinity-every", type=int, default=100,
                    help="1 in K services with ClientIP affinity (default 100; 0: none): each one "
                         "adds -m recent rules, which the kernel checks in quadratic time")
    ap.add_argument("--peer-rewrite", action="store_true",
                    help="also iptables-legacy-restore --noflush of the every-endpoint-moved change "
                         "(slow: libiptc deletes chains in quadratic time)")
    ap.add_argument("--conn-count", type=int, default=100000, help="connections per data-path run (bound)")
    ap.add_argument("--conn-seconds", type=float, default=5.0, help="seconds per data-path run (bound)")
    ap.add_argument("--iperf-seconds", type=int, default=5)
    ap.add_argument("--dp-loader", choices=["svcnat", "restore"], default="svcnat",
                    help="who writes the data-path rules (the same rules either way)")
    ap.add_argument("--dp-services", default="10000,20000",
                    help="service counts of the data-path cases (default 10000,20000; --quick: the first)")
    ap.add_argument("--dispatch", choices=["auto", "linear", "tree"], default=None,
                    help="svcnat's --dispatch in every run (default: svcnat's own default)")
    ap.add_argument("--dp-curve", metavar="SIZES", default=None,
                    help="issue 13's curve: linear vs tree at these service counts, e.g. "
                         "1000,5000,10000,20000,50000 (new connections/s, worst-placed service and "
                         "non-service traffic; not run by default)")
    ap.add_argument("--backend", choices=["direct", "libiptc", "nft"], default="direct",
                    help="svcnat's writer (default direct: the kernel's socket options without libiptc; "
                         "nft: the nf_tables writer beside iptables-nft-restore, control plane only)")
    ap.add_argument("--family", action="store_true",
                    help="also family.sh: 10,000 x 10 IPv4 / IPv6-only and 5,000 x 10 IPv4 / "
                         "dual-stack, --dry-run and a full sync with every writer that writes "
                         "ip6tables (issue 14)")
    ap.add_argument("--family-only", action="store_true", help="only family.sh")
    ap.add_argument("--builddir", default=".", help="where svcnat and contrib/bench/* were built")
    ap.add_argument("--workdir", default=None, help="parent of the scratch directory (default $TMPDIR)")
    ap.add_argument("--out", default="bench-results", help="writes OUT.json and OUT.md")
    ap.add_argument("--report", metavar="JSON", help="only print the Markdown of an earlier run")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            sys.stdout.write(markdown(json.load(f)))
        return 0
    if os.geteuid() != 0:
        print("run.py: needs root (network namespaces, iptables)", file=sys.stderr)
        return 2
    if a.reps < 1 or a.conn_count < 1 or a.conn_seconds <= 0 or a.iperf_seconds < 1:
        ap.error("bad --reps, --conn-count, --conn-seconds or --iperf-seconds")
    if a.quick:
        a.conn_seconds = min(a.conn_seconds, 3.0)
        a.iperf_seconds = min(a.iperf_seconds, 3)
    sizes = QUICK_SIZES if a.quick else FULL_SIZES
    if a.sizes:
        try:
            sizes = [tuple(int(x) for x in s.split("x")) for s in a.sizes.split(",")]
        except ValueError:
            ap.error("--sizes: expected NxM[,NxM...]")
    try:
        suite = Suite(a)
    except BenchError as e:
        print("run.py: %s" % e, file=sys.stderr)
        return 2

    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)

    signal.signal(signal.SIGTERM, on_signal)
    rc = 0
    if a.family_only:
        a.family = a.no_control = a.no_daemon = a.no_scale = a.no_datapath = True
    try:
        if not a.no_control:
            for n, m in sizes:
                if a.backend == "nft":
                    suite.control_nft(n, m, a.reps)
                else:
                    suite.control(n, m, a.reps)
        if not a.no_daemon:
            for size in a.daemon_size.split(","):
                n, m = (int(x) for x in size.split("x"))
                for change in a.daemon_change.split(","):
                    for k in (int(x) for x in a.daemon_split.split(",")):
                        suite.daemon(n, m, a.reps, k, change)
        if a.scale or (not a.no_scale and not a.quick and not a.sizes and not a.no_control):
            suite.scale(*SCALE_SIZE)
        if not a.no_datapath:
            suite.datapath(a.reps)
        if a.dp_curve:
            suite.dispatch_curve([int(x) for x in a.dp_curve.split(",")], a.reps)
        if a.family:
            env = dict(os.environ, SYNC_REPS=str(a.reps))
            p = subprocess.run(["bash", os.path.join(HERE, "family.sh"), a.builddir, str(a.reps)],
                               env=env, stdout=subprocess.PIPE, text=True, timeout=3600, check=True)
            suite.res["family"] = p.stdout
    except (BenchError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        suite.warn("stopped early: %s" % e)
        rc = 1
    except KeyboardInterrupt as e:
        suite.warn("interrupted (%s)" % (e or "SIGINT"))
        rc = 130
    finally:
        suite.cleanup()
    res = suite.res
    res["loadavg_end"] = loadavg()
    res["wall_s"] = round(time.monotonic() - suite.t0, 1)
    suite.goals()
    res["warnings"] = suite.warnings
    md = markdown(res)
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(md)
    sys.stdout.write(md)
    print("\nwrote %s.json and %s.md in %.0f s" % (a.out, a.out, res["wall_s"]), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
