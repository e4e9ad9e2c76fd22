"""Scenarios of the timeouts and the output bound: slow-loris (frame timeout), open and idle
(idle timeout), readers that never read (output bound, write timeout)."""
from __future__ import annotations

import socket
import time

from ..netsuite import payload_for
from .limits import KiB, MiB
from .peers import Peer, closed_now, raw_socket, rst_close, send_now, tcp_state
from .scenario import Ctx, _wait_closed


def s_slow_loris(ctx: Ctx):
    """Slow-loris: connections start a frame and dribble it one byte at a time, a byte per third of
    the frame timeout; half of them stop after the first bytes: those must be closed after the frame
    timeout (the dribblers may be kept: RES-4 judges the gaps between bytes)."""
    t, lim = ctx.t, ctx.limits
    n = min(ctx.n(200, 8), ctx.room() // 2)
    ft = lim.frame_timeout_ms / 1000
    size = min(t.limit, 4096)
    conns = []
    for i in range(n):
        p = Peer(t)
        data = p.encode(t.spec.net_request(1, payload_for(i, size)))
        p.s.sendall(data[:3])
        conns.append([p, data, 3, time.monotonic()])
    ctx.hostile_conns = n
    stop_at = time.monotonic() + max(2 * ft, 3.0)
    quiet = []
    dribblers = conns[: n // 2]
    stoppers = conns[n // 2:]
    for c in stoppers:
        quiet.append((c[0].s, c[3]))  # the clock runs from their last byte
    step = max(0.05, ft / 3)
    closed_at = {}
    next_byte = time.monotonic()
    while time.monotonic() < stop_at:
        for s_, st in quiet:
            if s_ not in closed_at and closed_now(s_):
                closed_at[s_] = time.monotonic() - st
        if time.monotonic() >= next_byte:
            next_byte += step
            for c in dribblers:
                p, data, k, _ = c
                if k < len(data) - 1:
                    try:
                        c[2] += send_now(p.s, data[k:k + 1])
                    except OSError:
                        pass
        time.sleep(0.05)
    g = lim.grace(lim.frame_timeout_ms)
    late = [v for v in closed_at.values() if v > g]
    if late:
        ctx.fail(f"connections that stopped in the middle of a frame: {len(late)} closed only after "
                 f"{min(late):.1f}..{max(late):.1f} s (expected within {g:.1f} s)", 4)
    if closed_at:
        ctx.note(f"connections that stopped in the middle of a frame: {len(closed_at)} closed after "
                 f"{min(closed_at.values()):.2f}..{max(closed_at.values()):.2f} s")
    _wait_closed([(s_, st) for s_, st in quiet if s_ not in closed_at], closed_now,
                 "connections that stopped in the middle of a frame", ctx, g, 4)
    still = sum(1 for c in dribblers if not closed_now(c[0].s))
    ctx.note(f"{len(dribblers)} dribbling one byte per {step:.2f} s: {still} still open (either is allowed)")
    for c in conns:
        c[0].close()


def s_open_idle(ctx: Ctx):
    """Connections that open and never send (no opening handshake either), and connections that
    send one request and then fall silent: all closed after the idle timeout."""
    t, lim = ctx.t, ctx.limits
    n = min(ctx.n(200, 8), ctx.room() // 2)
    silent = [(raw_socket(t), time.monotonic()) for _ in range(n)]
    after = []
    for i in range(max(2, n // 5)):
        p = Peer(t)
        req = t.spec.net_request(1, b"then-idle-%d" % i)
        p.s.sendall(p.encode(req))
        p.recv_frames(1, 5.0)
        after.append((p, time.monotonic()))
    ctx.hostile_conns = n + len(after)
    g = lim.grace(lim.idle_timeout_ms)
    _wait_closed(silent, closed_now, "connections that never sent a byte", ctx, g, 3)
    _wait_closed([(p.s, st) for p, st in after], closed_now, "connections idle after one request", ctx, g, 3)
    for s, _ in silent:
        s.close()
    for p, _ in after:
        p.close()


def s_never_reading(ctx: Ctx):
    """Peers that pipeline requests and never read a reply: the server bounds its output (it stops
    reading them) and closes them once their output has made no progress for the write timeout.
    The clock of each peer runs from the last moment the server took its bytes (while the server
    reads, our sends go on; once it stops reading, they stall)."""
    t, lim = ctx.t, ctx.limits
    n = min(ctx.n(64, 4), ctx.room() // 2)
    size = min(t.limit, 64 * KiB)
    peers = []
    for i in range(n):
        p = Peer(t)
        p.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * KiB)
        peers.append(p)
    ctx.hostile_conns = n
    batch = b"".join(peers[0].encode(t.spec.net_request(1 + j, payload_for(j, size))) for j in range(16))
    g = lim.grace(lim.write_timeout_ms)
    start = time.monotonic()
    sent = {id(p): 0 for p in peers}
    last = {id(p): start for p in peers}
    pos = {id(p): 0 for p in peers}  # where in the batch each peer's stream is (sends may be partial)
    closed_after = {}
    open_ = list(peers)
    total_sent = 0
    # in all: far beyond what a bounded server buffers (so a peer stalls only when the server stops
    # reading), and bounded, so that a server without bounds is not fed without end
    cap = 4 * lim.memory_budget + 64 * MiB
    while open_ and time.monotonic() - start < 60 + g:
        now = time.monotonic()
        keep = []
        for p in open_:
            try:
                k = send_now(p.s, batch[pos[id(p)]:]) if total_sent < cap else 0
            except OSError:
                k = -1
            if k > 0:
                sent[id(p)] += k
                pos[id(p)] = (pos[id(p)] + k) % len(batch)
                total_sent += k
                last[id(p)] = now
            if k < 0 or tcp_state(p.s) != 1:
                closed_after[id(p)] = now - last[id(p)]
                continue
            if now - last[id(p)] > g:
                continue  # stalled longer than the write timeout allows, and still open: reported below
            keep.append(p)
        open_ = keep
        time.sleep(0.01)
    total = sum(sent.values())
    ctx.note(f"{n} peers sent {total / MiB:.1f} MiB of requests and read nothing")
    if closed_after:
        ctx.note(f"peers that never read: {len(closed_after)} closed {min(closed_after.values()):.2f}.."
                 f"{max(closed_after.values()):.2f} s after the server last took their bytes")
    late = [p for p in peers if id(p) not in closed_after]
    if late:
        ctx.fail(f"peers that never read: {len(late)} of {n} still open {g:.1f} s after the server stopped taking "
                 f"their bytes (expected it to close them after the write timeout)", 5)
    for p in peers:
        rst_close(p.s)
