"""Control frames outside a fragmented message (the fragmented case is net.py's ping_between_fragments): an
unsolicited pong is not answered (WS-PING-2), a ping after it is (WS-PING-1), and a data message after both is
echoed, all from one write. And the close frame that ends a stream: nothing after it is read (WS-CLOSE-4)."""
from __future__ import annotations

from ...checks import CheckFailure
from ...netsuite import Conn
from .frames import BINARY, CLOSE, PING, PONG, frame, key_for


def c_pong_unanswered(t):
    c = Conn(t)
    try:
        fs = [frame(PONG, b"unsolicited", True, key_for(1)), frame(PING, b"p", True, key_for(2)),
              frame(BINARY, b"after", True, key_for(3))]
        c.send(b"".join(c.frame(f) for f in fs))
        got = c.read_frames(2)
        exp = [frame(PONG, b"p"), frame(BINARY, b"after")]
        if got != exp:
            raise CheckFailure(f"an unsolicited pong, a ping, then a binary message, in one write:\n  expected "
                               f"{[f.short() for f in exp]} (the pong not answered)\n  actual   "
                               f"{[f.short() for f in got]}")
    finally:
        c.close()


def c_nothing_after_close(t):
    """A close frame with a code and no reason, then in the same write a binary message and a ping: the
    close answered with its code (WS-CLOSE-5), the message not echoed and the ping not answered (WS-CLOSE-4:
    a close ends the stream), then the server closes the connection."""
    c = Conn(t)
    try:
        fs = [frame(CLOSE, b"\x03\xe8", True, key_for(1)), frame(BINARY, b"after the close", True, key_for(2)),
              frame(PING, b"p", True, key_for(3))]
        c.send(b"".join(c.frame(f) for f in fs))
        got = c.read_frames(1)
        if got != [frame(CLOSE, b"\x03\xe8")]:
            raise CheckFailure(f"a close frame (code 1000, no reason), a binary message and a ping, in one write:\n"
                               f"  expected one close frame with code 1000, then the server's close\n"
                               f"  actual   {[f.short() for f in got]}")
        c.expect_closed(what=" after answering the close frame (the message and ping after it: not read)")
    finally:
        c.close()


def c_close_code_only(t):
    """A close frame with a code and no reason, alone: answered with the same code, then the server closes
    the connection (WS-CLOSE-5). The benchmark's raw echo passes it too (tools/mutation's harness runs it
    there: an echo that kept reading after the close kept the connection open)."""
    c = Conn(t)
    try:
        c.send(c.frame(frame(CLOSE, b"\x03\xe8", True, key_for(1))))
        got = c.read_frames(1)
        if got != [frame(CLOSE, b"\x03\xe8")]:
            raise CheckFailure(f"a close frame with code 1000 and no reason:\n  expected one close frame with code "
                               f"1000, then the server's close\n  actual   {[f.short() for f in got]}")
        c.expect_closed(what=" after answering the close frame")
    finally:
        c.close()
