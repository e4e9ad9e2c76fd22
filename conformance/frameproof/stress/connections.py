"""Scenarios of connections and descriptors: connect/close churn, resets mid-frame, the
connection limit, descriptor exhaustion."""
from __future__ import annotations

import resource
import threading
import time

from ..checks import CheckFailure
from ..netsuite import payload_for
from .limits import CPU_SPIN, KiB
from .peers import Peer, closed_now, raw_socket, rst_close
from .probes import alive, cpu_seconds, fd_count
from .scenario import Ctx, SkipScenario, _fds_back


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
