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

    def invalid_edges(self):
        """The invalid-stream kinds whose edge a random draw may miss, each value once (every profile): the four
        valid 4- and 5-byte varints over every limit (LF-LIM-1, not LF-LEN-2), a header declaring exactly 2^31-1
        under that limit (no error; the stream ends there, LF-STR-3) in the 4-byte and varint profiles, and a
        stream ending inside a 2- or 4-byte field whose bytes so far exceed the limit (LF-STR-3), at an offset
        sharing a bit with the field's width."""
        from ...properties import Edge
        first = Frame(0, 0, b"ok")
        out = []
        for bad in (b"\xff\xff\xff\xff\x07", b"\x80\x80\x80\x80\x01", b"\x80\x80\x80\x08", b"\xff\xff\xff\xff\x06"):
            codec = LengthFieldCodec("length-field", 0, 0, 0)
            pre = oracle.encode(codec, first)
            out.append((codec, pre + bad, [first], Error("LF-LIM-1", len(pre)),
                        Edge(f"varint {bad.hex(' ')} over every limit", ("LF-LIM-1", "LF-LEN-2"))))
        for size in (4, -4, 0):
            codec = LengthFieldCodec("length-field", 2 ** 31 - 1, 0, size)
            pre = oracle.encode(codec, first)
            out.append((codec, pre + encode_length(codec, 2 ** 31 - 1), [first], Error("LF-STR-3", len(pre)),
                        Edge(f"a header declaring 2^31-1 under that limit (size {size})", ("LF-LIM-1",))))
        for size in (4, -4, 2, -2):
            w = abs(size)
            codec = LengthFieldCodec("length-field", 16, w, size)
            for k in range(1, w):
                out.append((codec, bytes(w) + b"\xff" * k, [], Error("LF-STR-3", 0),
                            Edge(f"{k} of a {w}-byte field over the limit at offset {w}", ("LF-LIM-1",))))
        return out

    def match_scripts(self):
        return _match_scripts(self)


@st.composite
def _invalid_streams(draw, S):
    codec, frames, prefix = draw(S.valid_streams())
    off = len(prefix)
    kind = draw(st.sampled_from(["oversize", "truncated", "varint", "bit31", "varint_over_limit",
                                 "partial_field_over_limit", "at_max_limit"]))
    if kind in ("varint", "varint_over_limit") and codec.lf_size != 0:
        # the varint kinds are about size 0: the same frames in the size-0 profile with this offset
        codec = LengthFieldCodec("length-field", codec.max_payload, codec.lf_offset, 0)
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        off = len(prefix)
    if kind == "bit31" and abs(codec.lf_size) != 4:
        kind = "truncated"
    head = bytes(codec.lf_offset)
    if kind == "varint_over_limit":
        # LF-LIM-1, not LF-LEN-2: valid 4- and 5-byte varints (the 5th byte 1..7, at most 2^31-1)
        # declaring more than every limit drawn; a decoder that misjudges the 5th byte (or bounds the
        # varint at 4 bytes) calls them over-long / over-large
        bad = draw(st.sampled_from([b"\xff\xff\xff\xff\x07", b"\x80\x80\x80\x80\x01", b"\x80\x80\x80\x08",
                                    b"\xff\xff\xff\xff\x06"]))
        return codec, prefix + head + bad, frames, Error("LF-LIM-1", off)
    if kind == "at_max_limit":
        # limit 2^31-1 (the largest the fields can declare): a header declaring exactly 2^31-1 is
        # within the limit (LF-LIM-1 boundary), so the stream ending there is truncated (LF-STR-3)
        size = draw(st.sampled_from([4, -4, 0]))
        codec = LengthFieldCodec("length-field", 2 ** 31 - 1, codec.lf_offset, size)
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        return codec, prefix + head + encode_length(codec, 2 ** 31 - 1), frames, Error("LF-STR-3", len(prefix))
    if kind == "partial_field_over_limit":
        # the stream ends inside a multi-byte length field whose bytes so far already exceed a small
        # limit: LF-STR-3 (the field is not complete, LF-LIM-1 is decided on the whole field). The offset
        # is chosen so the field's start shares a bit with its width (a field-end computed with | or ^)
        size = draw(st.sampled_from([4, -4, 2, -2]))
        w = abs(size)
        frames = [f for f in frames if len(f.payload) <= 16]
        def field_at(o):  # where the length field starts with offset o
            c = LengthFieldCodec("length-field", 16, o, size)
            return sum(len(oracle.encode(c, f)) for f in frames) + o
        offset = next((o for o in range(8) if field_at(o) & w), None)
        if offset is None:
            frames, offset = [], w
        codec = LengthFieldCodec("length-field", 16, offset, size)
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        part = b"\xff" * draw(st.integers(1, w - 1))
        return codec, prefix + bytes(offset) + part, frames, Error("LF-STR-3", len(prefix))
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
    if codec.lf_size in (0, 4, -4):
        # size 0 and +-4 sessions end with a bad or unfinished length field (no choice of class: LF-LEN-2
        # for a 6-byte varint, LF-LIM-1 for a 5-byte varint of 2^28 or a 4-byte length above the limit;
        # none for a 4-byte field cut after 3 bytes, whose bytes so far already exceed the limit but
        # which is not complete), received after the bytes received so far once more: the error lies
        # behind complete frames in the same chunk, as many bytes into the chunk as the decoder consumed
        # before it (the offset is the stream's, not the chunk's)
        # (a stray reply instead when nothing was received yet)
        history = b"".join(a for k, a in events if k == "receive") or oracle.encode(codec, Frame(0, 0, b"s"))
        head = bytes(codec.lf_offset)
        if codec.lf_size == 0:
            bad = draw(st.sampled_from([b"\x80\x80\x80\x80\x80\x80", b"\x80\x80\x80\x80\x01"]))
        else:
            bad = draw(st.sampled_from([encode_length(codec, codec.limit + 1), b"\xff\xff\xff"]))
        events.append(("receive", history + head + bad))
    return codec, events, timeout
