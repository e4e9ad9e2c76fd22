"""`frameproof net --stress`: hostile peers at scale against a live echo server (the *-RES-*
requirements, "Resource limits of the echo service" in every protocol's spec).

Each scenario runs hostile connections by the hundred while healthy traffic flows alongside (a few
long-lived connections doing one verified request at a time, and a fresh connection now and then);
it reports the healthy requests served, their p99 latency and errors, the server's peak RSS, and a
verdict per scenario against the RES requirements it checks. Everything talks to 127.0.0.1/::1 only
and every loop is bounded in count and in time. Protocol bytes come from the Protocol hooks
(``net_request``, ``oversize_header``, ``net_handshake`` through ``netsuite.Conn``).

What the suite allows on top of the spec's values (stated here, reported with every run):

* a timeout is met when the server closes the connection within ``timeout * 1.25 + 1 s`` (the 1 s
  is ``--stress-grace-s``: more on a loaded machine);
* the server's RSS may exceed its RSS before the scenario by at most the memory budget plus
  ``RSS_SLACK`` plus 64 KiB per hostile connection (the per-connection read buffer the spec allows);
* healthy requests: none may fail, and their p99 latency must stay below ``--stress-p99-ms``
  (default 2000 ms; the pause scenario reports it only: its requests wait out the pause on purpose).
"""
from __future__ import annotations

import fnmatch
import json
import math
import os
import resource
import signal
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import report
from .checks import CheckFailure
from .netsuite import Conn, NetTarget, payload_for, rss_kib

KiB, MiB = 1024, 1024 * 1024
# the small bounds the suite's own tests (CI) run the stress group with (1-2 s timeouts, an 8 MiB
# budget, 256 connections; servers run Protocol.stress_codec(), frames up to 1 MiB), at SMALL_SCALE of
# the scenarios' counts; the main job (frameproof matrix) runs it at the defaults and full scale
SMALL_LIMITS = ["--memory-budget", "8388608", "--idle-timeout-ms", "1000", "--frame-timeout-ms", "2000",
                "--write-timeout-ms", "1000", "--max-connections", "256"]
SMALL_SCALE = "0.1"
FLOOR = 64 * KiB  # a connection holding at most this is never closed for the budget (RES-2)
RSS_SLACK = 32 * MiB
GRACE_FACTOR, GRACE_S = 1.25, 1.0
CPU_SPIN = 0.25  # the server's CPU share (of one core) above its share before, while waiting for descriptors: spinning


# ------------------------------------------------------------------ the limits (spec defaults, generic flags)

@dataclass
class Limits:
    """The server-wide limits of the RES requirements: the spec's defaults, identical for every
    protocol and implementation, and the generic fp-server flags that set them."""
    memory_budget: int = 256 * MiB
    idle_timeout_ms: int = 30_000
    frame_timeout_ms: int = 10_000
    max_output_bytes: int = 1 * MiB
    write_timeout_ms: int = 10_000
    max_connections: int = 4096
    #: the suite's extra allowance on every timeout (seconds, not a server flag): ``--stress-grace-s``
    slack_s: float = GRACE_S

    FLAGS = (("memory_budget", "--memory-budget", "BYTES"), ("idle_timeout_ms", "--idle-timeout-ms", "MS"),
             ("frame_timeout_ms", "--frame-timeout-ms", "MS"), ("max_output_bytes", "--max-output-bytes", "BYTES"),
             ("write_timeout_ms", "--write-timeout-ms", "MS"), ("max_connections", "--max-connections", "N"))

    def server_flags(self) -> List[str]:
        """The flags of the values that differ from the spec's defaults (none: a server's defaults)."""
        d = Limits()
        out = []
        for attr, flag, _ in self.FLAGS:
            if getattr(self, attr) != getattr(d, attr):
                out += [flag, str(getattr(self, attr))]
        return out

    def grace(self, timeout_ms: int) -> float:
        return timeout_ms / 1000 * GRACE_FACTOR + self.slack_s


def _positive(text):
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {v}")
    return v


def add_limit_args(ap, what="the server's"):
    """The generic resource-limit flags (reference-impls/README.md, "Resource limits")."""
    d = Limits()
    for attr, flag, metavar in Limits.FLAGS:
        ap.add_argument(flag, dest=attr, type=_positive, default=None, metavar=metavar,
                        help=f"{what} {attr.replace('_', ' ')} (default {getattr(d, attr)})")


def limits_from_args(args) -> Limits:
    d = Limits()
    return Limits(**{a: (getattr(args, a, None) or getattr(d, a)) for a, _, _ in Limits.FLAGS})


# ------------------------------------------------------------------ measuring the server

def fd_count(pid) -> Optional[int]:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def cpu_seconds(pid) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def alive(pid) -> bool:
    if not pid:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class RssMonitor:
    """Samples the server's RSS every 20 ms in a thread; ``peak_kib`` since the last ``reset``."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_kib = 0
        self._stop = threading.Event()
        self._th = None
        if pid:
            self._th = threading.Thread(target=self._run, daemon=True)
            self._th.start()

    def _run(self):
        while not self._stop.wait(0.02):
            v = rss_kib(self.pid)
            if v and v > self.peak_kib:
                self.peak_kib = v

    def reset(self) -> Optional[int]:
        v = rss_kib(self.pid)
        self.peak_kib = v or 0
        return v

    def stop(self):
        self._stop.set()
        if self._th:
            self._th.join(1)


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


# ------------------------------------------------------------------ healthy traffic

@dataclass
class HealthyStats:
    served: int = 0
    errors: int = 0
    latencies_us: List[int] = field(default_factory=list)
    details: List[str] = field(default_factory=list)

    def error(self, msg):
        self.errors += 1
        if len(self.details) < 5:
            self.details.append(msg)

    def p99_ms(self) -> float:
        if not self.latencies_us:
            return 0.0
        xs = sorted(self.latencies_us)
        return xs[min(len(xs) - 1, int(math.ceil(0.99 * len(xs))) - 1)] / 1000


class Healthy:
    """Healthy traffic beside the attack: ``conns`` long-lived connections, one verified request
    at a time every ``interval`` seconds each, and (``fresh``) a new connection with one request
    every 0.5 s. A failed request is an error; its connection is opened again."""

    def __init__(self, t: NetTarget, conns=4, interval=0.01, fresh=True, timeout=5.0):
        self.t, self.conns, self.interval, self.fresh, self.timeout = t, conns, interval, fresh, timeout
        self.st = HealthyStats()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.threads = [threading.Thread(target=self._conn_loop, args=(k,), daemon=True) for k in range(conns)]
        if fresh:
            self.threads.append(threading.Thread(target=self._fresh_loop, daemon=True))

    def start(self):
        for th in self.threads:
            th.start()
        return self

    def _one(self, p: Peer, k: int, i: int):
        req = self.t.spec.net_request(1 + i % 250, payload_for(k * 1_000_000 + i, 24))
        exp = self.t.spec.echo_reply(req)
        t0 = time.monotonic()
        p.s.sendall(p.encode(req))
        got = p.recv_frames(1, self.timeout)[0]
        dt = int((time.monotonic() - t0) * 1e6)
        if got != exp:
            raise CheckFailure(f"wrong reply: expected {exp.short()}, actual {got.short()}")
        with self.lock:
            self.st.served += 1
            self.st.latencies_us.append(dt)

    def _conn_loop(self, k):
        p = None
        i = 0
        while not self._stop.is_set():
            try:
                if p is None:
                    p = Peer(self.t, self.timeout)
                self._one(p, k, i)
                i += 1
            except (CheckFailure, OSError) as e:
                with self.lock:
                    self.st.error(f"healthy connection {k}, request {i}: {e}")
                if p:
                    p.close()
                p = None
                self._stop.wait(0.05)
            self._stop.wait(self.interval)
        if p:
            p.close()

    def _fresh_loop(self):
        i = 0
        while not self._stop.wait(0.5):
            p = None
            try:
                p = Peer(self.t, self.timeout)
                self._one(p, 999, i)
            except (CheckFailure, OSError) as e:
                with self.lock:
                    self.st.error(f"fresh healthy connection {i}: {e}")
            finally:
                if p:
                    p.close()
            i += 1

    def stop(self) -> HealthyStats:
        self._stop.set()
        for th in self.threads:
            th.join(self.timeout + 2)
        return self.st


# ------------------------------------------------------------------ scenarios

@dataclass
class Ctx:
    t: NetTarget
    limits: Limits
    scale: float
    rss: RssMonitor
    p99_bound_ms: float
    notes: List[str] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)
    failed_res: List[Optional[int]] = field(default_factory=list)
    hostile_conns: int = 0
    healthy: Optional[Healthy] = None
    p99_checked: bool = True

    def n(self, full: int, least: int = 4) -> int:
        return max(least, int(round(full * self.scale)))

    def fail(self, msg, res: Optional[int] = None):
        """A failure of RES-``res`` (None: of every requirement the scenario checks)."""
        self.failures.append(msg)
        self.failed_res.append(res)

    def note(self, msg):
        self.notes.append(msg)

    @property
    def pid(self):
        return self.t.pid

    def room(self) -> int:
        """Connections the scenario may open without reaching the server's connection limit."""
        return max(8, self.limits.max_connections - 32)


@dataclass
class Scenario:
    name: str
    res: Tuple[int, ...]  # the RES requirement numbers it checks (the prefix is the protocol's)
    description: str
    run: Callable  # run(ctx)
    needs_pid: bool = False
    fresh_healthy: bool = True


def _wait_closed(socks: List[Tuple[socket.socket, float]], deadline_of, what, ctx, limit_s, res=None):
    """Polls ``socks`` (socket, the moment the clock starts for it) until each is closed by the
    server or its deadline (start + ``limit_s``) has passed; returns the count left open."""
    if not socks:
        return 0
    open_ = list(socks)
    end = max(st for _, st in socks) + limit_s
    closed_at = []
    first = True
    while open_ and (first or time.monotonic() < end + 0.2):
        first = False
        keep = []
        for s, st in open_:
            if deadline_of(s):
                closed_at.append(time.monotonic() - st)
            else:
                keep.append((s, st))
        open_ = keep
        time.sleep(0.05)
    late = [1 for s, st in open_]
    if closed_at:
        ctx.note(f"{what}: {len(closed_at)} closed after {min(closed_at):.2f}..{max(closed_at):.2f} s")
    if late:
        ctx.fail(f"{what}: {len(late)} of {len(socks)} still open {limit_s:.1f} s after they went quiet "
                 f"(expected the server to close them)", res)
    return len(late)


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


def s_maximal_frames(ctx: Ctx):
    """Connections each hold a nearly maximal unfinished frame (one byte short), together three times
    the memory budget and more: the server closes the largest holders, keeps those holding 64 KiB or less, and
    its RSS stays under the budget plus the stated constant."""
    t, lim = ctx.t, ctx.limits
    f = t.limit
    small = 8
    # enough to exceed the budget plus the RSS allowance twice over: a server without a budget shows
    n = min(max(ctx.n(16, 4), -(-(3 * lim.memory_budget + RSS_SLACK) // max(f, 1)) + 1), ctx.room() - small, 600)
    ctx.hostile_conns = n + small
    # connections holding a small unfinished frame (below 64 KiB) first: never to be closed for the budget
    smalls = []
    ssize = min(32 * KiB, t.limit)
    reserve = 512
    for i in range(small):
        p = Peer(t)
        req = t.spec.net_request(1, payload_for(i, ssize))
        data = p.encode(req)
        p.s.sendall(data[:-reserve])
        smalls.append([p, req, data, len(data) - reserve])
    done = threading.Event()

    def keep_going():  # the small holders go on sending, a byte at a time, within the frame timeout
        while not done.wait(lim.frame_timeout_ms / 4000):
            for sm in smalls:
                if sm[3] < len(sm[2]) - 1:
                    try:
                        sm[3] += send_now(sm[0].s, sm[2][sm[3]:sm[3] + 1])
                    except OSError:
                        pass
    keeper = threading.Thread(target=keep_going, daemon=True)
    keeper.start()
    head = t.spec.oversize_header(t.codec, f)
    body = b"m" * (f - 1)
    conns = []
    sent_total = 0
    refused = 0
    for i in range(n):
        try:
            p = Peer(t)
        except (CheckFailure, OSError):
            refused += 1
            continue
        conns.append(p)
        try:
            p.s.settimeout(3.0)
            p.s.sendall(head)
            view = memoryview(body)
            while view:
                k = p.s.send(view[: 1 << 20])
                view = view[k:]
                sent_total += k
        except (socket.timeout, OSError):
            pass  # closed by the server, or it stopped reading: both are checked below
    time.sleep(0.5)
    done.set()
    keeper.join(5)
    open_ = sum(1 for p in conns if not closed_now(p.s))
    if n * f <= lim.memory_budget:
        ctx.note(f"the framing's largest frame ({f} bytes) on {n} connections stays within the budget: the budget "
                 f"is not exceeded here (RES-1 checked through RSS only)")
    ctx.note(f"{n} connections each sent a {f}-byte frame but its last byte ({sent_total / MiB:.1f} MiB in all, "
             f"budget {lim.memory_budget / MiB:.1f} MiB): {n - open_} closed by the server, {open_} open")
    if refused:
        ctx.note(f"{refused} could not even connect")
    # RES-2: the small holders are still served
    for i, (p, req, data, k) in enumerate(smalls):
        try:
            p.s.sendall(data[k:])
            got = p.recv_frames(1, 5.0)[0]
            if got != t.spec.echo_reply(req):
                ctx.fail(f"the connection holding a {ssize}-byte unfinished frame got a wrong reply: {got.short()}", 2)
        except (CheckFailure, OSError) as e:
            ctx.fail(f"a connection holding only {ssize} bytes (under 64 KiB) was not served after the budget "
                     f"was exceeded: {e}", 2)
            break
    for sm in smalls:
        sm[0].close()
    for p in conns:
        p.close()


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


def s_connect_close(ctx: Ctx):
    """10,000 connect/close cycles (4 at a time): a tenth send one request and read the reply, a
    tenth leave half a frame, the rest close at once; half the closes are resets. Afterwards the
    server holds no more descriptors than before and serves as before."""
    t = ctx.t
    total = ctx.n(10_000, 200)
    before_fds = fd_count(ctx.pid)
    errors = []
    lock = threading.Lock()
    counter = iter(range(total))

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            try:
                if i % 10 == 0:
                    p = Peer(t)
                    req = t.spec.net_request(1, payload_for(i, 16))
                    p.s.sendall(p.encode(req))
                    if p.recv_frames(1, 5.0)[0] != t.spec.echo_reply(req):
                        raise CheckFailure("wrong reply")
                    s = p.s
                elif i % 10 == 1:
                    p = Peer(t)
                    p.s.sendall(p.encode(t.spec.net_request(1, payload_for(i, 64)))[:9])
                    s = p.s
                else:
                    s = raw_socket(t)
                if i % 2:
                    rst_close(s)
                else:
                    s.close()
            except (CheckFailure, OSError) as e:
                with lock:
                    if len(errors) < 5:
                        errors.append(f"cycle {i}: {e}")
                    else:
                        errors.append("")
    ths = [threading.Thread(target=worker, daemon=True) for _ in range(4)]
    t0 = time.monotonic()
    for th in ths:
        th.start()
    for th in ths:
        th.join(300)
    ctx.hostile_conns = 4
    ctx.note(f"{total} cycles in {time.monotonic() - t0:.1f} s")
    if errors:
        ctx.fail(f"{len(errors)} of {total} connect/close cycles failed; first: {errors[0]}", 6)
    _fds_back(ctx, before_fds, "after the connect/close cycles", res=6)


def _fds_back(ctx, before, what, slack=8, wait=3.0, res=None):
    if before is None:
        return
    deadline = time.monotonic() + wait
    now = fd_count(ctx.pid)
    while now is not None and now > before + slack and time.monotonic() < deadline:
        time.sleep(0.1)
        now = fd_count(ctx.pid)
    if now is not None and now > before + slack:
        ctx.fail(f"{what}: the server holds {now} descriptors, {before} before (connections not released)", res)
    else:
        ctx.note(f"server descriptors: {before} before, {now} after")


def s_resets(ctx: Ctx):
    """Connections reset (SO_LINGER 0) in the middle of a frame, in rounds, up to half the largest
    frame each: the server releases them (descriptors, memory) and serves on."""
    t = ctx.t
    n = ctx.n(400, 16)
    before_fds = fd_count(ctx.pid)
    cut_max = min(t.limit // 2, 512 * KiB)
    rounds = 4
    for r in range(rounds):
        socks = []
        for i in range(n // rounds):
            p = Peer(t)
            size = min(t.limit, (i * 7919) % cut_max + 16)
            data = p.encode(t.spec.net_request(1, payload_for(i, size)))
            cut = 1 + (i * 31) % (len(data) - 1)
            try:
                p.s.sendall(data[:cut])
            except OSError:
                pass
            socks.append(p.s)
        time.sleep(0.05)
        for s in socks:
            rst_close(s)
    ctx.hostile_conns = n // rounds
    _fds_back(ctx, before_fds, "after the resets", res=1)


def s_connection_limit(ctx: Ctx):
    """Connections up to the limit and beyond: those beyond it are closed at once, the others and the
    healthy ones keep being served, and after some close the server accepts again."""
    t, lim = ctx.t, ctx.limits
    m = lim.max_connections
    if m > 5000:
        raise SkipScenario(f"--max-connections {m} is more than this scenario opens (5000)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < m + 200:
        raise SkipScenario(f"this process may open {soft} descriptors; the limit {m} needs more")
    socks = []
    extra = 16
    try:
        for _ in range(m + extra):
            socks.append((raw_socket(t), time.monotonic()))
    except OSError as e:
        ctx.note(f"stopped opening at {len(socks)}: {e}")
    ctx.hostile_conns = len(socks)
    time.sleep(min(1.0, lim.idle_timeout_ms / 2000))
    open_ = [s for s, _ in socks if not closed_now(s)]
    healthy = ctx.healthy.conns if ctx.healthy else 0
    ctx.note(f"opened {len(socks)} (limit {m}, {healthy} healthy already): {len(open_)} still open after "
             f"{min(1.0, lim.idle_timeout_ms / 2000):.1f} s")
    if len(open_) + healthy > m:
        ctx.fail(f"{len(open_) + healthy} connections open at once, the limit is {m}: the connections beyond it "
                 f"were neither accepted and closed nor refused", 6)
    # free some and a new connection is served again
    for s in open_[:32]:
        s.close()
    deadline = time.monotonic() + 3.0
    ok = False
    last = ""
    while time.monotonic() < deadline and not ok:
        try:
            p = Peer(t, 2.0)
            req = t.spec.net_request(1, b"after-the-limit")
            p.s.sendall(p.encode(req))
            ok = p.recv_frames(1, 2.0)[0] == t.spec.echo_reply(req)
            p.close()
        except (CheckFailure, OSError) as e:
            last = str(e)
            time.sleep(0.1)
    if not ok:
        ctx.fail(f"after 32 connections closed, a new connection was not served within 3 s ({last})", 6)
    for s, _ in socks:
        s.close()


class SkipScenario(Exception):
    pass


def s_descriptors(ctx: Ctx):
    """Descriptor exhaustion: the server's RLIMIT_NOFILE is lowered (prlimit) to a few above what it
    holds, then more connections come than it can accept. It keeps serving the ones it has, does not
    spin, and accepts again once descriptors are free."""
    t, pid = ctx.t, ctx.pid
    try:
        old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    except (OSError, AttributeError) as e:
        raise SkipScenario(f"cannot read the server's RLIMIT_NOFILE: {e}")
    have = fd_count(pid)
    if have is None:
        raise SkipScenario("cannot count the server's descriptors")
    low = have + 8
    # the server's CPU share before: what it spends on the healthy traffic (and, in a soak, the echo
    # load running beside the stress group), which waiting for descriptors must not add much to
    b0, v0 = cpu_seconds(pid), time.monotonic()
    time.sleep(1.0)
    b1, v1 = cpu_seconds(pid), time.monotonic()
    base = (b1 - b0) / (v1 - v0) if b0 is not None and b1 is not None else 0.0
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (low, old[1]))
    except OSError as e:
        raise SkipScenario(f"cannot lower the server's RLIMIT_NOFILE: {e}")
    socks = []
    try:
        ctx.note(f"server RLIMIT_NOFILE lowered from {old[0]} to {low} ({have} open)")
        for _ in range(ctx.n(64, 24)):
            try:
                socks.append(raw_socket(t, 2.0))
            except OSError:
                break
        ctx.hostile_conns = len(socks)
        c0, w0 = cpu_seconds(pid), time.monotonic()
        time.sleep(2.5)
        c1, w1 = cpu_seconds(pid), time.monotonic()
        if c0 is not None and c1 is not None:
            share = (c1 - c0) / (w1 - w0)
            ctx.note(f"server CPU while out of descriptors: {share * 100:.0f}% of one core "
                     f"({base * 100:.0f}% in the second before)")
            if share - base > CPU_SPIN:
                ctx.fail(f"the server used {share * 100:.0f}% of a core while out of descriptors, {base * 100:.0f}% "
                         f"before (spinning on accept)", 7)
        if not alive(pid):
            ctx.fail("the server exited when it ran out of descriptors", 7)
            return
        for s in socks:
            rst_close(s)
        socks = []
        t0 = time.monotonic()
        ok, last = False, ""
        while time.monotonic() - t0 < 2.0 + ctx.limits.slack_s and not ok:
            try:
                p = Peer(t, 1.0)
                req = t.spec.net_request(1, b"descriptors-free-again")
                p.s.sendall(p.encode(req))
                ok = p.recv_frames(1, 1.0)[0] == t.spec.echo_reply(req)
                p.close()
            except (CheckFailure, OSError) as e:
                last = str(e)
                time.sleep(0.1)
        if ok:
            ctx.note(f"a new connection was served {time.monotonic() - t0:.2f} s after descriptors were freed")
        else:
            ctx.fail(f"no new connection was served within {2.0 + ctx.limits.slack_s:g} s of descriptors being freed "
                     f"({last})", 7)
    finally:
        for s in socks:
            rst_close(s)
        try:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
        except OSError:
            pass


def s_pause(ctx: Ctx):
    """The server is stopped (SIGSTOP) longer than its idle timeout while requests keep coming,
    then continued (SIGCONT): every request gets exactly one reply, in order, and no connection that
    sent during the pause is closed."""
    t, pid, lim = ctx.t, ctx.pid, ctx.limits
    ctx.p99_checked = False
    pause = min(40.0, max(2.0, lim.idle_timeout_ms / 1000 + 0.5))
    if ctx.healthy:  # healthy requests wait out the pause too: late, not lost
        ctx.healthy.timeout = pause + 10
    nconn, window, per = 4, 16, 400
    errors: List[str] = []
    lock = threading.Lock()
    started = threading.Event()

    def pipelined(k):
        p = None
        try:
            p = Peer(t, pause + 10)
            expected = []
            sent = got = 0
            while got < per:
                while sent < per and sent - got < window:
                    req = t.spec.net_request(1 + sent % 250, payload_for(k * 100_000 + sent, 16 + sent % 32))
                    expected.append(t.spec.echo_reply(req))
                    p.s.sendall(p.encode(req))
                    sent += 1
                    if sent == per // 4:
                        started.set()
                    time.sleep(0.002)
                f = p.recv_frames(1, pause + 10)[0]
                if f != expected[got]:
                    raise CheckFailure(f"reply {got}: expected {expected[got].short()}, actual {f.short()} "
                                       f"(lost, duplicated or out of order)")
                got += 1
            time.sleep(0.2)
            extra = p.ready + list(p.dec.feed(_pending(p.s)))
            if extra:
                raise CheckFailure(f"{len(extra)} replies more than the {per} requests (duplicates)")
        except (CheckFailure, OSError) as e:
            with lock:
                errors.append(f"pipelined connection {k}: {e}")
        finally:
            if p:
                p.close()

    quiet = [Peer(t, pause + 10) for _ in range(3)]
    for i, q in enumerate(quiet):
        q.req = t.spec.net_request(1, b"before-the-pause-%d" % i)
        q.s.sendall(q.encode(q.req))
        q.recv_frames(1, 5.0)
    half = Peer(t, pause + 10)
    half_req = t.spec.net_request(2, payload_for(77, 300))
    half_data = half.encode(half_req)
    ths = [threading.Thread(target=pipelined, args=(k,), daemon=True) for k in range(nconn)]
    for th in ths:
        th.start()
    started.wait(10)
    half.s.sendall(half_data[:5])
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(pause / 2)
        for i, q in enumerate(quiet):  # silent since before the pause, they send while it lasts
            q.req = t.spec.net_request(2, b"during-the-pause-%d" % i)
            q.s.sendall(q.encode(q.req))
        half.s.sendall(half_data[5:])
        time.sleep(pause / 2)
    finally:
        os.kill(pid, signal.SIGCONT)
    ctx.note(f"server stopped for {pause:.1f} s (idle timeout {lim.idle_timeout_ms} ms) with "
             f"{nconn} connections pipelining {per} requests each")
    for th in ths:
        th.join(pause + 30)
    for i, q in enumerate(quiet):
        try:
            f = q.recv_frames(1, 10.0)[0]
            if f != t.spec.echo_reply(q.req):
                errors.append(f"connection silent before the pause: wrong reply {f.short()}")
        except CheckFailure as e:
            errors.append(f"connection silent before the pause that sent during it: {e}")
        q.close()
    try:
        f = half.recv_frames(1, 10.0)[0]
        if f != t.spec.echo_reply(half_req):
            errors.append(f"the frame completed during the pause: wrong reply {f.short()}")
    except CheckFailure as e:
        errors.append(f"the frame begun before the pause and completed during it: {e}")
    half.close()
    ctx.hostile_conns = 0
    for e in errors:
        ctx.fail(e, 8)


SCENARIOS: List[Scenario] = [
    Scenario("slow_loris", (4, 2), "Hundreds of connections dribble a frame one byte at a time; those that "
             "stop are closed after the frame timeout; healthy traffic goes on", s_slow_loris),
    Scenario("maximal_unfinished_frames", (1, 2), "Connections each hold a nearly maximal unfinished frame, "
             "together over three times the memory budget: RSS stays under the budget, holders of 64 KiB or less are "
             "served", s_maximal_frames),
    Scenario("open_and_idle", (3,), "Connections that never send, and connections silent after one request, "
             "are closed after the idle timeout", s_open_idle),
    Scenario("readers_that_never_read", (5, 1), "Peers pipeline requests and never read: output is bounded "
             "and they are closed after the write timeout", s_never_reading),
    Scenario("connect_close_10000", (6, 2), "10,000 connect/close cycles (resets, half frames, one request): "
             "no descriptor kept, service goes on", s_connect_close),
    Scenario("resets_mid_frame", (1, 2), "Connections reset (SO_LINGER 0) in the middle of a frame: "
             "descriptors and memory released", s_resets),
    Scenario("connection_limit", (6,), "Connections beyond --max-connections are accepted and closed at once; "
             "after some close, new ones are served", s_connection_limit, fresh_healthy=False),
    Scenario("descriptor_exhaustion", (7,), "RLIMIT_NOFILE lowered under the load: the server keeps serving, "
             "does not spin, accepts again once descriptors are free", s_descriptors, needs_pid=True,
             fresh_healthy=False),
    Scenario("sigstop_sigcont", (8,), "The server is stopped longer than its idle timeout while requests "
             "come, then continued: every reply exactly once, in order", s_pause, needs_pid=True,
             fresh_healthy=False),
]


def scenario_requirements(protocol, sc: Scenario) -> List[str]:
    from .protocols import get
    prefix = get(protocol).id_prefix
    return [f"{prefix}-RES-{n}" for n in sc.res]


def scenario_name(protocol, sc: Scenario) -> str:
    return f"{protocol}/{scenario_requirements(protocol, sc)[0]}/stress/{sc.name}"


# ------------------------------------------------------------------ the run

def _raise_own_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    want = min(want, 65536)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass


def run(t: NetTarget, limits: Limits, scale: float = 1.0, select: Optional[List[str]] = None,
        p99_bound_ms: float = 2000.0, name: str = "", out=print, xfail: Optional[List[str]] = None) -> dict:
    """Runs the scenarios; returns the report (frameproof.report, kind ``stress``; ``passed``: no
    scenario failed unexpectedly, no expected failure passed, every `xfail` entry matched a scenario
    that ran). `xfail`: scenario names or globs expected to fail (a library without server-wide limits)."""
    _raise_own_nofile()
    protocol = t.codec.protocol
    rss = RssMonitor(t.pid)
    results = []
    out(f"frameproof net --stress: {name or f'{t.host}:{t.port}'} ({protocol}); limits: "
        + ", ".join(f"{a}={getattr(limits, a)}" for a, _, _ in Limits.FLAGS) + f"; scale {scale:g}")
    try:
        for sc in SCENARIOS:
            full = scenario_name(protocol, sc)
            if select and not any(fnmatch.fnmatchcase(full, g) or fnmatch.fnmatchcase(sc.name, g) for g in select):
                continue
            results.append(_run_one(t, limits, scale, rss, p99_bound_ms, sc, protocol, full))
            r = results[-1]
            out(f"  {r['verdict']:4} {r['name']}  [{', '.join(r['requirements'])}]  healthy {r['healthy_served']} "
                f"served, p99 {r['healthy_p99_ms']:.1f} ms, {r['healthy_errors']} errors; peak RSS "
                f"{_mib(r['peak_rss_kib'])} (before {_mib(r['rss_before_kib'])}); {r['duration_s']:.1f} s")
            for line in r["failures"]:
                out(f"       ✗ {line}")
            for line in r["notes"]:
                out(f"         {line}")
            if not alive(t.pid):
                out("  the server is gone: the remaining scenarios are not run")
                break
    finally:
        rss.stop()
    xfail = list(xfail or ())
    used = set()
    tests = []
    for r in results:
        status = {"ok": "passed", "FAIL": "failed", "skip": "skipped"}[r["verdict"]]
        entry = next((e for e in xfail if fnmatch.fnmatchcase(r["name"], e) or fnmatch.fnmatchcase(r["scenario"], e)),
                     None)
        if entry and status != "skipped":
            used.add(entry)
            status = "xfailed" if status == "failed" else "xpassed"
        msg = "\n".join(r["failures"] + r["notes"])
        if status == "xpassed":
            msg = f"expected to fail ({entry}), but passed\n" + msg
        tests.append(report.test(r["name"], r["requirements"], status, msg, r["duration_s"],
                                 broken=r["failed_requirements"], description=r["description"]))
    unmatched = [e for e in xfail if e not in used]
    for e in unmatched:
        out(f"  expected-failure entry that matches no scenario run: {e}")
    tot = report.totals(tests)
    passed = not tot["failed"] and not tot["xpassed"] and not unmatched and alive(t.pid)
    served = sum(r["healthy_served"] for r in results)
    out(f"frameproof net --stress: {tot['passed']} passed, {tot['failed']} failed, {tot['skipped']} skipped"
        + (f", {tot['xfailed']} xfailed" if tot["xfailed"] else "") + (f", {tot['xpassed']} xpassed" if tot["xpassed"] else "")
        + f"; healthy requests served {served}, errors {sum(r['healthy_errors'] for r in results)}; "
        f"peak RSS {_mib(max([r['peak_rss_kib'] or 0 for r in results] or [0]))}")
    return report.make("stress", {"name": name or f"{t.host}:{t.port}"}, tests,
                       mode="stress", server=f"{t.host}:{t.port}", server_name=name, protocol=protocol,
                       codec=t.codec.to_json(), limits={a: getattr(limits, a) for a, _, _ in Limits.FLAGS},
                       allowances={"timeout_factor": GRACE_FACTOR, "timeout_extra_s": limits.slack_s,
                                   "rss_slack_bytes": RSS_SLACK, "per_connection_bytes": FLOOR,
                                   "healthy_p99_ms": p99_bound_ms},
                       scale=scale, scenarios=results, xfail_unmatched=unmatched, passed=passed)


def _mib(kib):
    return "?" if not kib else f"{kib / 1024:.1f} MiB"


def _run_one(t, limits, scale, rss, p99_bound_ms, sc: Scenario, protocol, full) -> dict:
    ctx = Ctx(t, limits, scale, rss, p99_bound_ms)
    rec = {"name": full, "scenario": sc.name, "requirements": scenario_requirements(protocol, sc),
           "description": sc.description}
    t0 = time.monotonic()
    before = rss.reset()
    skip = None
    st = HealthyStats()
    if sc.needs_pid and not t.pid:
        skip = "needs the server's pid (--server-cmd or --server-pid)"
    else:
        try:
            ctx.healthy = Healthy(t, fresh=sc.fresh_healthy).start()
            time.sleep(0.3)
            sc.run(ctx)
        except SkipScenario as e:
            skip = str(e)
        except (CheckFailure, OSError) as e:
            ctx.fail(f"the scenario could not go on: {e}")
        finally:
            if ctx.healthy:
                st = ctx.healthy.stop()
    peak = rss.peak_kib if t.pid else None
    if not skip:
        if st.errors:
            ctx.fail(f"{st.errors} healthy requests failed; first: {st.details[0] if st.details else '?'}", 2)
        if st.served == 0:
            ctx.fail("no healthy request was served during the scenario", 2)
        if ctx.p99_checked and st.p99_ms() > p99_bound_ms:
            ctx.fail(f"healthy p99 latency {st.p99_ms():.0f} ms, above {p99_bound_ms:g} ms", 2)
        if before and peak:
            bound_kib = (limits.memory_budget + RSS_SLACK + FLOOR * ctx.hostile_conns) // 1024
            if peak - before > bound_kib:
                ctx.fail(f"server RSS grew by {(peak - before) / 1024:.1f} MiB, above the budget "
                         f"{limits.memory_budget / MiB:.1f} MiB + {RSS_SLACK // MiB} MiB + 64 KiB × "
                         f"{ctx.hostile_conns} connections", 1)
        if not alive(t.pid):
            ctx.fail("the server process is gone")
    verdict = "skip" if skip else ("FAIL" if ctx.failures else "ok")
    prefix = rec["requirements"][0].rsplit("-", 1)[0]
    failed = []
    for res in ctx.failed_res:
        for rid in ([f"{prefix}-{res}"] if res else rec["requirements"]):
            if rid not in failed:
                failed.append(rid)
    rec.update({"verdict": verdict, "skip_reason": skip, "failures": ctx.failures, "failed_requirements": failed,
                "notes": ctx.notes,
                "healthy_served": st.served, "healthy_errors": st.errors, "healthy_p99_ms": round(st.p99_ms(), 3),
                "healthy_p99_checked": ctx.p99_checked, "rss_before_kib": before, "peak_rss_kib": peak,
                "hostile_connections": ctx.hostile_conns, "duration_s": round(time.monotonic() - t0, 3)})
    if skip:
        rec["notes"] = [f"skipped: {skip}"] + rec["notes"]
    return rec
