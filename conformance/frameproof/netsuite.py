"""Network conformance cases: `frameproof net --server HOST:PORT` tests a live echo
server (STD-ECHO-*, LF-ECHO-*); every case talks to 127.0.0.1/::1 only, with a
bounded count of frames and connections and a timeout on every read.

A case raises CheckFailure (expected vs actual) on a violation.
"""
from __future__ import annotations

import os
import random
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

from . import oracle
from .checks import CheckFailure
from .loadside import payload_for  # noqa: F401  (the contract's payload: one definition)
from .oracle import Codec, Frame

class SkipCase(Exception):
    pass


READ_TIMEOUT = float(os.environ.get("FRAMEPROOF_NET_TIMEOUT", "5"))


@dataclass
class NetTarget:
    host: str
    port: int
    codec: Codec
    pid: Optional[int] = None  # server process, for RSS checks
    max_payload: int = 0  # largest payload the server accepts (0 = the spec default)

    @property
    def limit(self):
        return min(self.max_payload or self.codec.DEFAULT_MAX, self.codec.capacity)

    @property
    def spec(self):
        return self.codec.spec


@dataclass
class NetCase:
    name: str
    requirements: List[str]
    description: str
    run: Callable  # run(target)
    #: a hostile peer (bad, abusive or abandoned input) with a healthy connection alongside and the
    #: server's RSS watched; conformance/tests/test_hostile_cases.py counts them per protocol
    hostile: bool = False


# ------------------------------------------------------------------ client helpers

class Conn:
    """A client connection that decodes replies with the oracle's framing."""

    def __init__(self, t: NetTarget, nodelay=True, handshake=True):
        self.t = t
        fam = socket.AF_INET6 if ":" in t.host else socket.AF_INET
        self.s = socket.socket(fam, socket.SOCK_STREAM)
        self.s.settimeout(READ_TIMEOUT)
        if nodelay:
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.s.connect((t.host, t.port))
        except OSError as e:
            raise CheckFailure(f"cannot connect to {t.host}:{t.port}: {e}")
        self.buf = b""
        self.eof = False
        self.codec = t.spec.net_client_codec(t.codec).with_limit(2 ** 31 - 1)
        if handshake:
            t.spec.net_handshake(self)

    def send(self, data: bytes):
        self.s.sendall(data)

    def frame(self, f: Frame) -> bytes:
        b = oracle.encode(self.codec, f)
        assert isinstance(b, bytes), b
        return b

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        self.s.settimeout(left)
        chunk = self.s.recv(1 << 20)
        if not chunk:
            self.eof = True
        self.buf += chunk

    def read_frames(self, n: int, timeout: float = READ_TIMEOUT, what="replies") -> List[Frame]:
        """Reads exactly n frames (fails on timeout, EOF or a malformed reply)."""
        out: List[Frame] = []
        deadline = time.monotonic() + timeout
        codec = self.codec
        while len(out) < n:
            res = oracle.decode(codec, self.buf)
            if res.frames:
                take = res.frames[: n - len(out)]
                used = 0
                if len(take) == len(res.frames):
                    used = res.consumed
                else:
                    used = len(b"".join(self.frame(f) for f in take))
                out += take
                self.buf = self.buf[used:]
                continue
            if res.error and not oracle.is_truncation(codec, res.error):
                raise CheckFailure(f"server sent a malformed frame ({res.error.requirement}): {self.buf[:24].hex(' ')}")
            if self.eof:
                raise CheckFailure(f"expected {n} {what}, got {len(out)} before the server closed the connection")
            try:
                self._fill(deadline)
            except socket.timeout:
                raise CheckFailure(f"expected {n} {what}, got {len(out)} within {timeout:g} s")
            except ConnectionResetError:
                raise CheckFailure(f"expected {n} {what}, got {len(out)} before the connection was reset")
        return out

    def expect_closed(self, timeout: float = READ_TIMEOUT, what=""):
        """The server must close (EOF or reset) within the timeout; no further frames."""
        deadline = time.monotonic() + timeout
        while True:
            if self.eof:
                break
            try:
                self._fill(deadline)
            except socket.timeout:
                raise CheckFailure(f"expected the server to close the connection{what}; still open after {timeout:g} s")
            except (ConnectionResetError, BrokenPipeError):
                return
        extra = [f for f in oracle.decode(self.codec, self.buf).frames if not self.t.spec.net_is_goodbye(f)]
        if extra:
            raise CheckFailure(f"expected no more replies{what}, got {len(extra)} (first {extra[0].short()})")

    def idle(self, seconds: float) -> bytes:
        """Reads whatever arrives in `seconds` (expects nothing, usually)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.eof:
            try:
                self._fill(deadline)
            except socket.timeout:
                break
            except ConnectionResetError:
                self.eof = True
        return self.buf

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def request(t: NetTarget, seq: int, payload: bytes) -> Frame:
    """The protocol's echo request carrying ``payload`` (``seq``: its id, where it has one)."""
    return t.spec.net_request(seq, payload)


def expected_reply(t: NetTarget, req: Frame) -> Frame:
    return t.spec.echo_reply(req)


def check_replies(t, reqs: List[Frame], got: List[Frame], ctx=""):
    for i, (rq, rp) in enumerate(zip(reqs, got)):
        exp = expected_reply(t, rq)
        if rp != exp:
            raise CheckFailure(f"{ctx}reply {i}:\n  expected {exp.short()}\n  actual   {rp.short()}")


def roundtrip(t: NetTarget, reqs: List[Frame], ctx="", conn=None):
    c = conn or Conn(t)
    try:
        c.send(b"".join(c.frame(r) for r in reqs))
        got = c.read_frames(len(reqs))
        check_replies(t, reqs, got, ctx)
    finally:
        if conn is None:
            c.close()


def healthy(t: NetTarget, ctx="after the hostile connection, a fresh connection: "):
    roundtrip(t, [request(t, 7, b"still-alive-%d" % i) for i in range(1, 4)], ctx)




def rss_kib(pid: Optional[int]) -> Optional[int]:
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Alongside:
    """A healthy connection kept open during a hostile case and checked at its end."""

    def __init__(self, t):
        self.t = t
        self.c = Conn(t)
        roundtrip(t, [request(t, 1, b"alongside-before")], "healthy connection before the hostile input: ", self.c)

    def check(self):
        try:
            roundtrip(self.t, [request(self.t, 2, b"alongside-after")],
                      "the healthy connection opened before the hostile input: ", self.c)
        finally:
            self.c.close()


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
    from .protocols import get
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
    "garbage_bytes": ("64 KiB of random bytes: the server stays up and bounded", c_garbage),
    "stops_mid_frame": ("Connections closed or reset mid-frame do not disturb others", c_stops_mid_frame),
    "half_close_gets_replies": ("After a half-close, all complete frames are answered, then the server closes",
                                c_half_close),
    "tcp_nodelay": ("Back-to-back small replies are not delayed by Nagle (SHOULD)", c_nodelay),
    "long_connection_100k": ("100,000 verified requests on one connection, 64 in flight", c_long_connection),
    "connection_churn_2000": ("2,000 connections one after another, one request each", c_connection_churn),
}


HOSTILE_GENERIC = {"oversize_closes_connection", "garbage_bytes", "stops_mid_frame"}


def generic(name: str, requirements: List[str]) -> NetCase:
    """The shared case ``name`` with the requirement IDs of the protocol that lists it."""
    description, run = GENERIC[name]
    return NetCase(name, requirements, description, run, hostile=name in HOSTILE_GENERIC)


# ------------------------------------------------------------------ hostile peers, one connection at a time
#
# Each case below runs one hostile peer (or a burst of them) with a healthy connection alongside
# (opened before, checked after), then a fresh connection, and the server's RSS watched. The
# requirements a case checks are *roles* that each protocol's net.py maps to its own IDs
# (``hostile_cases(ROLES)``): close: the server closes a connection on a decoding error and serves
# every other one; lim: the frame limit at header time; mem: per-connection memory bounded;
# trunc: a stream ending inside a frame; stop: nothing after an error; split: any split of the
# stream; half: replies to complete frames on half-close; order: replies in request order; RES-n:
# the resource limits (the protocol's prefix + "-RES-n").

RSS_BOUND_KIB = 64 * 1024
RSS_SETTLE_S = 2.0


def rss_settled(t, before, ctx, rss_bound_kib):
    """Fails if the server's RSS is more than ``rss_bound_kib`` above ``before``, and still is
    RSS_SETTLE_S later: a runtime with a garbage collector may return a closed connection's buffers a
    moment after the close (in a collection on another thread); memory held after that is kept."""
    after = rss_kib(t.pid)
    if before is None or after is None:
        return
    deadline = time.monotonic() + RSS_SETTLE_S
    while after - before > rss_bound_kib and time.monotonic() < deadline:
        time.sleep(0.05)
        after = rss_kib(t.pid) or after
    if after - before > rss_bound_kib:
        raise CheckFailure(f"{ctx}: server RSS grew from {before} KiB to {after} KiB and was still more than "
                           f"{rss_bound_kib} KiB above its start {RSS_SETTLE_S:g} s later")


def watched(t, body, ctx, rss_bound_kib=RSS_BOUND_KIB):
    """Runs ``body()`` with a healthy connection alongside, then a fresh one; RSS bounded."""
    side = Alongside(t)
    before = rss_kib(t.pid)
    body()
    side.check()
    healthy(t, f"after {ctx}, a fresh connection: ")
    rss_settled(t, before, ctx, rss_bound_kib)


def _oversize(t):
    if t.limit >= t.codec.capacity:
        raise SkipCase("the profile's length field cannot exceed the server's limit")
    return t.spec.oversize_header(t.codec, t.limit + 1)


def _rst(c):
    try:
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    except OSError:
        pass
    c.close()


def _quiet_send(c, data):
    try:
        c.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed first: fine


def h_oversize_capacity(t):
    cap = t.codec.capacity
    if t.limit >= cap:
        raise SkipCase("the profile's length field cannot exceed the server's limit")
    _hostile(t, lambda c: t.spec.oversize_header(t.codec, cap) + b"z" * 64, f"a header declaring {cap} bytes")


def h_oversize_byte_by_byte(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        try:
            for b in head:
                _quiet_send(c, bytes([b]))
                time.sleep(0.002)
            c.expect_closed(what=" after an oversize header written one byte at a time")
        finally:
            c.close()
    watched(t, body, "an oversize header written one byte at a time")


def h_oversize_after_requests(t):
    _hostile(t, lambda c: _oversize(t), "100 requests then an oversize header in one write", 100)


def h_requests_after_oversize(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        try:
            c.send(head + b"".join(c.frame(request(t, i + 1, b"after-the-error")) for i in range(10)))
            c.expect_closed(what=" (10 requests came after an oversize header in the same write: none may be answered)")
        finally:
            c.close()
    watched(t, body, "requests after an oversize header")


def h_write_after_close(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        try:
            c.send(head)
            c.expect_closed(what=" after an oversize header")
            for _ in range(16):
                _quiet_send(c, b"w" * 65536)
        finally:
            c.close()
    watched(t, body, "1 MiB written after the server closed")


def h_oversize_burst(t):
    head = _oversize(t)

    def body():
        conns = [Conn(t) for _ in range(32)]
        try:
            for c in conns:
                _quiet_send(c, head)
            for c in conns:
                c.expect_closed(what=" (32 connections sent an oversize header at once)")
        finally:
            for c in conns:
                c.close()
    watched(t, body, "32 oversize headers at once")


def _flood(t, byte, ctx):
    def body():
        c = Conn(t)
        try:
            for _ in range(4):
                _quiet_send(c, bytes([byte]) * 65536)
            c.idle(0.5)  # whatever it means, the server answers with well-formed frames or closes
            oracle_check_replies_wellformed(c)
        finally:
            _rst(c)
    watched(t, body, ctx)


def oracle_check_replies_wellformed(c):
    res = oracle.decode(c.codec, c.buf)
    if res.error and not oracle.is_truncation(c.codec, res.error):
        raise CheckFailure(f"the server sent a malformed frame ({res.error.requirement}): {c.buf[:24].hex(' ')}")


def h_zero_flood(t):
    _flood(t, 0x00, "256 KiB of zero bytes")


def h_ff_flood(t):
    _flood(t, 0xFF, "256 KiB of 0xFF bytes")


def h_garbage_8(t):
    def body():
        conns = []
        try:
            for k in range(8):
                rnd = random.Random(99 + k)
                c = Conn(t)
                conns.append(c)
                _quiet_send(c, bytes(rnd.getrandbits(8) for _ in range(65536)))
            for c in conns:
                c.idle(0.2)
                oracle_check_replies_wellformed(c)
        finally:
            for c in conns:
                _rst(c)
    watched(t, body, "8 connections of random bytes at once")


def h_reset_in_header(t):
    def body():
        for k in range(32):
            c = Conn(t)
            data = c.frame(request(t, 1, b"cut-in-the-header"))
            c.send(data[: 1 + k % 3])
            _rst(c)
        time.sleep(0.1)
    watched(t, body, "32 connections reset inside a header")


def h_reset_mid_large_frame(t):
    n = min(t.limit, 4 << 20)

    def body():
        for k in range(8):
            c = Conn(t)
            data = c.frame(request(t, 1, payload_for(k, n)))
            _quiet_send(c, data[: len(data) // 2])
            _rst(c)
        time.sleep(0.2)
    watched(t, body, f"8 connections reset halfway through a {n}-byte frame")


def h_reset_loop_maximal(t):
    """A frame one byte short of the largest, then a reset, five times: memory comes back each time."""
    n = t.limit

    def body():
        for k in range(5):
            c = Conn(t)
            data = c.frame(request(t, 1, payload_for(k, n)))
            _quiet_send(c, data[:-1])
            time.sleep(0.05)
            _rst(c)
        time.sleep(0.2)
    watched(t, body, "five maximal frames reset one byte short")


def h_half_close_mid_header(t):
    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, b"then-half-a-header-%d" % i) for i in range(5)]
            c.send(b"".join(c.frame(r) for r in reqs) + c.frame(request(t, 9, b"x"))[:2])
            c.s.shutdown(socket.SHUT_WR)
            check_replies(t, reqs, c.read_frames(len(reqs)), "half-close inside a header: ")
            c.expect_closed(what=" after a half-close inside a header")
        finally:
            c.close()
    watched(t, body, "a half-close inside a header")


def h_half_close_mid_payload(t):
    n = min(t.limit, 65536)

    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, b"then-half-a-payload-%d" % i) for i in range(5)]
            big = c.frame(request(t, 9, payload_for(3, n)))
            c.send(b"".join(c.frame(r) for r in reqs) + big[: len(big) - 7])
            c.s.shutdown(socket.SHUT_WR)
            check_replies(t, reqs, c.read_frames(len(reqs)), "half-close inside a payload: ")
            c.expect_closed(what=" after a half-close inside a payload")
        finally:
            c.close()
    watched(t, body, "a half-close inside a payload")


def h_half_close_at_once(t):
    def body():
        c = Conn(t)
        try:
            c.s.shutdown(socket.SHUT_WR)
            c.expect_closed(what=" after a half-close with no request")
        finally:
            c.close()
    watched(t, body, "a half-close before any request")


def h_stalled_maximal(t):
    stalled_maximal_frames(t)


def h_flood_without_reading(t):
    """20,000 requests written before reading a single reply: all come back, in order."""
    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, payload_for(i, 8 + i % 16)) for i in range(20000)]
            data = b"".join(c.frame(r) for r in reqs)
            th = threading.Thread(target=lambda: _quiet_send(c, data), daemon=True)
            th.start()
            got = c.read_frames(len(reqs), timeout=READ_TIMEOUT * 6)
            th.join(READ_TIMEOUT)
            check_replies(t, reqs, got, "20,000 requests written before any read: ")
        finally:
            c.close()
    watched(t, body, "20,000 requests written before any read")


def h_slow_reader(t):
    """200 requests of 16 KiB, the replies read 4 KiB at a time with pauses: none is lost."""
    n = min(t.limit, 16384)

    def body():
        c = Conn(t)
        try:
            c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            reqs = [request(t, i + 1, payload_for(i, n)) for i in range(200)]
            data = b"".join(c.frame(r) for r in reqs)
            th = threading.Thread(target=lambda: _quiet_send(c, data), daemon=True)
            th.start()
            got = []
            deadline = time.monotonic() + READ_TIMEOUT * 6
            dec = t.spec.reference.decoder(c.codec)
            while len(got) < len(reqs):
                if time.monotonic() > deadline:
                    raise CheckFailure(f"a slow reader got {len(got)} of {len(reqs)} replies before the deadline")
                c.s.settimeout(READ_TIMEOUT)
                chunk = c.s.recv(4096)
                if not chunk:
                    raise CheckFailure(f"a slow reader got {len(got)} of {len(reqs)} replies, then the server closed")
                got += dec.feed(chunk)
                time.sleep(0.0005)
            th.join(READ_TIMEOUT)
            check_replies(t, reqs, got, "replies read slowly: ")
        finally:
            c.close()
    watched(t, body, "a slow reader")


def h_never_reading_bounded(t):
    """A peer writes requests for 2 s and never reads: the server stops reading it (its output is
    bounded) and its RSS stays bounded; others are served meanwhile."""
    n = min(t.limit, 65536)

    def body():
        c = Conn(t)
        try:
            c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            batch = b"".join(c.frame(request(t, i + 1, payload_for(i, n))) for i in range(16))
            sent = 0
            end = time.monotonic() + 2.0
            c.s.settimeout(0.0)
            while time.monotonic() < end and sent < (256 << 20):
                try:
                    sent += c.s.send(batch)
                except (BlockingIOError, InterruptedError):
                    time.sleep(0.01)
                except OSError:
                    break  # closed (the write timeout may be short): fine
            c.s.settimeout(READ_TIMEOUT)
            healthy(t, f"while a peer that never reads has written {sent >> 20} MiB: ")
        finally:
            _rst(c)
    watched(t, body, "a peer that never reads")


def h_tiny_writes(t):
    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, b"tiny-%d" % i) for i in range(300)]
            for b in b"".join(c.frame(r) for r in reqs):
                c.send(bytes([b]))
            check_replies(t, reqs, c.read_frames(len(reqs)), "300 requests in one-byte writes: ")
        finally:
            c.close()
    watched(t, body, "300 requests written one byte per write, no pause")


def h_partial_frames_everywhere(t):
    """32 connections each stop at a different offset of a frame for 0.3 s, then finish it."""
    def body():
        conns = []
        try:
            for k in range(32):
                c = Conn(t)
                r = request(t, 1, payload_for(k, 100 + k))
                data = c.frame(r)
                cut = 1 + k % (len(data) - 1)
                c.send(data[:cut])
                conns.append((c, r, data, cut))
            time.sleep(0.3)
            for c, r, data, cut in conns:
                c.send(data[cut:])
            for c, r, _, _ in conns:
                check_replies(t, [r], c.read_frames(1), "a frame finished after 0.3 s: ")
        finally:
            for c, _, _, _ in conns:
                c.close()
    watched(t, body, "32 connections pausing mid-frame")


def h_connect_close_burst(t):
    def body():
        for k in range(200):
            c = Conn(t)
            if k % 2:
                _rst(c)
            else:
                c.close()
        time.sleep(0.1)
    watched(t, body, "200 connections opened and closed without a request")


def h_reset_before_reply(t):
    n = min(t.limit, 1 << 20)

    def body():
        for k in range(20):
            c = Conn(t)
            _quiet_send(c, c.frame(request(t, 1, payload_for(k, n))))
            _rst(c)
        time.sleep(0.2)
    watched(t, body, f"20 connections reset right after a {n}-byte request")


def h_close_with_unread_replies(t):
    def body():
        for k in range(10):
            c = Conn(t)
            _quiet_send(c, b"".join(c.frame(request(t, i + 1, payload_for(i, 1000))) for i in range(100)))
            c.close()
        time.sleep(0.2)
    watched(t, body, "10 connections closed with 100 replies unread")


def h_partial_churn(t):
    def body():
        for k in range(100):
            c = Conn(t)
            data = c.frame(request(t, 1, payload_for(k, 200)))
            _quiet_send(c, data[: 1 + k % (len(data) - 1)])
            c.close()
        time.sleep(0.1)
    watched(t, body, "100 connections closed mid-frame one after another")


def h_oversize_beside_pipeline(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        bad = Conn(t)
        try:
            reqs = [request(t, i + 1, payload_for(i, 40)) for i in range(1000)]
            c.send(b"".join(c.frame(r) for r in reqs[:500]))
            _quiet_send(bad, head)
            c.send(b"".join(c.frame(r) for r in reqs[500:]))
            check_replies(t, reqs, c.read_frames(len(reqs)), "a pipeline beside an oversize header: ")
            bad.expect_closed(what=" after an oversize header")
        finally:
            c.close()
            bad.close()
    watched(t, body, "an oversize header beside a 1,000-request pipeline")


def h_slow_header(t):
    """A header written one byte every 100 ms, then the payload: answered (a slow peer, within the
    frame timeout, is served)."""
    def body():
        c = Conn(t)
        try:
            r = request(t, 1, b"slow-header")
            data = c.frame(r)
            for b in data[:-1]:
                c.send(bytes([b]))
                time.sleep(0.1)
            c.send(data[-1:])
            check_replies(t, [r], c.read_frames(1), "a frame written one byte per 100 ms: ")
        finally:
            c.close()
    watched(t, body, "a frame written one byte every 100 ms")


# name -> (description, run, roles)
HOSTILE = {
    "oversize_capacity": ("A header declaring the largest length the framing can hold: closed at once",
                          h_oversize_capacity, ("close", "lim", "mem")),
    "oversize_byte_by_byte": ("An oversize header written one byte per write: closed after its last byte",
                              h_oversize_byte_by_byte, ("lim", "split")),
    "oversize_after_100_requests": ("100 requests then an oversize header in one write: 100 replies, then closed",
                                    h_oversize_after_requests, ("close", "order")),
    "requests_after_oversize": ("Requests after an oversize header in the same write are not answered",
                                h_requests_after_oversize, ("stop", "close")),
    "write_after_close": ("1 MiB written after the server closed on an oversize header: the server stays up",
                          h_write_after_close, ("close",)),
    "oversize_burst_32": ("32 connections send an oversize header at once: all closed, others served",
                          h_oversize_burst, ("close", "lim")),
    "oversize_beside_pipeline": ("An oversize header on one connection beside a 1,000-request pipeline on "
                                 "another", h_oversize_beside_pipeline, ("close", "order")),
    "zero_bytes_256kib": ("256 KiB of zero bytes: well-formed answers or a close, bounded memory", h_zero_flood,
                          ("mem",)),
    "ff_bytes_256kib": ("256 KiB of 0xFF bytes: well-formed answers or a close, bounded memory", h_ff_flood,
                        ("mem",)),
    "garbage_8_connections": ("8 connections of random bytes at once", h_garbage_8, ("mem", "close")),
    "reset_in_header": ("32 connections reset inside a header", h_reset_in_header, ("trunc", "close")),
    "reset_mid_large_frame": ("8 connections reset halfway through a large frame: memory released",
                              h_reset_mid_large_frame, ("mem", "RES-1")),
    "reset_loop_maximal": ("Five maximal frames reset one byte short: memory comes back each time",
                           h_reset_loop_maximal, ("mem", "RES-1")),
    "half_close_mid_header": ("Half-close inside a header: replies to the complete frames, then closed",
                              h_half_close_mid_header, ("half", "trunc")),
    "half_close_mid_payload": ("Half-close inside a payload: replies to the complete frames, then closed",
                               h_half_close_mid_payload, ("half", "trunc")),
    "half_close_at_once": ("Half-close before any request: the server closes, sends nothing",
                           h_half_close_at_once, ("half",)),
    "stalled_maximal_frames_32": ("32 connections hold unfinished frames of the largest declarable size",
                                  h_stalled_maximal, ("mem", "RES-2")),
    "flood_without_reading": ("20,000 requests written before any read: every reply, in order",
                              h_flood_without_reading, ("order", "RES-5")),
    "slow_reader": ("200 requests of 16 KiB, replies read 4 KiB at a time: none lost", h_slow_reader,
                    ("order", "RES-5")),
    "never_reading_bounded": ("A peer writes for 2 s and never reads: bounded output and RSS, others served",
                              h_never_reading_bounded, ("RES-5", "RES-1")),
    "tiny_writes_300": ("300 requests in one-byte writes with no pause", h_tiny_writes, ("split",)),
    "partial_frames_32_connections": ("32 connections stop at different offsets of a frame, then finish it",
                                      h_partial_frames_everywhere, ("split", "RES-2")),
    "connect_close_burst_200": ("200 connections opened and closed (half reset) without a request",
                                h_connect_close_burst, ("close",)),
    "reset_before_reply": ("20 connections reset right after a large request, before its reply",
                           h_reset_before_reply, ("close",)),
    "close_with_unread_replies": ("10 connections closed with 100 replies unread", h_close_with_unread_replies,
                                  ("close",)),
    "partial_churn_100": ("100 connections closed mid-frame one after another", h_partial_churn,
                          ("trunc", "close")),
    "slow_header": ("A frame written one byte every 100 ms is answered", h_slow_header, ("split", "RES-4")),
}


def hostile_cases(roles: dict) -> List[NetCase]:
    """The shared hostile cases with the protocol's requirement IDs: ``roles`` maps each role
    (close, lim, mem, trunc, stop, split, half, order) to an ID, and ``prefix`` to the ID prefix
    for the RES-n roles."""
    out = []
    for name, (description, run, rs) in HOSTILE.items():
        reqs = []
        for r in rs:
            rid = f"{roles['prefix']}-{r}" if r.startswith("RES-") else roles[r]
            if rid not in reqs:
                reqs.append(rid)
        out.append(NetCase(name, reqs, description, run, hostile=True))
    return out
