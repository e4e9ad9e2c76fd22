"""The generic network cases every protocol runs with its own requirement IDs (one frame,
pipelining, byte-by-byte writes, splits at every offset, many connections, oversize, garbage,
half-close, ...), and the protocol's list of cases."""
from __future__ import annotations

import random
import socket
import threading
import time
from typing import List

from ..checks import CheckFailure
from ..loadside import payload_for
from .conn import Alongside, Conn, check_replies, expected_reply, healthy, request, roundtrip, rss_kib
from .conn import rss_settled, watched
from .target import NetCase, READ_TIMEOUT, SkipCase


# ------------------------------------------------------------------ cases

def c_one(t):
    roundtrip(t, [request(t, 1, b"hello")])
    roundtrip(t, [request(t, 1, b"")], "empty payload: ")


def c_pipelined(t):
    reqs = [request(t, i + 1, payload_for(i, i % 50)) for i in range(200)]
    roundtrip(t, reqs, "200 requests in one write: ")


def c_dribble(t):
    c = Conn(t)
    try:
        reqs = [request(t, 5, b"dribbled-one-byte-at-a-time"), request(t, 6, b"x" * min(300, t.limit))]
        data = b"".join(c.frame(r) for r in reqs)
        for b in data:
            c.send(bytes([b]))
            time.sleep(0.0005)
        check_replies(t, reqs, c.read_frames(2))
    finally:
        c.close()


def c_split_every_offset(t):
    c = Conn(t)
    try:
        r = request(t, 9, b"split-me-at-every-offset")
        data = c.frame(r)
        reqs = []
        for k in range(1, len(data)):
            c.send(data[:k])
            time.sleep(0.002)
            c.send(data[k:])
            reqs.append(r)
        got = c.read_frames(len(reqs))
        check_replies(t, reqs, got, "frame split in two writes at every offset: ")
    finally:
        c.close()


def c_largest(t):
    n = t.limit
    r = request(t, 3, payload_for(n, n))
    roundtrip(t, [r, request(t, 4, b"after-largest")], f"largest allowed payload ({n} bytes): ")


def c_many_connections(t, n=64, per=20):
    errors = []

    def worker(k):
        try:
            reqs = [request(t, i + 1, b"conn%03d-req%03d" % (k, i)) for i in range(per)]
            roundtrip(t, reqs, f"connection {k}: ")
        except Exception as e:  # collected and reported below
            errors.append(str(e))

    ths = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(READ_TIMEOUT * 3)
    if errors:
        raise CheckFailure(f"{len(errors)} of {n} concurrent connections failed; first: {errors[0]}")


def c_order_distinct(t):
    c = Conn(t)
    try:
        reqs = [request(t, 0, b"order-%04d" % i) for i in range(256)]
        c.send(b"".join(c.frame(r) for r in reqs))
        got = c.read_frames(len(reqs))
        for i, (rq, rp) in enumerate(zip(reqs, got)):
            if rp.payload != rq.payload:
                j = next((k for k, r in enumerate(reqs) if r.payload == rp.payload), None)
                raise CheckFailure(f"reply {i} carries the payload of request {j} (expected request {i}'s): "
                                   f"replies must come back in request order (FIFO), not newest-first")
    finally:
        c.close()


def _hostile(t, build, ctx, expect_replies=1, rss_bound_kib=64 * 1024):
    """Good request(s), then hostile bytes: the replies to the good requests arrive, then the server
    closes this connection; a connection opened before and a fresh one keep working; RSS bounded."""
    side = Alongside(t)
    before = rss_kib(t.pid)
    c = Conn(t)
    try:
        good = [request(t, 1 + i, b"good-before-%d" % i) for i in range(expect_replies)]
        c.send(b"".join(c.frame(g) for g in good) + build(c))
        check_replies(t, good, c.read_frames(len(good)), f"{ctx}: frames before the bad one: ")
        c.expect_closed(what=f" after {ctx}")
    finally:
        c.close()
    side.check()
    healthy(t)
    rss_settled(t, before, ctx, rss_bound_kib)


def c_garbage(t):
    rnd = random.Random(1234)
    junk = bytes(rnd.getrandbits(8) for _ in range(65536))
    side = Alongside(t)
    before = rss_kib(t.pid)
    c = Conn(t)
    try:
        try:
            c.send(junk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed on the first bad header: fine
        # garbage may be decoded as frames (there is no magic); the server must either close or keep
        # going, but whatever it sends back must be well-formed, and it must stay up
        try:
            c.idle(1.0)
        except CheckFailure:
            raise
    finally:
        c.close()
    side.check()
    healthy(t)
    after = rss_kib(t.pid)
    if before is not None and after is not None and after - before > 64 * 1024:
        raise CheckFailure(f"server RSS grew from {before} KiB to {after} KiB after 64 KiB of garbage")


def c_stops_mid_frame(t):
    watched(t, lambda: _stops_mid_frame(t), "connections that stopped mid-frame")


def _stops_mid_frame(t):
    for cut in (1, 3, 6):
        c = Conn(t)
        data = c.frame(request(t, 1, b"never-finished-frame"))
        c.send(data[:cut])
        c.close()
    c = Conn(t)
    data = c.frame(request(t, 1, b"reset-mid-frame"))
    c.send(data[:5])
    c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    c.close()  # RST
    time.sleep(0.1)


def c_half_close(t):
    c = Conn(t)
    try:
        reqs = [request(t, i + 1, b"before-half-close-%d" % i) for i in range(10)]
        c.send(b"".join(c.frame(r) for r in reqs) + c.frame(request(t, 11, b"partial"))[:3])
        c.s.shutdown(socket.SHUT_WR)
        check_replies(t, reqs, c.read_frames(len(reqs)), "after half-close: ")
        c.expect_closed(what=" after half-close")
    finally:
        c.close()


def c_nodelay(t):
    """SHOULD: with Nagle on, the second of two small replies written back to back waits for the
    client's delayed ACK (~40 ms on Linux). Measure several rounds; fail only if most rounds stall."""
    c = Conn(t)
    try:
        stalls = 0
        rounds = 8
        for i in range(rounds):
            c.send(c.frame(request(t, 1, b"a")))
            c.read_frames(1)
            time.sleep(0.05)
            c.send(c.frame(request(t, 2, b"b" * 10)))
            time.sleep(0.002)
            t0 = time.monotonic()
            c.send(c.frame(request(t, 3, b"c" * 10)))
            c.read_frames(2)
            if time.monotonic() - t0 > 0.030:
                stalls += 1
        if stalls > rounds // 2:
            raise CheckFailure(f"{stalls} of {rounds} back-to-back replies were delayed by more than 30 ms "
                               "(Nagle + delayed ACK: set TCP_NODELAY)")
    finally:
        c.close()


def oversize(t):
    """A header declaring one byte more than the server allows (skipped where the framing cannot)."""
    if t.limit >= t.codec.capacity:
        raise SkipCase("the profile's length field cannot exceed the server's limit")
    _hostile(t, lambda c: t.spec.oversize_header(t.codec, t.limit + 1) + b"x" * 16, "a header declaring max+1 bytes")


def oversize_whole(t):
    """A whole frame one byte over the limit, its payload included, in one write after answered requests:
    a server whose fast path (frames answered where they lie in the read buffer) checks the limit only on
    an unfinished frame would echo it. The server must close without echoing it; others keep working."""
    if t.limit >= t.codec.capacity:
        raise SkipCase("the profile's length field cannot exceed the server's limit")
    side = Alongside(t)
    c = Conn(t)
    try:
        good = [request(t, 1 + i, b"good-before-%d" % i) for i in range(3)]
        c.send(b"".join(c.frame(g) for g in good))
        check_replies(t, good, c.read_frames(len(good)), "requests before the whole oversize frame: ")
        n = t.limit + 1
        _quiet_send_all(c, t.spec.oversize_whole_frame(t.codec, n))
        c.expect_closed(what=f" after a whole frame of {n} bytes (the limit + 1) in one write")
    finally:
        c.close()
    side.check()
    healthy(t)


def _quiet_send_all(c, data):
    try:
        c.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed first: fine


def stalled_maximal_frames(t, count=32):
    """Many connections each hold an unfinished frame of the largest size the framing can declare:
    the server must not grow beyond those buffers and must keep serving."""
    side = Alongside(t)
    before = rss_kib(t.pid)
    conns = []
    try:
        for _ in range(count):
            c = Conn(t)
            c.send(t.spec.oversize_header(t.codec, t.codec.capacity) + b"p" * 100)
            conns.append(c)
        time.sleep(0.3)
        healthy(t, f"while {count} connections hold partial maximum-size frames: ")
    finally:
        for c in conns:
            c.close()
    side.check()
    after = rss_kib(t.pid)
    if before is not None and after is not None and after - before > 64 * 1024:
        raise CheckFailure(f"server RSS grew from {before} KiB to {after} KiB with {count} stalled frames")


def hostile(t, data: bytes, ctx: str, expect_replies: int = 1):
    """``data`` breaks the protocol: earlier replies arrive, this connection closes, others work."""
    _hostile(t, lambda c: data, ctx, expect_replies)


def cases(protocol: str) -> List[NetCase]:
    from ..protocols import get
    return get(protocol).net_cases()


def requirements_for(case: NetCase, protocol: str) -> List[str]:
    return list(case.requirements)


def c_long_connection(t, total=100_000, window=64):
    """``total`` verified requests on one connection, ``window`` in flight: state that grows with
    a connection (buffer offsets, counters, sequence numbers wrapping hundreds of times) is
    exercised. Encoded and decoded with the protocol's Python reference codec (fast enough)."""
    ref = t.spec.reference
    c = Conn(t)
    codec = c.codec
    dec = ref.decoder(codec)
    sent = got = 0
    expected = []
    try:
        deadline = time.monotonic() + max(60.0, READ_TIMEOUT * 12)
        while got < total:
            if time.monotonic() > deadline:
                raise CheckFailure(f"expected {total} replies on one connection, got {got} before the deadline")
            batch = []
            while sent < total and sent - got < window:
                req = request(t, (sent + 1) & 0xFF, payload_for(sent, 8 + sent % 24))
                expected.append(expected_reply(t, req))
                batch.append(ref.encode(codec, req))
                sent += 1
            if batch:
                c.send(b"".join(batch))
            c.s.settimeout(READ_TIMEOUT)
            try:
                data = c.s.recv(1 << 20)
            except socket.timeout:
                raise CheckFailure(f"reply {got} of {total} on one connection:\n  expected it within {READ_TIMEOUT:g} s\n"
                                   f"  actual   nothing ({sent - got} requests in flight)")
            if not data:
                raise CheckFailure(f"reply {got} of {total} on one connection:\n  expected it\n"
                                   f"  actual   the server closed the connection")
            for f in dec.feed(data):
                exp = expected[got]
                if f != exp:
                    raise CheckFailure(f"reply {got} of {total} on one connection:\n  expected {exp.short()}\n"
                                       f"  actual   {f.short()}")
                got += 1
    finally:
        c.close()


def c_connection_churn(t, count=2000):
    """``count`` connections one after another, each one request and a close."""
    for i in range(count):
        roundtrip(t, [request(t, 1, payload_for(i, 12))], f"connection {i} of {count} (one after another): ")


# The cases every echo protocol shares: name -> (description, run). A protocol's net.py lists them
# with its own requirement IDs through ``generic``, in the order it wants them.
GENERIC = {
    "one_request_one_reply": ("One request, one reply; an empty payload too", c_one),
    "pipelined_one_write": ("200 requests in one write are answered in order", c_pipelined),
    "dribbled_byte_by_byte": ("Frames written one byte per write", c_dribble),
    "split_at_every_offset": ("A frame split in two writes at every offset", c_split_every_offset),
    "largest_allowed_frame": ("The largest payload the server allows", c_largest),
    "many_connections": ("64 concurrent connections each check their own replies", c_many_connections),
    "fifo_order": ("256 pipelined distinct payloads come back in order (FIFO, not newest-first)", c_order_distinct),
    "oversize_closes_connection": ("A header over the limit: earlier replies arrive, this connection closes, "
                                   "others keep working", oversize),
    "oversize_whole_frame": ("A whole frame of the limit + 1 bytes, payload included, in one write: closed, "
                             "never echoed", oversize_whole),
    "garbage_bytes": ("64 KiB of random bytes: the server stays up and bounded", c_garbage),
    "stops_mid_frame": ("Connections closed or reset mid-frame do not disturb others", c_stops_mid_frame),
    "half_close_gets_replies": ("After a half-close, all complete frames are answered, then the server closes",
                                c_half_close),
    "tcp_nodelay": ("Back-to-back small replies are not delayed by Nagle (SHOULD)", c_nodelay),
    "long_connection_100k": ("100,000 verified requests on one connection, 64 in flight", c_long_connection),
    "connection_churn_2000": ("2,000 connections one after another, one request each", c_connection_churn),
}


HOSTILE_GENERIC = {"oversize_closes_connection", "oversize_whole_frame", "garbage_bytes", "stops_mid_frame"}


def generic(name: str, requirements: List[str]) -> NetCase:
    """The shared case ``name`` with the requirement IDs of the protocol that lists it."""
    description, run = GENERIC[name]
    return NetCase(name, requirements, description, run, hostile=name in HOSTILE_GENERIC)
