#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Kubernetes' protobuf wire, written from JSON objects (the test side of
src/sources/kube/kubepb.c): a second implementation, in Python and without
a protobuf library, reading the same schema (src/sources/kube/proto/k8s.proto).

  encode_object(obj)          b"k8s\\0" + runtime.Unknown{typeMeta, raw}
  encode_watch_frame(t, obj)  4-byte big-endian length + meta/v1 WatchEvent

A JSON value protobuf cannot carry (a port given as a string, a float, a
number out of range, an unparsable Time) raises NotRepresentable.

  kubepb.py fixtures OUTDIR FILE...   writes, for each FILE holding
  Services or EndpointSlices, OUTDIR/NAME.json (a List of the objects that
  protobuf can carry, as given), NAME.svc.pb and NAME.eps.pb (a ServiceList
  and an EndpointSliceList of the same objects); for a FILE holding a Node,
  nodeN.node.json and .pb (three variants); and watch.svc.json and .pb.
"""
import datetime
import json
import os
import re
import struct
import sys

PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                     "src", "sources", "kube", "proto", "k8s.proto")
MAGIC = b"k8s\x00"
API_VERSION = {"Service": "v1", "ServiceList": "v1", "Node": "v1", "NodeList": "v1",
               "Status": "v1", "EndpointSlice": "discovery.k8s.io/v1",
               "EndpointSliceList": "discovery.k8s.io/v1"}


class NotRepresentable(ValueError):
    pass


def load_schema(path=PROTO):
    msgs = {}
    text = re.sub(r"//[^\n]*", "", open(path).read())
    for m in re.finditer(r"message (\w+) \{(.*?)\}", text, re.S):
        fields = []
        for f in re.finditer(r"(optional|repeated) (\w+) (\w+) = (\d+);", m.group(2)):
            fields.append((f.group(3), f.group(1) == "repeated", f.group(2), int(f.group(4))))
        for f in re.finditer(r"map<string, string> (\w+) = (\d+);", m.group(2)):
            fields.append((f.group(1), False, "map", int(f.group(2))))
        msgs[m.group(1)] = fields
    return msgs


SCHEMA = load_schema()


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(num, wt):
    return varint(num << 3 | wt)


def ldelim(num, data):
    return tag(num, 2) + varint(len(data)) + data


def int_value(v, bits):
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise NotRepresentable(f"{v!r} is not an integer")
    if not -(1 << (bits - 1)) <= v < 1 << (bits - 1):
        raise NotRepresentable(f"{v} out of int{bits}")
    return v


def rfc3339(v):
    if not isinstance(v, str):
        raise NotRepresentable(f"{v!r} is not a Time")
    if v == "":
        return None
    try:
        t = datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise NotRepresentable(f"{v!r} is not an RFC 3339 Time")
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp())


def encode_scalar(typ, num, v):
    if typ == "string":
        if not isinstance(v, str):
            raise NotRepresentable(f"{v!r} is not a string")
        if "\0" in v:
            # kubepb.c refuses the whole answer (protobuf-c's strings are C strings)
            raise NotRepresentable("a string with a NUL")
        return ldelim(num, v.encode())
    if typ == "bool":
        if not isinstance(v, bool):
            raise NotRepresentable(f"{v!r} is not a bool")
        return tag(num, 0) + varint(int(v))
    if typ in ("int32", "int64"):
        return tag(num, 0) + varint(int_value(v, 32 if typ == "int32" else 64))
    if typ == "IntOrString":
        if isinstance(v, str):
            return ldelim(num, tag(1, 0) + varint(1) + ldelim(3, v.encode()))
        return ldelim(num, tag(1, 0) + varint(0) + tag(2, 0) + varint(int_value(v, 32)))
    if typ == "Time":
        s = rfc3339(v)
        return b"" if s is None else ldelim(num, tag(1, 0) + varint(s))
    return ldelim(num, encode_message(typ, v))


def encode_message(name, obj):
    if not isinstance(obj, dict):
        raise NotRepresentable(f"{name}: {type(obj).__name__}, not an object")
    out = bytearray()
    for fname, repeated, typ, num in sorted(SCHEMA[name], key=lambda f: f[3]):
        v = obj.get(fname)
        if v is None:
            continue
        if typ == "map":
            if not isinstance(v, dict):
                raise NotRepresentable(f"{fname}: not an object")
            for k, val in v.items():
                if not isinstance(val, str):
                    raise NotRepresentable(f"{fname}.{k}: not a string")
                out += ldelim(num, ldelim(1, k.encode()) + ldelim(2, val.encode()))
        elif repeated:
            if not isinstance(v, list):
                raise NotRepresentable(f"{fname}: not an array")
            for e in v:
                if e is None:
                    raise NotRepresentable(f"{fname}: a null element")
                out += encode_scalar(typ, num, e)
        else:
            out += encode_scalar(typ, num, v)
    return bytes(out)


def envelope(kind, raw):
    tm = ldelim(1, API_VERSION.get(kind, "v1").encode()) + ldelim(2, kind.encode())
    return MAGIC + ldelim(1, tm) + ldelim(2, raw)


def encode_object(obj, kind=None):
    kind = kind or obj.get("kind")
    return envelope(kind, encode_message(kind, obj))


def encode_list(kind, items, rv="1", cont=None):
    meta = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return encode_object({"metadata": meta, "items": items}, kind + "List")


def encode_watch_frame(typ, obj, kind=None):
    raw = encode_object(obj, kind)
    ev = ldelim(1, typ.encode()) + ldelim(2, ldelim(1, raw))
    return struct.pack(">I", len(ev)) + ev


def objects_of(doc):
    """The Services and EndpointSlices of a document, as the decoder finds them."""
    if not isinstance(doc, dict):
        return []
    kind = doc.get("kind")
    if kind in ("Service", "EndpointSlice"):
        return [(kind, doc)]
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        typed = kind[:-4] if kind in ("ServiceList", "EndpointSliceList") else None
        out = []
        for it in doc["items"]:
            k = typed or (it.get("kind") if isinstance(it, dict) else None)
            if k in ("Service", "EndpointSlice") and isinstance(it, dict):
                out.append((k, it))
        return out
    return []


def fixtures(outdir, files):
    os.makedirs(outdir, exist_ok=True)
    total = kept = 0
    all_services = []
    for path in files:
        try:
            doc = json.load(open(path))
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "Node":
            node_fixtures(outdir, doc)
            continue
        objs = objects_of(doc)
        if not objs:
            continue
        good = {"Service": [], "EndpointSlice": []}
        for kind, o in objs:
            total += 1
            try:
                encode_message(kind, o)
            except (NotRepresentable, RecursionError):
                continue
            kept += 1
            good[kind].append(o)
            if kind == "Service":
                all_services.append(o)
        if not good["Service"] and not good["EndpointSlice"]:
            continue
        name = re.sub(r"[^A-Za-z0-9.-]", "_", os.path.relpath(path)).lstrip("._")
        name = re.sub(r"^tests_", "", re.sub(r"\.json$", "", name))
        items = [dict(o, kind=k, apiVersion=API_VERSION[k])
                 for k in ("Service", "EndpointSlice") for o in good[k]]
        with open(os.path.join(outdir, name + ".json"), "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f, indent=1,
                      sort_keys=True)
            f.write("\n")
        for kind, ext in (("Service", "svc"), ("EndpointSlice", "eps")):
            with open(os.path.join(outdir, f"{name}.{ext}.pb"), "wb") as f:
                f.write(encode_list(kind, good[kind]))
    print(f"kubepb: {kept} of {total} objects written ({total - kept} not representable)")
    watch_fixture(outdir, all_services)


def node_fixtures(outdir, node):
    """nodeN.node.json and .pb: a Node as given, the same being deleted, and
    tainted by the cluster autoscaler with only spec.podCIDR."""
    n1 = json.loads(json.dumps(node))
    n1.setdefault("metadata", {})["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    n2 = json.loads(json.dumps(node))
    spec = n2.setdefault("spec", {})
    spec["taints"] = [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}]
    spec.pop("podCIDRs", None)
    spec["podCIDR"] = "198.18.64.0/24"
    for i, n in enumerate((node, n1, n2)):
        with open(os.path.join(outdir, f"node{i}.node.json"), "w") as f:
            json.dump(n, f, indent=1, sort_keys=True)
            f.write("\n")
        with open(os.path.join(outdir, f"node{i}.node.pb"), "wb") as f:
            f.write(encode_object(n, "Node"))


def watch_fixture(outdir, svcs):
    """watch.svc.json and watch.svc.pb: the same watch stream in both wires,
    every Service ADDED (MODIFIED when its key came before), the first one
    DELETED, a BOOKMARK, then an ERROR 410."""
    seen, events = set(), []
    for i, o in enumerate(svcs):
        meta = o.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            continue
        if not isinstance(meta.get("namespace", ""), str):
            continue
        o = dict(o, kind="Service", apiVersion="v1",
                 metadata=dict(meta, resourceVersion=str(100 + i)))
        key = (o["metadata"].get("namespace", ""), meta["name"])
        events.append(("MODIFIED" if key in seen else "ADDED", o))
        seen.add(key)
    if events:
        events.append(("DELETED", events[0][1]))
    events.append(("BOOKMARK", {"kind": "Service", "apiVersion": "v1",
                                "metadata": {"resourceVersion": "999"}}))
    events.append(("ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                             "code": 410, "reason": "Expired", "message": "too old"}))
    with open(os.path.join(outdir, "watch.svc.json"), "w") as f:
        for t, o in events:
            f.write(json.dumps({"type": t, "object": o}, sort_keys=True) + "\n")
    with open(os.path.join(outdir, "watch.svc.pb"), "wb") as f:
        for t, o in events:
            f.write(encode_watch_frame(t, o))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "fixtures":
        fixtures(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
