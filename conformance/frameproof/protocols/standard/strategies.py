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
        # flags: any byte, and often one of the edges of the kind bits (0x3F: every low bit of a request,
        # which an echo reply keeps, STD-ECHO-1)
        flags = st.one_of(st.integers(0, 255), st.sampled_from([0x3F, 0x00, 0x40, 0x7F, 0x80, 0xBF, 0xC0, 0xFF]))
        return st.builds(Frame, flags, st.integers(0, 255), payloads(min(codec.limit, 2 ** 31 - 1)))

    def encode_cases(self):
        # frames up to the format's own maximum, so that limit refusals (STD-LIM-2) are drawn too; any
        # flag byte (the kind bits' edges matter to the echo, not to the encoding), which keeps the
        # derandomized draws that reach the 16-bit and extended-form length edges (65534..65536)
        return st.tuples(self.codecs(), st.builds(Frame, st.integers(0, 255), st.integers(0, 255),
                                                  payloads(2 ** 31 - 1)))

    def invalid_streams(self):
        return _invalid_streams(self)

    def match_scripts(self):
        return _match_scripts()


@st.composite
def _invalid_streams(draw, S):
    codec, frames, prefix = draw(S.valid_streams())
    off = len(prefix)
    kind = draw(st.sampled_from(["oversize", "noncanonical", "bit31", "truncated", "bit31_high_limit",
                                 "truncated_extended"]))
    if kind in ("bit31_high_limit", "truncated_extended") and not frames:
        frames = [Frame(1, 1, b"")]  # after a frame: the error's offset is not 0
        prefix = oracle.encode(codec, frames[0])
        off = len(prefix)
    if kind == "bit31_high_limit":
        # a maximum of 2^32-1 (max_payload is a 64-bit setting): a length with bit 31 set is then within
        # the maximum, so it can only be STD-LEN-4 (no STD-LIM-1 alternative)
        codec = StandardCodec("standard", 2 ** 32 - 1)
        n = draw(st.sampled_from([2 ** 31, 2 ** 31 + 1, 2 ** 32 - 1]))
        return codec, prefix + bytes([1, 2, 0xFF, 0xFF]) + n.to_bytes(4, "little"), frames, Error("STD-LEN-4", off)
    if kind == "truncated_extended":
        # the stream ends inside the 4 bytes of an extended length (zeros so far: a decoder that reads
        # them before they are all there calls the length non-canonical, STD-LEN-3): STD-STR-3
        k = draw(st.integers(0, 3))
        return codec, prefix + bytes([1, 2, 0xFF, 0xFF]) + bytes(k), frames, Error("STD-STR-3", off)
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
    # the largest maximum (max_payload is a 64-bit setting; the sessions' payloads are small either way),
    # so that the tail below can end with a length that has bit 31 set and is STD-LEN-4 only
    codec = StandardCodec("standard", 2 ** 32 - 1)
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
    # the session ends with a bad or unfinished extended header (no choice of class: STD-LEN-3 for a
    # non-canonical length, STD-LEN-4 for 0xFFFFFFFF, within the maximum; none yet for one cut inside
    # its 4 length bytes), received after the bytes
    # received so far once more: behind complete frames in the same chunk, as many bytes into the
    # chunk as the decoder consumed before it (the error's offset is the stream's, not the chunk's)
    tail = draw(st.sampled_from([None, b"\x01\x02\xff\xff\x10\x00\x00\x00", b"\x01\x02\xff\xff\x00\x00",
                                 b"\x01\x02\xff\xff\xff\xff\xff\xff"]))
    if tail is not None:
        events.append(("receive", b"".join(a for k, a in events if k == "receive") + tail))
    return codec, events, timeout
