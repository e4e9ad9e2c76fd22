"""Long streams (spec/testee.md, "long stream", harness v3): one decoder fed several GiB that the
testee makes itself from a recipe, so that stream offsets and buffer arithmetic pass 2^32.

This module is both sides of the request: the recipe and the expected answer (the runner), and the
stream's reads (the Python testee, and any tool that wants to replay a failure).

How long: ``--long-stream BYTES`` of ``frameproof run`` (``SIZE`` below); by default 64 MiB under
the ``ci`` profile, 16 MiB under ``smoke`` and 4.5 GiB under ``fuzz``. The main job passes 4.5 GiB.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional

MASK64 = (1 << 64) - 1
GIB = 1 << 30
DEFAULT_SIZES = {"smoke": 16 << 20, "ci": 64 << 20, "fuzz": 4 * GIB + GIB // 2}
#: The stream length this run asks for; set from ``--fp-long-stream`` (0: the profile's default).
SIZE = 0
SEED = 0x5EED_F00D_0000_0001
MAX_CHUNK = 64 * 1024
#: Payload sizes the cycle walks through: empty, the 7/16/64-bit length edges that the protocols'
#: headers switch at, and bulk.
CYCLE_SIZES = (0, 1, 125, 126, 127, 255, 256, 1000, 65535, 65536, 4096, 16000, 3, 40000, 2, 70000)
#: Frames in one cycle: a multiple of 256, so that 8-bit sequence numbers run on across cycles.
CYCLE_FRAMES = 256


def parse_size(text: str) -> int:
    """``4608M``, ``4.5G``, ``64MiB``, ``1000000`` -> bytes."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgG]?)(?:i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 64M, 4.5G)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def size_for(profile: str) -> int:
    return SIZE or DEFAULT_SIZES.get(profile, DEFAULT_SIZES["ci"])


def splitmix64(seed: int) -> Iterator[int]:
    state = seed & MASK64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def reads(cycle: bytes, repeat: int, tail: bytes, seed: int, max_chunk: int) -> Iterator[bytes]:
    """The stream's reads, in order: 1 + (splitmix64 mod max_chunk) bytes each."""
    total = len(cycle) * repeat + len(tail)
    rnd = splitmix64(seed)
    pos = 0
    n_cycle = len(cycle) * repeat
    doubled = cycle + cycle  # a read that wraps around the cycle is one slice of this
    while pos < total:
        n = min(1 + next(rnd) % max_chunk, total - pos)
        end = pos + n
        if end <= n_cycle:
            if n <= len(cycle):
                at = pos % len(cycle)
                yield doubled[at:at + n]
            else:  # a read longer than the cycle
                yield bytes(cycle[(pos + i) % len(cycle)] for i in range(n))
        else:
            head = b""
            if pos < n_cycle:
                at = pos % len(cycle)
                head = doubled[at:at + (n_cycle - pos)]
            yield head + tail[max(0, pos - n_cycle):end - n_cycle]
        pos = end


@dataclass
class Recipe:
    cycle: bytes
    cycle_frames: list
    repeat: int
    tail: bytes
    seed: int = SEED
    max_chunk: int = MAX_CHUNK

    @property
    def length(self) -> int:
        return len(self.cycle) * self.repeat + len(self.tail)


@dataclass
class Expected:
    frames: int
    payload_bytes: int
    digest: bytes
    last: Optional[object]
    error: Optional[object]  # oracle.Error, its offset from the stream's start
    fed: int


def recipe(spec, codec, size: int) -> Recipe:
    """A cycle of CYCLE_FRAMES valid frames of ``spec`` (the network suite's requests, so every
    protocol's own shape: masked client frames for websocket, REQUESTs for rpc ...), repeated until
    the stream is ``size`` bytes, and a tail of one frame a byte over the codec's limit."""
    from . import oracle
    from .netsuite import payload_for
    frames = [spec.net_request(i, payload_for(i, min(codec.limit, CYCLE_SIZES[i % len(CYCLE_SIZES)])))
              for i in range(CYCLE_FRAMES)]
    cycle = b"".join(oracle.encode(codec, f) for f in frames)
    repeat = max(1, -(-size // len(cycle)))
    return Recipe(cycle, frames, repeat, _over_limit(spec, codec))


def _over_limit(spec, codec) -> bytes:
    """One frame a byte over the codec's limit: the decoder must refuse it at its header."""
    from . import oracle
    return oracle.encode(codec.with_limit(codec.capacity), spec.net_request(CYCLE_FRAMES, b"\x00" * (codec.limit + 1)))


def codec_for(spec):
    """The protocol's default codec with a limit of 128 KiB, or one below what its header can say
    (length-field's default 2-byte field: 65534), so that a frame over the limit can be written."""
    return spec.codec(max_payload=min(1 << 17, spec.codec().capacity - 1))


def expected(codec, r: Recipe) -> Expected:
    """What one decoder of ``codec`` must answer for the stream of ``r``: the cycle's frames
    ``repeat`` times, then what the oracle says of one cycle followed by the tail, moved to the last
    cycle's place (a cycle is whole frames, so a decoder starts every cycle afresh)."""
    from . import oracle
    h = hashlib.sha256()
    payload = b"".join(f.payload for f in r.cycle_frames)
    for _ in range(r.repeat - 1):
        h.update(payload)
    last_cycle = oracle.decode(codec, r.cycle + r.tail)
    for f in last_cycle.frames:
        h.update(f.payload)
    frames = len(r.cycle_frames) * (r.repeat - 1) + len(last_cycle.frames)
    nbytes = len(payload) * (r.repeat - 1) + sum(len(f.payload) for f in last_cycle.frames)
    base = len(r.cycle) * (r.repeat - 1)
    err = None
    if last_cycle.error is not None:
        from dataclasses import replace
        err = replace(last_cycle.error, offset=base + last_cycle.error.offset)
    last = last_cycle.frames[-1] if last_cycle.frames else (r.cycle_frames[-1] if r.repeat > 1 else None)
    fed = r.length if err is None else None  # with an error: at least up to it, at most the stream
    return Expected(frames, nbytes, h.digest(), last, err, fed)


def check(codec, r: Recipe, got, exp: Expected) -> List[str]:
    """Differences between a testee's LongStreamResponse (already in Python form) and ``exp``."""
    out = []
    if got.frames != exp.frames:
        out.append(f"frames decoded: expected {exp.frames}, actual {got.frames}")
    if got.payload_bytes != exp.payload_bytes:
        out.append(f"payload bytes: expected {exp.payload_bytes}, actual {got.payload_bytes}")
    if got.digest != exp.digest:
        out.append(f"SHA-256 of the payloads: expected {exp.digest.hex()}, actual {got.digest.hex()}")
    if (got.last is None) != (exp.last is None) or (exp.last is not None and got.last != exp.last):
        out.append(f"last frame: expected {exp.last.short() if exp.last else 'none'}, "
                   f"actual {got.last.short() if got.last else 'none'}")
    ge, ee = got.error, exp.error
    if (ge is None) != (ee is None) or (ee is not None and (ge.requirement, ge.offset) != (ee.requirement, ee.offset)):
        out.append(f"error: expected {ee.short() if ee else 'none'}, actual {ge.short() if ge else 'none'}")
    if exp.fed is not None and got.fed != exp.fed:
        out.append(f"bytes fed: expected {exp.fed}, actual {got.fed}")
    if ee is not None and not (ee.offset < got.fed <= r.length):
        out.append(f"bytes fed: expected past the error's offset {ee.offset} and at most {r.length}, actual {got.fed}")
    return out


#: The slowest decoder the deadline allows for (the Python reference decodes about 60 MiB/s here).
SLOWEST_BYTES_PER_S = 8 << 20


def long_stream_check(protocol_name: str):
    """The property: the recipe's stream through the testee's decoder, against ``expected``."""
    def run(testee):
        from .checks import CheckFailure
        from .protocols import get
        spec = get(protocol_name)
        codec = codec_for(spec)
        r = recipe(spec, codec, SIZE or DEFAULT_SIZES["ci"])
        exp = expected(codec, r)
        got = testee.long_stream(codec, r, 30 + r.length / SLOWEST_BYTES_PER_S)
        diffs = check(codec, r, got, exp)
        if diffs:
            raise CheckFailure(
                f"one decoder ({codec}) fed {r.length} bytes: {r.repeat} times a cycle of {len(r.cycle)} bytes "
                f"({len(r.cycle_frames)} frames), then a {len(r.tail)}-byte frame one byte over the limit, in reads of "
                f"1..{r.max_chunk} bytes (splitmix64, seed {r.seed:#x}):\n" + "\n".join("  " + d for d in diffs))
    return run
