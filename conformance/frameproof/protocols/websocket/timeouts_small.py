"""WS-RES-3 and WS-RES-4 in seconds: a server started for the case with a timeout of 1.2 s, and four
connections side by side for about four seconds. The stress group's timeout scenarios take the defaults
(30 s and 10 s) and minutes; this one is for a run without them (the mutation pass), in the small-limits
cell beside the budget's cases.

- active: a message every 0.3 s for three timeouts: every one echoed (the idle timer starts at each byte);
- dribbled opening: the opening request one byte every 0.2 s: closed within the timeout from the accept
  plus slack (WS-RES-3: the handshake completes within the idle timeout of the accept, however spread);
- idle after its opening: closed within the timeout plus slack;
- an unfinished frame (three bytes of a header): closed within the frame timeout plus slack (WS-RES-4)."""
from __future__ import annotations

import socket
import time

from ...checks import CheckFailure
from ...netsuite import Conn
from ...netsuite.process_cases import own_server_with
from ...netsuite.conn import check_replies, request
from .net import request_head

TIMEOUT_MS = 1200
SLACK_S = 2.0  # a busy machine's scheduling, and a server's timer granularity
ACTIVE_EVERY_S = 0.3


def c_timeouts_in_seconds(t):
    srv, own = own_server_with(t, f"--idle-timeout-ms {TIMEOUT_MS} --frame-timeout-ms {TIMEOUT_MS}", "WS-RES-3")
    limit = TIMEOUT_MS / 1000 + SLACK_S
    conns = []
    try:
        active, idle, partial = Conn(own), Conn(own), Conn(own)
        conns += [active, idle, partial]
        dribble = socket.create_connection((own.host, own.port), timeout=5)
        accepted = time.monotonic()
        partial.send(b"\x82\xfe\x01")  # a masked binary frame's first three header bytes: a 16-bit length follows
        partial_at = time.monotonic()
        head = request_head(host=own.host)
        closed = {}  # name -> seconds after its clock started, when the server closed it
        sent, i, end = 0, 0, accepted + 3 * TIMEOUT_MS / 1000
        next_msg = time.monotonic()
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_msg:  # the active connection: a message, its echo
                r = request(own, i % 250 + 1, b"active %d" % i)
                active.send(active.frame(r))
                check_replies(own, [r], active.read_frames(1), f"the active connection, message {i + 1} "
                              f"({now - accepted:.1f} s after its accept, a message every {ACTIVE_EVERY_S:g} s, "
                              f"idle timeout {TIMEOUT_MS} ms): ")
                i += 1
                next_msg = now + ACTIVE_EVERY_S
            if "dribbled" not in closed and sent < len(head):
                try:
                    dribble.send(head[sent:sent + 1])
                    sent += 1
                except OSError:
                    closed["dribbled"] = time.monotonic() - accepted
            time.sleep(0.2)
        for name, c, start in (("idle", idle, accepted), ("partial", partial, partial_at)):
            try:
                c.expect_closed(timeout=max(0.1, start + limit - time.monotonic()))
            except CheckFailure as e:
                raise CheckFailure(
                    f"a server started with --idle-timeout-ms {TIMEOUT_MS} --frame-timeout-ms {TIMEOUT_MS}: "
                    f"{'a connection idle after its opening' if name == 'idle' else 'three bytes of a frame header, then nothing'}:"
                    f"\n  expected the connection closed within {limit:g} s\n  actual   {e}",
                    ["WS-RES-3" if name == "idle" else "WS-RES-4"]) from None
        if "dribbled" not in closed:
            dribble.settimeout(max(0.1, accepted + limit - time.monotonic()))
            try:
                got = dribble.recv(65536)
                if got and b" 101 " in got.split(b"\r\n", 1)[0]:
                    raise CheckFailure(f"an opening request sent one byte every 0.2 s: the server switched protocols "
                                       f"after {sent} of its {len(head)} bytes", ["WS-RES-3"])
                while got:
                    got = dribble.recv(65536)
            except socket.timeout:
                raise CheckFailure(
                    f"a server started with --idle-timeout-ms {TIMEOUT_MS}: an opening request sent one byte every "
                    f"0.2 s ({sent} of its {len(head)} bytes in {time.monotonic() - accepted:.1f} s):\n  expected the "
                    f"connection closed within the idle timeout of the accept ({limit:g} s with slack)\n  actual   "
                    f"still open: the handshake's time counted from its last byte, not from the accept",
                    ["WS-RES-3"]) from None
            except OSError:
                pass
    finally:
        for c in conns:
            c.close()
        try:
            dribble.close()
        except NameError:
            pass
        srv.stop()
