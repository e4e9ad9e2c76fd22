"""The pause scenario: the server stopped (SIGSTOP) longer than its idle timeout, then continued."""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import List

from ..checks import CheckFailure
from ..netsuite import payload_for
from .peers import Peer, _pending
from .scenario import Ctx


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

    ths = [threading.Thread(target=pipelined, args=(k,), daemon=True) for k in range(nconn)]
    for th in ths:
        th.start()
    started.wait(10)
    # The quiet and half-frame connections open and send just before the stop, not before the pipelining
    # starts: their silence before the stop must stay well under the idle timeout (1 s at CI's small
    # limits, where a busy machine once took longer than that to start the pipelining, and the server
    # rightly closed them for silence before any pause); their silence during the pause is what is checked.
    quiet = [Peer(t, pause + 10) for _ in range(3)]
    half = Peer(t, pause + 10)
    half_req = t.spec.net_request(2, payload_for(77, 300))
    half_data = half.encode(half_req)
    for i, q in enumerate(quiet):
        q.req = t.spec.net_request(1, b"before-the-pause-%d" % i)
        q.s.sendall(q.encode(q.req))
        q.recv_frames(1, 5.0)
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
