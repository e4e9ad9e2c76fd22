"""`frameproof net --protocol length-field`: the network cases (LF-ECHO-*), generic ones from
frameproof.netsuite with this protocol's requirement IDs, and the length-field-only ones."""
from __future__ import annotations

from typing import List

from ... import netsuite as N
from ...netsuite import NetCase, SkipCase
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


def cases() -> List[NetCase]:
    return [
        NetCase("one_request_one_reply", ["LF-ECHO-1"], "One request, one reply; an empty payload too", N.c_one),
        NetCase("pipelined_one_write", ["LF-STR-2", "LF-ECHO-1"], "200 requests in one write are answered in order",
                N.c_pipelined),
        NetCase("dribbled_byte_by_byte", ["LF-STR-1"], "Frames written one byte per write", N.c_dribble),
        NetCase("split_at_every_offset", ["LF-STR-1"], "A frame split in two writes at every offset",
                N.c_split_every_offset),
        NetCase("largest_allowed_frame", ["LF-LIM-1"], "The largest payload the server allows", N.c_largest),
        NetCase("many_connections", ["LF-ECHO-1"], "64 concurrent connections each check their own replies",
                N.c_many_connections),
        NetCase("fifo_order", ["LF-ECHO-1"], "256 pipelined distinct payloads come back in order (FIFO, not newest-first)",
                N.c_order_distinct),
        NetCase("oversize_closes_connection", ["LF-ECHO-2", "LF-LIM-1"],
                "A header over the limit: earlier replies arrive, this connection closes, others keep working", N.oversize),
        NetCase("header_promises_gigabytes", ["LF-LIM-3"], "A header promising 2 GiB: no allocation, server keeps serving",
                c_gigabytes),
        NetCase("garbage_bytes", ["LF-LIM-3"], "64 KiB of random bytes: the server stays up and bounded", N.c_garbage),
        NetCase("stops_mid_frame", ["LF-STR-3"], "Connections closed or reset mid-frame do not disturb others",
                N.c_stops_mid_frame),
        NetCase("half_close_gets_replies", ["LF-ECHO-3"],
                "After a half-close, all complete frames are answered, then the server closes", N.c_half_close),
        NetCase("bad_length_field_closes", ["LF-ECHO-2", "LF-LEN-2", "LF-LEN-3"], "An invalid length field closes the connection",
                c_bad_length),
        NetCase("tcp_nodelay", ["LF-ECHO-4"], "Back-to-back small replies are not delayed by Nagle (SHOULD)", N.c_nodelay),
        NetCase("long_connection_100k", ["LF-ECHO-1", "LF-STR-2"], "100,000 verified requests on one connection, 64 in flight",
                N.c_long_connection),
        NetCase("connection_churn_2000", ["LF-ECHO-1"], "2,000 connections one after another, one request each",
                N.c_connection_churn),
    ]
