"""Control frames outside a fragmented message (the fragmented case is net.py's ping_between_fragments): an
unsolicited pong is not answered (WS-PING-2), a ping after it is (WS-PING-1), and a data message after both is
echoed, all from one write."""
from __future__ import annotations

from ...checks import CheckFailure
from ...netsuite import Conn
from .frames import BINARY, PING, PONG, frame, key_for


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
