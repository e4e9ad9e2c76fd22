"""The memory budget scenario: connections holding nearly maximal unfinished frames."""
from __future__ import annotations

import socket
import threading
import time

from ..checks import CheckFailure
from ..netsuite import payload_for
from .limits import KiB, MiB, RSS_SLACK
from .peers import Peer, closed_now, send_now
from .scenario import Ctx


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
