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
"""
import argparse
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
TARGET = re.compile(r" -[jg] (\S+)")


def rule_fields(line):
    """(comment or None, jump/goto target or None) of one -A line."""
    m = COMMENT.search(line)
    comment = (m.group(1) if m.group(1) is not None else m.group(2)) if m else None
    t = TARGET.search(line)
    return comment, (t.group(1) if t else None)


def service_of_chains(rules):
    """{service chain: "ns/name"} for one table's chains."""
    owner = {}
    parents = {}
    for chain, lines in rules.items():
        for line in lines:
            comment, target = rule_fields(line)
            if SERVICE_CHAIN.match(chain):
                if comment and chain not in owner:
                    m = NAME_IN_COMMENT.search(comment)
                    if m:
                        owner[chain] = m.group(0)
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


def build(old_text, new_text):
    """The partial restore text and a statistics dict."""
    old = parse_save(old_text)
    new = parse_save(new_text)
    out = []
    stats = {"chains_written": 0, "rules_written": 0, "chains_deleted": 0,
             "services_changed": 0}
    for table in ("filter", "nat"):
        if table not in new:
            continue
        order, rules = new[table]
        old_order, old_rules = old.get(table, ([], {}))
        owner = service_of_chains(rules)
        old_owner = service_of_chains(old_rules)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
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
