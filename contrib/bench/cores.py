#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The first sync on one thread and on every core, beside the kernel's floor.

For each size and writer, in one run: `svcnat --once -v` into empty tables
(each run in a fresh network namespace) with SVCNAT_THREADS=1 and with
SVCNAT_THREADS=N (default: the CPUs online), its wall time and its CPU time
(user + sys) and peak RSS (contrib/bench/runin), and the kernel's own part
as svcnat's verbose notes report it: the legacy nat table's IPT_SO_SET_REPLACE
("replaced in"), or the nf_tables batch's commit ("committed in"), with its
CPU time (the kernel does that work in svcnat's system call).  That part is
the floor no writer goes below; CPU / its CPU is the ratio a loaded machine
does not move.  The encode's time comes with its CPU time where svcnat
reports it (all threads: the nft writer encodes a table in parts at once).
Beside them the restore tool of the same rules (`svcnat --dry-run` text): iptables-legacy-restore for direct,
iptables-nft-restore for nft (minutes at 10,000 x 10: --nft-restore-size
gives it a smaller cluster, and the report says which), and `floor --raw`
(read the loaded legacy nat table and replace it with the same bytes).

With --pause S, each svcnat run waits S seconds first.  On a VM whose
balloon reports free pages to its host, memory freed by the run before
costs little to touch again for about a second, and as much as never
touched memory after a few (docs/performance.md): a pause of 5 s or more
gives each run the cold memory a node's first sync after boot meets.

With --no-warm-too, the N-thread run is also made with SVCNAT_NO_WARM=1
(no thread faulting in memory ahead of the decode, merge and plan), in the
same run, just before the N-thread run with it.

The 1-minute load average is printed with each figure: on a shared machine,
compare the two thread counts of the same run, and CPU time more than wall.

It ends with the floor: the first touch of new memory timed on one thread
and on N at once (contrib/bench/touch), then per row the kernel's part plus
the first touch of the table svcnat hands the kernel and, for the direct
writer, of its peak RSS, in CPU time and in wall time on the row's threads.

    sudo python3 contrib/bench/cores.py --builddir BUILD [--sizes 10000x10]
        [--backends direct,nft] [--reps 3] [--threads N] [--nft-restore-size 2000x10]
        [--no-warm-too] [--pause S]
"""
import argparse
import json
import mmap
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_ARGS = ["--node-ip", "198.18.0.1", "--hostname", "node-a",
             "--cluster-cidr", "198.18.64.0/18"]


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = tempfile.mkdtemp(prefix="svcnat-cores-")
        self.lock = os.path.join(self.work, "xtables.lock")
        open(self.lock, "w").close()
        b = a.builddir
        self.svcnat = os.path.join(b, "svcnat")
        self.runin = os.path.join(b, "contrib/bench/runin")
        self.floor = os.path.join(b, "contrib/bench/floor")
        self.touch = os.path.join(b, "contrib/bench/touch")
        self.ns_seq = 0
        for p in (self.svcnat, self.runin):
            if not os.access(p, os.X_OK):
                sys.exit("cores.py: no %s (build first)" % p)

    def netns(self):
        self.ns_seq += 1
        name = "svcnat-cores-%d-%d" % (os.getpid(), self.ns_seq)
        subprocess.run(["ip", "netns", "add", name], check=True)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        return name

    def run(self, cmd, ns, env=None, stdin=None, stdout=None, timeout=1800):
        jf = os.path.join(self.work, "runin.json")
        full = [self.runin, "-t", str(timeout), "-o", jf, "-n", ns, "-l", self.lock, "--"] + cmd
        e = dict(os.environ)
        # svcnat's kept state (nft-*.keep, one per namespace, ~18 MB at
        # 10,000 x 10) goes to the run's own directory, removed with it,
        # not to the host's /run/svcnat, where files of deleted namespaces
        # would stay.
        e["SVCNAT_RUNTIME_DIR"] = os.path.join(self.work, "run")
        e.update(env or {})
        fin = open(stdin) if stdin else subprocess.DEVNULL
        fout = open(stdout, "w") if stdout else subprocess.DEVNULL
        try:
            p = subprocess.run(full, env=e, stdin=fin, stdout=fout, stderr=subprocess.PIPE,
                               text=True)
        finally:
            if stdin:
                fin.close()
            if stdout:
                fout.close()
        with open(jf) as f:
            r = json.load(f)
        os.unlink(jf)
        if p.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (os.path.basename(cmd[0]), p.returncode,
                                                       p.stderr[-500:]))
        r["stderr"] = p.stderr
        r["cpu"] = r["user_s"] + r["sys_s"]
        r["load"] = os.getloadavg()[0]
        return r

    def config(self, n, m):
        path = os.path.join(self.work, "c%dx%d.json" % (n, m))
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "-n", str(n), "-m",
                            str(m), "-o", path], check=True)
        return path

    def dry_run(self, cfg):
        out = cfg + ".txt"
        if not os.path.exists(out):
            with open(out, "w") as f:
                subprocess.run([self.svcnat, "--dry-run", "--config", cfg] + NODE_ARGS,
                               stdout=f, check=True)
        return out

    def svcnat_once(self, cfg, backend, threads, warm=True):
        ns = self.netns()
        env = {"SVCNAT_THREADS": str(threads)}
        if not warm:
            env["SVCNAT_NO_WARM"] = "1"
        try:
            r = self.run([self.svcnat, "--once", "-v", "--backend", backend, "--config", cfg] +
                         NODE_ARGS, ns, env=env)
            m = re.search(r"([0-9.]+) MiB faulted in ahead", r["stderr"])
            r["warm_mib"] = float(m.group(1)) if m else 0.0
            if backend == "direct":
                m = re.search(r"direct: nat: .*built (\d+) bytes in ([0-9.]+) s"
                              r"(?: \((\d+) parts?\))?, replaced in ([0-9.]+) s"
                              r"(?: \(CPU ([0-9.]+) s\))?", r["stderr"])
                r["bytes"] = int(m.group(1)) if m else None
                r["kernel"] = float(m.group(4)) if m else None
                r["kernel_cpu"] = float(m.group(5)) if m and m.group(5) else None
                r["encode"] = float(m.group(2)) if m else None
                r["parts"] = int(m.group(3)) if m and m.group(3) else None
                if self.a.raw_floor and os.access(self.floor, os.X_OK):
                    f = self.run([self.floor, "--raw", "nat"], ns)
                    r["raw_floor"] = f["seconds"]
                    r["raw_floor_cpu"] = f["cpu"]
            else:
                m = re.search(r"encoded \d+ messages \((\d+) bytes(?:, [^)]*)?\) in ([0-9.]+) s"
                              r"(?: \(CPU ([0-9.]+) s\))?, committed in ([0-9.]+) s"
                              r"(?: \(CPU ([0-9.]+) s\))?, kept state updated in ([0-9.]+) s",
                              r["stderr"])
                g = m.groups() if m else (None,) * 6
                r["bytes"] = int(g[0]) if g[0] else None
                r["encode"] = float(g[1]) if g[1] else None
                r["encode_cpu"] = float(g[2]) if g[2] else None
                r["kernel"] = float(g[3]) if g[3] else None
                r["kernel_cpu"] = float(g[4]) if g[4] else None
                r["kept"] = float(g[5]) if g[5] else None
            m = re.search(r" in ([0-9.]+)s \(plan ([0-9.]+)s\)", r["stderr"])
            r["plan"] = float(m.group(2)) if m else None
            return r
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)

    def restore(self, cfg, backend):
        ns = self.netns()
        tool = "iptables-legacy-restore" if backend == "direct" else "iptables-nft-restore"
        txt = self.dry_run(cfg)
        try:
            # The nfacct counters the rules count in, made first as
            # kube-proxy makes them at its start: the kernel refuses a rule
            # naming a counter that does not exist.
            with open(txt) as f:
                names = nfacct_names(f.read())
            for name in names:
                subprocess.run(["ip", "netns", "exec", ns, "nfacct", "add", name], check=True,
                               stdout=subprocess.DEVNULL)
            return self.run([tool, "-w"], ns, stdin=txt)
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)


def nfacct_names(text):
    """The nfacct counters that restore text's rules count in, sorted."""
    return sorted(set(re.findall(r"--nfacct-name\s+(\S+)", text)))


def first_touch(mb):
    """CPU seconds to write one byte per 4 KiB page of mb MiB of new
    anonymous memory (huge pages where the kernel gives them), as svcnat's
    buffers are; then the same again at once, in pages just freed.  The
    fallback of contrib/bench/touch (one thread only: Python's threads hold
    one lock while they touch)."""
    out = []
    for _ in range(2):
        n = mb << 20
        m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            m.madvise(mmap.MADV_HUGEPAGE)
        c = time.thread_time()
        for i in range(0, n, 4096):
            m[i] = 1
        out.append(time.thread_time() - c)
        m.close()
    return out


def touch_rates(b, mb, threads, pause):
    """{threads: MiB/s of wall time} for the first touch of mb MiB of new
    memory, on 1 thread and on `threads` at once (contrib/bench/touch),
    each after `pause` seconds, as the svcnat runs (cold memory); printed
    with the rate of the same pages freed and taken again at once."""
    rates = {}
    if os.access(b.touch, os.X_OK):
        for t in sorted({1, threads}):
            time.sleep(pause)
            r = json.loads(subprocess.run([b.touch, str(mb), str(t)], check=True,
                                          capture_output=True, text=True).stdout)
            rates[t] = r["fresh_mib_per_s"]
            print("first touch of %d MiB of new memory on %d thread%s at once: %.3f s wall, "
                  "%.3f s CPU (%.0f MiB/s); of the same pages freed and taken again at once: "
                  "%.3f s (%.0f MiB/s)" % (mb, t, "" if t == 1 else "s", r["fresh_wall"],
                                           r["fresh_cpu"], r["fresh_mib_per_s"],
                                           r["again_wall"], r["again_mib_per_s"]))
    else:
        fresh, again = first_touch(mb)
        rates[1] = mb / fresh
        print("first touch of %d MiB of new memory: %.3f s CPU (%.0f MiB/s); of the same "
              "pages freed and taken again at once: %.3f s (%.0f MiB/s) (no %s: one thread "
              "only)" % (mb, fresh, rates[1], again, mb / again, b.touch))
    return rates


def med(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(v) if v else None


def fmt(v, unit="s"):
    return "-" if v is None else "%.3f %s" % (v, unit)


def enc(w, c):
    """The encode's wall time, and its CPU time (all threads) where known."""
    return fmt(w) + (" (CPU %.3f s)" % c if c is not None else "")


def size(s):
    n, m = s.split("x")
    return int(n), int(m)


def wall_floors(rates, walls):
    """The floor in wall time: the kernel's part, after the first touch of
    what svcnat must have written before it (the table it hands the kernel;
    every page resident at its peak), spread over the row's threads at the
    touch rate measured for that many threads at once.  Where that rate was
    not measured, the one-thread rate times the threads: the fastest the
    touch could be, so the floor stays one."""
    print()
    print("The floor in wall time: the kernel's part (its wall time), plus the first touch, "
          "on the row's threads at once, of the table svcnat hands it (no writer avoids it) "
          "and, for the direct writer, of svcnat's peak RSS (every page of it was written "
          "before the replace began; nothing is written after it but counters):")
    print()
    print("| size | writer | threads | svcnat wall / kernel's part | kernel's part | table: "
          "MiB, floor, / kernel's part | peak RSS: MiB, floor, / kernel's part |")
    print("|---|---|---|---|---|---|---|")
    for s, be, label, t, w, k, nb, rss in walls:
        r = rates.get(t) or (rates[1] * t if rates.get(1) else None)
        if not (k and r):
            continue
        cells = []
        # The nf_tables writer allocates after the commit too (its kept
        # state): its peak is no floor of what comes before.
        for mib in (nb / 2**20 if nb else None,
                    rss / 1024 if rss and be == "direct" else None):
            cells.append("%.0f, %.3f s, %.2fx" % (mib, k + mib / r, (k + mib / r) / k)
                         if mib else "-")
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            s, be, label, "%.2fx" % (w / k) if w else "-", fmt(k), cells[0], cells[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", default=".")
    ap.add_argument("--sizes", default="10000x10")
    ap.add_argument("--backends", default="direct,nft")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--nft-restore-size", default="2000x10",
                    help="iptables-nft-restore's cluster (it takes minutes at 10000x10)")
    ap.add_argument("--no-restore", action="store_true")
    ap.add_argument("--raw-floor", action="store_true",
                    help="also floor --raw (replace the loaded nat table with itself)")
    ap.add_argument("--touch-mb", type=int, default=256,
                    help="MiB of new memory whose first touch is timed (0: none)")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds to wait before each svcnat run (cold memory)")
    ap.add_argument("--no-warm-too", action="store_true",
                    help="also run the N threads with SVCNAT_NO_WARM=1")
    ap.add_argument("--json", help="keep every sample here")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cores.py: needs root (network namespaces)")
    b = Bench(a)
    try:
        measure(a, b)
    finally:
        # the inputs, the dry-run text and the kept-state files
        shutil.rmtree(b.work, ignore_errors=True)


def measure(a, b):
    out = []
    print("load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    rate, rates = None, {}
    if a.touch_mb:
        rates = touch_rates(b, a.touch_mb, a.threads, a.pause)
        rate = rates[1]
    floors, walls = [], []
    print("| size | writer | threads | wall | CPU (user+sys) | peak RSS | plan | encode (its CPU) "
          "| kernel's part (floor) | its CPU | wall / floor | CPU / its CPU | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in a.sizes.split(","):
        n, m = size(s)
        cfg = b.config(n, m)
        for be in a.backends.split(","):
            row = {"size": s, "backend": be}
            runs = [(1, True)]
            if a.threads > 1:
                runs += [(a.threads, False)] if a.no_warm_too else []
                runs.append((a.threads, True))
            for t, warm in runs:
                rs = []
                # Alternate nothing: the reps of one count run back to back,
                # the counts one after the other in the same run.
                for _ in range(a.reps):
                    time.sleep(a.pause)
                    rs.append(b.svcnat_once(cfg, be, t, warm))
                w, c, k = med(rs, "seconds"), med(rs, "cpu"), med(rs, "kernel")
                kc = med(rs, "kernel_cpu")
                row[t if warm else "%d-no-warm" % t] = rs
                wm = med(rs, "warm_mib")
                label = "%d" % t + (", no warm" if not warm else
                                    ", warm %.0f MiB" % wm if wm else "")
                print("| %s | %s | %s | %s | %s | %.0f MiB | %s | %s | %s | %s | %s | %s "
                      "| %.1f-%.1f |" % (
                          s, be, label, fmt(w), fmt(c), med(rs, "maxrss_kb") / 1024,
                          fmt(med(rs, "plan")), enc(med(rs, "encode"), med(rs, "encode_cpu")),
                          fmt(k), fmt(kc),
                          "%.2fx" % (w / k) if k else "-", "%.2fx" % (c / kc) if kc else "-",
                          min(r["load"] for r in rs), max(r["load"] for r in rs)))
                floors.append((s, be, label, c, kc, med(rs, "bytes"), med(rs, "maxrss_kb")))
                walls.append((s, be, label, t, w, k, med(rs, "bytes"), med(rs, "maxrss_kb")))
                if be == "direct" and a.raw_floor:
                    print("| %s | floor --raw (nat read + replaced with itself) | %s | %s | %s "
                          "| - | - | - | - | - | - | - | - |" % (
                              s, label, fmt(med(rs, "raw_floor")), fmt(med(rs, "raw_floor_cpu"))))
            if not a.no_restore:
                rsz = s if be == "direct" else a.nft_restore_size
                rcfg = b.config(*size(rsz))
                r = b.restore(rcfg, be)
                row["restore"] = dict(r, size=rsz)
                print("| %s | %s | restore | %s | %s | %.0f MiB | - | - | - | - | - | - | %.1f |" % (
                    rsz, "iptables-legacy-restore" if be == "direct" else
                    "iptables-nft-restore", fmt(r["seconds"]), fmt(r["cpu"]),
                    r["maxrss_kb"] / 1024, r["load"]))
            out.append(row)
    if rate:
        print()
        print("The floor in CPU time: the kernel's part, and the first touch (at %.0f MiB/s) "
              "of the table or batch svcnat hands it and of its peak RSS:" % rate)
        print()
        print("| size | writer | threads | svcnat CPU | kernel's part CPU | table/batch: MiB, "
              "first touch | peak RSS: MiB, first touch | kernel + table touch |")
        print("|---|---|---|---|---|---|---|---|")
        for s, be, t, c, kc, nb, rss in floors:
            tb = nb / 2**20 if nb else None
            rm = rss / 1024 if rss else None
            print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                s, be, t, fmt(c), fmt(kc),
                "%.0f, %.3f s" % (tb, tb / rate) if tb else "-",
                "%.0f, %.3f s" % (rm, rm / rate) if rm else "-",
                fmt(kc + tb / rate) if kc and tb else "-"))
    if rates:
        wall_floors(rates, walls)
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"touch_mib_per_s": rate,
                       "touch_mib_per_s_threads": {str(t): v for t, v in rates.items()},
                       "rows": out}, f, indent=1)


if __name__ == "__main__":
    main()
