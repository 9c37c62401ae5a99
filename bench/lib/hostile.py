#!/usr/bin/env python3
"""Hostile clients for bench/hostile.sh: one attack against one server, with the server's
memory measured around it.

    hostile.py ATTACK --target IP:PORT --pids PID[,PID] --proto PROTO
               [--conns N] [--secs S] [--procs K] [--ready FILE] [--domain D]
               [--origin IP:PORT]
    hostile.py echo PORT            (proxies: the echo origin they connect to)
    hostile.py proxy-client PROTO PROXY ORIGIN SECONDS
    hostile.py line-client control|barrier IP:PORT SECONDS
    hostile.py x2x-client IP:PORT SECONDS

PROTO: xmpp, ws, http, bosh, sockjs, soap, wsecho (the WebSocket bench server), h2
(gRPC's HTTP/2), control (`serve`'s control port), barrier (a sharded run's barrier on
shard 0), x2x (the XEP-0361 gateway's link listener), or a proxy's: socks5 (also converter-client's front), convert
(RFC 8803), ss (Shadowsocks: without a cipher in the standard library its opening is
random bytes, as a prober's would be). ATTACK is one of idle, slowloris, oversized,
garbage, halfopen, flood, smuggle, disallowed (proxies: destinations outside the allow
list), sessions (bosh, sockjs: N sessions created and abandoned). The
attack runs in K worker processes (each holds at most N/K sockets, far below the
20,000 open files a process may have), bounded by S seconds, against 127.0.0.1 only;
the attackers' sockets come from 127.NET.0.2..9 (--net, default 0) so that they do not use up the
source ports other programs on 127.0.0.1 need. When the attack is in its steady state
the FILE given by --ready is created (the caller then measures a well-behaved client).
Prints one JSON object: the server's resident memory (VmRSS of PID and its descendants,
KiB) before, at its peak during and after the attack, and what the attack saw.

Standard library only: socket, selectors, multiprocessing.
"""

import argparse
import base64
import errno
import json
import multiprocessing as mp
import os
import re
import selectors
import socket
import struct
import sys
import time

IP_BIND_ADDRESS_NO_PORT = 24  # linux/in.h: the port is chosen at connect, not bind

XMPP_OPEN = (
    "<?xml version='1.0'?><stream:stream to='{d}' xmlns='jabber:client' "
    "xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>"
)


PROXIES = ("socks5", "convert", "ss")


def socks5_request(ip, port):
    """A CONNECT request (RFC 1928 4) to an IPv4 address."""
    return b"\x05\x01\x00\x01" + socket.inet_aton(ip) + struct.pack(">H", port)


def convert_request(ip, port):
    """A Convert message (RFC 8803 4): the fixed header and a Connect TLV to ip:port."""
    tlv = b"\x0a\x05" + struct.pack(">H", port) + b"\0" * 10 + b"\xff\xff" + socket.inet_aton(ip)
    return b"\x01\x06\x22\x63" + tlv


SS_OPENING = os.urandom(32 + 2 + 16 + 7)  # a salt, a length chunk and its tag, the header


def opening(proto, domain, host, origin=("127.0.0.1", 9)):
    """What a client sends first: the bytes a slowloris trickles."""
    if proto == "socks5":
        return b"\x05\x01\x00" + socks5_request(*origin)
    if proto == "convert":
        return convert_request(*origin)
    if proto == "ss":
        return SS_OPENING
    if proto in MORE_OPENINGS:
        return MORE_OPENINGS[proto](domain, host)
    if proto in LINE_OPENINGS:
        return LINE_OPENINGS[proto]
    if proto == "xmpp":
        return XMPP_OPEN.format(d=domain).encode()
    if proto == "ws":
        return (
            "GET /xmpp-websocket HTTP/1.1\r\nHost: {h}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: xmpp\r\n\r\n"
        ).format(h=host).encode()
    return "GET / HTTP/1.1\r\nHost: {h}\r\nUser-Agent: hostile\r\n\r\n".format(h=host).encode()


# ---------------------------------------------------------------- server memory


def tree(pid):
    """PID and its descendants (through /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def rss_kib(pids):
    total = 0
    for root in pids:
        for p in tree(root):
            try:
                with open("/proc/%d/status" % p) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
            except OSError:
                pass
    return total


def alive(pids):
    return all(os.path.exists("/proc/%d" % p) for p in pids)


# ---------------------------------------------------------------- sockets


# The second octet of the attackers' sources (--net): each attack of a bench run comes
# from addresses of its own, so that a ban an earlier attack earned does not meet it.
SOURCE_NET = 0


def sock(worker, blocking=True):
    """A TCP socket from 127.NET.0.(2 + worker % 8), so attacks do not use up 127.0.0.1's
    ports."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
    s.bind(("127.%d.0.%d" % (SOURCE_NET, 2 + worker % 8), 0))
    s.setblocking(blocking)
    return s


def rst_close(s):
    """Close with a reset: no TIME_WAIT left behind on either side."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


def open_many(worker, target, n, deadline):
    """n connections, opened without blocking; returns the connected ones and errors."""
    sel = selectors.DefaultSelector()
    pending, ok, errs = 0, [], {}
    for _ in range(n):
        s = sock(worker, blocking=False)
        e = s.connect_ex(target)
        if e in (0, errno.EINPROGRESS):
            sel.register(s, selectors.EVENT_WRITE)
            pending += 1
        else:
            errs[errno.errorcode.get(e, str(e))] = errs.get(errno.errorcode.get(e, str(e)), 0) + 1
            s.close()
        # Keep the listen backlog from overflowing: let some complete first.
        while pending > 512 and time.time() < deadline:
            for k, _ in sel.select(1.0):
                sel.unregister(k.fileobj)
                pending -= 1
                e = k.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if e:
                    name = errno.errorcode.get(e, str(e))
                    errs[name] = errs.get(name, 0) + 1
                    k.fileobj.close()
                else:
                    ok.append(k.fileobj)
    while pending and time.time() < deadline:
        for k, _ in sel.select(1.0):
            sel.unregister(k.fileobj)
            pending -= 1
            e = k.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if e:
                name = errno.errorcode.get(e, str(e))
                errs[name] = errs.get(name, 0) + 1
                k.fileobj.close()
            else:
                ok.append(k.fileobj)
    for k in list(sel.get_map().values()):
        k.fileobj.close()
    sel.close()
    return ok, errs


def hold_watch(conns, until, trickle=None, ready=None):
    """Holds conns until `until`, reading whatever the server sends; with trickle, sends
    its next byte on every connection once a second. Returns (closed by the server, seconds
    after the start at which the last of them closed, first bytes the server sent)."""
    sel = selectors.DefaultSelector()
    for s in conns:
        sel.register(s, selectors.EVENT_READ)
    start = time.time()
    closed, last_close, said = 0, None, b""
    pos = 0
    next_byte = start
    if ready:
        ready.set()
    while time.time() < until and sel.get_map():
        now = time.time()
        if trickle is not None and now >= next_byte:
            if pos < len(trickle):
                b = trickle[pos : pos + 1]
                pos += 1
            else:
                b = b" "  # whitespace keeps an XMPP stream or an HTTP head open
            for k in list(sel.get_map().values()):
                try:
                    k.fileobj.send(b)
                except OSError:
                    pass
            next_byte += 1.0
        for k, _ in sel.select(min(0.5, max(0.01, until - time.time()))):
            try:
                d = k.fileobj.recv(65536)
            except OSError:
                d = b""
            if d:
                if len(said) < 300:
                    said += d[: 300 - len(said)]
                continue
            sel.unregister(k.fileobj)
            k.fileobj.close()
            closed += 1
            last_close = time.time() - start
    for k in list(sel.get_map().values()):
        rst_close(k.fileobj)
    sel.close()
    return closed, last_close, said


def read_until(s, marks, limit=5.0):
    """Reads until one of marks appears, the peer closes or `limit` seconds pass."""
    buf = b""
    s.settimeout(limit)
    end = time.time() + limit
    while time.time() < end:
        try:
            d = s.recv(65536)
        except OSError:
            return buf, True
        if not d:
            return buf, True
        buf += d
        if any(m in buf for m in marks):
            return buf, False
    return buf, False


def drain(s, limit):
    """Everything the peer sends until it closes (True) or `limit` seconds pass (False)."""
    buf = b""
    s.settimeout(0.5)
    end = time.time() + limit
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return buf, True
        if not d:
            return buf, True
        buf += d[: max(0, 4096 - len(buf))]
    return buf, False


def ws_frame(payload, opcode=1, length=None):
    """A masked client frame (RFC 6455 5.2); `length` may lie about the payload's size."""
    n = len(payload) if length is None else length
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    mask = b"\x01\x02\x03\x04"
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_open(s, a):
    s.sendall(opening("wsecho" if a.proto == "wsecho" else "ws", a.domain, a.host))
    head, closed = read_until(s, [b"\r\n\r\n"])
    return head.startswith(b"HTTP/1.1 101") and not closed


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            break
        buf += d
    return buf


def proxy_open(s, proto, origin):
    """The client's side of a proxy's handshake to `origin`: (connected, the proxy's
    reply). Shadowsocks' opening (random bytes here) has no reply: (None, b"")."""
    if proto == "socks5":
        s.sendall(b"\x05\x01\x00")
        r = recv_exact(s, 2)
        if r != b"\x05\x00":
            return False, r
        if isinstance(origin[0], bytes):  # a domain name
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(origin[0])]) + origin[0] + struct.pack(">H", origin[1]))
        else:
            s.sendall(socks5_request(*origin))
        r += recv_exact(s, 10)
        return len(r) == 12 and r[3] == 0, r
    if proto == "convert":
        s.sendall(convert_request(*origin))
        r = recv_exact(s, 4)
        if len(r) == 4 and r[1] > 1:
            r += recv_exact(s, r[1] * 4 - 4)
        return len(r) >= 4 and r[:1] == b"\x01" and not (len(r) > 4 and r[4] == 30), r
    s.sendall(SS_OPENING)
    return None, b""


SOCKS5_REPLIES = {0: "succeeded", 1: "general failure", 2: "not allowed by ruleset", 3: "network unreachable",
                  4: "host unreachable", 5: "connection refused", 7: "command not supported",
                  8: "address type not supported"}


def proxy_summary(proto, reply):
    """A proxy's reply in a few words: SOCKS5's reply code, Convert's Error TLV code, or
    the origin's echo of what oversized sent through."""
    if reply.startswith(b"AAAA"):
        return "the origin's echo"
    if proto == "socks5" and len(reply) >= 4 and reply[:1] == b"\x05":
        return "SOCKS5 %d (%s)" % (reply[3], SOCKS5_REPLIES.get(reply[3], "?"))
    if proto == "socks5" and len(reply) == 2:
        return "SOCKS5 method 0x%02x" % reply[1]
    if proto == "convert" and len(reply) >= 7 and reply[4] == 30:
        return "Convert Error TLV %d" % reply[6]
    if proto == "convert" and len(reply) >= 4:
        return "Convert reply, no error"
    return None
# ---------------------------------------------------------------- the web gateways and
# the other bench servers: BOSH and SockJS (serve --xmpp-bosh, --xmpp-sockjs), SOAP
# (--also soap=), the WebSocket echo server (--also websocket=, proto wsecho) and gRPC
# (--also grpc=, HTTP/2 only, proto h2)

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
BOSH_NS = "http://jabber.org/protocol/httpbind"
SOAP_ECHO = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<soap:Envelope '
    b'xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:wb="urn:wirebench:bench">'
    b"<soap:Body><wb:Echo><wb:data>aGk=</wb:data></wb:Echo></soap:Body></soap:Envelope>"
)


def h2_frame(ftype, flags, stream, payload, length=None):
    """An HTTP/2 frame (RFC 9113 section 4.1); `length` may lie about the payload's size."""
    n = len(payload) if length is None else length
    return struct.pack(">I", n)[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def bosh_body(domain):
    return ("<body rid='1' to='%s' xml:lang='en' wait='60' hold='1' ver='1.6' "
            "xmlns='%s' xmlns:xmpp='urn:xmpp:xbosh' xmpp:version='1.0'/>" % (domain, BOSH_NS)).encode()


def post_head(path, n, ctype="text/xml; charset=utf-8", extra=""):
    return ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n"
            % (path, ctype, extra, n)).encode()


# What each sends first (a slowloris trickles it): BOSH a session request, SockJS its
# /info request, SOAP an Echo envelope, the WebSocket bench server its upgrade to /echo,
# gRPC the HTTP/2 preface and an empty SETTINGS.
MORE_OPENINGS = {
    "bosh": lambda d, h: post_head("/http-bind", len(bosh_body(d))) + bosh_body(d),
    "sockjs": lambda d, h: ("GET /xmpp/info HTTP/1.1\r\nHost: %s\r\n\r\n" % h).encode(),
    "soap": lambda d, h: post_head("/soap", len(SOAP_ECHO), extra='SOAPAction: "urn:wirebench:bench#Echo"\r\n') + SOAP_ECHO,
    "wsecho": lambda d, h: (
        "GET /echo HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % h
    ).encode(),
    "h2": lambda d, h: H2_PREFACE + h2_frame(4, 0, 0, b""),
}

# The request head a half-open non-reader repeats (its body is n bytes of 'x'): each
# gets an answer it never reads.
MORE_REQUESTS = {
    "bosh": lambda n: post_head("/http-bind", n),
    "sockjs": lambda n: post_head("/xmpp/000/hostile/xhr_send", n, "application/json"),
    "soap": lambda n: post_head("/soap", n),
}

# The well-behaved client's request per proto (http-client): one the server answers
# itself, at once: BOSH's CORS preflight, SockJS's /info, a SOAP Echo.
CLIENT_REQUESTS = {
    "http": b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
    "bosh": b"OPTIONS /http-bind HTTP/1.1\r\nHost: x\r\nOrigin: http://a.test\r\n"
            b"Access-Control-Request-Method: POST\r\n\r\n",
    "sockjs": b"GET /xmpp/info HTTP/1.1\r\nHost: x\r\n\r\n",
    "soap": post_head("/soap", len(SOAP_ECHO), extra='SOAPAction: "urn:wirebench:bench#Echo"\r\n') + SOAP_ECHO,
}


H2_ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR",
             6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}
H2_TYPES = {0: "DATA", 1: "HEADERS", 3: "RST_STREAM", 4: "SETTINGS", 6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE"}


def h2_summary(reply):
    """An HTTP/2 server's frames in a few words: their types, a GOAWAY's error code."""
    out, at = [], 0
    while at + 9 <= len(reply):
        n = struct.unpack(">I", b"\0" + reply[at:at + 3])[0]
        ftype, flags = reply[at + 3], reply[at + 4]
        name = H2_TYPES.get(ftype, "type %d" % ftype)
        if ftype == 4 and flags & 1:
            name = "SETTINGS ack"
        if ftype == 7 and at + 17 <= len(reply):
            code = struct.unpack(">I", reply[at + 13:at + 17])[0]
            name = "GOAWAY %s" % H2_ERRORS.get(code, code)
        if not out or out[-1] != name:
            out.append(name)
        at += 9 + n
    return "HTTP/2 " + ", ".join(out)


def report_rtt(rtt, fails):
    """Prints the round trips' p50/p90/p99 the way hold_sessions does (hostile.sh reads it)."""
    rtt.sort()
    if not rtt:
        print("pingpong: 0 round trips (%d failed)" % fails)
        return
    q = lambda f: rtt[round((len(rtt) - 1) * f)] * 1e6
    print("pingpong: %d round trips, p50 %.1f us, p90 %.1f us, p99 %.1f us (%d failed)" % (len(rtt), q(0.5), q(0.9), q(0.99), fails))


def ws_client(target, seconds):
    """The WebSocket bench server's well-behaved client: 2-byte binary messages to /echo,
    one after another, for `seconds`."""
    ip, port = target.rsplit(":", 1)
    s = socket.create_connection((ip, int(port)), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(MORE_OPENINGS["wsecho"]("", target))
    head, _ = read_until(s, [b"\r\n\r\n"])
    buf = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
    frame = ws_frame(b"hi", opcode=2)
    rtt, fails = [], 0
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        try:
            s.sendall(frame)
            while len(buf) < 4:  # the echo: 0x82 0x02 'h' 'i'
                d = s.recv(65536)
                if not d:
                    raise OSError("closed")
                buf += d
            buf = buf[4:]
        except OSError:
            fails += 1
            break
        rtt.append(time.perf_counter() - t)
    report_rtt(rtt, fails)


def hpack_literal(name, value):
    """A header field as HPACK's literal without indexing, new name, no Huffman coding
    (RFC 7541 section 6.2.2); names and values under 127 bytes."""
    return b"\0" + bytes([len(name)]) + name + bytes([len(value)]) + value


# wirebench.Bench/Echo's request headers (gRPC over HTTP/2, PROTOCOL-HTTP2.md).
GRPC_ECHO = b"".join(hpack_literal(n, v) for n, v in [
    (b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/wirebench.Bench/Echo"),
    (b":authority", b"127.0.0.1"), (b"content-type", b"application/grpc"), (b"te", b"trailers"),
])


def grpc_echo_call(stream, data=b"hi"):
    """A unary Echo call on `stream`: HEADERS, then DATA ending the stream, the gRPC
    message prefix (not compressed, 4-byte length) and a Blob holding `data` (protobuf:
    field 1, length-delimited; `data` under 16 KiB, a two-byte length at most)."""
    n = len(data)
    blob = b"\x0a" + (bytes([n]) if n < 128 else bytes([n & 0x7F | 0x80, n >> 7])) + data
    msg = b"\0" + struct.pack(">I", len(blob)) + blob
    return h2_frame(1, 4, stream, GRPC_ECHO) + h2_frame(0, 1, stream, msg)


def grpc_calls(data):
    """A non-reader's next call each time, on the next stream id (odd, rising), echoing
    `data`."""
    n = [1]

    def call():
        n[0] += 2
        return grpc_echo_call(n[0] - 2, data)
    return call


def h2_client(target, seconds):
    """gRPC's well-behaved client: unary wirebench.Bench/Echo calls, one at a time on
    one HTTP/2 connection, each timed to its trailers (END_STREAM). Not PINGs: the server
    refuses a client that pings more often than gRPC's keepalive policy permits."""
    ip, port = target.rsplit(":", 1)
    s = socket.create_connection((ip, int(port)), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # The connection's receive window opened wide: the replies never wait for it.
    s.sendall(H2_PREFACE + h2_frame(4, 0, 0, b"") + h2_frame(8, 0, 0, struct.pack(">I", 2**30)))
    buf = b""
    rtt, fails = [], 0
    end = time.time() + seconds
    stream = 1
    acked_settings = False
    while time.time() < end:
        t = time.perf_counter()
        try:
            s.sendall(grpc_echo_call(stream))
            echoed = False
            while True:
                while len(buf) < 9 or len(buf) < 9 + struct.unpack(">I", b"\0" + buf[:3])[0]:
                    d = s.recv(65536)
                    if not d:
                        raise OSError("closed")
                    buf += d
                n = struct.unpack(">I", b"\0" + buf[:3])[0]
                ftype, flags = buf[3], buf[4]
                sid = struct.unpack(">I", buf[5:9])[0] & 0x7FFFFFFF
                buf = buf[9 + n:]
                if ftype == 4 and not flags & 1 and not acked_settings:
                    s.sendall(h2_frame(4, 1, 0, b""))
                    acked_settings = True
                if ftype == 7 or (ftype == 3 and sid == stream):
                    raise OSError("GOAWAY or RST_STREAM")
                echoed = echoed or (ftype == 0 and sid == stream and n >= 9)
                if ftype == 1 and sid == stream and flags & 1:
                    if not echoed:
                        raise OSError("a call ended without its echo (an error status)")
                    break
        except OSError:
            fails += 1
            break
        stream += 2
        rtt.append(time.perf_counter() - t)
    report_rtt(rtt, fails)


# ---------------------------------------------------------------- serve's control port,
# the shard barrier, the x2x link (#34)

# The first line each server reads: a control hello (docs/protocols/control.md); a
# barrier hello from shard index 0, which shard 0 refuses without giving up on the run (a
# hello naming a real index 1..N-1 with another plan would end the run at once, by
# design); an x2x link marker (XEP-0361 link of protocols/xmpp/x2x).
LINE_OPENINGS = {
    "control": b'{"op":"hello","version":1,"client":"hostile"}\n',
    "barrier": b'{"hello":{"index":0,"count":2,"wirebench":"0","plan":"hostile"}}\n',
    "x2x": b"<s xmlns='urn:wirebench:x2x:0' n='0' i='1'/>",
}


def line_summary(reply):
    """JSON-lines replies in a few words: the control port's ok or error, the barrier's
    refusal."""
    out = []
    for line in reply.split(b"\n"):
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if isinstance(m, dict) and "ok" in m:
            said = "ok" if m["ok"] else "error: %s" % m.get("error", "")[:60]
        elif isinstance(m, dict) and m:
            k = next(iter(m))
            said = "%s: %s" % (k, str(m[k])[:60]) if isinstance(m[k], str) else k
        else:
            said = "json"
        if not out or out[-1] != said:
            out.append(said)
    return ", then ".join(out) or None


def line_client(proto, target, seconds):
    """The well-behaved client of the control port and the barrier: a new connection,
    the hello line, its one-line answer (control: ok; barrier: the refusal of index 0),
    closed; again for `seconds`. Prints the iterations' p50/p99 like hold_sessions does."""
    ip, port = target.rsplit(":", 1)
    rtt, fails = [], 0
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        try:
            s = socket.create_connection((ip, int(port)), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(LINE_OPENINGS[proto])
            reply, _ = read_until(s, [b"\n"])
            rst_close(s)
            good = b'"ok":true' in reply if proto == "control" else reply.startswith(b'{"refused"')
            if not good:
                raise OSError("answer %r" % reply[:100])
        except OSError as e:
            fails += 1
            if fails == 1:
                print("first failure: %s" % e)
            time.sleep(0.01)
            continue
        rtt.append(time.perf_counter() - t)
    print_rtts("connect-hello", "connections", rtt, fails)


def x2x_client(target, seconds):
    """The x2x gateway's well-behaved client: its peer (the one source address it
    accepts, 127.0.0.1), on one link connection: a message to a domain the gateway does
    not serve, answered at once with an error stanza over the link (no XMPP server
    needed behind the gateway), which is acknowledged. Prints the round trips' p50/p99."""
    ip, port = target.rsplit(":", 1)
    s = socket.create_connection((ip, int(port)), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"<s xmlns='urn:wirebench:x2x:0' n='0' i='%x'/>" % int.from_bytes(os.urandom(8), "big"))
    buf, rtt, fails, got, base = b"", [], 0, 0, None
    end = time.time() + seconds
    k = 0
    while time.time() < end:
        k += 1
        msg = (b"<message from='peer@b.test/h' to='nobody@elsewhere.test' type='chat' id='h%d'>"
               b"<body>hi</body></message>" % k)
        t = time.perf_counter()
        try:
            s.sendall(msg)
            while b"</message>" not in buf:
                d = s.recv(65536)
                if not d:
                    raise OSError("closed")
                buf += d
            if base is None:
                m = re.search(rb"<s xmlns='urn:wirebench:x2x:0' n='(\d+)'", buf)
                base = int(m.group(1)) if m else 0
            buf = buf.split(b"</message>", 1)[1]
            got += 1
        except OSError as e:
            fails += 1
            print("first failure: %s" % e)
            break
        rtt.append(time.perf_counter() - t)
        # Our ack: the gateway may then forget the error it sent (bounded queue).
        s.sendall(b"<a xmlns='urn:xmpp:sm:3' h='%d'/>" % (base + got))
    rst_close(s)
    print_rtts("pingpong", "round trips", rtt, fails)


# ---------------------------------------------------------------- attacks (per worker)


def w_none(w, a, n, ready, q):
    """No attack: the well-behaved client is measured twice with nothing in between, so
    that the table shows how far the ratio moves on this machine by itself."""
    ready.set()
    time.sleep(a.secs)
    q.put({"slept_s": a.secs})


def w_idle(w, a, n, ready, q):
    until = time.time() + a.secs
    conns, errs = open_many(w, a.target, n, until)
    closed, last, said = hold_watch(conns, until, ready=ready)
    q.put({"opened": len(conns), "connect_errors": errs, "closed_by_server": closed, "last_close_s": last, "said": said[:120].decode("latin-1")})


def w_slowloris(w, a, n, ready, q):
    until = time.time() + a.secs
    conns, errs = open_many(w, a.target, n, until)
    closed, last, said = hold_watch(conns, until, trickle=opening(a.proto, a.domain, a.host, a.origin), ready=ready)
    q.put({"opened": len(conns), "connect_errors": errs, "closed_by_server": closed, "last_close_s": last, "said": said[:120].decode("latin-1")})


def oversized_once(w, a, big_head):
    """One connection sending something too large; returns (bytes sent, closed, reply)."""
    s = sock(w)
    s.settimeout(2)
    try:
        s.connect(a.target)
    except OSError as e:
        s.close()
        return 0, False, no_connection(e)
    sent = 0
    chunk = b"A" * 16384
    try:
        if a.proto == "xmpp":
            if big_head:
                s.sendall(b"<?xml version='1.0'?><stream:stream to='" + a.domain.encode() + b"' x='")
            else:
                s.sendall(opening("xmpp", a.domain, a.host))
                read_until(s, [b"</stream:features>"])
                s.sendall(b"<message to='user2@" + a.domain.encode() + b"'><body>")
        elif a.proto in ("control", "barrier"):
            # A line without end, or after a valid hello one that opens like a request.
            if not big_head:
                s.sendall(opening(a.proto, a.domain, a.host))
                s.sendall(b'{"op":"hello","version":1,"client":"' if a.proto == "control" else b'{"hello":{"plan":"')
        elif a.proto == "x2x":
            s.sendall(b"<s xmlns='urn:wirebench:x2x:0' n='0' i='" if big_head else opening("x2x", "", "") + b"<message><body>")
        elif a.proto in PROXIES:
            if big_head:
                # Longest greeting or Convert header there is, then no end of it.
                s.sendall({"socks5": b"\x05\xff" + b"\0" * 255, "convert": b"\x01\xff\x22\x63"}.get(a.proto, b""))
            elif proxy_open(s, a.proto, a.origin)[0] is False:
                return 0, True, b"no connection through"
            # else: through to the echo origin, sending without reading its echo
        elif a.proto == "h2":
            # A frame far over the 16 KiB SETTINGS_MAX_FRAME_SIZE default (RFC 9113
            # section 4.2): HEADERS right after the preface, or DATA after SETTINGS.
            if big_head:
                s.sendall(H2_PREFACE + h2_frame(1, 0x4, 1, b"", length=(1 << 24) - 1))
            else:
                s.sendall(H2_PREFACE + h2_frame(4, 0, 0, b"") + h2_frame(0, 0, 1, b"", length=(1 << 24) - 1))
        elif a.proto in ("ws", "wsecho"):
            if big_head:
                s.sendall(b"GET /xmpp-websocket HTTP/1.1\r\nHost: x\r\nX-Big: ")
            else:
                if not ws_open(s, a):
                    return 0, True, b"no upgrade"
                s.sendall(ws_frame(b"", length=1 << 30)[:14])  # a 1 GiB text frame announced
        else:
            if big_head:
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
            else:
                s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n")
        s.settimeout(2)
        while sent < a.max_bytes:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    reply, closed = drain(s, 3)
    rst_close(s)
    return sent, closed, reply


def no_connection(e):
    """What a connect that failed saw, for summary(): a timeout is what a source whose SYNs
    a server drops (a ban) sees."""
    if isinstance(e, socket.timeout):
        return "no connection: connect timed out (the source banned)"
    return "no connection: %s" % (e.strerror or e)


def summary(reply, proto=None):
    """A reply in a few words: an XMPP stream error's condition, an HTTP status line, a
    WebSocket close code, a proxy's reply, or its first bytes."""
    if isinstance(reply, str):
        return reply
    if proto in PROXIES and proxy_summary(proto, reply):
        return proxy_summary(proto, reply)
    if reply.startswith(b"{") and line_summary(reply):
        return line_summary(reply)
    m = re.search(rb"<([a-z-]+) xmlns=['\"]urn:ietf:params:xml:ns:xmpp-streams", reply)
    if m:
        return "stream error <%s/>" % m.group(1).decode()
    if reply.startswith(b"HTTP/"):
        line = reply.split(b"\r\n")[0].decode("latin-1")
        rest = reply.split(b"\r\n\r\n", 1)[1:] or [b""]
        if line.startswith("HTTP/1.1 101") and len(rest[0]) >= 4 and rest[0][0] & 0x0F == 8:
            return line + ", then WebSocket close %d" % struct.unpack(">H", rest[0][2:4])[0]
        return line
    if len(reply) >= 4 and reply[0] == 0x88:
        return "WebSocket close %d" % struct.unpack(">H", reply[2:4])[0]
    if reply.startswith(b"\0\0") and len(reply) >= 9 and reply[3] == 4:
        return h2_summary(reply)
    return repr(reply[:40]) if reply else "nothing"


def w_oversized(w, a, n, ready, q):
    until = time.time() + a.secs
    ready.set()
    tries = closed = 0
    sent_max = 0
    replies = {}
    while time.time() < until:
        sent, c, reply = oversized_once(w, a, big_head=tries % 2 == 1)
        tries += 1
        closed += c
        sent_max = max(sent_max, sent)
        key = summary(reply, a.proto)
        replies[key] = replies.get(key, 0) + 1
    q.put({"tries": tries, "closed_by_server": closed, "most_sent_before_close": sent_max, "replies": replies})


def w_garbage(w, a, n, ready, q):
    until = time.time() + a.secs
    ready.set()
    tries = closed = 0
    replies = {}
    while time.time() < until:
        s = sock(w)
        s.settimeout(2)
        try:
            s.connect(a.target)
        except OSError as e:
            s.close()
            tries += 1
            key = no_connection(e)
            replies[key] = replies.get(key, 0) + 1
            continue
        try:
            if tries % 2 == 1 and a.proto in PROXIES:  # garbage where the request goes
                s.sendall({"socks5": b"\x05\x01\x00", "convert": b"\x01\x06\x22\x63"}.get(a.proto, b""))
            elif tries % 2 == 1:  # garbage after a valid opening
                s.sendall(opening(a.proto, a.domain, a.host))
                if a.proto in ("ws", "wsecho"):
                    read_until(s, [b"\r\n\r\n"])
            s.sendall(os.urandom(4096))
        except OSError:
            pass
        reply, c = drain(s, 3)
        rst_close(s)
        tries += 1
        closed += c
        key = summary(reply, a.proto)
        replies[key] = replies.get(key, 0) + 1
    q.put({"tries": tries, "closed_by_server": closed, "replies": replies})


def xmpp_login(s, a, user, ws=False):
    """A PLAIN login and bind; `ws`: over an upgraded RFC 7395 connection, each element a
    text message and <open/> for the stream header. The full JID, or None."""
    d = a.domain.encode()
    if ws:
        def send(b):
            s.sendall(ws_frame(b))
        header = b"<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='" + d + b"' version='1.0'/>"
    else:
        send = s.sendall
        header = opening("xmpp", a.domain, a.host)
    send(header)
    read_until(s, [b"</stream:features>"])
    cred = base64.b64encode(b"\0user%d\0pass%d" % (user, user))
    send(b"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>" + cred + b"</auth>")
    r, _ = read_until(s, [b"<success", b"<failure"])
    if b"<success" not in r:
        return None
    send(header)
    read_until(s, [b"</stream:features>"])
    send(b"<iq type='set' id='b1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>h</resource></bind></iq>")
    r, _ = read_until(s, [b"</iq>"])
    if b"result" not in r:
        return None
    return b"user%d@%s/h" % (user, d)


TCP_CLOSE, TCP_CLOSE_WAIT = 7, 8  # include/net/tcp_states.h


def cut_by_server(s):
    """Whether the server closed this connection (its FIN or RST arrived), unread data or not."""
    try:
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            return True
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] in (TCP_CLOSE, TCP_CLOSE_WAIT)
    except OSError:
        return True


def w_halfopen(w, a, n, ready, q):
    """Half the connections stop reading while the server writes to them: XMPP sessions
    (over TCP, or over WebSocket through the gateway) logged in that one more session of
    this worker (which reads) floods with 1 KB messages; WebSocket and HTTP connections
    that keep sending requests whose replies they never read. The other half send half an
    opening, shut their write side and linger, never reading."""
    until = time.time() + a.secs
    readers, shut, errs = [], [], 0
    body = b"x" * 1000
    sender = None
    ws = a.proto == "ws"
    if a.proto in ("xmpp", "ws"):
        sender = sock(w)
        sender.settimeout(5)
        sender.connect(a.target)
        if (ws and not ws_open(sender, a)) or xmpp_login(sender, a, a.first_user + 5000 + w, ws) is None:
            sys.exit("hostile.py: the sending session could not log in")
    for i in range(n):
        try:
            s = sock(w)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(5)
            s.connect(a.target)
        except OSError:
            errs += 1
            continue
        if i % 2 == 0:
            msg = b""
            if a.proto in ("xmpp", "ws"):
                jid = None if ws and not ws_open(s, a) else xmpp_login(s, a, a.first_user + w * n + i, ws)
                if jid is None:
                    errs += 1
                    s.close()
                    continue
                msg = b"<message type='chat' to='" + jid + b"'><body>" + body + b"</body></message>"
                if ws:
                    msg = ws_frame(msg)
            elif a.proto in PROXIES:
                if proxy_open(s, a.proto, a.origin)[0] is False:
                    errs += 1
                    s.close()
                    continue
                msg = body
            elif a.proto == "wsecho":
                if not ws_open(s, a):
                    errs += 1
                    s.close()
                    continue
                msg = ws_frame(body, opcode=2)  # echoed back, never read
            elif a.proto == "h2":
                s.sendall(opening("h2", a.domain, a.host))
                # Echo calls of 1 KB (as HTTP's POSTs) whose replies are never read: the
                # replies fill the connection's flow-control window, then its buffers.
                msg = grpc_calls(body)
            elif a.proto in MORE_REQUESTS:
                msg = MORE_REQUESTS[a.proto](len(body)) + body
            elif a.proto in LINE_OPENINGS:
                msg = LINE_OPENINGS[a.proto] * 16  # hellos whose answers are never read
            else:
                msg = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + body
            s.setblocking(False)
            readers.append((s, msg))
        else:
            o = opening(a.proto, a.domain, a.host, a.origin)
            try:
                s.sendall(o[: len(o) // 2])
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # closed at once (x2x refuses strangers unread): counted as closed
            s.setblocking(False)
            shut.append(s)
    ready.set()
    written = 0
    if sender is not None:
        # One session writes to all the non-readers, reading (and dropping) its own input.
        sender.setblocking(False)
        pending = b""
        k = 0
        while time.time() < until:
            try:
                while sender.recv(65536):
                    pass
            except BlockingIOError:
                pass
            except OSError:
                break
            if not pending:
                pending = b"".join(readers[(k + j) % len(readers)][1] for j in range(64))
                k += 64
            try:
                m = sender.send(pending)
                written += m
                pending = pending[m:]
            except BlockingIOError:
                time.sleep(0.002)
            except OSError:
                break
        sender.close()
    else:
        # Each non-reader writes requests as long as the server reads them.
        live = list(readers)
        while time.time() < until and live:
            for s, msg in live:
                try:
                    written += s.send(msg() if callable(msg) else msg)
                except (BlockingIOError, OSError):
                    pass
            time.sleep(0.005)
    # The server may still be working through what it read: give it a few seconds to
    # reach its cap on the non-readers.
    end = time.time() + 5
    while time.time() < end and not all(cut_by_server(s) for s, _ in readers):
        time.sleep(0.25)
    cut = sum(cut_by_server(s) for s, _ in readers)
    shut_closed = sum(cut_by_server(s) for s in shut)
    for s, _ in readers:
        rst_close(s)
    for s in shut:
        rst_close(s)
    q.put({"readers": len(readers), "readers_cut_by_server": cut, "bytes_written": written, "shut": len(shut), "shut_closed_by_server": shut_closed, "setup_errors": errs})


def w_relay(w, a, n, ready, q):
    """The proxies' control for halfopen: the traffic its non-readers send (n/2
    connections through the proxy to the echo origin, 1 KB each every 5 ms while the
    proxy takes it), from clients that read their echo. A proxy relays an upload whether
    or not its client reads the return path, so halfopen's cost to the well-behaved client
    is only the half-open state's where it exceeds this row's."""
    if a.proto not in PROXIES:
        sys.exit("hostile.py: relay is the proxies' control (socks5, convert, ss)")
    until = time.time() + a.secs
    conns, errs = [], 0
    body = b"x" * 1000
    for _ in range(n // 2):
        try:
            s = sock(w)
            s.settimeout(5)
            s.connect(a.target)
            if proxy_open(s, a.proto, a.origin)[0] is False:
                raise OSError("refused")
        except OSError:
            errs += 1
            continue
        s.setblocking(False)
        conns.append(s)
    ready.set()
    written = read = 0
    while time.time() < until and conns:
        for s in conns:
            try:
                written += s.send(body)
            except (BlockingIOError, OSError):
                pass
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    read += len(d)
            except (BlockingIOError, OSError):
                pass
        time.sleep(0.005)
    for s in conns:
        rst_close(s)
    q.put({"readers": len(conns), "bytes_written": written, "bytes_read": read, "setup_errors": errs})


def w_flood(w, a, n, ready, q):
    until = time.time() + a.secs
    ready.set()
    ok, errs = 0, {}
    while time.time() < until:
        s = sock(w)
        s.settimeout(1)
        try:
            s.connect(a.target)
            ok += 1
        except OSError as e:
            name = errno.errorcode.get(e.errno, str(e)) if e.errno else "timeout"
            errs[name] = errs.get(name, 0) + 1
        rst_close(s)
    q.put({"connects": ok, "per_s": round(ok / a.secs), "connect_errors": errs})


SMUGGLE = {
    "CL,CL": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\n"
    b"hello GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    "CL+TE": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    "TE+CL": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 44\r\n\r\n"
    b"5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    "TE obfuscated": b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\nContent-Length: 4\r\n\r\n"
    b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
}


def w_smuggle(w, a, n, ready, q):
    ready.set()
    out = {}
    for name, req in SMUGGLE.items():
        s = sock(w)
        s.settimeout(3)
        try:
            s.connect(a.target)
            s.sendall(req)
        except OSError:
            pass
        reply, closed = drain(s, 3)
        rst_close(s)
        statuses = [l.decode("latin-1") for l in reply.split(b"\r\n") if l.startswith(b"HTTP/1.")]
        out[name] = {"responses": statuses, "closed": closed}
    q.put({"shapes": out})


def local_ip():
    """This machine's address on its default route (not loopback), or None."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.connect(("192.0.2.1", 9))
        ip = u.getsockname()[0]
        return None if ip.startswith("127.") else ip
    except OSError:
        return None
    finally:
        u.close()


def w_disallowed(w, a, n, ready, q):
    """Asks the proxy for destinations outside its allow list: a documentation address
    (TEST-NET-1), this machine's own address on the origin's port (where a proxy of
    loopback destinations must not reach either), and for SOCKS5 a name. After a
    success reply (a front that answers at once, as converter-client's does) it sends a
    line and says whether anything came back before the close."""
    ready.set()
    dests = [("192.0.2.1", 80)]
    if local_ip():
        dests.append((local_ip(), a.origin[1]))
    # A name other than localhost: our proxies refuse it before any resolver is asked
    # (resolving it would send a DNS query off the machine).
    if a.proto == "socks5":
        dests.append((b"example.com", 80))
    out = {}
    for d in dests:
        name = "%s:%d" % (d[0].decode() if isinstance(d[0], bytes) else d[0], d[1])
        s = sock(w)
        s.settimeout(12)
        try:
            s.connect(a.target)
            ok, reply = proxy_open(s, a.proto, d)
            said = proxy_summary(a.proto, reply) or summary(reply)
            if ok is not False:
                s.sendall(b"GET / HTTP/1.0\r\n\r\n")
                data, closed = drain(s, 12)
                said += ", then %s%s" % ("%d bytes" % len(data) if data else "nothing", ", closed" if closed else "")
        except OSError as e:
            said = "error %s" % e
        rst_close(s)
        out[name] = said
    q.put({"shapes": out})


def http_exchange(s, req, buf):
    """Sends one request on kept-alive `s` and reads its response (Content-Length bodies):
    (status line, body, what was read beyond it)."""
    s.sendall(req)
    while True:
        i = buf.find(b"\r\n\r\n")
        if i >= 0:
            head = buf[:i]
            n = 0
            for line in head.split(b"\r\n")[1:]:
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":", 1)[1])
            if len(buf) >= i + 4 + n:
                return head.split(b"\r\n", 1)[0], buf[i + 4 : i + 4 + n], buf[i + 4 + n :]
        d = s.recv(65536)
        if not d:
            raise OSError("closed")
        buf += d


def w_sessions(w, a, n, ready, q):
    """(bosh, sockjs) Opens n sessions, one request each on a kept-alive connection, and
    abandons them: each holds a connection to the XMPP server until the gateway expires it
    (BOSH's inactivity, SockJS's disconnect delay) or the server ends it (its handshake
    timeout). Counts the answers: a session created, refused (over the cap), anything else."""
    seen = {"created": 0, "refused": 0, "other": {}}
    s, buf = None, b""
    for i in range(n):
        if a.proto == "bosh":
            body = bosh_body(a.domain).replace(b"rid='1'", b"rid='%d'" % (1000 + i))
            req = post_head("/http-bind", len(body)) + body
        else:
            req = post_head("/xmpp/000/hostile%d_%d/xhr" % (w, i), 0, "application/json")
        try:
            if s is None:
                s, buf = sock(w), b""
                s.settimeout(15)
                s.connect(a.target)
            status, body, buf = http_exchange(s, req, buf)
        except OSError as e:
            seen["other"][str(e)] = seen["other"].get(str(e), 0) + 1
            if s:
                rst_close(s)
            s = None
            continue
        if b"terminate" in body or body.startswith(b"c["):
            seen["refused"] += 1
            seen.setdefault("refusal", body[:100].decode("utf-8", "replace"))
        elif b"sid=" in body or body.startswith(b"o"):
            seen["created"] += 1
        else:
            key = "%s: %s" % (status.decode("latin-1"), body[:60].decode("utf-8", "replace"))
            seen["other"][key] = seen["other"].get(key, 0) + 1
    ready.set()
    # Held while the well-behaved client runs: the sessions live in the gateway anyway.
    time.sleep(a.secs)
    if s:
        s.close()
    q.put(seen)


ATTACKS = {
    "none": w_none,
    "disallowed": w_disallowed,
    "idle": w_idle,
    "slowloris": w_slowloris,
    "oversized": w_oversized,
    "garbage": w_garbage,
    "halfopen": w_halfopen,
    "relay": w_relay,
    "flood": w_flood,
    "smuggle": w_smuggle,
    "sessions": w_sessions,
}


def merge(parts):
    """Sums the workers' numbers and dicts; keeps the first of anything else."""
    out = {}
    for p in parts:
        for k, v in p.items():
            if k not in out:
                out[k] = v
            elif k in ("last_close_s", "most_sent_before_close"):
                if v is not None:
                    out[k] = max(out[k] or 0, v)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] += v
            elif isinstance(v, dict) and k != "shapes":
                for kk, vv in v.items():
                    out[k][kk] = out[k].get(kk, 0) + vv
    return out


def http_client(target, seconds, proto="http"):
    """The well-behaved HTTP client: keep-alive requests (CLIENT_REQUESTS[proto]), one
    after another, for `seconds`; prints the round trips' p50/p99 like hold_sessions does."""
    ip, port = target.rsplit(":", 1)
    s = socket.create_connection((ip, int(port)), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = CLIENT_REQUESTS[proto]
    rtt, buf, fails = [], b"", 0
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        try:
            s.sendall(req)
            while True:
                i = buf.find(b"\r\n\r\n")
                if i >= 0:
                    head = buf[:i].lower()
                    n = 0
                    for line in head.split(b"\r\n"):
                        if line.startswith(b"content-length:"):
                            n = int(line.split(b":")[1])
                    if len(buf) >= i + 4 + n:
                        buf = buf[i + 4 + n :]
                        break
                d = s.recv(65536)
                if not d:
                    raise OSError("closed")
                buf += d
        except OSError:
            fails += 1
            s.close()
            s = socket.create_connection((ip, int(port)), timeout=5)
            buf = b""
            continue
        rtt.append(time.perf_counter() - t)
    print_rtts("pingpong", "round trips", rtt, fails)


def print_rtts(what, unit, rtt, fails):
    """The times' p50/p90/p99 in the line hold_sessions prints (hostile.sh reads p99)."""
    rtt.sort()
    if not rtt:
        print("%s: 0 %s (%d failed)" % (what, unit, fails))
        return
    q = lambda f: rtt[round((len(rtt) - 1) * f)] * 1e6
    print("%s: %d %s, p50 %.1f us, p90 %.1f us, p99 %.1f us (%d failed)" % (what, len(rtt), unit, q(0.5), q(0.9), q(0.99), fails))


def proxy_client(proto, proxy, origin, seconds):
    """The well-behaved proxy client: a new connection through the proxy to the echo
    origin, 32 bytes sent and their echo read, closed; again for `seconds`. Prints the
    iterations' p50/p99 (connect, handshake and echo) like hold_sessions does."""
    ip, port = proxy.rsplit(":", 1)
    oip, oport = origin.rsplit(":", 1)
    msg = b"0123456789abcdef0123456789abcdef"
    rtt, fails = [], 0
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        try:
            s = socket.create_connection((ip, int(port)), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            ok, reply = proxy_open(s, proto, (oip, int(oport)))
            if ok is False:
                raise OSError("refused: %s" % (proxy_summary(proto, reply) or reply))
            s.sendall(msg)
            if recv_exact(s, len(msg)) != msg:
                raise OSError("no echo")
            rst_close(s)
        except OSError as e:
            fails += 1
            if fails == 1:
                print("first failure: %s" % e)
            time.sleep(0.01)
            continue
        rtt.append(time.perf_counter() - t)
    print_rtts("connect-echo", "connections", rtt, fails)


def echo_origin(port):
    """The proxies' origin: echoes every connection's bytes back on 127.0.0.1:port,
    reading no more from a connection while its echo waits to be written (so that a
    client that does not read costs the origin a socket buffer, not memory)."""
    import asyncio

    class Echo(asyncio.Protocol):
        def connection_made(self, t):
            self.t = t

        def data_received(self, d):
            self.t.write(d)

        def pause_writing(self):
            self.t.pause_reading()

        def resume_writing(self):
            self.t.resume_reading()

    async def run():
        server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", port, backlog=4096)
        print("echo on 127.0.0.1:%d" % port, flush=True)
        await server.serve_forever()

    asyncio.run(run())


def describe(r):
    """What the attack saw, in a few words for the table."""
    x = r["result"]
    a = r["attack"]
    if a == "none":
        return "no attack: the client measured twice, the noise floor of the ratio"
    if a in ("idle", "slowloris"):
        s = "%d open" % x.get("opened", 0)
        if x.get("connect_errors"):
            s += ", connect errors %s" % x["connect_errors"]
        s += "; %d closed by the server" % x.get("closed_by_server", 0)
        if x.get("last_close_s") is not None:
            s += " (last at %.1f s)" % x["last_close_s"]
        return s
    if a in ("oversized", "garbage"):
        replies = dict(x.get("replies", {}))
        # Connects that failed (a ban drops the source's SYNs) are said apart from replies.
        failed = {k: v for k, v in replies.items() if k.startswith("no connection")}
        for k in failed:
            del replies[k]
        top = sorted(replies.items(), key=lambda kv: -kv[1])[:2]
        said = ", ".join("%s (%d)" % kv for kv in top) or "nothing"
        s = "%d tries, %d closed by the server; replies: %s" % (x.get("tries", 0), x.get("closed_by_server", 0), said)
        for k, v in sorted(failed.items()):
            s += "; %s (%d)" % (k, v)
        if a == "oversized":
            s += "; at most %d KiB sent before the close" % (x.get("most_sent_before_close", 0) // 1024)
        return s
    if a == "halfopen":
        # A server's FIN queued behind data the non-reader never reads does not arrive:
        # the server's own count of slow readers (its log line) is the authority there.
        return "%d non-readers: %d seen closed (%.1f MiB written to them); %d SHUT_WR: %d closed by the server" % (
            x.get("readers", 0), x.get("readers_cut_by_server", 0), x.get("bytes_written", 0) / 1048576,
            x.get("shut", 0), x.get("shut_closed_by_server", 0))
    if a == "relay":
        return "a control: %d clients that read, %.1f MiB sent through, %.1f MiB of echo read" % (
            x.get("readers", 0), x.get("bytes_written", 0) / 1048576, x.get("bytes_read", 0) / 1048576)
    if a == "flood":
        return "%d connects (%d/s); errors %s" % (x.get("connects", 0), x.get("per_s", 0), x.get("connect_errors") or "none")
    if a == "disallowed":
        return "; ".join("%s: %s" % kv for kv in x.get("shapes", {}).items())
    if a == "sessions":
        other = "; ".join("%s (%d)" % kv for kv in sorted(x.get("other", {}).items())[:3])
        refusal = " (%s)" % x["refusal"] if x.get("refusal") else ""
        return "%d sessions created, %d refused%s%s" % (x.get("created", 0), x.get("refused", 0), refusal,
                                                         "; " + other if other else "")
    if a == "smuggle":
        parts = []
        for k, v in x.get("shapes", {}).items():
            resp = ",".join(l.split(" ", 2)[1] for l in v["responses"]) or "none"
            parts.append("%s: %s%s" % (k, resp, ", closed" if v["closed"] else ""))
        return "; ".join(parts)
    return json.dumps(x)


def row(server, path, base, during, logline):
    """One markdown table row from an attack's JSON and the client's p99s."""
    with open(path) as f:
        r = json.loads(f.read().strip().splitlines()[-1])
    mib = lambda k: "%.1f" % (k / 1024)
    try:
        ratio = "%.2f" % (float(during) / float(base))
    except (ValueError, ZeroDivisionError):
        ratio = "-"
    pc = r["per_conn_kib"]
    print("| %s | %s | %s / %s / %s | %s | %s / %s (%s) | %s | %s | %s |" % (
        server, r["attack"], mib(r["rss_before_kib"]), mib(r["rss_peak_kib"]), mib(r["rss_after_kib"]),
        "-" if pc is None else "%.1f" % pc, base, during, ratio,
        "yes" if r["server_alive"] else "**no**", describe(r).replace("|", "/"), logline.replace("|", "/")))


def verdict(path):
    """The run's verdict from its table rows (bench/hostile.sh keeps them in PATH): the
    rows whose client p99 stayed within 2x of its p99 without the attack, the noise floor
    of that ratio (the `none` rows: the client measured twice with no attack between),
    the servers that died, and the rows after which memory did not come back within
    16 MiB of its level before the attack.

    Two kinds of row are controls, not attacks: `none`, and the proxies' `relay` (the
    upload halfopen's non-readers send, from clients that read). A proxy relays an
    upload whether or not its client reads the return path, so a proxy's halfopen row
    over 2x is within its bounds when it cost the client no more than its relay row did:
    the half-open state added nothing to the traffic's own cost."""
    parsed = []
    try:
        lines = open(path).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or cells[0] == "server" or cells[0].startswith("---"):
            continue  # not a row, or the table's head (a whole log may be given)
        m = re.search(r"\(([0-9.]+)\)", cells[4])
        parsed.append((line, cells, float(m.group(1)) if m else None))
    relay = {c[0]: r for _, c, r in parsed if c[1] == "relay" and r is not None}
    rows, floor, over, dead, kept, by_traffic = 0, [], [], [], [], []
    for line, cells, ratio in parsed:
        server, attack, rss, alive = cells[0], cells[1], cells[2], cells[5]
        if not rss:
            # Not an attack: a panic found in the log, the barrier's real shard after them.
            if "panicked" in line or "failed" in line:
                dead.append("%s: %s" % (server, attack.strip("*")))
            continue
        if attack == "none":
            if ratio is not None:
                floor.append((ratio, server))
            continue
        if attack == "relay":
            if alive != "yes":
                dead.append("%s %s" % (server, attack))
            continue
        rows += 1
        if alive != "yes":
            dead.append("%s %s" % (server, attack))
        if ratio is None or ratio > 2:
            control = relay.get(server) if attack == "halfopen" else None
            if ratio is not None and control is not None and ratio <= control:
                by_traffic.append("%s halfopen %.2f (relay %.2f)" % (server, ratio, control))
            else:
                over.append("%s %s %s" % (server, attack, "no p99" if ratio is None else "%.2f" % ratio))
        mib = [float(x) for x in re.findall(r"[0-9.]+", rss)[:3]]
        if len(mib) == 3 and mib[2] - mib[0] > 16:
            kept.append("%s %s (%.1f -> %.1f MiB)" % (server, attack, mib[0], mib[2]))
    print()
    print("Verdict: %d of %d attack rows within their bounds (2x of the client's p99 without the attack); %s." % (
        rows - len(over), rows, "every server alive" if not dead else "FAILED: " + ", ".join(dead)))
    if floor:
        lo, hi = min(floor), max(floor)
        print("Noise floor, the same ratio with no attack (none): %.2f (%s) to %.2f (%s) over %d servers%s." % (
            lo[0], lo[1], hi[0], hi[1], len(floor),
            "; over 2x itself, so rows near 2x on that server cannot be judged" if hi[0] > 2 else ""))
    if relay:
        print("The proxies' upload from clients that read (relay, a control): %s." % ", ".join(
            "%s %.2f" % kv for kv in relay.items()))
    if by_traffic:
        print("Over 2x but within the same upload's cost from readers: " + "; ".join(by_traffic) + ".")
    if over:
        print("Over 2x: " + "; ".join(over) + ".")
        # A row near 2x on a machine this noisy is first measured again, alone.
        first = over[0].split()
        print("To measure one again alone: ATTACKS=\"none %s\" ATTACK_CPUS=1 taskset -c 0 bash bench/hostile.sh %s" % (
            first[1], first[0]))
    if kept:
        print("Memory not back within 16 MiB of its level before the attack: " + "; ".join(kept) + ".")


def attacker(w, a, n, ready, q):
    """Attacking process w: a.attack from a.net's sources (set here, whatever the start
    method of multiprocessing)."""
    global SOURCE_NET
    SOURCE_NET = a.net
    ATTACKS[a.attack](w, a, n, ready, q)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "row":
        return row(*sys.argv[2:7])
    if len(sys.argv) > 1 and sys.argv[1] == "verdict":
        return verdict(sys.argv[2])
    if len(sys.argv) > 1 and sys.argv[1] == "http-client":
        return http_client(sys.argv[2], float(sys.argv[3]), *sys.argv[4:5])
    if len(sys.argv) > 1 and sys.argv[1] == "proxy-client":
        return proxy_client(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    if len(sys.argv) > 1 and sys.argv[1] == "echo":
        return echo_origin(int(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "ws-client":
        return ws_client(sys.argv[2], float(sys.argv[3]))
    if len(sys.argv) > 1 and sys.argv[1] == "h2-client":
        return h2_client(sys.argv[2], float(sys.argv[3]))
    if len(sys.argv) > 1 and sys.argv[1] == "line-client":
        return line_client(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    if len(sys.argv) > 1 and sys.argv[1] == "x2x-client":
        return x2x_client(sys.argv[2], float(sys.argv[3]))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("attack", choices=sorted(ATTACKS))
    p.add_argument("--target", required=True)
    p.add_argument("--pids", required=True)
    p.add_argument("--proto", choices=["xmpp", "ws", "http"] + sorted(MORE_OPENINGS) + list(PROXIES) + sorted(LINE_OPENINGS), default="xmpp")
    p.add_argument("--origin", default="127.0.0.1:9", help="the echo origin a proxy connects to")
    p.add_argument("--conns", type=int, default=1000)
    p.add_argument("--secs", type=float, default=10)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--ready")
    p.add_argument("--domain", default="wirebench.test")
    p.add_argument("--first-user", type=int, default=90001)
    p.add_argument("--max-bytes", type=int, default=8 << 20)
    p.add_argument("--settle", type=float, default=5, help="seconds to wait for memory to come back")
    p.add_argument("--net", type=int, default=0, choices=range(256), metavar="0-255",
                   help="the attackers' sources are 127.NET.0.2-9")
    a = p.parse_args()
    ip, port = a.target.rsplit(":", 1)
    if not ip.startswith("127."):
        sys.exit("hostile.py: 127.0.0.0/8 targets only")
    a.target = (ip, int(port))
    oip, oport = a.origin.rsplit(":", 1)
    a.origin = (oip, int(oport))
    a.host = "%s:%s" % (ip, port)
    pids = [int(x) for x in a.pids.split(",")]
    per = max(1, a.conns // a.procs)
    if per > 15000:
        sys.exit("hostile.py: at most 15,000 sockets a process: raise --procs")

    time.sleep(0.5)
    before = rss_kib(pids)
    q = mp.Queue()
    events = [mp.Event() for _ in range(a.procs)]
    procs = [mp.Process(target=attacker, args=(w, a, per, events[w], q), daemon=True) for w in range(a.procs)]
    t0 = time.time()
    for pr in procs:
        pr.start()
    peak, signalled, parts = before, False, []
    hard_end = t0 + a.secs + 60
    while any(pr.is_alive() for pr in procs) and time.time() < hard_end:
        peak = max(peak, rss_kib(pids))
        if not signalled and all(e.is_set() for e in events):
            signalled = True
            if a.ready:
                open(a.ready, "w").close()
        while not q.empty():
            parts.append(q.get())
        time.sleep(0.1)
    while len(parts) < len(procs):
        try:
            parts.append(q.get(timeout=2))
        except Exception:
            break
    for pr in procs:
        if pr.is_alive():
            pr.kill()
        pr.join(1)
    if a.ready and not signalled:
        open(a.ready, "w").close()
    # Memory after: wait up to --settle seconds for it to come back near the baseline.
    end = time.time() + a.settle
    after = rss_kib(pids)
    while time.time() < end and after > before * 1.1 + 2048:
        time.sleep(0.25)
        after = rss_kib(pids)
    r = merge(parts)
    n = r.get("opened") or r.get("created") or (r.get("readers", 0) + r.get("shut", 0)) or None
    print(json.dumps({
        "attack": a.attack,
        "proto": a.proto,
        "secs": round(time.time() - t0, 1),
        "rss_before_kib": before,
        "rss_peak_kib": peak,
        "rss_after_kib": after,
        "per_conn_kib": round((peak - before) / n, 2) if n else None,
        "server_alive": alive(pids),
        "result": r,
    }))


if __name__ == "__main__":
    main()
