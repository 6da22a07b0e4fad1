#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Build kube-proxy's partial-sync input for `iptables-restore --noflush`.

Given the iptables-save text of the rules before and after a change (both
from `svcnat --dry-run`), print what kube-proxy's iptables proxier
(pkg/proxy/iptables/proxier.go, syncProxyRules with tryPartialSync) hands
to `iptables-restore --noflush` for that change:

  *filter  every KUBE-* chain, declared (which flushes it) and refilled:
           kube-proxy always rewrites its filter chains whole;
  *nat     the fixed chains (KUBE-SERVICES, KUBE-NODEPORTS,
           KUBE-POSTROUTING, KUBE-MARK-MASQ, and any other non-service
           chain), declared and refilled;
           every chain of each service whose chains changed (KUBE-SVC-,
           KUBE-SVL-, KUBE-EXT-, KUBE-FW-, KUBE-SEP-): kube-proxy writes all
           chains of a changed service, not only the changed ones;
           service chains that no longer exist: declared and deleted (-X).
The jump rules in the built-in chains are not part of it (kube-proxy
ensures those separately, only on a full sync).

A chain belongs to the service named in its rules' comments
("ns/name:port ..."); chains without comments (KUBE-SEP- in large-cluster
mode) belong to the service of the chain that jumps to them.

Usage: partial.py OLD.txt NEW.txt [-o OUT]   (statistics on stderr)
       partial.py --batch < "OLD NEW OUT" lines  (one JSON statistics line each)
"""
import argparse
import json
import re
import sys

SERVICE_CHAIN = re.compile(r"^KUBE-(SVC|SVL|EXT|FW|SEP)-")
BUILTIN = {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}
NAME_IN_COMMENT = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)/([A-Za-z0-9][-A-Za-z0-9_.]*)")


def parse_save(text):
    """iptables-save text -> {table: (chain order list, {chain: [rule lines]})}."""
    tables = {}
    cur = None
    for ln, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if line.startswith("*"):
            cur = (line[1:], [], {})
            tables[cur[0]] = cur
        elif line == "COMMIT":
            cur = None
        elif cur is None:
            raise ValueError("line %d: outside a table: %r" % (ln, line[:60]))
        elif line.startswith(":"):
            name = line[1:].split()[0]
            cur[1].append(name)
            cur[2].setdefault(name, [])
        elif line.startswith("-A "):
            name = line.split(None, 2)[1]
            if name not in cur[2]:
                raise ValueError("line %d: rule for undeclared chain %s" % (ln, name))
            cur[2][name].append(line)
        else:
            raise ValueError("line %d: unexpected: %r" % (ln, line[:60]))
    return {name: (order, rules) for name, order, rules in tables.values()}


COMMENT = re.compile(r'--comment (?:"((?:[^"\\]|\\.)*)"|(\S+))')


def jump_target(line):
    """The KUBE-* chain a rule jumps or goes to, or None."""
    k = line.find(" -j KUBE-")
    if k < 0:
        k = line.find(" -g KUBE-")
    return line[k + 4:].split(" ", 1)[0] if k >= 0 else None


def service_of_chains(rules):
    """{service chain: "ns/name"} for one table's chains."""
    owner = {}
    parents = {}
    for chain, lines in rules.items():
        if not SERVICE_CHAIN.match(chain):
            continue
        for line in lines:
            if chain not in owner and "--comment" in line:
                m = COMMENT.search(line)
                if m:
                    n = NAME_IN_COMMENT.search(m.group(1) if m.group(1) is not None else m.group(2))
                    if n:
                        owner[chain] = n.group(0)
            target = jump_target(line)
            if target and SERVICE_CHAIN.match(target):
                parents.setdefault(target, []).append(chain)
    changed = True
    while changed:  # inherit from the chain that jumps here (SVC -> SEP)
        changed = False
        for chain, ps in parents.items():
            if chain in owner:
                continue
            for p in ps:
                if p in owner:
                    owner[chain] = owner[p]
                    changed = True
                    break
    return owner


class Parsed:
    """One iptables-save text, parsed once, with its chains' owners."""

    def __init__(self, text):
        self.tables = parse_save(text)
        self.owner = {t: service_of_chains(rules) for t, (order, rules) in self.tables.items()}


def build(old_text, new_text):
    """The partial restore text and a statistics dict."""
    return build_parsed(Parsed(old_text), Parsed(new_text))


def build_parsed(oldp, newp):
    old, new = oldp.tables, newp.tables
    out = []
    stats = {"chains_written": 0, "rules_written": 0, "chains_deleted": 0,
             "services_changed": 0}
    for table in ("filter", "nat"):
        if table not in new:
            continue
        order, rules = new[table]
        old_order, old_rules = old.get(table, ([], {}))
        owner = newp.owner[table]
        old_owner = oldp.owner.get(table, {})
        changed = set()
        for chain in set(rules) | set(old_rules):
            if not SERVICE_CHAIN.match(chain):
                continue
            if rules.get(chain) != old_rules.get(chain):
                svc = owner.get(chain) or old_owner.get(chain)
                changed.add(svc if svc else "chain:" + chain)
        if table == "nat":
            stats["services_changed"] += len(changed)
        write = []
        for chain in order:
            if chain in BUILTIN:
                continue
            if SERVICE_CHAIN.match(chain):
                svc = owner.get(chain)
                if (svc if svc else "chain:" + chain) not in changed:
                    continue
            write.append(chain)
        gone = [c for c in old_order if c not in rules and c not in BUILTIN and SERVICE_CHAIN.match(c)]
        out.append("*" + table)
        out.extend(":%s - [0:0]" % c for c in write + gone)
        for c in write:
            out.extend(rules[c])
            stats["rules_written"] += len(rules[c])
        out.extend("-X " + c for c in gone)
        out.append("COMMIT")
        stats["chains_written"] += len(write)
        stats["chains_deleted"] += len(gone)
    return "\n".join(out) + "\n", stats


def batch(lines):
    """"OLD NEW OUT" per line; each text parsed once; one JSON stats line each."""
    cache = {}

    def get(path):
        if path not in cache:
            with open(path) as f:
                cache[path] = Parsed(f.read())
        return cache[path]

    for line in lines:
        if not line.strip():
            continue
        old, new, out = line.split()
        text, stats = build_parsed(get(old), get(new))
        with open(out, "w") as f:
            f.write(text)
        print(json.dumps(stats), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", nargs="?")
    ap.add_argument("new", nargs="?")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--batch", action="store_true",
                    help='read "OLD NEW OUT" lines on stdin, print one JSON statistics line each')
    a = ap.parse_args()
    if a.batch:
        batch(sys.stdin)
        return
    if not a.old or not a.new:
        ap.error("OLD and NEW are needed (or --batch)")
    with open(a.old) as f:
        old_text = f.read()
    with open(a.new) as f:
        new_text = f.read()
    text, stats = build(old_text, new_text)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    print(" ".join("%s=%d" % kv for kv in sorted(stats.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
