"""Network cases whose frames reach the server in reads of their own, a moment apart (TCP_NODELAY, 50 ms): a
server that answers whole frames where they lie in a read (a fast path) must still know what came before
them in earlier reads. A frame in progress (its header read, its payload not yet) and a fragmented message
in progress are each such a state."""
from __future__ import annotations

import time

from ... import oracle
from ...checks import CheckFailure
from ...netsuite import Conn
from .frames import BINARY, CLOSE, TEXT, frame, key_for
from .net import _read_closing


def c_payload_like_a_frame(t):
    """A frame whose payload, as it travels masked, is itself a complete masked frame, its header written first
    and its payload a moment later: one echo, of the outer payload (WS-STR-1). A server whose fast path read
    the bytes after a header as frames while that frame was still in progress echoed the inner one."""
    c = Conn(t)
    try:
        inner = c.frame(frame(BINARY, b"inner", True, key_for(5)))
        key = key_for(6)
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(inner))  # masked with ``key``, it reads as ``inner``
        outer = c.frame(frame(BINARY, payload, True, key))
        c.send(outer[:len(outer) - len(payload)])
        time.sleep(0.05)  # the header alone in the server's first read (TCP_NODELAY)
        c.send(outer[len(outer) - len(payload):])
        got = c.read_frames(1) + oracle.decode(c.codec, c.idle(0.2)).frames  # and nothing after it
        if got != [frame(BINARY, payload)]:
            raise CheckFailure(f"a frame whose payload on the wire is a whole masked frame ({inner.hex()}), its header "
                               f"sent before its payload:\n  expected one echo, {frame(BINARY, payload).short()}\n"
                               f"  actual   {[f.short() for f in got]}")
    finally:
        c.close()


def c_new_message_mid_fragments(t):
    """A binary frame while a text message is in progress, in a read of its own after the first fragment: close
    1002 and no echo (WS-FRAG-3). A server whose fast path answered whole frames without asking whether a
    message was in progress echoed it."""
    ctx = "a binary frame, written 50 ms after a first fragment, while that message is in progress"
    c = Conn(t)
    try:
        c.send(c.frame(frame(TEXT, b"frag", False, key_for(1))))
        time.sleep(0.05)
        c.send(c.frame(frame(BINARY, b"new", True, key_for(2))))
        last = _read_closing(c, 1, 1002, ctx)[-1]
        if last.header.opcode != CLOSE or last.payload[:2] != (1002).to_bytes(2, "big"):
            raise CheckFailure(f"{ctx}:\n  expected a close frame with code 1002\n  actual   {last.short()}")
        c.expect_closed(what=f" after {ctx}")
    finally:
        c.close()
