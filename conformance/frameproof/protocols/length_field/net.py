"""`frameproof net --protocol length-field`: the network cases (LF-ECHO-*), generic ones from
frameproof.netsuite with this protocol's requirement IDs, and the length-field-only ones."""
from __future__ import annotations

from typing import List

from ... import netsuite as N
from ...checks import CheckFailure
from ...netsuite import Conn, NetCase, SkipCase
from ...oracle import Frame
from .oracle import encode_length


def c_gigabytes(t):
    c = t.codec
    if abs(c.lf_size) == 4 or c.lf_size == 0:
        N.hostile(t, bytes(c.lf_offset) + encode_length(c, 2 ** 31 - 1), "a length promising 2 GiB")
    else:
        # a 16-bit field cannot promise gigabytes: promise the maximum on many connections and stall
        N.stalled_maximal_frames(t)


def c_bad_length(t):
    c = t.codec
    if c.lf_size == 0:
        N.hostile(t, bytes(c.lf_offset) + b"\xff\xff\xff\xff\xff\x01", "a 6-byte varint")
    elif abs(c.lf_size) == 4:
        N.hostile(t, bytes(c.lf_offset) + b"\xff\xff\xff\xff", "a length with bit 31 set")
    else:
        raise SkipCase("the profile's length field has no invalid values")


ROLES = dict(prefix="LF", close="LF-ECHO-2", lim="LF-LIM-1", mem="LF-LIM-3", trunc="LF-STR-3", stop="LF-STR-4",
             split="LF-STR-1", half="LF-ECHO-3", order="LF-ECHO-1")


def c_empty_flood(t):
    """100,000 empty frames in one write: 100,000 empty replies, in order, then a request."""
    def body():
        c = Conn(t)
        try:
            empty = c.frame(Frame(0, 0, b""))
            last = Frame(0, 0, b"after-100000-empty-frames")
            c.send(empty * 100000 + c.frame(last))
            got = c.read_frames(100001, timeout=N.READ_TIMEOUT * 6)
            if any(f.payload for f in got[:-1]) or got[-1] != last:
                raise CheckFailure(f"expected 100,000 empty replies then {last.short()}, actual last {got[-1].short()}")
        finally:
            c.close()
    N.watched(t, body, "100,000 empty frames in one write")


def c_largest_frames_unread(t):
    """100 frames of the largest payload the profile allows (at most 64 KiB) written before any read:
    every echo, in order (the server bounds its output by reading less, it loses nothing)."""
    n = min(t.limit, t.codec.capacity, 65535)

    def body():
        c = Conn(t)
        try:
            reqs = [Frame(0, 0, N.payload_for(i, n)) for i in range(100)]
            data = b"".join(c.frame(r) for r in reqs)
            import threading
            th = threading.Thread(target=lambda: N._quiet_send(c, data), daemon=True)
            th.start()
            N.check_replies(t, reqs, c.read_frames(len(reqs), timeout=N.READ_TIMEOUT * 6),
                            f"100 frames of {n} bytes written before any read: ")
            th.join(N.READ_TIMEOUT)
        finally:
            c.close()
    N.watched(t, body, "100 largest frames written before any read")


def c_reset_largest_64(t):
    """64 connections each send the largest frame the profile allows but its last byte, then reset."""
    n = min(t.limit, t.codec.capacity, 65535)

    def body():
        for k in range(64):
            c = Conn(t)
            N._quiet_send(c, c.frame(Frame(0, 0, N.payload_for(k, n)))[:-1])
            N._rst(c)
    N.watched(t, body, "64 largest frames reset one byte short")


def c_length_stall_64(t):
    """64 connections declare the largest length their field allows and stall after 100 bytes."""
    N.stalled_maximal_frames(t, 64)


def cases() -> List[NetCase]:
    return [
        N.generic("one_request_one_reply", ["LF-ECHO-1"]),
        N.generic("pipelined_one_write", ["LF-STR-2", "LF-ECHO-1"]),
        N.generic("dribbled_byte_by_byte", ["LF-STR-1"]),
        N.generic("split_at_every_offset", ["LF-STR-1"]),
        N.generic("largest_allowed_frame", ["LF-LIM-1"]),
        N.generic("many_connections", ["LF-ECHO-1"]),
        N.generic("fifo_order", ["LF-ECHO-1"]),
        N.generic("oversize_closes_connection", ["LF-ECHO-2", "LF-LIM-1"]),
        N.generic("oversize_whole_frame", ["LF-LIM-1", "LF-ECHO-2"]),
        NetCase("header_promises_gigabytes", ["LF-LIM-3"], "A header promising 2 GiB: no allocation, server keeps serving",
                c_gigabytes, hostile=True),
        N.generic("garbage_bytes", ["LF-LIM-3"]),
        N.generic("stops_mid_frame", ["LF-STR-3"]),
        N.generic("half_close_gets_replies", ["LF-ECHO-3"]),
        NetCase("bad_length_field_closes", ["LF-ECHO-2", "LF-LEN-2", "LF-LEN-3"], "An invalid length field closes the connection",
                c_bad_length, hostile=True),
        NetCase("empty_frames_flood", ["LF-ECHO-1", "LF-STR-2"], "100,000 empty frames in one write: as many empty "
                "replies, in order", c_empty_flood, hostile=True),
        NetCase("largest_frames_unread", ["LF-ECHO-1", "LF-RES-5"], "100 frames of the largest payload written "
                "before any read: every echo, in order", c_largest_frames_unread, hostile=True),
        NetCase("reset_largest_64", ["LF-LIM-3", "LF-RES-1"], "64 connections reset one byte short of the largest "
                "frame", c_reset_largest_64, hostile=True),
        NetCase("largest_length_stall_64", ["LF-LIM-3", "LF-RES-2"], "64 connections declare the largest length their "
                "field allows and stall", c_length_stall_64, hostile=True),
        N.generic("tcp_nodelay", ["LF-ECHO-4"]),
        N.generic("long_connection_100k", ["LF-ECHO-1", "LF-STR-2"]),
        N.generic("connection_churn_2000", ["LF-ECHO-1"]),
        *N.hostile_cases(ROLES),
        *N.process_cases("LF-RES-1"),
    ]
