#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A hostile etcd v3 JSON gateway for tests/e2e/etcd-hostile.sh: just enough
of /v3/kv/range and /v3/watch for the etcd source, misbehaving on purpose.

  --mode flap      ranges answer one Service at revision 5; every watch is
                   created, then the stream ends at once
  --mode compact   every watch is created, then canceled as compacted (the
                   source must read everything again, each time)

GET /stats: {"log": [[monotonic time, "range" | "watch"], ...]}.
Listens on loopback only.
"""
import argparse
import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def b64(s):
    return base64.b64encode(s.encode()).decode()


SVC = json.dumps({"kind": "Service", "apiVersion": "v1",
                  "metadata": {"namespace": "default", "name": "web"},
                  "spec": {"clusterIP": "198.19.0.10",
                           "ports": [{"port": 80, "protocol": "TCP"}]}})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def note(self, what):
        with self.server.lock:
            self.server.log.append([time.monotonic(), what])

    def do_GET(self):
        if self.path == "/stats":
            with self.server.lock:
                return self.reply({"log": list(self.server.log)})
        self.send_error(404)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        header = {"cluster_id": "1", "member_id": "1", "revision": "5", "raft_term": "2"}
        if self.path == "/v3/kv/range":
            self.note("range")
            return self.reply({"header": header, "count": "1", "kvs": [{
                "key": b64("/registry/services/specs/default/web"), "create_revision": "5",
                "mod_revision": "5", "version": "1", "value": b64(SVC)}]})
        if self.path != "/v3/watch":
            return self.send_error(404)
        self.note("watch")
        lines = [{"result": {"header": header, "created": True}}]
        if self.server.mode == "compact":
            lines.append({"result": {"header": header, "canceled": True,
                                     "compact_revision": "9"}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for obj in lines:
            data = json.dumps(obj).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=("flap", "compact"), required=True)
    a = ap.parse_args()

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", a.port), Handler)
    srv.mode = a.mode
    srv.log = []
    srv.lock = threading.Lock()
    srv.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    main()
