"""Client helpers of the network cases: one connection to the server under test (encode, send,
receive, check), round trips, the healthy-connection check, the server's RSS."""
from __future__ import annotations

import socket
import time
from typing import List, Optional

from .. import oracle
from ..checks import CheckFailure
from ..oracle import Frame
from .target import NetTarget, READ_TIMEOUT


# ------------------------------------------------------------------ client helpers

class Conn:
    """A client connection that decodes replies with the oracle's framing."""

    def __init__(self, t: NetTarget, nodelay=True, handshake=True, rcvbuf: Optional[int] = None):
        self.t = t
        fam = socket.AF_INET6 if ":" in t.host else socket.AF_INET
        self.s = socket.socket(fam, socket.SOCK_STREAM)
        self.s.settimeout(READ_TIMEOUT)
        if nodelay:
            self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if rcvbuf:  # before connect: the window scale is chosen at the handshake from this size
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
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
    """The protocol's echo request carrying ``payload`` (``seq``: its id, where it has one). A protocol
    whose echo service has names the codec sets (rpc: service, method) builds it from the target's
    codec (``net_request_for``)."""
    for_codec = getattr(t.spec, "net_request_for", None)
    return for_codec(t.codec, seq, payload) if for_codec else t.spec.net_request(seq, payload)


def expected_reply(t: NetTarget, req: Frame) -> Frame:
    for_codec = getattr(t.spec, "echo_reply_for", None)
    return for_codec(t.codec, req) if for_codec else t.spec.echo_reply(req)


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


# a hostile peer's effect on the server: a healthy connection alongside, a fresh one after, RSS bounded
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
