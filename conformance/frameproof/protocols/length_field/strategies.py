"""Hypothesis strategies for `length-field` streams, frames and client sessions, over every
profile (offset, size) of the suite's table."""
from __future__ import annotations

from hypothesis import strategies as st

from ... import oracle
from ...checks import chunk
from ...oracle import Error, Frame
from ...properties import Strategies, payloads
from .oracle import LengthFieldCodec, encode_length, field_capacity

PROFILES = [(0, 2), (0, -2), (0, 4), (0, -4), (0, 1), (0, 0), (2, 2), (3, 0), (1, -4)]


class LengthFieldStrategies(Strategies):
    splices = (b"\xff\xff\xff\xff\xff\xff", b"\x01\x01\xff\xff\x00\x00\x00\x00",
               b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x80", b"\x00\x00\x00\x80")

    def codecs(self, small_limits=True):
        limits = st.sampled_from([0, 0, 0, 16, 100, 70000]) if small_limits else st.just(0)
        return st.builds(lambda m, p: LengthFieldCodec("length-field", m, p[0], p[1]), limits, st.sampled_from(PROFILES))

    def frames_for(self, codec):
        return st.builds(lambda p: Frame(0, 0, p), payloads(min(codec.limit, codec.capacity)))

    def encode_cases(self):
        # payloads up to just above the field's capacity, so LF-LEN-1 / LF-LIM-2 refusals are drawn
        return self.codecs().flatmap(lambda c: st.tuples(st.just(c), st.builds(
            lambda p: Frame(0, 0, p), payloads(min(c.capacity + 2, 70000)))))

    def invalid_streams(self):
        return _invalid_streams(self)

    def match_scripts(self):
        return _match_scripts(self)


@st.composite
def _invalid_streams(draw, S):
    codec, frames, prefix = draw(S.valid_streams())
    off = len(prefix)
    kind = draw(st.sampled_from(["oversize", "truncated", "varint", "bit31"]))
    if kind == "varint" and codec.lf_size != 0:
        kind = "truncated"
    if kind == "bit31" and abs(codec.lf_size) != 4:
        kind = "truncated"
    head = bytes(codec.lf_offset)
    if kind == "oversize":
        cap = field_capacity(codec.lf_size)
        limit = draw(st.integers(1, min(cap - 1, 70000)))
        codec = LengthFieldCodec("length-field", limit, codec.lf_offset, codec.lf_size)
        frames = [f for f in frames if len(f.payload) <= limit]
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        n = draw(st.integers(limit + 1, min(cap, limit + 100000)))
        return codec, prefix + head + encode_length(codec, n), frames, Error("LF-LIM-1", len(prefix))
    if kind == "varint":
        bad = draw(st.sampled_from([b"\x80\x80\x80\x80\x80", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x08"]))
        return codec, prefix + head + bad, frames, Error("LF-LEN-2", off)
    if kind == "bit31":
        n = draw(st.integers(2 ** 31, 2 ** 32 - 1))
        field = n.to_bytes(4, "little" if codec.lf_size > 0 else "big")
        return codec, prefix + head + field, frames, Error("LF-LEN-3", off)
    f = draw(S.frames_for(codec))
    enc = oracle.encode(codec, f)
    if len(enc) < 2:  # a 1-byte frame cannot be cut
        enc = oracle.encode(codec, Frame(0, 0, b"ab"))
    cut = draw(st.integers(1, len(enc) - 1))
    return codec, prefix + enc[:cut], frames, Error("LF-STR-3", off)


@st.composite
def _match_scripts(draw, S):
    """Random client sessions: sends, replies (FIFO), stray replies, clock advances."""
    codec = draw(S.codecs(small_limits=False))
    timeout = draw(st.sampled_from([0, 50, 1000]))
    events = []
    outstanding = 0
    for _ in range(draw(st.integers(1, 30))):
        op = draw(st.sampled_from(["send", "send", "reply", "reply", "stray", "advance"]))
        if op == "send":
            events.append(("send", draw(st.binary(max_size=12))))
            outstanding += 1
        elif op == "reply" and outstanding:
            outstanding -= 1
            data = oracle.encode(codec, Frame(0, 0, draw(st.binary(max_size=12))))
            for piece in chunk(data, draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=2))):
                events.append(("receive", piece))
        elif op == "stray":
            events.append(("receive", oracle.encode(codec, Frame(0, 0, b"s"))))
        elif op == "advance":
            events.append(("advance_ms", draw(st.sampled_from([1, 10, 49, 50, 999, 3000]))))
    return codec, events, timeout
