"""Hostile peers: raw sockets and the TCP-state probes the scenarios use on them."""
from __future__ import annotations

import socket
import struct
import time

from ..checks import CheckFailure
from ..netsuite import Conn, NetTarget


# ------------------------------------------------------------------ client helpers

def tcp_state(s: socket.socket) -> int:
    """The kernel's TCP state of our socket (1 established, 7 closed by a reset, 8 the peer's FIN)."""
    try:
        return struct.unpack("B", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0]
    except OSError:
        return 7


def closed_now(s: socket.socket) -> bool:
    """True once the server has closed this connection (EOF or reset); bytes it sent are dropped.
    Never waits (on a socket with a timeout Python waits for it, whatever the flags)."""
    old = s.gettimeout()
    s.settimeout(0.0)
    try:
        for _ in range(64):
            try:
                data = s.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                return True
            if not data:
                return True
        return False
    finally:
        s.settimeout(old)


def _pending(s: socket.socket) -> bytes:
    """What the socket holds right now (without waiting)."""
    out = b""
    old = s.gettimeout()
    s.settimeout(0.0)
    try:
        for _ in range(64):
            try:
                data = s.recv(1 << 16)
            except OSError:
                break
            if not data:
                break
            out += data
    finally:
        s.settimeout(old)
    return out


def send_now(s: socket.socket, data) -> int:
    """Sends what the socket takes right now (0 when its buffer is full); raises OSError if closed."""
    old = s.gettimeout()
    s.settimeout(0.0)
    try:
        return s.send(data)
    except (BlockingIOError, InterruptedError):
        return 0
    finally:
        s.settimeout(old)


def rst_close(s: socket.socket):
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


def raw_socket(t: NetTarget, timeout=5.0) -> socket.socket:
    fam = socket.AF_INET6 if ":" in t.host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect((t.host, t.port))
    return s


class Peer:
    """A connection after the protocol's opening (``netsuite.Conn``), with the protocol's Python
    reference codec for fast encoding and decoding of many requests."""

    def __init__(self, t: NetTarget, timeout=5.0):
        self.t = t
        self.c = Conn(t)
        self.s = self.c.s
        self.s.settimeout(timeout)
        self.ref = t.spec.reference
        self.codec = self.c.codec
        self.dec = self.ref.decoder(self.codec)
        self.ready = list(self.dec.feed(bytes(self.c.buf))) if self.c.buf else []

    def encode(self, frame) -> bytes:
        return self.ref.encode(self.codec, frame)

    def recv_frames(self, n: int, timeout: float) -> list:
        out, self.ready = self.ready[:n], self.ready[n:]
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CheckFailure(f"expected {n} replies, got {len(out)} within {timeout:g} s")
            self.s.settimeout(left)
            try:
                data = self.s.recv(1 << 18)
            except socket.timeout:
                raise CheckFailure(f"expected {n} replies, got {len(out)} within {timeout:g} s")
            except OSError as e:
                raise CheckFailure(f"expected {n} replies, got {len(out)}; the connection failed: {e}")
            if not data:
                raise CheckFailure(f"expected {n} replies, got {len(out)} before the server closed the connection")
            got = list(self.dec.feed(data))
            take = n - len(out)
            out += got[:take]
            self.ready += got[take:]
        return out

    def close(self):
        self.c.close()
