#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's memory after its first sync, per writer (issue 27's goal).

Run as root:

    sudo python3 contrib/bench/memory.py --builddir BUILD [--before OLDBUILD] \\
        [-n 10000] [-m 10] [--backends direct,libiptc,restore,nft] [--changes 2]

For each writer (and each build: --before gives a second one, shown side by
side), `svcnat --config FILE` runs as a daemon alone in a network and mount
namespace of its own (unshare -n -m, a private /run) on gen.py's N services
x M endpoints; once its first sync is done (and its plan stores made, which
the nft writer's daemon does just after) the script reads VmRSS and
VmHWM from /proc/PID/status and the daemon's svcnat_memory_bytes{part}
gauge from /metrics (a build without it shows "-"), then moves one endpoint
--changes times (each undone by the next) and reads them again.  Nothing
runs in the host's network namespace; the namespaces go with the daemon.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_ARGS = ["--node-ip", "198.18.0.1", "--hostname", "node-a",
             "--cluster-cidr", "198.18.64.0/18"]
MIB = 1024.0 * 1024.0


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        st = dict(line.split(":", 1) for line in f if ":" in line)
    return {k: int(st[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


def cpu_seconds(pid):
    """User + system CPU seconds of the process so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics(pid):
    """The daemon's /metrics, through its own network namespace."""
    try:
        out = subprocess.run(["nsenter", "-t", str(pid), "-n", "curl", "-s", "-m", "5",
                              "http://127.0.0.1:10249/metrics"],
                             capture_output=True, text=True, timeout=10).stdout
    except subprocess.TimeoutExpired:
        return {}, {}
    m, parts = {}, {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        g = re.match(r'svcnat_memory_bytes\{part="([^"]+)"\} (\S+)$', line)
        if g:
            parts[g.group(1)] = float(g.group(2))
            continue
        # a series with labels counts under its name (the first one seen)
        g = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$", line)
        if g and g.group(1) not in m:
            try:
                m[g.group(1)] = float(g.group(3))
            except ValueError:
                pass
    return m, parts


def wait_syncs(p, count, timeout):
    key = "kubeproxy_sync_proxy_rules_duration_seconds_count"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if p.poll() is not None:
            raise RuntimeError("the daemon exited (%d)" % p.returncode)
        m, parts = metrics(p.pid)
        if m.get(key, 0) >= count:
            # the gauge is set at the end of the sync's done step: read
            # once more so that it covers this sync
            time.sleep(0.3)
            return metrics(p.pid)
        time.sleep(0.3)
    raise RuntimeError("no sync %d within %d s" % (count, timeout))


def wait_store(p, m, parts, timeout=120):
    """After the first sync: the nft writer's daemon plans its kept plans
    (the plan stores) on its worker once that sync is done, and until then
    svcnat_memory_bytes{part="plan_store"} reads 0 while that plan grows in
    "other".  What the daemon keeps is there once the gauge is set."""
    end = time.monotonic() + timeout
    while parts.get("plan_store", 1) == 0 and time.monotonic() < end:
        if p.poll() is not None:
            raise RuntimeError("the daemon exited (%d)" % p.returncode)
        time.sleep(0.3)
        m, parts = metrics(p.pid)
    if parts.get("plan_store", 1) == 0:
        print("memory.py: no plan store after %d s; reading anyway" % timeout, file=sys.stderr)
    return m, parts


def run_one(svcnat, backend, base, change, changes, log):
    work = os.path.dirname(base)
    live = os.path.join(work, "live.json")
    shutil.copyfile(base, live)
    script = ("mount -t tmpfs tmpfs /run && ip link set lo up && exec \"$@\"")
    cmd = ["unshare", "-n", "-m", "--propagation", "private", "sh", "-c", script, "sh",
           svcnat, "--config", live] + NODE_ARGS + [
           "--backend", backend, "--min-sync-period", "0s", "--sync-period", "1h",
           "--healthz-bind-address", "", "--metrics-bind-address", "127.0.0.1:10249"]
    with open(log, "w") as errlog:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog)
    res = {}
    try:
        m, parts = wait_store(p, *wait_syncs(p, 1, 1800))
        sum0 = m.get("kubeproxy_sync_proxy_rules_duration_seconds_sum")
        # the daemon's own process (unshare and sh exec into it)
        res["first"] = dict(status(p.pid), parts=parts, sync_s=sum0, cpu_s=cpu_seconds(p.pid),
                            load=os.getloadavg()[0])
        cpu0 = res["first"]["cpu_s"]
        for k in range(changes):
            src = change if k % 2 == 0 else base
            shutil.copyfile(src, live + ".tmp")
            os.rename(live + ".tmp", live)
            m, parts = wait_syncs(p, k + 2, 900)
        if changes:
            total = m.get("kubeproxy_sync_proxy_rules_duration_seconds_sum")
            res["changed"] = dict(status(p.pid), parts=parts, load=os.getloadavg()[0],
                                  sync_s=(total - sum0) / changes if total and sum0 else None,
                                  cpu_s=(cpu_seconds(p.pid) - cpu0) / changes)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return res


def mib(x):
    return "-" if x is None else "%.0f" % (x / MIB)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir", default=".")
    ap.add_argument("--before", help="a second build directory, shown first")
    ap.add_argument("-n", type=int, default=10000)
    ap.add_argument("-m", type=int, default=10)
    ap.add_argument("--backends", default="direct,libiptc,restore,nft")
    ap.add_argument("--changes", type=int, default=2)
    ap.add_argument("--keep", help="keep the daemons' logs in this directory")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("memory.py: needs root (network namespaces)")
    builds = ([("before", a.before)] if a.before else []) + [("after" if a.before else "build", a.builddir)]
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    work = tempfile.mkdtemp(prefix="svcnat-mem-")
    try:
        base, change = os.path.join(work, "base.json"), os.path.join(work, "change.json")
        gen = os.path.join(HERE, "gen.py")
        subprocess.run([sys.executable, gen, "-n", str(a.n), "-m", str(a.m), "-o", base], check=True)
        subprocess.run([sys.executable, gen, "-n", str(a.n), "-m", str(a.m), "--change", "endpoint",
                        "-o", change], check=True)
        rows = []
        for backend in a.backends.split(","):
            for label, b in builds:
                log = os.path.join(a.keep or work, "%s-%s.log" % (label, backend))
                r = run_one(os.path.join(os.path.abspath(b), "svcnat"), backend, base, change,
                            a.changes, log)
                rows.append((backend, label, r))
                f = r["first"]
                print("%s %s: first sync %.2f s (daemon CPU %.2f s so far, load %.1f), "
                      "RSS %s MiB, HWM %s MiB" % (
                          backend, label, f["sync_s"] or 0, f["cpu_s"], f["load"],
                          mib(f["VmRSS"]), mib(f["VmHWM"])), file=sys.stderr, flush=True)
                if "changed" in r:
                    c = r["changed"]
                    print("%s %s: one-change sync %.3f s (daemon CPU %.3f s per change, "
                          "load %.1f)" % (backend, label, c["sync_s"] or 0, c["cpu_s"], c["load"]),
                          file=sys.stderr, flush=True)
        names = []
        for _, _, r in rows:
            for k in r["first"]["parts"]:
                if k not in names:
                    names.append(k)
        print("%d services x %d endpoints, MiB (svcnat_memory_bytes{part} after the first sync)"
              % (a.n, a.m))
        hdr = ["writer", "build", "RSS first", "HWM first"] + names + (
            ["RSS after %d changes" % a.changes, "HWM after", "one-change sync s"]
            if a.changes else [])
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for backend, label, r in rows:
            f = r["first"]
            cells = [backend, label, mib(f["VmRSS"]), mib(f["VmHWM"])]
            cells += ["%.1f" % (f["parts"][k] / MIB) if k in f["parts"] else "-" for k in names]
            if a.changes:
                c = r["changed"]
                cells += [mib(c["VmRSS"]), mib(c["VmHWM"]),
                          "-" if c["sync_s"] is None else "%.3f" % c["sync_s"]]
            print("| " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
