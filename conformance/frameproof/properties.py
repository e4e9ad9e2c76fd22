"""Property-based conformance checks (Hypothesis). Each property drives the
testee and compares it with the oracle; each is tied to the requirement IDs it checks.

Profiles: ``ci`` (derandomized, fixed examples: same inputs every run) and
``fuzz`` (random, many examples) — ``frameproof run --profile fuzz``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from . import oracle
from .checks import CheckFailure, check_decode, check_encode, check_match, chunk
from .oracle import Codec, Error, Frame

settings.register_profile("ci", derandomize=True, max_examples=40, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), print_blob=False)
settings.register_profile("fuzz", derandomize=False, max_examples=1500, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), print_blob=True)
settings.register_profile("smoke", derandomize=True, max_examples=8, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])

LF_PROFILES = [(0, 2), (0, -2), (0, 4), (0, -4), (0, 1), (0, 0), (2, 2), (3, 0), (1, -4)]


# ------------------------------------------------------------------ strategies

def codecs(protocol: str, small_limits=True):
    limits = st.sampled_from([0, 0, 0, 16, 100, 70000]) if small_limits else st.just(0)
    if protocol == "standard":
        return st.builds(lambda m: Codec("standard", m), limits)
    return st.builds(lambda m, p: Codec("length-field", m, p[0], p[1]), limits, st.sampled_from(LF_PROFILES))


def payloads(max_size: int):
    small = st.binary(max_size=min(48, max_size))
    if max_size < 65530:
        return st.one_of(small, st.binary(min_size=0, max_size=max_size))
    big = st.builds(lambda n, b: bytes([b]) * n, st.integers(65530, min(65540, max_size)), st.integers(0, 255))
    return st.one_of(small, small, small, big)


def frames_for(codec: Codec):
    cap = oracle._lf_capacity(codec.lf_size) if codec.protocol == "length-field" else 2 ** 31 - 1
    limit = min(codec.limit, cap)
    if codec.protocol == "standard":
        return st.builds(Frame, st.integers(0, 255), st.integers(0, 255), payloads(limit))
    return st.builds(lambda p: Frame(0, 0, p), payloads(limit))


@st.composite
def valid_streams(draw, protocol):
    codec = draw(codecs(protocol))
    frames = draw(st.lists(frames_for(codec), max_size=6))
    data = b"".join(oracle.encode(codec, f) for f in frames)
    return codec, frames, data


@st.composite
def splits_of(draw, data: bytes):
    if not data:
        return [b""]
    if len(data) > 4096:
        # a few random cut points plus cuts right around each header
        cuts = draw(st.lists(st.integers(1, len(data) - 1), max_size=12))
    else:
        cuts = draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=min(len(data), 24)))
    return chunk(data, cuts)


@st.composite
def arbitrary_streams(draw, protocol):
    """Valid streams mutated (flip, truncate, insert, overwrite a header) or plain random bytes."""
    codec, frames, data = draw(valid_streams(protocol))
    how = draw(st.sampled_from(["random", "flip", "truncate", "insert", "splice", "valid"]))
    b = bytearray(data)
    if how == "random" or not b:
        b = bytearray(draw(st.binary(max_size=80)))
    elif how == "flip":
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= draw(st.integers(1, 255))
    elif how == "truncate":
        b = b[:draw(st.integers(0, len(b) - 1))]
    elif how == "insert":
        i = draw(st.integers(0, len(b)))
        b[i:i] = draw(st.binary(min_size=1, max_size=8))
    elif how == "splice":
        i = draw(st.integers(0, len(b)))
        b[i:i] = draw(st.sampled_from([b"\xff\xff\xff\xff\xff\xff", b"\x01\x01\xff\xff\x00\x00\x00\x00",
                                       b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x80", b"\x00\x00\x00\x80"]))
    return codec, bytes(b)


@st.composite
def invalid_streams(draw, protocol):
    """A valid prefix followed by one frame that breaks a known requirement; the class is known by construction."""
    codec, frames, prefix = draw(valid_streams(protocol))
    off = len(prefix)
    std = protocol == "standard"
    if std:
        kind = draw(st.sampled_from(["oversize", "noncanonical", "bit31", "truncated"]))
        if kind == "oversize":
            limit = draw(st.integers(1, 70000))
            codec = Codec("standard", limit)
            # the valid prefix must respect the new limit
            frames = [f for f in frames if len(f.payload) <= limit]
            prefix = b"".join(oracle.encode(codec, f) for f in frames)
            off = len(prefix)
            n = draw(st.integers(limit + 1, limit + 100000))
            hdr = bytes([1, 1]) + (n.to_bytes(2, "little") if n < 0xFFFF else b"\xff\xff" + n.to_bytes(4, "little"))
            tail = hdr + draw(st.binary(max_size=16))
            return codec, prefix + tail, frames, Error("STD-LIM-1", off)
        if kind == "noncanonical":
            n = draw(st.integers(0, 65534))
            return codec, prefix + bytes([1, 2, 0xFF, 0xFF]) + n.to_bytes(4, "little"), frames, Error("STD-LEN-3", off)
        if kind == "bit31":
            n = draw(st.integers(2 ** 31, 2 ** 32 - 1))
            return codec, prefix + bytes([1, 2, 0xFF, 0xFF]) + n.to_bytes(4, "little"), frames, Error("STD-LEN-4", off)
        f = draw(frames_for(codec))
        enc = oracle.encode(codec, f)
        cut = draw(st.integers(1, len(enc) - 1)) if len(enc) > 1 else 1
        return codec, prefix + enc[:cut], frames, Error("STD-STR-3", off)
    kind = draw(st.sampled_from(["oversize", "truncated", "varint", "bit31"]))
    if kind == "varint" and codec.lf_size != 0:
        kind = "truncated"
    if kind == "bit31" and abs(codec.lf_size) != 4:
        kind = "truncated"
    head = bytes(codec.lf_offset)
    if kind == "oversize":
        cap = oracle._lf_capacity(codec.lf_size)
        limit = draw(st.integers(1, min(cap - 1, 70000)))
        codec = Codec("length-field", limit, codec.lf_offset, codec.lf_size)
        frames = [f for f in frames if len(f.payload) <= limit]
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        n = draw(st.integers(limit + 1, min(cap, limit + 100000)))
        return codec, prefix + head + oracle.encode_length(codec, n), frames, Error("LF-LIM-1", len(prefix))
    if kind == "varint":
        bad = draw(st.sampled_from([b"\x80\x80\x80\x80\x80", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x08"]))
        return codec, prefix + head + bad, frames, Error("LF-LEN-2", off)
    if kind == "bit31":
        n = draw(st.integers(2 ** 31, 2 ** 32 - 1))
        field = n.to_bytes(4, "little" if codec.lf_size > 0 else "big")
        return codec, prefix + head + field, frames, Error("LF-LEN-3", off)
    f = draw(frames_for(codec))
    enc = oracle.encode(codec, f)
    if len(enc) < 2:  # a 1-byte frame cannot be cut
        enc = oracle.encode(codec, Frame(0, 0, b"ab"))
    cut = draw(st.integers(1, len(enc) - 1))
    return codec, prefix + enc[:cut], frames, Error("LF-STR-3", off)


@st.composite
def match_scripts(draw, protocol):
    """Random client sessions: sends, replies (some out of order, some stray), clock advances."""
    codec = Codec(protocol) if protocol == "standard" else draw(codecs(protocol, small_limits=False))
    timeout = draw(st.sampled_from([0, 50, 1000]))
    events = []
    outstanding = []  # (seq or index, payload)
    seq = 0
    n = draw(st.integers(1, 30))
    for _ in range(n):
        op = draw(st.sampled_from(["send", "send", "reply", "reply", "stray", "advance"] +
                                  (["one_way"] if protocol == "standard" else [])))
        if op == "send":
            p = draw(st.binary(max_size=12))
            events.append(("send", p))
            seq = (seq + 1) & 0xFF
            outstanding.append(seq)
        elif op == "one_way":
            events.append(("send_one_way", draw(st.binary(max_size=4))))
            seq = (seq + 1) & 0xFF
        elif op == "reply" and outstanding:
            i = draw(st.integers(0, len(outstanding) - 1)) if protocol == "standard" else 0
            s = outstanding.pop(i)
            p = draw(st.binary(max_size=12))
            if protocol == "standard":
                flag = draw(st.sampled_from([0x81, 0x81, 0xC1, 0x80]))
                data = oracle.encode(codec, Frame(flag, s, p))
            else:
                data = oracle.encode(codec, Frame(0, 0, p))
            # deliver in 1..3 pieces
            for piece in chunk(data, draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=2))):
                events.append(("receive", piece))
        elif op == "stray":
            if protocol == "standard":
                events.append(("receive", oracle.encode(codec, Frame(draw(st.sampled_from([0x81, 0x01])),
                                                                     draw(st.integers(0, 255)), b"s"))))
            else:
                events.append(("receive", oracle.encode(codec, Frame(0, 0, b"s"))))
        elif op == "advance":
            events.append(("advance_ms", draw(st.sampled_from([1, 10, 49, 50, 999, 3000]))))
    return codec, events, timeout


# ------------------------------------------------------------------ properties

@dataclass
class Property:
    name: str
    protocol: str
    requirements: List[str]
    feature: str
    description: str
    run: Callable  # run(testee) raises CheckFailure


def _props(protocol: str) -> List[Property]:
    std = protocol == "standard"
    P = "STD" if std else "LF"

    def encode_matches_spec(testee):
        @given(st.data())
        def prop(data):
            codec = data.draw(codecs(protocol))
            if std:
                f = data.draw(frames_for(Codec("standard", 2 ** 31 - 1)))
            else:
                cap = oracle._lf_capacity(codec.lf_size)
                f = data.draw(st.builds(lambda p: Frame(0, 0, p), payloads(min(cap + 2, 70000))))
            expected = oracle.encode(codec, f)
            check_encode(expected, testee.encode(codec, f), f"encode {f.short()} with {codec}: ")
        prop()

    def roundtrip(testee):
        @given(st.data())
        def prop(data):
            codec = data.draw(codecs(protocol))
            frames = data.draw(st.lists(frames_for(codec), max_size=4))
            enc = b""
            for f in frames:
                e = testee.encode(codec, f)
                if isinstance(e, Error):
                    raise CheckFailure(f"encoder refused a valid frame {f.short()} with {e.requirement}")
                enc += e
            got = testee.decode(codec, [enc])
            check_decode([oracle.DecodeResult(list(frames))], got, f"decode(encode(frames)) with {codec}: ")
        prop()

    def chunking(testee):
        @given(st.data())
        def prop(data):
            codec, frames, whole = data.draw(valid_streams(protocol))
            chunks = data.draw(splits_of(whole))
            got = testee.decode(codec, chunks)
            check_decode([oracle.DecodeResult(list(frames))], got,
                         f"{len(frames)} frames in {len(chunks)} chunks of sizes {[len(c) for c in chunks][:20]} ({codec}): ")
        prop()

    def agrees(testee):
        @given(st.data())
        def prop(data):
            codec, whole = data.draw(arbitrary_streams(protocol))
            chunks = data.draw(splits_of(whole))
            expected = oracle.decode(codec, whole)
            got = testee.decode(codec, chunks)
            check_decode([expected] + expected.alternatives, got, f"stream {whole[:32].hex(' ')}{'…' if len(whole) > 32 else ''} "
                                          f"({len(whole)} bytes, {len(chunks)} chunks, {codec}): ")
        prop()

    def invalid(testee):
        @given(st.data())
        def prop(data):
            codec, whole, frames, err = data.draw(invalid_streams(protocol))
            chunks = data.draw(splits_of(whole))
            got = testee.decode(codec, chunks)
            check_decode([oracle.DecodeResult(list(frames), err)], got,
                         f"invalid stream ({len(whole)} bytes, {codec}) expected to break {err.requirement}: ")
        prop()

    def matching(testee):
        @given(st.data())
        def prop(data):
            codec, events, timeout = data.draw(match_scripts(protocol))
            expected = oracle.match(codec, events, timeout)
            got = testee.match(codec, events, timeout)
            desc = ", ".join(k if k != "advance_ms" else f"+{a}ms" for k, a in events[:12])
            check_match(expected, got, f"script [{desc}{', …' if len(events) > 12 else ''}] timeout {timeout or 'default'}: ")
        prop()

    hdr = ["STD-HDR-1", "STD-LEN-1", "STD-LEN-2", "STD-LIM-2"] if std else ["LF-FMT-1", "LF-FMT-3", "LF-LEN-1", "LF-LIM-2"]
    return [
        Property("prop_encode_matches_spec", protocol, hdr, "encode",
                 "Random frames encode to the spec's exact bytes (or the spec's refusal)", encode_matches_spec),
        Property("prop_encode_decode_roundtrip", protocol, [f"{P}-HDR-5" if std else "LF-FMT-5", hdr[0]], "encode",
                 "decode(encode(frames)) gives the frames back", roundtrip),
        Property("prop_chunking_independence", protocol, [f"{P}-STR-1", f"{P}-STR-2"], "decode",
                 "Any split of a valid stream decodes to the same frames", chunking),
        Property("prop_agrees_with_oracle", protocol,
                 [f"{P}-STR-4", f"{P}-STR-3"] + (["STD-STR-5"] if std else ["LF-LEN-2"]), "decode",
                 "On arbitrary and mutated streams in arbitrary chunks, frames and error equal the oracle's", agrees),
        Property("prop_invalid_rejected_with_class", protocol,
                 ["STD-LIM-1", "STD-LEN-3", "STD-LEN-4", "STD-STR-3"] if std else ["LF-LIM-1", "LF-LEN-2", "LF-LEN-3", "LF-STR-3"],
                 "decode", "A valid prefix then one bad frame: the prefix is delivered and the bad frame is rejected with its class",
                 invalid),
        Property("prop_matching_agrees_with_model", protocol,
                 ["STD-MATCH-1", "STD-MATCH-2", "STD-MATCH-3", "STD-MATCH-4", "STD-MATCH-5", "STD-SEQ-1"] if std
                 else ["LF-MATCH-1", "LF-MATCH-2", "LF-MATCH-3"], "match",
                 "Random client sessions (sends, replies in any order, stray replies, clock) complete as the model says",
                 matching),
    ]


def properties(protocol: str) -> List[Property]:
    return _props(protocol)
