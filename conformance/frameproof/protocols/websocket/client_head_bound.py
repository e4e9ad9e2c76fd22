"""WS-HS-10: a load client reads the server's answer to its opening request within a bound.

The checking server answers each of the client's connections with `HTTP/1.1 101`, `Upgrade` and `Connection`,
then one header line that never ends (`X-Filler: aaaa...`, one line, so that a client counting header lines
does not stop it before its byte bound does), written in 64 KiB pieces up to ``CAP``. A client that bounds
the head it reads closes the connection; one that buffers without bound reads on until the server stops.

What the wire shows is how much the server had written when the client closed, not how much the client read:
the kernel holds the difference (the server's send buffer, up to tcp_wmem's maximum, and the client's receive
window). So the check is a close before ``LIMIT`` bytes were written: 16 MiB, or more where the send buffer
may grow larger. Measured here (2026-12-05, tcp_wmem max 4 MiB): the bundled clients closed after 64 KiB (C++),
128 KiB (Rust), 2.7 MiB (C#) and 3.3 MiB (Python) had been written; the Python client with the planted
``ws-client-unbounded-head`` took about 50 MiB in the one second of its --timeout-ms 1000.

A second run writes the same head slowly, in pieces of ``DRIBBLE`` bytes (the first holds the status line and
headers) a few milliseconds apart, so that each read takes one piece: the head a client holds then grows by
3001 bytes a read and never has a round size (8192, 16384, ...). A client that checks its bound only when the
head is exactly that size (`len == MAX` for `len > MAX`, a Rust mutant) passes the fast run, whose reads fill
the client's buffer to its capacity, and reads this one without end. Its verdict is a close before
``DRIBBLE_LIMIT`` bytes were written: the slow writer leaves little in kernel buffers."""
from __future__ import annotations

import os
import select
import shlex
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import List

from ...checks import CheckFailure
from ...clientsuite import client_results

CAP = 64 << 20  # bytes of the endless head written at most on one connection


def _limit() -> int:
    """The most a client with a bound of 64 KiB may have been written when it closes: 16 MiB, or the send
    buffer's largest size and the receive buffer's default with 1 MiB to spare where those are larger."""
    try:
        wmem = int(open("/proc/sys/net/ipv4/tcp_wmem").read().split()[2])
        rmem = int(open("/proc/sys/net/ipv4/tcp_rmem").read().split()[1])
    except (OSError, ValueError, IndexError):
        return 16 << 20
    return max(16 << 20, wmem + rmem + (1 << 20))


LIMIT = min(_limit(), CAP // 2)
PIECE = b"a" * (64 << 10)
LEAD = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Filler: "
TIMEOUT = float(os.environ.get("FRAMEPROOF_CLIENT_TIMEOUT", "60"))
#: the slow run: pieces of this size (no multiple of it is a power of two), PAUSE seconds apart, until the
#: client closes or DRIBBLE_LIMIT bytes were written (about 1 MB/s: a second of writing at most)
DRIBBLE, PAUSE, DRIBBLE_LIMIT = 3001, 0.003, 1 << 20


@dataclass
class Endless:
    no: int
    sent: int = 0  # bytes of the answer written before the client closed (or CAP)
    closed: bool = False  # the client closed the connection (EOF, or a reset on a write)
    after: bytes = b""  # bytes the client sent after its request head (a frame, though no 101 ended)
    request: bool = False  # its request head arrived


def _serve(sock: socket.socket, c: Endless, stop: threading.Event, slow: bool = False):
    try:
        sock.settimeout(5)
        buf = b""
        while b"\r\n\r\n" not in buf and len(buf) < 65536:
            d = sock.recv(65536)
            if not d:
                c.closed = True
                return
            buf += d
        c.request = b"\r\n\r\n" in buf
        c.after = buf.split(b"\r\n\r\n", 1)[1] if c.request else b""
        sock.setblocking(False)
        piece, cap = (b"a" * DRIBBLE, DRIBBLE_LIMIT + DRIBBLE) if slow else (PIECE, CAP)
        out = LEAD + piece[len(LEAD):] if slow else LEAD
        while not stop.is_set():
            r, w, _ = select.select([sock], [sock] if c.sent < cap else [], [], 0.2)
            if r:
                d = sock.recv(65536)
                if not d:
                    c.closed = True
                    return
                c.after += d[:64]
            if w:
                n = sock.send(out)
                c.sent += n
                out = out[n:]
                if not out:
                    out = piece
                    if slow:
                        time.sleep(PAUSE)  # one piece a read
    except (BrokenPipeError, ConnectionResetError):
        c.closed = True
    except OSError:
        pass
    finally:
        sock.close()


def run(t, timeout: float, slow: bool = False) -> tuple:
    """(the connections, the client's exit status, its output): one run of the client's command against a
    server whose every answer never ends (``slow``: written in DRIBBLE-byte pieces)."""
    limit = DRIBBLE_LIMIT if slow else LIMIT
    stop = threading.Event()
    lsock = socket.create_server(("127.0.0.1", 0))
    lsock.settimeout(0.1)
    conns: List[Endless] = []
    threads = []

    def accept():
        while not stop.is_set():
            try:
                s, _ = lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c = Endless(len(conns) + 1)
            conns.append(c)
            th = threading.Thread(target=_serve, args=(s, c, stop, slow), daemon=True)
            threads.append(th)
            th.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fp-client-")
    os.close(fd)
    os.unlink(jpath)
    cmd = t.command.replace("{host}", "127.0.0.1").replace("{port}", str(lsock.getsockname()[1])) \
        .replace("{json}", jpath)
    out = tempfile.TemporaryFile()
    try:
        p = subprocess.Popen(shlex.split(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=t.cwd, start_new_session=True)
        end, grace = time.monotonic() + timeout, None
        while p.poll() is None and time.monotonic() < end:
            # a connection given more than LIMIT: the verdict is in; the client gets 5 s to end
            if grace is None and any(c.sent > limit for c in conns):
                grace = time.monotonic() + 5
            if grace is not None and time.monotonic() > grace:
                break
            time.sleep(0.1)
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
        time.sleep(0.3)  # the last EOFs reach their threads
    finally:
        stop.set()
        lsock.close()
        for th in [acceptor] + threads:
            th.join(2)
    text, _report = client_results(out, jpath)
    return conns, p.returncode, text[-2000:]


def c_endless_head(t):
    """Every connection of one run is answered with a head that never ends: the client closes each before
    ``LIMIT`` bytes of it were written, sends nothing after its request, and exits non-zero; then again with
    the head written slowly (``DRIBBLE``), closed before ``DRIBBLE_LIMIT``."""
    endless_head(t, False)
    endless_head(t, True)


def endless_head(t, slow: bool):
    conns, rc, output = run(t, min(TIMEOUT, 60), slow)
    limit = DRIBBLE_LIMIT if slow else LIMIT
    how = f", written {DRIBBLE} bytes at a time {PAUSE * 1000:g} ms apart" if slow else ""
    answered = [c for c in conns if c.request]
    if not answered:
        raise CheckFailure(f"the client opened no connection with a complete request (exit {rc})\n"
                           f"--- client output ---\n{output}")
    bad = [c for c in answered if not c.closed or c.sent > limit]
    if bad:
        worst = max(bad, key=lambda c: c.sent)
        raise CheckFailure(f"a 101 whose head never ends (one header line{how}):\n"
                           f"  expected the client to close the connection, its bound on the answer reached (the server "
                           f"having written {limit >> 20} MiB at most: the rest of what it wrote is in kernel buffers)\n"
                           f"  actual   {len(bad)} of {len(answered)} connections took {worst.sent:,} bytes of the answer"
                           f"{' and stayed open' if not worst.closed else ' before the client closed'} (the client reads "
                           f"without bound, or waits for the rest)\n--- client output ---\n{output}")
    sent = [c.after for c in answered if c.after]
    if sent:
        raise CheckFailure(f"a 101 whose head never ends:\n  expected no byte from the client after its request\n"
                           f"  actual   {sent[0][:32]!r} (a frame on a connection whose opening never ended)")
    if rc == 0:
        raise CheckFailure("a 101 whose head never ends: the client closed every connection but exited 0 "
                           "(an opening that fails is an error)")


def client_cases():
    from ...clientsuite import ClientCase
    return [ClientCase("opening_response_endless", ["WS-HS-10"], "A 101 whose head never ends (one endless header "
                       "line): the client closes the connection, its bound reached, sends no frame and exits non-zero",
                       c_endless_head)]
