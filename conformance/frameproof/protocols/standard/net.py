"""`frameproof net --protocol standard`: the network cases (STD-ECHO-*), generic ones from
frameproof.netsuite with this protocol's requirement IDs, and the standard-only ones."""
from __future__ import annotations

import time
from typing import List

from ... import netsuite as N
from ...checks import CheckFailure
from ...netsuite import Conn, NetCase, check_replies, payload_for, roundtrip
from ...oracle import Frame


def c_wraparound(t):
    c = Conn(t)
    try:
        window = 200
        reqs = [Frame(1, (i + 1) & 0xFF, payload_for(i, 12)) for i in range(600)]
        sent = 0
        got: List[Frame] = []
        while len(got) < len(reqs):
            hi = min(len(reqs), len(got) + window)
            if sent < hi:
                c.send(b"".join(c.frame(r) for r in reqs[sent:hi]))
                sent = hi
            got += c.read_frames(min(window // 2, sent - len(got)))
        # the server answers in order; match each reply to its request by sequence
        by_seq = {}
        for i, rp in enumerate(got):
            rq = reqs[i]
            if rp.sequence != rq.sequence:
                raise CheckFailure(f"reply {i}: expected sequence {rq.sequence}, actual {rp.sequence}")
            by_seq[rp.sequence] = by_seq.get(rp.sequence, 0) + 1
        check_replies(t, reqs, got, "600 requests with sequences 1..255, 0, 1.. (3 wraps): ")
        if by_seq.get(0, 0) != 2:
            raise CheckFailure(f"expected 2 replies with sequence 0, got {by_seq.get(0, 0)}")
    finally:
        c.close()


def c_one_way_and_replies_get_nothing(t):
    c = Conn(t)
    try:
        c.send(c.frame(Frame(0x41, 1, b"one-way")) + c.frame(Frame(0x81, 2, b"a reply")) +
               c.frame(Frame(0xC1, 3, b"an error reply")) + c.frame(Frame(0x01, 4, b"request")))
        got = c.read_frames(1)
        check_replies(t, [Frame(1, 4, b"request")], got, "one-way, reply and error-reply frames must get no reply: ")
        extra = c.idle(0.3)
        if extra:
            raise CheckFailure(f"expected nothing more, got {len(extra)} bytes: {extra[:16].hex(' ')}")
    finally:
        c.close()


def c_kinds(t):
    reqs = [Frame(k & 0x3F, i, b"kind%d" % k) for i, k in enumerate((0, 1, 2, 3, 17, 63), 1)]
    roundtrip(t, reqs, "data kinds 0..63 are echoed in the reply flag (0x80|kind): ")


def c_gigabytes(t):
    N.hostile(t, bytes.fromhex("0109ffffffffff7f"), "a header promising 2 GiB")  # 2^31-1 bytes


def c_noncanonical(t):
    N.hostile(t, bytes.fromhex("0109ffff05000000") + b"12345", "a non-canonical extended header", 2)


def c_bit31(t):
    N.hostile(t, bytes.fromhex("0109ffff00000080"), "an extended length with bit 31 set")


ROLES = dict(prefix="STD", close="STD-ECHO-4", lim="STD-LIM-1", mem="STD-LIM-3", trunc="STD-STR-3",
             stop="STD-STR-4", split="STD-STR-1", half="STD-ECHO-5", order="STD-ECHO-3")


def c_one_way_flood(t):
    """50,000 one-way messages and replies, never answered, then one request: its reply only."""
    def body():
        c = Conn(t)
        try:
            junk = b"".join(c.frame(Frame(0x41 if i % 2 else 0x81, i & 0xFF, b"no-answer")) for i in range(50000))
            c.send(junk + c.frame(Frame(1, 7, b"answer-me")))
            check_replies(t, [Frame(1, 7, b"answer-me")], c.read_frames(1, timeout=N.READ_TIMEOUT * 4),
                          "after 50,000 one-way and reply frames: ")
            extra = c.idle(0.3)
            if extra:
                raise CheckFailure(f"expected nothing more, got {len(extra)} bytes: {extra[:16].hex(' ')}")
        finally:
            c.close()
    N.watched(t, body, "50,000 one-way and reply frames")


def c_extended_stall(t):
    """An extended header declaring the limit, split inside its extended length, then silence."""
    def body():
        c = Conn(t)
        try:
            head = t.spec.oversize_header(t.codec, t.limit)
            c.send(head[:6])
            time.sleep(0.2)
            c.send(head[6:] + b"p" * 1000)
            N.healthy(t, "while a connection holds a partial maximal extended frame: ")
        finally:
            c.close()
    N.watched(t, body, "a partial extended header of a maximal frame")


def wrong_kind_replies(reply):
    """A reply completing ``reply``'s request (its sequence and payload) with another kind, 0x80 or 0x82 by
    the sequence's parity: STD-ECHO-1 keeps the request's kind (0x81 to the client's 0x01)."""
    return [Frame(0x80 if reply.sequence % 2 == 0 else 0x82, reply.sequence, reply.payload)]


def c_wrong_kind(t):
    from ...clientsuite import wrong_replies
    wrong_replies(t, "replies of another kind", wrong_kind_replies, ["HAR-VERIFY-1", "STD-MATCH-1", "STD-ECHO-1"])


def client_cases():
    """`frameproof net --client`: standard's own case (the generic ones are frameproof.clientsuite's)."""
    from ...clientsuite import ClientCase
    return [ClientCase("wrong_kind_replies_fail", ["HAR-VERIFY-1", "STD-MATCH-1", "STD-ECHO-1"], "Before every "
                       "13th reply a reply with the request's sequence and payload but kind 0 or 2 (flag 0x80, "
                       "0x82): it completes the request (STD-MATCH-1) and fails verification (one error each, "
                       "non-zero exit)", c_wrong_kind)]


def cases() -> List[NetCase]:
    return [
        N.generic("one_request_one_reply", ["STD-ECHO-1"]),
        N.generic("pipelined_one_write", ["STD-ECHO-3", "STD-STR-2"]),
        N.generic("dribbled_byte_by_byte", ["STD-STR-1"]),
        N.generic("split_at_every_offset", ["STD-STR-1"]),
        N.generic("largest_allowed_frame", ["STD-LIM-1", "STD-LEN-2"]),
        N.generic("many_connections", ["STD-ECHO-3"]),
        NetCase("sequence_wraparound", ["STD-SEQ-2", "STD-SEQ-1", "STD-ECHO-1"],
                "600 pipelined requests wrap the sequence twice", c_wraparound),
        NetCase("one_way_and_replies_unanswered", ["STD-ECHO-2"], "One-way, reply and error-reply frames get no reply",
                c_one_way_and_replies_get_nothing),
        NetCase("kinds_echoed", ["STD-ECHO-1", "STD-HDR-4"], "The data kind of a request is kept in its reply", c_kinds),
        N.generic("fifo_order", ["STD-ECHO-3"]),
        N.generic("oversize_closes_connection", ["STD-ECHO-4", "STD-LIM-1"]),
        N.generic("oversize_whole_frame", ["STD-LIM-1", "STD-ECHO-4"]),
        NetCase("header_promises_gigabytes", ["STD-LIM-3"], "A header promising 2 GiB: no allocation, server keeps serving",
                c_gigabytes, hostile=True),
        N.generic("garbage_bytes", ["STD-LIM-3", "STD-STR-5"]),
        N.generic("stops_mid_frame", ["STD-STR-3"]),
        N.generic("half_close_gets_replies", ["STD-ECHO-5"]),
        NetCase("noncanonical_extended_closes", ["STD-ECHO-4", "STD-LEN-3"],
                "A non-canonical extended header closes the connection", c_noncanonical, hostile=True),
        NetCase("extended_bit31_closes", ["STD-ECHO-4", "STD-LEN-4"], "An extended length with bit 31 closes the connection",
                c_bit31, hostile=True),
        NetCase("one_way_flood", ["STD-ECHO-2", "STD-LIM-3"], "50,000 one-way and reply frames get no reply; a "
                "request after them does", c_one_way_flood, hostile=True),
        NetCase("extended_header_stall", ["STD-LEN-2", "STD-LIM-3", "STD-STR-1"], "An extended header declaring the "
                "limit, split inside its extended length, then silence", c_extended_stall, hostile=True),
        N.generic("tcp_nodelay", ["STD-ECHO-6"]),
        N.generic("long_connection_100k", ["STD-ECHO-3", "STD-SEQ-2"]),
        N.generic("connection_churn_2000", ["STD-ECHO-3"]),
        *N.hostile_cases(ROLES),
        *N.process_cases("STD-RES-1"),
    ]
