"""Comparisons that produce readable expected-vs-actual failure messages."""
from __future__ import annotations

from typing import List, Optional

from .oracle import DecodeResult, Error, MatchResult


class CheckFailure(AssertionError):
    """A conformance check failed; the message says expected vs actual. ``requirements``, when
    known, narrows the failure to the requirement(s) actually broken (else: all the test's)."""

    def __init__(self, message: str, requirements=None):
        super().__init__(message)
        self.requirements = list(requirements or [])


def _err(e: Optional[Error]) -> str:
    return e.short() if e else "no error"


def decode_diff(expected: DecodeResult, actual: DecodeResult) -> Optional[str]:
    """None if equal, else a description of the first difference."""
    ef, af = expected.frames, actual.frames
    for i in range(min(len(ef), len(af))):
        if ef[i] != af[i]:
            return f"frame {i}:\n  expected {ef[i].short()}\n  actual   {af[i].short()}"
    if len(ef) != len(af):
        extra = af[len(ef)] if len(af) > len(ef) else ef[len(af)]
        return (f"expected {len(ef)} frame(s), actual {len(af)} frame(s) "
                f"(first {'unexpected' if len(af) > len(ef) else 'missing'}: {extra.short()})")
    if expected.error != actual.error:
        return f"error:\n  expected {_err(expected.error)}\n  actual   {_err(actual.error)}"
    return None


def check_decode(outcomes: List[DecodeResult], actual: DecodeResult, context: str = "", stop: str = ""):
    """``stop``: the protocol's stop-at-the-first-error requirement (STD-STR-4, LF-STR-4), the
    requirement broken when the decoder went past an error it should have stopped at."""
    diffs = [decode_diff(o, actual) for o in outcomes]
    if any(d is None for d in diffs):
        return
    if len(outcomes) == 1:
        raise CheckFailure(f"{context}{diffs[0]}", broken_by(outcomes[0], actual, stop))
    raise CheckFailure(f"{context}matches none of the {len(outcomes)} allowed outcomes:\n" +
                       "\n".join(f" outcome {i}: {d}" for i, d in enumerate(diffs)))


def broken_by(exp: DecodeResult, actual: DecodeResult, stop: str = "") -> List[str]:
    """The requirement the observed difference breaks, when the difference tells (else [])."""
    n = len(exp.frames)
    if not exp.error or exp.frames != actual.frames[:n]:
        return []
    went_past = len(actual.frames) > n or (actual.error is not None and actual.error.offset > exp.error.offset)
    if went_past and stop:
        # frames or an error beyond the point where the stream had to stop: from outside, a decoder
        # that missed the error and one that saw it and went on look alike; both rules are broken
        return [exp.error.requirement, stop]
    if actual.error != exp.error:
        return [exp.error.requirement]  # not detected, or classified otherwise
    return []


def check_encode(expected, actual, context: str = ""):
    if expected == actual:
        return
    def show(x):
        if isinstance(x, Error):
            return f"refused with {x.requirement}"
        return f"{len(x)} bytes {x[:24].hex(' ')}{' …' if len(x) > 24 else ''}"
    if isinstance(expected, bytes) and isinstance(actual, bytes):
        i = next((k for k in range(min(len(expected), len(actual))) if expected[k] != actual[k]), min(len(expected), len(actual)))
        raise CheckFailure(f"{context}encoded bytes differ at offset {i}:\n  expected {show(expected)}\n  actual   {show(actual)}")
    raise CheckFailure(f"{context}\n  expected {show(expected)}\n  actual   {show(actual)}")


def check_match(expected: MatchResult, actual: MatchResult, context: str = ""):
    for i, (e, a) in enumerate(zip(expected.sent, actual.sent)):
        if e != a:
            raise CheckFailure(f"{context}bytes written for send #{i}:\n  expected {e[:24].hex(' ')}\n  actual   {a[:24].hex(' ')}")
    if len(expected.sent) != len(actual.sent):
        raise CheckFailure(f"{context}expected {len(expected.sent)} sends recorded, actual {len(actual.sent)}")
    ec, ac = expected.completions, actual.completions
    for i in range(min(len(ec), len(ac))):
        if (ec[i].kind, ec[i].request, ec[i].frame) != (ac[i].kind, ac[i].request, ac[i].frame):
            raise CheckFailure(f"{context}completion {i}:\n  expected {ec[i].short()}\n  actual   {ac[i].short()}")
    if len(ec) != len(ac):
        more = ac[len(ec):] if len(ac) > len(ec) else ec[len(ac):]
        raise CheckFailure(f"{context}expected {len(ec)} completions, actual {len(ac)}; "
                           f"{'unexpected' if len(ac) > len(ec) else 'missing'}: " + ", ".join(c.short() for c in more[:5]))
    if expected.error != actual.error:
        raise CheckFailure(f"{context}connection error:\n  expected {_err(expected.error)}\n  actual   {_err(actual.error)}")


def chunk(data: bytes, splits) -> List[bytes]:
    out, prev = [], 0
    for s in sorted(set(x for x in splits if 0 < x < len(data))):
        out.append(data[prev:s])
        prev = s
    out.append(data[prev:])
    return out


def chunk_every(data: bytes, n: int) -> List[bytes]:
    if not data:
        return [b""]
    return [data[i:i + n] for i in range(0, len(data), n)]


def check_serve(expected, actual, context: str = ""):
    """Compares two ServeResults (spec/testee.md, serve): what was written after each chunk,
    whether the endpoint closed, and the error it closed with."""
    ew, aw = expected.written, actual.written
    for i in range(min(len(ew), len(aw))):
        if ew[i] != aw[i]:
            j = next((k for k in range(min(len(ew[i]), len(aw[i]))) if ew[i][k] != aw[i][k]),
                     min(len(ew[i]), len(aw[i])))
            raise CheckFailure(f"{context}bytes written after input step {i} differ at offset {j}:\n"
                               f"  expected {len(ew[i])} bytes {ew[i][j:j + 24].hex(' ')}\n"
                               f"  actual   {len(aw[i])} bytes {aw[i][j:j + 24].hex(' ')}")
    if len(ew) != len(aw):
        raise CheckFailure(f"{context}expected the endpoint to take {len(ew)} input step(s) before "
                           f"{'closing' if expected.closed else 'the end'}, actual {len(aw)}"
                           f"{' (it closed early)' if len(aw) < len(ew) and actual.closed else ''}",
                           [expected.error.requirement] if expected.error else [])
    if expected.closed != actual.closed:
        raise CheckFailure(f"{context}connection closed:\n  expected {expected.closed}\n  actual   {actual.closed}")
    if expected.error != actual.error:
        raise CheckFailure(f"{context}close reason:\n  expected {_err(expected.error)}\n  actual   {_err(actual.error)}",
                           [expected.error.requirement] if expected.error else [])
