"""Hypothesis strategies for `standard` streams, frames and client sessions."""
from __future__ import annotations

from hypothesis import strategies as st

from ... import oracle
from ...checks import chunk
from ...oracle import Error, Frame
from ...properties import Strategies, payloads
from .oracle import StandardCodec, header


class StandardStrategies(Strategies):
    splices = (b"\xff\xff\xff\xff\xff\xff", b"\x01\x01\xff\xff\x00\x00\x00\x00",
               b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x80", b"\x00\x00\x00\x80")

    def codecs(self, small_limits=True):
        limits = st.sampled_from([0, 0, 0, 16, 100, 70000]) if small_limits else st.just(0)
        return st.builds(lambda m: StandardCodec("standard", m), limits)

    def frames_for(self, codec):
        return st.builds(Frame, st.integers(0, 255), st.integers(0, 255), payloads(min(codec.limit, 2 ** 31 - 1)))

    def encode_cases(self):
        # frames up to the format's own maximum, so that limit refusals (STD-LIM-2) are drawn too
        return st.tuples(self.codecs(), self.frames_for(StandardCodec("standard", 2 ** 31 - 1)))

    def invalid_streams(self):
        return _invalid_streams(self)

    def match_scripts(self):
        return _match_scripts()


@st.composite
def _invalid_streams(draw, S):
    codec, frames, prefix = draw(S.valid_streams())
    off = len(prefix)
    kind = draw(st.sampled_from(["oversize", "noncanonical", "bit31", "truncated"]))
    if kind == "oversize":
        limit = draw(st.integers(1, 70000))
        codec = StandardCodec("standard", limit)
        # the valid prefix must respect the new limit
        frames = [f for f in frames if len(f.payload) <= limit]
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        off = len(prefix)
        n = draw(st.integers(limit + 1, limit + 100000))
        tail = header(1, 1, n) + draw(st.binary(max_size=16))
        return codec, prefix + tail, frames, Error("STD-LIM-1", off)
    if kind == "noncanonical":
        n = draw(st.integers(0, 65534))
        return codec, prefix + bytes([1, 2, 0xFF, 0xFF]) + n.to_bytes(4, "little"), frames, Error("STD-LEN-3", off)
    if kind == "bit31":
        n = draw(st.integers(2 ** 31, 2 ** 32 - 1))
        return codec, prefix + bytes([1, 2, 0xFF, 0xFF]) + n.to_bytes(4, "little"), frames, Error("STD-LEN-4", off)
    f = draw(S.frames_for(codec))
    enc = oracle.encode(codec, f)
    cut = draw(st.integers(1, len(enc) - 1)) if len(enc) > 1 else 1
    return codec, prefix + enc[:cut], frames, Error("STD-STR-3", off)


@st.composite
def _match_scripts(draw):
    """Random client sessions: sends, replies (some out of order, some stray), clock advances."""
    codec = StandardCodec("standard")
    timeout = draw(st.sampled_from([0, 50, 1000]))
    events = []
    outstanding = []
    seq = 0
    for _ in range(draw(st.integers(1, 30))):
        op = draw(st.sampled_from(["send", "send", "reply", "reply", "stray", "advance", "one_way"]))
        if op == "send":
            events.append(("send", draw(st.binary(max_size=12))))
            seq = (seq + 1) & 0xFF
            outstanding.append(seq)
        elif op == "one_way":
            events.append(("send_one_way", draw(st.binary(max_size=4))))
            seq = (seq + 1) & 0xFF
        elif op == "reply" and outstanding:
            s = outstanding.pop(draw(st.integers(0, len(outstanding) - 1)))
            flag = draw(st.sampled_from([0x81, 0x81, 0xC1, 0x80]))
            data = oracle.encode(codec, Frame(flag, s, draw(st.binary(max_size=12))))
            # deliver in 1..3 pieces
            for piece in chunk(data, draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=2))):
                events.append(("receive", piece))
        elif op == "stray":
            events.append(("receive", oracle.encode(codec, Frame(draw(st.sampled_from([0x81, 0x01])),
                                                                 draw(st.integers(0, 255)), b"s"))))
        elif op == "advance":
            events.append(("advance_ms", draw(st.sampled_from([1, 10, 49, 50, 999, 3000]))))
    return codec, events, timeout
