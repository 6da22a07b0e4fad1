#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Draw run.py's results (its OUT.json files) as SVG plots.

    python3 contrib/bench/plot.py --out docs/perf direct.json nft.json libiptc.json

Each JSON is one run.py run (its --backend says which writer svcnat used);
give one per writer.  Writes, for what the runs measured:

  OUT-sync-full.svg    full sync into an empty table against the number of
                       services: svcnat --once per writer, iptables-legacy-restore,
                       iptables-nft-restore and the libiptc floor (iptc_init +
                       iptc_commit of the loaded tables)
  OUT-sync-change.svg  one endpoint moved: the daemon's sync (plan + apply, its
                       kubeproxy_sync_proxy_rules_duration_seconds) per writer,
                       kube-proxy's partial restore (legacy and nft) and the raw
                       kernel floor (read the table, write it back)
  OUT-latency.svg      new-connection latency (p50 connect) to the worst-placed
                       service against the number of services, kube-proxy's linear
                       chain against svcnat's dispatch tree (run.py --dp-curve)
  OUT-memory.svg       peak RSS of svcnat --once's full sync per writer, the
                       daemon's resident memory after its first sync, and the
                       restore tools' peak RSS

Medians are drawn with their min-max range.  Needs matplotlib (Debian:
python3-matplotlib).  Plotting only: it runs nothing and needs no root.
"""
import argparse
import json
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("plot.py: needs matplotlib (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
    sys.exit(2)

# Reproducible SVG: no date, fixed ids.
matplotlib.rcParams["svg.hashsalt"] = "svcnat"
matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["font.size"] = 9

STYLE = {  # writer -> line style, so one writer looks the same in every plot
    "direct": dict(color="#1f77b4", marker="o"),
    "libiptc": dict(color="#17becf", marker="s"),
    "nft": dict(color="#2ca02c", marker="^"),
    "iptables-legacy-restore": dict(color="#d62728", marker="v", linestyle="--"),
    "iptables-nft-restore": dict(color="#ff7f0e", marker="<", linestyle="--"),
    "floor": dict(color="#555555", marker="x", linestyle=":"),
    "raw floor": dict(color="#000000", marker="+", linestyle=":"),
    "linear": dict(color="#d62728", marker="v"),
    "tree": dict(color="#1f77b4", marker="o"),
    "reference": dict(color="#555555", marker="x", linestyle=":"),
}


def med(x, scale=1.0):
    """(median, low error, high error) of a run.py median_range, scaled."""
    if not x:
        return None
    m = x["median"] * scale
    return m, m - x["min"] * scale, x["max"] * scale - m


def series(ax, label, style, points, seen=None):
    """points: [(x, (median, lo, hi)) or (x, None)].  With seen (a set), a
    label already drawn is not drawn again: the peers and floors of several
    runs measure the same thing, the first run's are shown."""
    if seen is not None:
        if label in seen:
            return False
        seen.add(label)
    pts = sorted((x, v) for x, v in points if v is not None)
    if not pts:
        return False
    xs = [p[0] for p in pts]
    ys = [p[1][0] for p in pts]
    err = [[p[1][1] for p in pts], [p[1][2] for p in pts]]
    ax.errorbar(xs, ys, yerr=err, label=label, capsize=2, linewidth=1.2, markersize=4, **STYLE[style])
    return True


def finish(fig, ax, title, ylabel, path, note):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("services (x 10 endpoints)" if "latency" not in path else "services (x 2 endpoints)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", linewidth=0.3, alpha=0.6)
    ax.legend(fontsize=7, loc="upper left")
    fig.text(0.01, 0.01, note, fontsize=6, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    print("wrote %s" % path)


def load(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        r["_path"] = p
        runs.append(r)
    return runs


def note_of(runs):
    m = runs[0].get("machine", {})
    loads = [r.get(k) for r in runs for k in ("loadavg_start", "loadavg_end")]
    for r in runs:
        loads += [c.get("loadavg") for c in (r.get("control") or []) + (r.get("nft") or [])]
    loads = [x for x in loads if isinstance(x, (int, float))]
    la = " load average %.1f-%.1f;" % (min(loads), max(loads)) if loads else ""
    return "%s cores, Linux %s;%s medians of %s runs (bars: min-max); contrib/bench/run.py + plot.py" % (
        m.get("nproc", "?"), m.get("kernel", "?"), la, runs[0].get("reps", "?"))


def plot_full(runs, out, note):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn, seen = False, set()
    for r in runs:
        b = r.get("backend", "direct")
        rows = r.get("nft") if b == "nft" else r.get("control")
        if not rows:
            continue
        drawn |= series(ax, "svcnat --once (--backend %s)" % b, b,
                        [(c["n"], med(c["seconds"].get("svcnat_full"))) for c in rows])
        peer = "iptables-nft-restore" if b == "nft" else "iptables-legacy-restore"
        series(ax, peer, peer, [(c["n"], med(c["seconds"].get("restore_full"))) for c in rows], seen)
        if b != "nft":
            series(ax, "libiptc floor (iptc_init + iptc_commit)", "floor",
                   [(c["n"], med(c["seconds"].get("floor"))) for c in rows], seen)
    if drawn:
        finish(fig, ax, "Full sync into an empty table", "seconds (whole process)",
               out + "-sync-full.svg", note)
    else:
        plt.close(fig)


def plot_change(runs, out, note):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn, seen = False, set()
    for r in runs:
        b = r.get("backend", "direct")
        ds = [d for d in r.get("daemons") or [] if d.get("change") == "endpoint" and not d.get("split")]
        drawn |= series(ax, "svcnat daemon sync (--backend %s)" % b, b,
                        [(d["n"], med(d.get("sync_s"))) for d in ds])
        rows = r.get("nft") if b == "nft" else r.get("control")
        peer = "iptables-nft-restore" if b == "nft" else "iptables-legacy-restore"
        if rows:
            series(ax, "%s --noflush (kube-proxy's partial sync)" % peer, peer,
                   [(c["n"], med(c["seconds"].get("restore_partial_endpoint"))) for c in rows], seen)
        if b != "nft" and ds:  # the floor reads and writes legacy tables
            series(ax, "raw kernel floor (read + replace the tables)", "raw floor",
                   [(d["n"], med(d.get("raw_floor_s"))) for d in ds], seen)
    if drawn:
        finish(fig, ax, "One endpoint moved", "seconds", out + "-sync-change.svg", note)
    else:
        plt.close(fig)


def plot_latency(runs, out, note):
    cv = next((r["curve"] for r in runs if r.get("curve") and r["curve"].get("rows")), None)
    if not cv:
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for mode, label in (("linear", "kube-proxy's linear chain (--dispatch=linear)"),
                        ("tree", "svcnat's dispatch tree (--dispatch=tree)")):
        series(ax, label, mode, [(row["services"], med(row["service"].get("p50_us")))
                                 for row in cv["rows"] if row["mode"] == mode])
    series(ax, "reference: 1 service, measured in turn", "reference",
           [(row["services"], med(row["service"].get("ref_p50_us")))
            for row in cv["rows"] if row["mode"] == "linear"])
    finish(fig, ax, "New connection to the worst-placed service", "p50 connect latency (us)",
           out + "-latency.svg", note)


def plot_memory(runs, out, note):
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn, seen = False, set()
    mib = 1.0 / 1024
    for r in runs:
        b = r.get("backend", "direct")
        rows = r.get("nft") if b == "nft" else r.get("control")
        if rows:
            drawn |= series(ax, "svcnat --once peak RSS (--backend %s)" % b, b,
                            [(c["n"], med(c["rss_kb"].get("svcnat_full"), mib)) for c in rows])
            peer = "iptables-nft-restore" if b == "nft" else "iptables-legacy-restore"
            series(ax, "%s peak RSS" % peer, peer,
                   [(c["n"], med(c["rss_kb"].get("restore_full"), mib)) for c in rows], seen)
        ds = [d for d in r.get("daemons") or [] if d.get("change") == "endpoint" and not d.get("split")]
        pts = [(d["n"], (d["vmrss_initial_kb"] * mib, 0, 0)) for d in ds if d.get("vmrss_initial_kb")]
        if pts:
            st = dict(STYLE[b])
            st["linestyle"] = "-."
            ax.plot([p[0] for p in sorted(pts)], [p[1][0] for p in sorted(pts)],
                    label="svcnat daemon resident after its first sync (--backend %s)" % b,
                    linewidth=1.0, markersize=4, markerfacecolor="none", **st)
            drawn = True
    if drawn:
        finish(fig, ax, "Memory", "MiB", out + "-memory.svg", note)
    else:
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json", nargs="+", help="run.py OUT.json files (one per --backend)")
    ap.add_argument("--out", default="bench", help="prefix of the SVG files (default ./bench)")
    a = ap.parse_args()
    runs = load(a.json)
    d = os.path.dirname(a.out)
    if d:
        os.makedirs(d, exist_ok=True)
    note = note_of(runs)
    plot_full(runs, a.out, note)
    plot_change(runs, a.out, note)
    plot_latency(runs, a.out, note)
    plot_memory(runs, a.out, note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
