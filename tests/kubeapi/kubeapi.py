#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A small Kubernetes API server for svcnat's tests (no kube-apiserver can be
installed on the test machines).

It speaks the documented list/watch protocol over HTTPS, for Services
(/api/v1/services), EndpointSlices (/apis/discovery.k8s.io/v1/endpointslices)
and Nodes (/api/v1/nodes), cluster-wide and per namespace:

  - list: {"kind": "ServiceList", "apiVersion": "v1", "metadata":
    {"resourceVersion": RV, "continue": TOKEN}, "items": [...]}, paged with
    limit/continue at one resourceVersion (an expired token: 410 Expired);
  - watch (watch=1): a chunked stream of newline-delimited events from
    resourceVersion (none or "0": ADDED for every object first), BOOKMARK
    events when allowWatchBookmarks=true, ended after timeoutSeconds; a
    compacted resourceVersion gets an ERROR event with a 410 Status;
  - labelSelector (key, !key, key=v, key==v, key!=v) and fieldSelector
    (metadata.name, metadata.namespace), with watch semantics (an object
    that stops matching is DELETED for that watch);
  - authentication: a bearer token from --tokens FILE (re-read on every
    request) or a client certificate signed by --client-ca; else 401;
  - discovery (/api, /apis, /api/v1, /apis/discovery.k8s.io/v1, /version),
    enough for kubectl.

Test control on a plain-HTTP port (--ctl ADDR:PORT, loopback only):
  POST /apply       body: an object or a List -> create or update each
  POST /delete      body: {"kind", "namespace", "name"}
  POST /compact     forget the event history (older versions expire)
  POST /fault       body: {"name": ..., "count": N}: cut (the next watch event
                    is cut in the middle and the connection dropped), garbage
                    (a garbage line in the next watch stream), 500, 429 (with
                    Retry-After: 1), 410 (a watch answered HTTP 410), stall
                    (requests are read and never answered), drop (end every
                    open watch now), clear; and hostile servers:
                      503      503 Service Unavailable, Retry-After from
                               "retry_after" (seconds, default 1)
                      403      403 Forbidden
                      flap     a watch answered 200, then the connection
                               closed at once, no event sent
                      quietend a watch answered 200 and ended normally at
                               once, no event sent
                      endless  every list page of Services has a continue
                               token leading to another full page of new
                               Services
                      emptyend every list page of Services is empty and has
                               a continue token
                      hugeheader  the next answer has a 1 MiB header line
                      deep     the next list page's items nest 5,000 deep
                      deepwatch  the next watch event nests 5,000 deep
                      itemsobject  the next list page's items is an object
                      410cont  the next list request with a continue token
                               is answered 410 Expired
  POST /mode        body: {"wire": "auto" | "json", "watch_list": "refuse" |
                    "serve" | "ignore"}: as the flags below, from now on
  GET  /stats       request counts, the versions watches asked for,
                    "verbs": every authorization attribute asked for, as
                    RBAC sees it ("list services", "get nonResource /version"),
                    and "log": the last 20,000 requests as [monotonic time,
                    resource, "list" | "watch", HTTP status]
Wire and list modes, as servers of different versions answer:
  --wire auto       protobuf (kubepb.py) when the Accept header asks for it
                    first, else JSON (a real server); an object protobuf
                    cannot carry makes that answer JSON; json: JSON only
  list resourceVersion=0: from the "watch cache" (the store now, paged as
    a server since 1.32 pages its cache); N: at least as new as N (older
    than the history: 410 Expired; newer than the store: 504 "Too large
    resource version"); none: consistent, paged (all alike here: the
    list_modes counters tell them apart)
  --watch-list refuse  a watch with sendInitialEvents is answered 422, as
                    a server without the WatchList feature (default)
               serve   initial ADDED events, then the BOOKMARK annotated
                    k8s.io/initial-events-end, then the watch goes on
               ignore  sendInitialEvents is ignored (a plain watch)
  /stats "accept": Accept headers seen; "served": answers per wire
  ({"protobuf"|"json": {"list"|"watch": n}}); "bytes": body bytes per wire
  and kind, "events": watch events per wire; "list_modes": lists by
  resourceVersion asked ("0", "none", "exact", "continue"); "streams":
  streaming lists served, "streams_refused"
With --state FILE the objects, the version and the history survive a
restart (the "API server restarted" tests); --apply FILE and --compact change
them at start, as if done while the node was cut off.

Listens on loopback or an address of 198.18.0.0/15 only.
"""
import argparse
import base64
import copy
import ipaddress
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubepb  # noqa: E402

PB_TYPE = "application/vnd.kubernetes.protobuf"


def accepts_pb(accept):
    """Whether an Accept header asks for protobuf before JSON."""
    for clause in (accept or "").split(","):
        mt = clause.split(";")[0].strip().lower()
        if mt == PB_TYPE:
            return True
        if mt in ("application/json", "*/*", "application/*"):
            return False
    return False

RESOURCES = {
    # path prefix -> (resource, kind, apiVersion, namespaced)
    "/api/v1/services": ("services", "Service", "v1", True),
    "/apis/discovery.k8s.io/v1/endpointslices": ("endpointslices", "EndpointSlice",
                                                 "discovery.k8s.io/v1", True),
    "/api/v1/nodes": ("nodes", "Node", "v1", False),
}
KIND_RES = {"Service": "services", "EndpointSlice": "endpointslices", "Node": "nodes"}


def allowed_addr(host):
    a = ipaddress.ip_address(host)
    return a.is_loopback or a in ipaddress.ip_network("198.18.0.0/15")


class Store:
    def __init__(self, state_file=None):
        self.lock = threading.Condition()
        self.rv = 1
        self.objects = {r: {} for r in KIND_RES.values()}   # res -> key -> obj
        self.history = []          # (rv, res, type, old, new)
        self.compacted = 0         # versions <= this are gone
        self.snapshots = {}        # rv -> {res: [objs sorted]}
        self.state_file = state_file
        if state_file and os.path.exists(state_file):
            with open(state_file) as f:
                st = json.load(f)
            self.rv = st["rv"]
            self.objects = st["objects"]
            self.history = [tuple(h) for h in st["history"]]
            self.compacted = st["compacted"]

    def save(self):
        if not self.state_file:
            return
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rv": self.rv, "objects": self.objects, "history": self.history,
                       "compacted": self.compacted}, f)
        os.replace(tmp, self.state_file)

    @staticmethod
    def key(obj):
        m = obj.get("metadata", {})
        return "%s/%s" % (m.get("namespace", ""), m.get("name", ""))

    def apply(self, obj):
        kind = obj.get("kind")
        res = KIND_RES.get(kind)
        if not res:
            return False  # Endpoints and other kinds are not served
        obj = copy.deepcopy(obj)
        # Items of a real list carry no kind; get and watch add it back.
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
        m = obj.setdefault("metadata", {})
        if res != "nodes":
            m.setdefault("namespace", "default")
        with self.lock:
            k = self.key(obj)
            old = self.objects[res].get(k)
            self.rv += 1
            m["resourceVersion"] = str(self.rv)
            m.setdefault("uid", "uid-%d" % self.rv)
            m.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            if old:
                m["uid"] = old["metadata"].get("uid", m["uid"])
            self.objects[res][k] = obj
            self.history.append((self.rv, res, "MODIFIED" if old else "ADDED", old, obj))
            self.lock.notify_all()
        return True

    def delete(self, kind, ns, name):
        res = KIND_RES[kind]
        with self.lock:
            k = "%s/%s" % (ns if res != "nodes" else "", name)
            old = self.objects[res].pop(k, None)
            if old is None:
                return False
            self.rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self.history.append((self.rv, res, "DELETED", old, gone))
            self.lock.notify_all()
            return True

    def compact(self):
        with self.lock:
            self.compacted = self.rv
            self.history = []
            self.snapshots = {}


def parse_labels(sel):
    reqs = []
    for part in filter(None, (p.strip() for p in (sel or "").split(","))):
        if part.startswith("!"):
            reqs.append(("!", part[1:], None))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            reqs.append(("!=", k, v))
        elif "==" in part:
            k, v = part.split("==", 1)
            reqs.append(("=", k, v))
        elif "=" in part:
            k, v = part.split("=", 1)
            reqs.append(("=", k, v))
        else:
            reqs.append(("exists", part, None))
    return reqs


def parse_fields(sel):
    reqs = []
    for part in filter(None, (p.strip() for p in (sel or "").split(","))):
        neg = "!=" in part
        k, v = part.split("!=" if neg else ("==" if "==" in part else "="), 1)
        if k not in ("metadata.name", "metadata.namespace"):
            raise ValueError("field label not supported: %s" % k)
        reqs.append((k.split(".")[1], v, neg))
    return reqs


def matches(obj, labels, fields):
    if obj is None:
        return False
    m = obj.get("metadata", {})
    lab = m.get("labels") or {}
    for op, k, v in labels:
        if op == "!" and k in lab:
            return False
        if op == "exists" and k not in lab:
            return False
        if op == "=" and lab.get(k) != v:
            return False
        if op == "!=" and lab.get(k) == v:
            return False
    for k, v, neg in fields:
        if (m.get(k, "") == v) == neg:
            return False
    return True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "svcnat-test-apiserver"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("kubeapi: %s\n" % (fmt % args))

    # ---- answers ----
    def send_json(self, code, obj, extra=None):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def status(self, code, reason, message, extra=None):
        self.send_json(code, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Failure", "message": message, "reason": reason,
                              "code": code}, extra)

    def authenticated(self):
        cert = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        if cert:
            return True
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and self.server.tokens_file:
            try:
                with open(self.server.tokens_file) as f:
                    tokens = {t.strip() for t in f if t.strip()}
            except OSError:
                tokens = set()
            return auth[7:].strip() in tokens
        return False

    def take_fault(self, name):
        with self.server.fault_lock:
            n = self.server.faults.get(name, 0)
            if n > 0:
                self.server.faults[name] = n - 1
                return True
        return False

    def log_request_kind(self, res, kind, code):
        srv = self.server
        with srv.fault_lock:
            log = srv.stats["log"]
            log.append([time.monotonic(), res, kind, code])
            if len(log) > 20000:
                del log[:len(log) - 20000]

    def count_wire(self, wire, kind, nbytes, events=0):
        srv = self.server
        with srv.fault_lock:
            st = srv.stats
            st["served"].setdefault(wire, {}).setdefault(kind, 0)
            if nbytes is None:
                st["served"][wire][kind] += 1
                return
            b = st["bytes"].setdefault(wire, {})
            b[kind] = b.get(kind, 0) + nbytes
            st["events"][wire] = st["events"].get(wire, 0) + events

    def send_pb(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", PB_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_response(self, code, message=None):
        super().send_response(code, message)
        if self.take_fault("hugeheader"):
            self.send_header("X-Filler", "a" * (1 << 20))

    # ---- requests ----
    def do_GET(self):
        srv = self.server
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        with srv.fault_lock:
            srv.stats["requests"] += 1
        if srv.faults.get("stall", 0) > 0:
            with srv.fault_lock:
                srv.stats["stalled"] += 1
            while srv.faults.get("stall", 0) > 0 and not srv.stopping:
                time.sleep(0.1)
            self.close_connection = True
            return
        if not self.authenticated():
            with srv.fault_lock:
                srv.stats["unauthorized"] += 1
            return self.status(401, "Unauthorized", "Unauthorized")
        accept = self.headers.get("Accept", "")
        with srv.fault_lock:
            srv.stats["accept"][accept] = srv.stats["accept"].get(accept, 0) + 1
        self.pb = srv.wire == "auto" and accepts_pb(accept)
        if self.take_fault("500"):
            return self.status(500, "InternalError", "injected: internal error")
        if self.take_fault("429"):
            return self.status(429, "TooManyRequests", "injected: too many requests",
                               {"Retry-After": "1"})
        path = u.path.rstrip("/")
        res0, _, _ = self.route(path)
        kind0 = "watch" if q.get("watch") in ("1", "true") else "list"
        if self.take_fault("503"):
            if res0:
                self.log_request_kind(res0[0], kind0, 503)
            return self.status(503, "ServiceUnavailable", "injected: unavailable",
                               {"Retry-After": str(srv.retry_after)})
        if self.take_fault("403"):
            if res0:
                self.log_request_kind(res0[0], kind0, 403)
            return self.status(403, "Forbidden", "injected: forbidden")
        disc = self.discovery(path)
        if disc is not None:
            self.record_verb("get", "nonResource " + path)
            return self.send_json(200, disc)
        res, ns, name = self.route(path)
        if res is None:
            self.record_verb("get", "unknown " + path)
            return self.status(404, "NotFound", "the server could not find the requested resource")
        if name is not None:
            verb = "get"
        elif q.get("watch") in ("1", "true"):
            verb = "watch"
        else:
            verb = "list"
        self.record_verb(verb, res[0])
        try:
            labels = parse_labels(q.get("labelSelector"))
            fields = parse_fields(q.get("fieldSelector"))
        except ValueError as e:
            return self.status(400, "BadRequest", str(e))
        if ns is not None:
            fields.append(("namespace", ns, False))
        if name is not None:
            return self.get_one(res, ns, name)
        if q.get("watch") in ("1", "true"):
            return self.watch(res, q, labels, fields)
        return self.list(res, q, labels, fields)

    def record_verb(self, verb, what):
        # The (verb, resource) pair RBAC authorizes this request by.
        with self.server.fault_lock:
            key = "%s %s" % (verb, what)
            self.server.stats["verbs"][key] = self.server.stats["verbs"].get(key, 0) + 1

    def refuse_method(self):
        self.record_verb(self.command.lower(), "unknown " + urllib.parse.urlsplit(self.path).path)
        self.status(405, "MethodNotAllowed", "the server does not allow this method")

    do_POST = do_PUT = do_PATCH = do_DELETE = refuse_method

    def discovery(self, path):
        if path == "/version":
            return {"major": "1", "minor": "30", "gitVersion": "v1.30.0-svcnat-test",
                    "platform": "linux/amd64"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                    "serverAddress": self.server.addr}]}
        if path == "/apis":
            gv = {"groupVersion": "discovery.k8s.io/v1", "version": "v1"}
            return {"kind": "APIGroupList", "apiVersion": "v1",
                    "groups": [{"name": "discovery.k8s.io", "versions": [gv],
                                "preferredVersion": gv}]}
        verbs = ["get", "list", "watch"]
        if path == "/api/v1":
            return {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": "services", "singularName": "service", "namespaced": True,
                 "kind": "Service", "verbs": verbs, "shortNames": ["svc"]},
                {"name": "nodes", "singularName": "node", "namespaced": False,
                 "kind": "Node", "verbs": verbs, "shortNames": ["no"]}]}
        if path == "/apis/discovery.k8s.io/v1":
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": "discovery.k8s.io/v1", "resources": [
                        {"name": "endpointslices", "singularName": "endpointslice",
                         "namespaced": True, "kind": "EndpointSlice", "verbs": verbs}]}
        return None

    @staticmethod
    def route(path):
        for prefix, info in RESOURCES.items():
            if path == prefix:
                return info, None, None
            if path.startswith(prefix + "/") and not info[3]:
                return info, None, path[len(prefix) + 1:]
            base, res = prefix.rsplit("/", 1)
            if path.startswith(base + "/namespaces/") and info[3]:
                rest = path[len(base) + len("/namespaces/"):].split("/")
                if len(rest) >= 2 and rest[1] == res:
                    return info, rest[0], rest[2] if len(rest) == 3 else None
        return None, None, None

    def get_one(self, info, ns, name):
        res, kind, api, namespaced = info
        with self.server.store.lock:
            obj = self.server.store.objects[res].get("%s/%s" % (ns or "", name))
            obj = copy.deepcopy(obj)
        if obj is None:
            return self.status(404, "NotFound", '%s "%s" not found' % (res, name))
        obj["kind"], obj["apiVersion"] = kind, api
        self.send_json(200, obj)

    def list(self, info, q, labels, fields):
        res, kind, api, _ = info
        srv, store = self.server, self.server.store
        with srv.fault_lock:
            srv.stats["lists"][res] = srv.stats["lists"].get(res, 0) + 1
        limit = int(q.get("limit") or 0)
        cont = q.get("continue")
        self.log_request_kind(res, "list", 200)
        if res == "services" and (srv.faults.get("endless", 0) > 0 or
                                  srv.faults.get("emptyend", 0) > 0):
            return self.endless_page(info, limit, cont, srv.faults.get("endless", 0) > 0)
        if self.take_fault("deep"):
            body = (b'{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"%d"},'
                    b'"items":[%s%s]}' % (kind.encode(), api.encode(), store.rv,
                                          b"[" * 5000, b"]" * 5000))
            return self.send_raw(200, body)
        if self.take_fault("itemsobject"):
            return self.send_json(200, {"kind": kind + "List", "apiVersion": api,
                                        "metadata": {"resourceVersion": str(store.rv)},
                                        "items": {"a": {}}})
        if cont and self.take_fault("410cont"):
            return self.status(410, "Expired", "injected: the continue token expired")
        rv_asked = q.get("resourceVersion", "")
        mode = ("continue" if cont else "none" if not rv_asked else
                "0" if rv_asked == "0" else "exact")
        with srv.fault_lock:
            srv.stats["list_modes"][mode] = srv.stats["list_modes"].get(mode, 0) + 1
        if mode == "exact":
            try:
                want = int(rv_asked)
            except ValueError:
                return self.status(400, "BadRequest", "invalid resourceVersion %r" % rv_asked)
            if want < store.compacted:
                return self.status(410, "Expired", "too old resource version: %d (%d)" % (
                    want, store.compacted + 1))
            if want > store.rv:
                return self.status(504, "Timeout", "Too large resource version: %d, current: %d"
                                   % (want, store.rv))
        with store.lock:
            if cont:
                try:
                    c = json.loads(base64.urlsafe_b64decode(cont.encode()))
                    snap, start = store.snapshots[c["rv"]][res], c["start"]
                    rv = c["rv"]
                except (KeyError, ValueError, TypeError):
                    return self.status(410, "Expired", "The provided continue parameter is too "
                                       "old to display a consistent list result. You can start "
                                       "a new list without the continue parameter.")
            else:
                rv = store.rv
                snap = [copy.deepcopy(store.objects[res][k])
                        for k in sorted(store.objects[res])]
                snap = [o for o in snap if matches(o, labels, fields)]
                start = 0
                if limit and len(snap) > limit:
                    store.snapshots.setdefault(rv, {})[res] = snap
        items = snap[start:start + limit] if limit else snap[start:]
        meta = {"resourceVersion": str(rv)}
        if limit and start + limit < len(snap):
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"rv": rv, "start": start + limit}).encode()).decode()
            meta["remainingItemCount"] = len(snap) - start - limit
        self.send_list(kind, api, meta, items)

    def send_list(self, kind, api, meta, items):
        if self.pb:
            try:
                body = kubepb.encode_list(kind, items, meta["resourceVersion"],
                                          meta.get("continue"))
            except kubepb.NotRepresentable:
                body = None
            if body is not None:
                self.count_wire("protobuf", "list", None)
                self.count_wire("protobuf", "list", len(body))
                return self.send_pb(200, body)
        body = json.dumps({"kind": kind + "List", "apiVersion": api, "metadata": meta,
                           "items": items}, separators=(",", ":")).encode()
        self.count_wire("json", "list", None)
        self.count_wire("json", "list", len(body))
        self.send_raw(200, body)

    def send_raw(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def endless_page(self, info, limit, cont, full):
        """A list of Services that never ends: page N's continue token
        leads to page N+1; with full, each page has `limit` new Services
        (made as text: a test reads hundreds of these pages)."""
        res, kind, api, _ = info
        try:
            page = int(cont.split(":")[1]) if cont else 0
        except (IndexError, ValueError):
            page = 0
        per = (limit or 500) if full else 0
        tmpl = ('{"metadata":{"name":"endless-%d","namespace":"endless","resourceVersion":"1"},'
                '"spec":{"type":"ClusterIP","clusterIP":"198.19.%d.%d","ports":[{"name":"http",'
                '"protocol":"TCP","port":80,"targetPort":8080}]}}')
        items = [tmpl % (n, n // 250 % 250, n % 250 + 1)
                 for n in range(page * per, page * per + per)]
        body = ('{"kind":"%sList","apiVersion":"%s","metadata":{"resourceVersion":"%d",'
                '"continue":"endless:%d"},"items":[%s]}' % (
                    kind, api, self.server.store.rv, page + 1, ",".join(items))).encode()
        self.send_raw(200, body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, typ, obj, kind, api):
        if self.wpb:
            try:
                return kubepb.encode_watch_frame(typ, obj, kind)
            except kubepb.NotRepresentable:
                # a stream cannot change its wire: end it, and answer JSON
                # from now on
                self.server.wire = "json"
                raise
        o = copy.deepcopy(obj)
        o["kind"], o["apiVersion"] = kind, api
        return json.dumps({"type": typ, "object": o}, separators=(",", ":")).encode() + b"\n"

    def refuse_stream(self, res, q):
        """A watch with sendInitialEvents, as servers of each kind answer it:
        None to serve it as a streaming list, False as a plain watch, or the
        refusal was sent (True)."""
        srv = self.server
        if q.get("sendInitialEvents") != "true":
            return False
        if srv.watch_list == "ignore":
            return False
        if srv.watch_list == "refuse":
            msg = ("sendInitialEvents is forbidden for watch unless the WatchList feature "
                   "gate is enabled")
        elif q.get("resourceVersionMatch") != "NotOlderThan":
            msg = "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        else:
            return None
        with srv.fault_lock:
            srv.stats["streams_refused"] += 1
        self.log_request_kind(res, "watch", 422)
        self.status(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: " + msg)
        return True

    def watch(self, info, q, labels, fields):
        res, kind, api, _ = info
        srv, store = self.server, self.server.store
        rv_req = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        timeout = int(q.get("timeoutSeconds") or 1800)
        deadline = time.monotonic() + timeout
        refused = self.refuse_stream(res, q)
        if refused:
            return
        stream = refused is None
        with srv.fault_lock:
            srv.stats["watches"][res] = srv.stats["watches"].get(res, 0) + 1
            srv.stats["watch_rvs"].setdefault(res, []).append(rv_req)
            if stream:
                srv.stats["streams"][res] = srv.stats["streams"].get(res, 0) + 1
        self.wpb = self.pb and srv.wire == "auto" and srv.faults.get("deepwatch", 0) == 0
        wire = "protobuf" if self.wpb else "json"
        self.count_wire(wire, "watch", None)
        if self.take_fault("410"):
            self.log_request_kind(res, "watch", 410)
            return self.status(410, "Expired", "injected: too old resource version")
        self.log_request_kind(res, "watch", 200)
        self.send_response(200)
        self.send_header("Content-Type", PB_TYPE + ";stream=watch" if self.wpb
                         else "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if self.take_fault("flap"):
            return self.hard_close()
        if self.take_fault("quietend"):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        if self.take_fault("deepwatch"):
            self.chunk(b'{"type":"ADDED","object":{"metadata":{"name":"d","resourceVersion":"1"},'
                       b'"spec":' + b"[" * 5000 + b"]" * 5000 + b'}}\n')
        gen = srv.drop_gen
        try:
            pending, pos_rv = self.watch_start(res, kind, api, rv_req, stream, labels, fields)
        except kubepb.NotRepresentable:
            return self.hard_close()
        last_bookmark = time.monotonic()
        try:
            while True:
                for ev in pending:
                    self.count_wire(wire, "watch", len(ev), 1)
                    if self.take_fault("garbage"):
                        self.chunk(b"\x00\x00\x00\x19this is not a watch event" if self.wpb
                                   else b"this is not a watch event\n")
                    if self.take_fault("cut"):
                        half = ev[:len(ev) // 2]
                        self.wfile.write(b"%x\r\n%s" % (len(ev), half))
                        self.wfile.flush()
                        self.hard_close()
                        return
                    self.chunk(ev)
                pending = []
                if pos_rv is None or srv.stopping:
                    break
                with store.lock:
                    now = time.monotonic()
                    if now >= deadline or srv.drop_gen != gen:
                        break
                    new = [h for h in store.history if h[0] > pos_rv]
                    if not new:
                        store.lock.wait(min(0.2, deadline - now))
                        new = [h for h in store.history if h[0] > pos_rv]
                    for (hrv, hres, typ, old, obj) in new:
                        pos_rv = max(pos_rv, hrv)
                        if hres != res:
                            continue
                        was, now_m = matches(old, labels, fields), matches(obj, labels, fields)
                        if typ == "DELETED":
                            if was:
                                pending.append(self.event("DELETED", obj, kind, api))
                        elif now_m:
                            pending.append(self.event("MODIFIED" if was else "ADDED", obj,
                                                      kind, api))
                        elif was:
                            gone = copy.deepcopy(obj)
                            pending.append(self.event("DELETED", gone, kind, api))
                    if not new and pos_rv < store.rv:
                        pos_rv = store.rv
                if (bookmarks and not pending and
                        time.monotonic() - last_bookmark >= srv.bookmark_interval):
                    last_bookmark = time.monotonic()
                    pending.append(self.event("BOOKMARK", {
                        "metadata": {"resourceVersion": str(pos_rv)}}, kind, api))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except kubepb.NotRepresentable:
            self.hard_close()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    def watch_start(self, res, kind, api, rv_req, stream, labels, fields):
        """The first events of a watch and the version it goes on from (None:
        it ends after them).  From no version or "0", and for a streaming
        list from any, the current objects as ADDED events; a streaming list
        then ends its initial state with the annotated BOOKMARK."""
        store = self.server.store
        pending = []
        with store.lock:
            pos_rv = None
            if rv_req not in ("", "0"):
                try:
                    pos_rv = int(rv_req)
                except ValueError:
                    pos_rv = -1
                if pos_rv < store.compacted or pos_rv > store.rv:
                    pending.append(self.event("ERROR", {
                        "metadata": {}, "status": "Failure", "reason": "Expired", "code": 410,
                        "message": "too old resource version: %s (%d)" % (
                            rv_req, store.compacted + 1)}, "Status", "v1"))
                    return pending, None
            if rv_req in ("", "0") or stream:
                for k in sorted(store.objects[res]):
                    o = store.objects[res][k]
                    if matches(o, labels, fields):
                        pending.append(self.event("ADDED", o, kind, api))
                pos_rv = store.rv
            if stream:
                pending.append(self.event("BOOKMARK", {"metadata": {
                    "resourceVersion": str(pos_rv),
                    "annotations": {"k8s.io/initial-events-end": "true"}}}, kind, api))
        return pending, pos_rv

    def hard_close(self):
        self.close_connection = True
        try:
            s = self.connection
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        except OSError:
            pass


class CtlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        api = self.server.api
        if self.path == "/stats":
            with api.fault_lock:
                st = copy.deepcopy(api.stats)
            st["resourceVersion"] = api.store.rv
            st["faults"] = dict(api.faults)
            return self.reply(200, st)
        self.reply(404, {"error": "no such path"})

    def do_POST(self):
        api = self.server.api
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        try:
            if self.path == "/apply":
                objs = body.get("items", []) if body.get("kind", "").endswith("List") else [body]
                for o in objs:
                    api.store.apply(o)
            elif self.path == "/delete":
                if not api.store.delete(body["kind"], body.get("namespace", ""), body["name"]):
                    return self.reply(404, {"error": "not found"})
            elif self.path == "/compact":
                api.store.compact()
            elif self.path == "/mode":
                if body.get("wire") in ("auto", "json"):
                    api.wire = body["wire"]
                if body.get("watch_list") in ("refuse", "serve", "ignore"):
                    api.watch_list = body["watch_list"]
            elif self.path == "/fault":
                with api.fault_lock:
                    if body["name"] == "clear":
                        api.faults.clear()
                    elif body["name"] == "drop":
                        api.drop_gen += 1
                    else:
                        api.faults[body["name"]] = int(body.get("count", 1))
                        if "retry_after" in body:
                            api.retry_after = int(body["retry_after"])
                with api.store.lock:
                    api.store.lock.notify_all()
            else:
                return self.reply(404, {"error": "no such path"})
        except (KeyError, ValueError) as e:
            return self.reply(400, {"error": str(e)})
        api.store.save()
        self.reply(200, {"resourceVersion": api.store.rv})


def hostport(s):
    host, port = s.rsplit(":", 1)
    host = host.strip("[]")
    if not allowed_addr(host):
        raise SystemExit("kubeapi: %s: only loopback or 198.18.0.0/15 addresses" % host)
    return host, int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True, help="ADDR:PORT for the API (HTTPS)")
    ap.add_argument("--ctl", required=True, help="ADDR:PORT for test control (HTTP)")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--client-ca", help="CA whose client certificates are accepted")
    ap.add_argument("--tokens", help="file of accepted bearer tokens, one a line")
    ap.add_argument("--state", help="file that keeps the objects across restarts")
    ap.add_argument("--data", help="objects (a List) to start with, when there is no state")
    ap.add_argument("--apply", help="objects to create or update at start (after the state)")
    ap.add_argument("--compact", action="store_true",
                    help="forget the event history at start (older versions expire)")
    ap.add_argument("--bookmark-interval", type=float, default=2.0)
    ap.add_argument("--wire", choices=("auto", "json"), default="auto")
    ap.add_argument("--watch-list", choices=("refuse", "serve", "ignore"), default="refuse")
    ap.add_argument("--pidfile")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    store = Store(a.state)
    if a.data and not (a.state and os.path.exists(a.state)):
        with open(a.data) as f:
            d = json.load(f)
        for o in d.get("items", [d]) if d.get("kind", "").endswith("List") else [d]:
            store.apply(o)
        store.save()
    if a.apply:
        with open(a.apply) as f:
            d = json.load(f)
        for o in d.get("items", [d]) if d.get("kind", "").endswith("List") else [d]:
            store.apply(o)
    if a.compact:
        store.compact()
    store.save()

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    if a.client_ca:
        ctx.load_verify_locations(a.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL

    host, port = hostport(a.listen)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        def get_request(self):
            sock, addr = self.socket.accept()
            sock.settimeout(None)
            try:
                sock = ctx.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                sock.close()
                raise OSError("TLS handshake failed")
            return sock, addr

        def handle_error(self, request, client_address):
            if self.verbose:
                super().handle_error(request, client_address)

    srv = Server((host, port), Handler)
    srv.store = store
    srv.tokens_file = a.tokens
    srv.verbose = a.verbose
    srv.addr = a.listen
    srv.bookmark_interval = a.bookmark_interval
    srv.faults = {}
    srv.fault_lock = threading.Lock()
    srv.stats = {"requests": 0, "unauthorized": 0, "stalled": 0, "lists": {}, "watches": {},
                 "watch_rvs": {}, "verbs": {}, "log": [], "accept": {}, "served": {},
                 "bytes": {}, "events": {}, "list_modes": {}, "streams": {},
                 "streams_refused": 0}
    srv.wire = a.wire
    srv.watch_list = a.watch_list
    srv.retry_after = 1
    srv.drop_gen = 0
    srv.stopping = False

    chost, cport = hostport(a.ctl)

    class Ctl(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        address_family = socket.AF_INET6 if ":" in chost else socket.AF_INET

    ctl = Ctl((chost, cport), CtlHandler)
    ctl.api = srv
    threading.Thread(target=ctl.serve_forever, daemon=True).start()
    if a.pidfile:
        with open(a.pidfile + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.replace(a.pidfile + ".tmp", a.pidfile)
    print("kubeapi: serving https://%s (control http://%s), resourceVersion %d" %
          (a.listen, a.ctl, store.rv), flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    srv.stopping = True


if __name__ == "__main__":
    main()
