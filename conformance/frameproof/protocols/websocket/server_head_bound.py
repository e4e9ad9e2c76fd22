"""WS-HS-11: a server reads a client's opening request within a bound of its own.

The case sends a request line, a Host header, then one header line that never ends (`X-Filler: aaaa...`, one
line, so that a server counting header lines does not stop it before its byte bound does), in 64 KiB pieces.
A server that bounds the head answers with a 4xx or closes the connection; one that buffers without bound (or
only at its memory budget, 256 MiB by default) reads on. As for the client's side (WS-HS-10,
client_head_bound.py), the wire shows what was written before the server's answer or close, not what the
server read: the kernel's buffers hold the difference, so the check is an answer or a close before ``LIMIT``
bytes (16 MiB, or the socket buffers' largest sizes where those are larger)."""
from __future__ import annotations

import select
import socket
import time

from ...checks import CheckFailure
from .client_head_bound import LIMIT, PIECE

LEAD = b"GET / HTTP/1.1\r\nHost: frameproof.test\r\nX-Filler: "
DEADLINE_S = 30.0  # a server that neither reads nor answers: the case ends here


def c_request_head_endless(t):
    """An opening request whose head never ends: the server answers 4xx or closes before LIMIT bytes."""
    s = socket.create_connection((t.host, t.port), timeout=5)
    sent, answer, closed = 0, b"", False
    try:
        s.setblocking(False)
        out = LEAD
        end = time.monotonic() + DEADLINE_S
        while sent < LIMIT + len(PIECE) and time.monotonic() < end:
            r, w, _ = select.select([s], [s], [], 0.5)
            if r:
                try:
                    d = s.recv(65536)
                except (ConnectionResetError, BrokenPipeError):
                    closed = True
                    break
                if not d:
                    closed = True
                    break
                answer += d
                break
            if w:
                try:
                    sent += s.send(out)
                except (BlockingIOError, InterruptedError):
                    continue
                except (ConnectionResetError, BrokenPipeError):
                    closed = True
                    break
                out = PIECE
    finally:
        s.close()
    if answer:
        status = answer.split(b"\r\n", 1)[0]
        parts = status.split(b" ")
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit() \
                or not 400 <= int(parts[1]) < 500:
            raise CheckFailure(f"an opening request whose head never ends (one header line of 'a', {sent} bytes "
                               f"written):\n  expected a 4xx answer, or the connection closed\n  actual   "
                               f"{status[:80]!r}", ["WS-HS-11"])
        return
    if closed:
        return
    raise CheckFailure(f"an opening request whose head never ends (`GET / HTTP/1.1`, a Host header, then one "
                       f"header line of 'a' in 64 KiB pieces):\n  expected a 4xx answer, or the connection closed, "
                       f"before {LIMIT >> 20} MiB were written\n  actual   {sent} bytes written, no answer and no "
                       f"close: the server reads the head without a bound of its own", ["WS-HS-11"])
