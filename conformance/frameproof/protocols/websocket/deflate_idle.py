"""WSD-LIM-4 on the wire: between messages a permessage-deflate connection holds, against the memory budget,
its zlib state and little more; the buffers of a large message are given back once it is echoed.

A server started for the case with ``--memory-budget`` 8 MiB (deflate_budget's MIN_BUDGET) takes a few
connections, one after another, each agreeing on permessage-deflate and sending one compressible message
of nearly the codec's message limit (1 MiB in the matrix's budget profile): the server inflates it to
the whole message and compresses its echo. Then every connection sends an uncompressed message. Together
they hold the budget's worth only if each kept its large message's buffers (``BIG_CONNS`` x 1 MiB is over
8 MiB), while their zlib states take well under half of it even at zlib's own largest sizes (deflater
256 KiB, inflater 44 KiB, with memLevel 8 and 15-bit windows): every connection must still be served, and
so must the connections holding nothing (WS-RES-2)."""
from __future__ import annotations

import time
from typing import List

from ...checks import CheckFailure
from ...netsuite import Conn
from ...netsuite.process_cases import own_server_with
from .deflate_budget import HEALTHY, MIN_BUDGET, OFFER, _healthy, _probe, applies
from .deflate_net import Link

#: connections that each complete one large message: their messages together are over the budget
BIG_CONNS = 10
#: zlib's own largest state for one connection (deflater and inflater at memLevel 9, 15-bit windows), with
#: room for an implementation's own bookkeeping: what the case allows a connection between messages
STATE_ALLOWANCE = 640 << 10


def _shape(codec):
    """(budget, message size) the case uses for ``codec``."""
    frame = getattr(codec, "max_payload", 0) or getattr(codec, "DEFAULT_MAX", 0)
    return max(MIN_BUDGET, codec.message_limit, frame), codec.message_limit - 64


def applies_idle(codec) -> bool:
    """A deflate codec whose message limit makes BIG_CONNS messages more than the budget while BIG_CONNS zlib
    states fit in it (the matrix's budget profile: 1 MiB messages, an 8 MiB budget)."""
    if not applies(codec):
        return False
    budget, size = _shape(codec)
    return BIG_CONNS * STATE_ALLOWANCE <= budget < BIG_CONNS * size


def c_idle_after_large_messages(t):
    budget, size = _shape(t.codec)
    srv, own = own_server_with(t, f"--memory-budget {budget}", "WS-RES-1")
    healthy: List[Conn] = []
    links: List[Link] = []
    message = (b"frameproof gives the buffers of a message back after its echo. " * (size // 64 + 1))[:size]
    try:
        for _ in range(HEALTHY):
            healthy.append(Conn(own))
        _healthy(own, healthy, "before the large messages")
        for i in range(BIG_CONNS):
            link = Link(own, OFFER, f"connection {i + 1} of {BIG_CONNS} (one {size}-byte compressible message): ")
            link.send_message(message)
            _, got, _ = link.read_message(f"the echo of a {size}-byte compressed message")
            if got != message:
                raise CheckFailure(f"connection {i + 1}: the echo of a {size}-byte compressed message differs "
                                   f"({len(got)} bytes)", ["WS-ECHO-1"])
            link.deflater = link.inflater = link.kept = None  # the client's own zlib state: not needed again
            links.append(link)
            time.sleep(0.05)  # the server is done with the message before the next starts
        time.sleep(0.3)
        alive = _probe([lk.c for lk in links])
        if not all(alive):
            gone = [i + 1 for i, a in enumerate(alive) if not a]
            raise CheckFailure(
                f"a server started with --memory-budget {budget}, then {BIG_CONNS} connections one after another, "
                f"each agreeing on {OFFER!r} and sending one compressible message of {size} bytes, its echo read; "
                f"then an uncompressed message on each:\n  expected every connection served: between messages "
                f"each holds its zlib state (at most {STATE_ALLOWANCE} bytes allowed here; {BIG_CONNS} of them "
                f"fit the budget) and no message buffers\n  actual   connections {gone[:10]} "
                f"{'closed' if False in alive else 'silent'}: the buffers of each large message are kept (or "
                f"counted) after its echo, {BIG_CONNS} x {size} bytes being over the budget",
                ["WSD-LIM-4", "WS-RES-1"])
        _healthy(own, healthy, f"after {BIG_CONNS} large messages")
    finally:
        for c in healthy + [lk.c for lk in links]:
            c.close()
        srv.stop()


def cases() -> list:
    from ...netsuite import NetCase
    return [NetCase("deflate_idle_after_large_messages", ["WSD-LIM-4", "WS-RES-1", "WS-RES-2"], "A server started "
                    "with a memory budget of 8 MiB, then 10 connections each echoing one compressed message of "
                    "nearly 1 MiB: between messages each holds its zlib state, not the message's buffers, so all "
                    "stay served", c_idle_after_large_messages, when=applies_idle)]
