"""Comparisons that produce readable expected-vs-actual failure messages."""
from __future__ import annotations

from typing import List, Optional

from .oracle import DecodeResult, Error, Frame, MatchResult


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


def check_decode(outcomes: List[DecodeResult], actual: DecodeResult, context: str = ""):
    diffs = [decode_diff(o, actual) for o in outcomes]
    if any(d is None for d in diffs):
        return
    if len(outcomes) == 1:
        exp = outcomes[0]
        # the frames before the error were right and the error differs: the broken requirement is the error's
        broken = [exp.error.requirement] if exp.error and exp.frames == actual.frames[:len(exp.frames)] \
            and actual.error != exp.error else []
        raise CheckFailure(f"{context}{diffs[0]}", broken)
    raise CheckFailure(f"{context}matches none of the {len(outcomes)} allowed outcomes:\n" +
                       "\n".join(f" outcome {i}: {d}" for i, d in enumerate(diffs)))


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
