"""WSD-LIM-2 on the wire: the memory budget (WS-RES-1) counts a connection's zlib state; and, under the same
small budget, its count of unfinished frames (budget_unfinished_frames: the stress group's memory scenario in
small, for a run that has no minutes for the stress group, the mutation pass).

A server started for the case from the command under test, with ``--memory-budget`` a few MiB (the
codec's message limit must be small enough for that budget to be allowed: WS-RES-1 refuses a budget
below the largest message), takes connections that each agree on permessage-deflate and send one
compressible message, so that the server makes both an inflater and a deflater (WSD-LIM-3: not before).
Each connection still served afterwards holds at least the windows of that state, whatever the
implementation: 2^(w+2) bytes for a deflater with a 2^w window (zlib's window and hash chain; zconf.h's
memory formula without its memLevel part, which an implementation chooses) and 2^w for an inflater.
Their sum must stay within the budget: a server that leaves the state out of its count, or counts it
as less than its windows, keeps serving more connections than the budget holds. Connections without
the extension (holding nothing) are served throughout (WS-RES-2)."""
from __future__ import annotations

import socket
import time
from typing import List, Optional

from ...checks import CheckFailure
from ...netsuite import Conn
from ...netsuite.process_cases import own_server_with
from .deflate_net import Link, data_frames, deflate_on
from .frames import BINARY

#: the budget the server is started with: at least the codec's limits (WS-RES-1), at least this
MIN_BUDGET = 8 << 20
#: the case's codecs: a message limit at most this (a larger one makes the budget, and the connections
#: needed to pass it, grow with it: 100 MiB would take 1 300 connections)
MAX_LIMIT = 16 << 20
OFFER = "permessage-deflate; client_max_window_bits"
MESSAGE = b"frameproof counts the zlib state in the memory budget. " * 20  # 1100 bytes, compressible
PROBE = b"still served?"
HEALTHY = 4


def applies(codec) -> bool:
    return deflate_on(codec) and 0 < getattr(codec, "message_limit", 0) <= MAX_LIMIT


def deflater_floor(bits: int) -> int:
    """The least a deflater with a 2^bits window holds: its window (2 x 2^bits) and hash chain (2^bits u16)."""
    return 1 << (bits + 2)


def inflater_floor(bits: int) -> int:
    """The least an inflater that reads a 2^bits window holds: the window."""
    return 1 << bits


def _bits(v) -> int:
    return v if isinstance(v, int) and v is not True and 8 <= v <= 15 else 15


def _probe(conns: List[Conn], timeout: float = 5.0) -> List[Optional[bool]]:
    """Sends an uncompressed message on each connection, then reads: True where it is echoed, False where
    the connection is closed (EOF, reset, a close frame), None where nothing came within ``timeout``."""
    for i, c in enumerate(conns):
        try:
            c.send(data_frames(BINARY, PROBE, (), False, 1000 + i))
        except OSError:
            pass
    out: List[Optional[bool]] = []
    deadline = time.monotonic() + timeout
    for c in conns:
        link = Link.__new__(Link)
        link.c, link.ctx = c, ""
        try:
            fin, rsv, op, payload = link.read_frame(timeout=max(0.2, deadline - time.monotonic()))
            out.append(op == BINARY and payload == PROBE and fin and not rsv)
        except CheckFailure as e:
            out.append(None if "no frame within" in str(e) else False)
        except OSError:
            out.append(False)
    return out


def c_state_in_budget(t):
    """The connections a server keeps serving after compressing for each hold zlib state within its budget."""
    budget = max(MIN_BUDGET, t.codec.message_limit, t.limit)
    srv, own = own_server_with(t, f"--memory-budget {budget}", "WS-RES-1")
    healthy: List[Conn] = []
    links: List[Link] = []
    compressed: List[bool] = []
    floor_d = deflater_floor(15) + inflater_floor(15)
    n = 2 * budget // floor_d + 4  # twice what the budget holds at the least each can hold
    try:
        for i in range(HEALTHY):
            healthy.append(Conn(own))
        _healthy(own, healthy, "before the compressing connections")
        for i in range(n):
            try:
                link = Link(own, OFFER, f"compressing connection {i + 1} of {n}: ")
            except CheckFailure:
                if links and _gone(links):  # the server stopped taking connections: a crash shows below
                    break
                raise
            link.send_message(MESSAGE)
            try:
                _, got, rsv1 = link.read_message(f"the echo of a {len(MESSAGE)}-byte compressed message")
                if got != MESSAGE:
                    raise CheckFailure(f"compressing connection {i + 1}: the echo differs from the message "
                                       f"({len(got)} bytes {got[:24]!r})", ["WS-ECHO-1"])
                compressed.append(rsv1)
            except CheckFailure as e:
                if "closed the connection" not in str(e) and "reset" not in str(e):
                    raise
                compressed.append(False)  # closed for the budget before (or instead of) its echo
            agreed = link.agreed
            # the client's zlib state is not needed again: 2 x 300 KiB a connection kept for nothing
            link.deflater = link.inflater = link.kept = None
            links.append(link)
        time.sleep(0.2)  # a budget close may land just after the last echo
        alive = _probe([lk.c for lk in links])
        stuck = [i + 1 for i, a in enumerate(alive) if a is None]
        if stuck:
            raise CheckFailure(f"{len(stuck)} of {len(links)} connections that agreed on permessage-deflate and had "
                               f"one message echoed (e.g. {stuck[:5]}):\n  expected an echo of an uncompressed "
                               f"message, or the connection closed\n  actual   nothing within 5 s", ["WS-RES-2"])
        _healthy(own, healthy, f"after {len(links)} compressing connections")
        wd = _bits(getattr(agreed, "server_max_window_bits", None))
        wi = _bits(getattr(agreed, "client_max_window_bits", None))
        with_d = sum(1 for a, z in zip(alive, compressed) if a and z)
        with_i = sum(1 for a, z in zip(alive, compressed) if a and not z)
        least = with_d * (deflater_floor(wd) + inflater_floor(wi)) + with_i * inflater_floor(wi)
        if least > budget:
            raise CheckFailure(
                f"a server started with --memory-budget {budget}, then {len(links)} connections each agreeing on "
                f"{OFFER!r} (server window 2^{wd}, client window 2^{wi}) and sending one compressible message of "
                f"{len(MESSAGE)} bytes, one connection after another; then an uncompressed message on each:\n"
                f"  expected the connections still served to hold zlib state within the budget: at least "
                f"{deflater_floor(wd) + inflater_floor(wi)} bytes each where the echo came compressed (a deflater's "
                f"window and hash chain, an inflater's window), {inflater_floor(wi)} where it did not\n"
                f"  actual   {with_d} served after a compressed echo and {with_i} after an uncompressed one: at least "
                f"{least} bytes, over the budget by {least - budget}: the state is not counted, or counted as less "
                f"than its windows", ["WSD-LIM-2", "WS-RES-1"])
        if not any(alive):
            raise CheckFailure(f"a server started with --memory-budget {budget}: of {len(links)} connections that "
                               f"compressed one message each, none is served afterwards:\n  expected the budget to "
                               f"close connections only until the rest fit (about {budget // (340 << 10)} at zlib's "
                               f"own sizes)\n  actual   every one closed", ["WS-RES-1"])
    finally:
        for c in healthy + [lk.c for lk in links]:
            c.close()
        srv.stop()


def _gone(links: List[Link]) -> bool:
    try:
        s = socket.create_connection((links[0].t.host, links[0].t.port), timeout=2)
        s.close()
        return False
    except OSError:
        return True


def _healthy(t, conns: List[Conn], when: str):
    """WS-RES-2: connections holding nothing (no extension, no message unfinished) are served."""
    alive = _probe(conns)
    if not all(alive):
        raise CheckFailure(f"{HEALTHY} connections without the extension, holding nothing, {when}:\n  expected each "
                           f"to echo an uncompressed message\n  actual   {alive.count(False)} closed, "
                           f"{alive.count(None)} silent", ["WS-RES-2"])


def applies_partial(codec) -> bool:
    """The unfinished-frames case: a message limit the small budget allows, frames larger than RES-2's floor."""
    frame = getattr(codec, "max_payload", 0) or getattr(codec, "DEFAULT_MAX", 0)  # 0: the spec's default
    return 0 < getattr(codec, "message_limit", 0) <= MAX_LIMIT and frame > 4 * FLOOR


FLOOR = 64 << 10  # WS-RES-2: a connection holding at most this is never closed for the budget


def c_partial_in_budget(t):
    """The budget's own accounting, without the extension: connections each holding an unfinished frame of
    nearly the frame limit, twice what the budget holds, then as many holding an unfinished message (a first
    fragment); those still open afterwards hold within it."""
    budget = max(MIN_BUDGET, t.codec.message_limit, t.limit)
    size = min(t.limit, t.codec.message_limit)  # the largest frame and message allowed, all but its last byte sent
    n = 2 * budget // size + 2
    srv, own = own_server_with(t, f"--memory-budget {budget}", "WS-RES-1")
    healthy: List[Conn] = []
    try:
        for _ in range(HEALTHY):
            healthy.append(Conn(own))
        _healthy(own, healthy, "before the holding connections")
        for kind in ("frame", "message"):
            served = _hold_round(own, kind, size, n)
            _healthy(own, healthy, f"after {n} connections holding an unfinished {kind}")
            if served * (size - 1) > budget:
                raise CheckFailure(
                    f"a server started with --memory-budget {budget}, then {n} connections each sending all but the "
                    f"last byte of a {size}-byte {HOLDS[kind]}, one after another, then each its last byte:\n"
                    f"  expected the connections still open to hold at most the budget together: at most "
                    f"{budget // (size - 1)} of them\n  actual   {served} echoed their {kind}: {served * (size - 1)} "
                    f"bytes held at once, over the budget: the unfinished {kind}s are not counted, or counted as less "
                    f"than they are", ["WS-RES-1"])
            if served == 0:
                raise CheckFailure(f"a server started with --memory-budget {budget}: of {n} connections each holding "
                                   f"{size - 1} bytes of an unfinished {kind}, none was served afterwards:\n  expected "
                                   f"the budget to close connections only until the rest fit (about {budget // size})"
                                   f"\n  actual   every one closed", ["WS-RES-1"])
    finally:
        for c in healthy:
            c.close()
        srv.stop()


HOLDS = {"frame": "frame (one binary frame)", "message": "message (a first fragment of all but its last byte, then "
         "a continuation of one)"}


def _hold_round(own, kind: str, size: int, n: int) -> int:
    """``n`` connections each holding all but the last byte of a ``size``-byte unfinished frame (``kind``
    "frame": its payload in the receive buffer) or message (a whole first fragment: the message's parts), then
    that last byte; the number whose echo came whole."""
    body = bytes(range(256)) * (size // 256 + 1)
    zero_key = bytes(4)  # masked with a zero key: the payload goes as it is
    if kind == "frame":
        first = bytes([0x82, 0x80 | 127]) + size.to_bytes(8, "big") + zero_key + body[:size - 1]
        last = body[size - 1:size]
    else:
        first = bytes([0x02, 0x80 | 127]) + (size - 1).to_bytes(8, "big") + zero_key + body[:size - 1]
        last = bytes([0x80, 0x80 | 1]) + zero_key + body[size - 1:size]
    holders: List[Conn] = []
    try:
        for _ in range(n):
            c = Conn(own)
            holders.append(c)
            try:
                c.send(first)
            except OSError:
                pass  # closed for the budget while it wrote
            # the server reads it all before the next one starts: what it holds afterwards is what it counts,
            # not two transfers at once (a server that forgets a finished fragment would pass by chance)
            time.sleep(0.05 + size / (100 << 20))
        time.sleep(0.3)  # the last reads reach the budget
        for c in holders:  # the last byte: a connection still open echoes the whole message
            try:
                c.send(last)
            except OSError:
                pass
        served = 0
        for i, c in enumerate(holders):
            try:
                got = c.read_frames(1, what=f"the echo of connection {i + 1}'s {size}-byte {kind}")
                while got and not got[-1].header.fin:  # an echo in fragments is an echo too
                    got += c.read_frames(1, what=f"the rest of connection {i + 1}'s echo")
            except CheckFailure as e:
                if c.eof or "closed" in str(e) or "reset" in str(e):
                    continue
                raise CheckFailure(f"connection {i + 1} of {n}, which held an unfinished {HOLDS[kind]} of {size} bytes, "
                                   f"then sent its last byte:\n  expected the message echoed, or the connection closed "
                                   f"for the budget\n  actual   {e}", ["WS-RES-2"])
            if b"".join(bytes(f.payload) for f in got) == body[:size]:
                served += 1
            else:
                raise CheckFailure(f"connection {i + 1}: the echo of a {size}-byte {kind} is "
                                   f"{[f.short() for f in got]}", ["WS-ECHO-1"])
        return served
    finally:
        for c in holders:
            c.close()


def cases() -> list:
    from ...netsuite import NetCase
    from .deflate_idle import cases as idle
    from .timeouts_small import c_timeouts_in_seconds
    return idle() + [
        NetCase("deflate_state_in_budget", ["WSD-LIM-2", "WS-RES-1", "WS-RES-2"], "A server started with a memory budget "
                "of a few MiB, then twice as many connections as zlib's windows fit in it, each compressing one "
                "message: those still served hold their zlib state within the budget; connections without the "
                "extension are served throughout", c_state_in_budget, when=applies),
        NetCase("budget_unfinished_frames", ["WS-RES-1", "WS-RES-2"], "A server started with a memory budget of a "
                "few MiB, then twice as many connections as it holds each sending all but the last byte of the "
                "largest frame: those still open hold within the budget and echo their frame once it ends; "
                "connections holding nothing are served throughout", c_partial_in_budget, when=applies_partial),
        NetCase("timeouts_in_seconds", ["WS-RES-3", "WS-RES-4"], "A server started with 1.2 s timeouts: a connection "
                "sending a message every 0.3 s is served throughout; an opening dribbled a byte at a time, a "
                "connection idle after its opening and an unfinished frame are closed in time", c_timeouts_in_seconds,
                when=applies_partial),
    ]
