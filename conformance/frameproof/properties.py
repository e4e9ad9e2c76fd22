"""Property-based conformance checks (Hypothesis). Each property drives the testee and compares
it with the oracle; each is tied to the requirement IDs it checks.

This module holds the protocol-neutral parts: the profiles, the :class:`Property` record, the
generic strategies (splits, mutations of valid streams) and the property bodies. Each protocol
supplies its strategies (a :class:`Strategies` subclass in ``protocols/<name>/strategies.py``)
and its property table (which bodies, with which requirement IDs).

Profiles: ``ci`` (derandomized, fixed examples: same inputs every run) and
``fuzz`` (random, many examples) — ``frameproof run --profile fuzz``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from . import oracle
from .checks import CheckFailure, check_decode, check_encode, check_match, chunk
from .oracle import Error

settings.register_profile("ci", derandomize=True, max_examples=40, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), print_blob=False)
settings.register_profile("fuzz", derandomize=False, max_examples=1500, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), print_blob=True)
settings.register_profile("smoke", derandomize=True, max_examples=8, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])


# ------------------------------------------------------------------ strategies

class Strategies:
    """A protocol's Hypothesis strategies. Subclasses define ``codecs``, ``frames_for``,
    ``invalid_streams`` and (for request/reply protocols) ``match_scripts``; the rest is generic."""

    #: byte strings spliced into valid streams by ``arbitrary_streams`` (header-shaped edge cases)
    splices: tuple = (b"\xff\xff\xff\xff",)

    def codecs(self, small_limits=True):
        raise NotImplementedError

    def frames_for(self, codec):
        raise NotImplementedError

    def encode_cases(self):
        """(codec, frame) pairs for the encode property (may exceed limits: refusals are checked)."""
        return st.tuples(self.codecs(), st.nothing())

    def invalid_edges(self):
        """(codec, bytes, frames before the bad one, Error, Edge) streams the invalid-input property checks first under
        every profile (whole, and split in two halves): edges of a range a random draw may miss
        (rpc: a header declaring exactly the default limit, and one byte past it)."""
        return ()

    def valid_edges(self):
        """(codec, bytes, frames, Edge) valid streams the chunking property checks first under every profile (whole,
        and split in two halves): the valid side of an edge a random draw may miss (websocket: one frame of exactly
        the message limit)."""
        return ()

    def encode_edges(self):
        """(codec, frame) pairs the encode property checks first under every profile, however few its examples:
        the edges of a field's range a random draw may miss (rpc: names of 65535 and 65536 bytes)."""
        return ()

    def valid_streams(self):
        return _valid_streams(self)

    def arbitrary_streams(self):
        return _arbitrary_streams(self)

    def invalid_streams(self):
        """(codec, bytes, frames before the bad one, Error): the error class known by construction."""
        raise NotImplementedError

    def match_scripts(self):
        """(codec, events, timeout_ms): random client sessions."""
        raise NotImplementedError

    def serve_edges(self):
        """(codec, endpoint, chunks, half_close, Edge) server sessions the serving property checks first under every
        profile: replies at the edges of the reply's length encodings a random session rarely reaches."""
        return ()

    def serve_scripts(self):
        """(codec, endpoint, whole input, chunks, half_close): random server sessions."""
        return _serve_scripts(self)


# Payload sizes at the edges of the length encodings (1-byte field 255/256, 16-bit field and
# standard's extended form 65534/65535/65536) and of the limit; drawn with high probability.
LENGTH_EDGES = (0, 1, 125, 126, 127, 128, 255, 256, 65534, 65535, 65536)
BIG_LIMIT_EDGE = 1 << 20  # a limit above this is not drawn as a payload size (memory per example)
DRAWN_EDGES = set()  # the edges drawn since the last reset (reported per property)


def _edge_payload(n: int, b: int) -> bytes:
    DRAWN_EDGES.add(n)
    return bytes([b]) * n


def payloads(max_size: int):
    small = st.binary(max_size=min(48, max_size))
    edges = sorted({n for n in LENGTH_EDGES if n <= max_size} |
                   ({max_size, max_size - 1} if 0 < max_size <= BIG_LIMIT_EDGE else set()))
    edge = st.builds(_edge_payload, st.sampled_from(edges), st.integers(0, 255))
    if max_size < 65530:
        return st.one_of(small, st.binary(min_size=0, max_size=max_size), edge)
    big = st.builds(lambda n, b: bytes([b]) * n, st.integers(65530, min(65540, max_size)), st.integers(0, 255))
    return st.one_of(small, small, edge, big)


@st.composite
def _valid_streams(draw, S: Strategies):
    codec = draw(S.codecs())
    frames = draw(st.lists(S.frames_for(codec), max_size=6))
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
def _arbitrary_streams(draw, S: Strategies):
    """Valid streams mutated (flip, truncate, insert, overwrite a header) or plain random bytes."""
    codec, frames, data = draw(S.valid_streams())
    how = draw(st.sampled_from(["random", "flip", "truncate", "insert", "splice", "valid"]))
    b = bytearray(data)
    if how == "random" or not b:
        b = bytearray(draw(st.binary(max_size=80)))
    elif how == "flip":
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= draw(st.integers(1, 255))
    elif how == "truncate":
        # anywhere, or (as often) right after a frame's header: the stream ends with a complete header
        # and no payload byte, a class a decoder that drops the header early misses (LF-STR-3)
        ends, at = [], 0
        for f in frames:
            n = len(oracle.encode(codec, f))
            if f.payload:
                ends.append(at + n - len(f.payload))
            at += n
        cuts = st.integers(0, len(b) - 1)
        b = b[:draw(st.one_of(cuts, st.sampled_from(ends)) if ends else cuts)]
    elif how == "insert":
        i = draw(st.integers(0, len(b)))
        b[i:i] = draw(st.binary(min_size=1, max_size=8))
    elif how == "splice":
        i = draw(st.integers(0, len(b)))
        b[i:i] = draw(st.sampled_from(list(S.splices)))
    return codec, bytes(b)


@st.composite
def _serve_scripts(draw, S: Strategies):
    """A valid or mutated client stream, split anyhow, half-closed or not."""
    if draw(st.booleans()):
        codec, _frames, data = draw(S.valid_streams())
    else:
        codec, data = draw(S.arbitrary_streams())
    return codec, "", data, draw(splits_of(data)), draw(st.booleans())


# ------------------------------------------------------------------ properties

@dataclass(frozen=True)
class Edge:
    """An edge of a range a fixed example checks (Strategies.invalid_edges): what it is, and the requirements that
    set the range (a failure there breaks them too: a default limit one MiB short fails at its edge, RPC-LIM-1)."""
    name: str
    requirements: tuple = ()

    def __str__(self):
        return self.name


@dataclass
class Property:
    name: str
    protocol: str
    requirements: List[str]
    feature: str
    description: str
    run: Callable  # run(testee) raises CheckFailure


def _unless_skipped(call):
    """An edge's testee call, or None when the testee skips that codec (the plugin turns a ``skipped`` answer
    into Hypothesis's reject(), which outside a @given test raises UnsatisfiedAssumption): an edge the testee
    has no codec for is left out, as a drawn example of that codec would be."""
    from hypothesis.errors import UnsatisfiedAssumption
    try:
        return call()
    except UnsatisfiedAssumption:
        return None


def encode_matches_spec(S: Strategies):
    def run(testee):
        for codec, f in S.encode_edges():
            got = _unless_skipped(lambda: testee.encode(codec, f))
            if got is not None:
                check_encode(oracle.encode(codec, f), got, f"encode {f.short()} with {codec}: ")

        @given(S.encode_cases())
        def prop(case):
            codec, f = case
            expected = oracle.encode(codec, f)
            check_encode(expected, testee.encode(codec, f), f"encode {f.short()} with {codec}: ")
        prop()
    return run


def roundtrip(S: Strategies):
    def run(testee):
        @given(st.data())
        def prop(data):
            codec = data.draw(S.codecs())
            frames = data.draw(st.lists(S.frames_for(codec), max_size=4))
            enc = b""
            for f in frames:
                e = testee.encode(codec, f)
                if isinstance(e, Error):
                    raise CheckFailure(f"encode {f.short()} with {codec}:\n  expected its bytes (the frame is valid)\n"
                                       f"  actual   refused with {e.requirement}")
                enc += e
            got = testee.decode(codec, [enc])
            check_decode([oracle.DecodeResult(list(frames))], got, f"decode(encode(frames)) with {codec}: ")
        prop()
    return run


def _check_edge(testee, codec, whole, expected, edge, expectation):
    """One edge stream (Strategies.valid_edges, invalid_edges) decoded whole and split in two halves."""
    h = len(whole) // 2
    for chunks in ([whole], [whole[:h], whole[h:]]):
        got = _unless_skipped(lambda: testee.decode(codec, chunks))
        if got is None:
            return
        try:
            check_decode([expected], got, stop=codec.spec.stop_requirement, context=
                         f"{edge} ({len(whole)} bytes in {len(chunks)} chunks, {codec}){expectation}: ")
        except CheckFailure as e:  # an edge of a range: the requirement that sets the range is broken too
            raise CheckFailure(str(e), sorted(set(e.requirements or []) | set(edge.requirements))) from None


def chunking(S: Strategies):
    def run(testee):
        for codec, whole, frames, edge in S.valid_edges():
            _check_edge(testee, codec, whole, oracle.DecodeResult(list(frames)), edge, "")

        @given(st.data())
        def prop(data):
            codec, frames, whole = data.draw(S.valid_streams())
            chunks = data.draw(splits_of(whole))
            got = testee.decode(codec, chunks)
            check_decode([oracle.DecodeResult(list(frames))], got,
                         f"{len(frames)} frames in {len(chunks)} chunks of sizes {[len(c) for c in chunks][:20]} ({codec}): ")
        prop()
    return run


def agrees(S: Strategies):
    def run(testee):
        @given(st.data())
        def prop(data):
            codec, whole = data.draw(S.arbitrary_streams())
            chunks = data.draw(splits_of(whole))
            expected = oracle.decode(codec, whole)
            got = testee.decode(codec, chunks)
            check_decode([expected] + expected.alternatives, got, stop=codec.spec.stop_requirement, context=
                         f"stream {whole[:32].hex(' ')}{'…' if len(whole) > 32 else ''} "
                         f"({len(whole)} bytes, {len(chunks)} chunks, {codec}): ")
        prop()
    return run


def invalid(S: Strategies):
    def run(testee):
        for codec, whole, frames, err, edge in S.invalid_edges():
            _check_edge(testee, codec, whole, oracle.DecodeResult(list(frames), err), edge,
                        f" expected to break {err.requirement}")

        @given(st.data())
        def prop(data):
            codec, whole, frames, err = data.draw(S.invalid_streams())
            chunks = data.draw(splits_of(whole))
            got = testee.decode(codec, chunks)
            exp = oracle.DecodeResult(list(frames), err)
            # an input that breaks two requirements at once may be reported as either (spec: error classification)
            alts = [a for a in oracle.decode(codec, whole).alternatives if a.frames == exp.frames and a.error]
            check_decode([exp] + alts, got, stop=codec.spec.stop_requirement, context=
                         f"invalid stream ({len(whole)} bytes, {codec}) expected to break {err.requirement}: ")
        prop()
    return run


def matching(S: Strategies):
    def run(testee):
        @given(st.data())
        def prop(data):
            codec, events, timeout = data.draw(S.match_scripts())
            expected = oracle.match(codec, events, timeout)
            got = testee.match(codec, events, timeout)
            desc = ", ".join(k if k != "advance_ms" else f"+{a}ms" for k, a in events[:12])
            check_match(expected, got, f"script [{desc}{', …' if len(events) > 12 else ''}] timeout {timeout or 'default'}: ")
        prop()
    return run


def serving(S: Strategies):
    """``S.serve_scripts()``: the sessions to draw. (The inner test's source is part of the seed a derandomized
    profile draws its examples from: keep it as it is, or expected failures found by its examples move.)"""
    from .checks import check_serve

    def run(testee):
        for codec, endpoint, chunks, half_close, edge in getattr(S, "serve_edges", tuple)():  # a wrapper may have none
            got = _unless_skipped(lambda: testee.serve(codec, endpoint, chunks, half_close))
            if got is not None:
                try:
                    check_serve(oracle.serve(codec, endpoint, chunks, half_close), got,
                                f"{edge} ({sum(map(len, chunks))} bytes in {len(chunks)} chunks, {codec}): ")
                except CheckFailure as e:
                    raise CheckFailure(str(e), sorted(set(e.requirements or []) | set(edge.requirements))) from None

        @given(S.serve_scripts())
        def prop(case):
            codec, endpoint, whole, chunks, half_close = case
            expected = oracle.serve(codec, endpoint, chunks, half_close)
            got = testee.serve(codec, endpoint, chunks, half_close)
            check_serve(expected, got, f"{len(whole)} bytes in {len(chunks)} chunks"
                                       f"{', then EOF' if half_close else ''} ({codec}): ")
        prop()
    return run


def properties(protocol: str) -> List[Property]:
    from .protocols import get
    return get(protocol).properties()


def long_stream(protocol_name: str, n: int = 100_000):
    """``n`` frames through one decoder, in pseudo-random chunks of 1 B .. 16 KiB: offsets,
    buffer compaction and counters (sequence numbers wrap n/256 times) over a long stream. The
    frames are known by construction (no Hypothesis, no oracle walk of the whole stream)."""
    def run(testee):
        import random
        from .netsuite import payload_for
        from .protocols import get
        spec = get(protocol_name)
        codec = spec.codec()
        frames = [spec.net_request(i, payload_for(i, i % 40)) for i in range(n)]
        data = b"".join(oracle.encode(codec, f) for f in frames)
        rnd = random.Random(n)
        cuts, pos = [], 0
        while pos < len(data):
            pos += rnd.choice((1, 7, 100, 1500, 4096, 16384))
            cuts.append(pos)
        got = testee.decode(codec, chunk(data, cuts))
        if got.error is not None or len(got.frames) != n:
            raise CheckFailure(f"{n} frames ({len(data)} bytes) in {len(cuts)} chunks through one decoder:\n"
                               f"  expected {n} frames, no error\n  actual   {len(got.frames)} frames, "
                               f"{got.error.short() if got.error else 'no error'}")
        for i, (e, a) in enumerate(zip(frames, got.frames)):
            if e != a:
                raise CheckFailure(f"frame {i} of {n} through one decoder:\n  expected {e.short()}\n  actual   {a.short()}")
    return run
