#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A bounded connection flood against one HTTP server (tests/e2e/http-flood.sh).

Holds N "slowloris" connections (a request line, then one header line every
--interval seconds, never the blank line that ends the headers) and M idle
connections (nothing sent) open to HOST:PORT; a connection the server
closes is opened again after --reopen seconds, as an attacker would.  With
--trickle S: one connection that sends a header byte every S seconds and
reports when the server closed it.  Everything stops after --seconds and
after --max-connects connection attempts.  Prints one summary line:

  flood: attempts A established E closed-by-server C peak P [trickle closed after T s | trickle open]

With --probe URL (repeatable) instead: GET each URL every --every seconds
for --seconds, each on a new connection bounded by --timeout; one line per
probe: "URL STATUS SECONDS" (STATUS 000 and SECONDS "-": no answer).
"""
import argparse
import errno
import heapq
import http.client
import resource
import selectors
import socket
import sys
import time
import urllib.parse

REQ = b"GET /healthz HTTP/1.1\r\nHost: flood\r\n"


class Conn:
    def __init__(self, kind):
        self.kind = kind        # "slow", "idle" or "trickle"
        self.sock = None
        self.established = False
        self.opened_at = 0.0
        self.sent = 0
        self.index = 0


def probe(a):
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        for url in a.probe:
            u = urllib.parse.urlsplit(url)
            t0 = time.monotonic()
            try:
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=a.timeout)
                c.request("GET", u.path or "/")
                r = c.getresponse()
                r.read()
                c.close()
                line = "%s %d %.3f" % (url, r.status, time.monotonic() - t0)
            except (OSError, http.client.HTTPException):
                line = "%s 000 -" % url
            print(line, flush=True)
        time.sleep(a.every)
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("host", nargs="?")
    p.add_argument("port", type=int, nargs="?", default=0)
    p.add_argument("--slowloris", type=int, default=0)
    p.add_argument("--idle", type=int, default=0)
    p.add_argument("--trickle", type=float, default=0.0)
    p.add_argument("--interval", type=float, default=5.0)
    p.add_argument("--reopen", type=float, default=0.2)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--max-connects", type=int, default=200000)
    p.add_argument("--source-base", help="bind connection i to this IPv4 address + i %% --sources")
    p.add_argument("--sources", type=int, default=1)
    p.add_argument("--probe", action="append", default=[])
    p.add_argument("--every", type=float, default=0.25)
    p.add_argument("--timeout", type=float, default=4.0)
    a = p.parse_args()
    if a.probe:
        return probe(a)

    want = a.slowloris + a.idle + (1 if a.trickle else 0) + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(want, soft)), hard))

    sel = selectors.DefaultSelector()
    conns = [Conn("slow") for _ in range(a.slowloris)] + [Conn("idle") for _ in range(a.idle)]
    trickle = Conn("trickle") if a.trickle else None
    if trickle:
        conns.append(trickle)
    for i, c in enumerate(conns):
        c.index = i
    t0 = time.monotonic()
    end = t0 + a.seconds
    timers = []   # (when, seq, conn, what): "open" or "send"
    seq = 0
    stats = {"attempts": 0, "established": 0, "closed": 0, "peak": 0}
    open_now = 0
    trickle_closed = None

    def at(when, c, what):
        nonlocal seq
        seq += 1
        heapq.heappush(timers, (when, seq, c, what))

    def close(c, by_server):
        nonlocal open_now, trickle_closed
        if c.sock is None:
            return
        try:
            sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        c.sock.close()
        c.sock = None
        if c.established:
            open_now -= 1
        c.established = False
        if by_server:
            stats["closed"] += 1
        if c is trickle:
            if by_server and trickle_closed is None:
                trickle_closed = time.monotonic() - c.opened_at
            return   # one trickle connection only
        at(time.monotonic() + a.reopen, c, "open")

    def start(c):
        if stats["attempts"] >= a.max_connects:
            return
        stats["attempts"] += 1
        try:
            s = socket.socket(socket.AF_INET6 if ":" in a.host else socket.AF_INET,
                              socket.SOCK_STREAM)
        except OSError:   # out of descriptors: try again later
            at(time.monotonic() + a.reopen, c, "open")
            return
        s.setblocking(False)
        c.sock, c.established, c.sent = s, False, 0
        c.opened_at = time.monotonic()
        if a.source_base:
            base = int.from_bytes(socket.inet_aton(a.source_base), "big")
            s.bind((socket.inet_ntoa((base + c.index % a.sources).to_bytes(4, "big")), 0))
        rc = s.connect_ex((a.host, a.port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            c.sock = None
            at(time.monotonic() + a.reopen, c, "open")
            return
        sel.register(s, selectors.EVENT_WRITE, c)

    def send(c):
        if c.sock is None or not c.established:
            return
        if c.kind == "slow":
            data = REQ if c.sent == 0 else b"X-Slow-%d: a\r\n" % c.sent
            nxt = a.interval
        else:
            data = REQ[c.sent:c.sent + 1] if c.sent < len(REQ) else b"X"
            nxt = a.trickle
        try:
            c.sock.send(data)
        except BlockingIOError:
            pass
        except OSError:
            close(c, True)
            return
        c.sent += 1
        at(time.monotonic() + nxt, c, "send")

    # Spread the first connections over the first second.
    for i, c in enumerate(conns):
        at(t0 + (i / max(len(conns), 1)), c, "open")

    while True:
        now = time.monotonic()
        if now >= end:
            break
        while timers and timers[0][0] <= now:
            _, _, c, what = heapq.heappop(timers)
            if what == "open" and c.sock is None:
                start(c)
            elif what == "send":
                send(c)
        timeout = min(end, timers[0][0] if timers else end) - time.monotonic()
        for key, ev in sel.select(max(timeout, 0)):
            c = key.data
            if c.sock is None:
                continue
            if not c.established:
                err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    close(c, False)
                    continue
                c.established = True
                stats["established"] += 1
                open_now += 1
                stats["peak"] = max(stats["peak"], open_now)
                sel.modify(c.sock, selectors.EVENT_READ, c)
                if c.kind != "idle":
                    send(c)
                continue
            try:
                data = c.sock.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                close(c, True)
                if c is trickle and len(conns) == 1:
                    end = 0   # nothing else to do
            # An answer (a 4xx for a bad request, say) is read and dropped.

    line = "flood: attempts %d established %d closed-by-server %d peak %d" % (
        stats["attempts"], stats["established"], stats["closed"], stats["peak"])
    if trickle:
        if trickle_closed is not None:
            line += " trickle closed after %.1f s" % trickle_closed
        else:
            line += " trickle open"
    print(line, flush=True)
    for c in conns:
        if c.sock is not None:
            c.sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
