"""Control frames outside a fragmented message (the fragmented case is net.py's ping_between_fragments): an
unsolicited pong is not answered (WS-PING-2), a ping after it is (WS-PING-1), and a data message after both is
echoed, all from one write. And the close frame that ends a stream: nothing after it is read (WS-CLOSE-4)."""
from __future__ import annotations

from ...checks import CheckFailure
from ...netsuite import Conn
from .frames import BINARY, CLOSE, PING, PONG, frame, key_for


def _one_write(t, fs, exp, what: str, closes: str = ""):
    """``fs`` (client frames) sent in one write: the frames read back are ``exp``; with ``closes``, the server
    then closes the connection (``closes`` says after what)."""
    c = Conn(t)
    try:
        c.send(b"".join(c.frame(f) for f in fs))
        got = c.read_frames(len(exp))
        if got != exp:
            raise CheckFailure(f"{what}:\n  expected {[f.short() for f in exp]}"
                               f"{', then the server closes the connection' if closes else ''}\n"
                               f"  actual   {[f.short() for f in got]}")
        if closes:
            c.expect_closed(what=closes)
    finally:
        c.close()


def c_pong_unanswered(t):
    _one_write(t, [frame(PONG, b"unsolicited", True, key_for(1)), frame(PING, b"p", True, key_for(2)),
                   frame(BINARY, b"after", True, key_for(3))], [frame(PONG, b"p"), frame(BINARY, b"after")],
               "an unsolicited pong, a ping, then a binary message, in one write (the pong not answered)")


def c_nothing_after_close(t):
    """A close frame with a code and no reason, then in the same write a binary message and a ping: the
    close answered with its code (WS-CLOSE-5), the message not echoed and the ping not answered (WS-CLOSE-4:
    a close ends the stream), then the server closes the connection."""
    _one_write(t, [frame(CLOSE, b"\x03\xe8", True, key_for(1)), frame(BINARY, b"after the close", True, key_for(2)),
                   frame(PING, b"p", True, key_for(3))], [frame(CLOSE, b"\x03\xe8")],
               "a close frame (code 1000, no reason), a binary message and a ping, in one write",
               " after answering the close frame (the message and ping after it: not read)")


def c_close_code_only(t):
    """A close frame with a code and no reason, alone: answered with the same code, then the server closes
    the connection (WS-CLOSE-5). The benchmark's raw echo passes it too (tools/mutation's harness runs it
    there: an echo that kept reading after the close kept the connection open)."""
    _one_write(t, [frame(CLOSE, b"\x03\xe8", True, key_for(1))], [frame(CLOSE, b"\x03\xe8")],
               "a close frame with code 1000 and no reason", " after answering the close frame")
