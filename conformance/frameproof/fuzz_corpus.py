"""The coverage-guided side of fuzzing: the input layout of the native libFuzzer targets
(reference-impls/rust/fuzz, reference-impls/cpp/fuzz; conformance/FUZZING.md), their seed corpus from
the decode vectors, and a libFuzzer artifact read back as a finding (a ready-to-add vector)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence

from . import protocols as registry
from .fuzz import Answer, Finding, compare
from .oracle import Codec
from .testee import Testee


# The native targets' input layout (reference-impls/rust/fuzz/fuzz_targets/decode.rs,
# reference-impls/cpp/fuzz/decode_fuzz.cpp and wire_fuzz.cpp; conformance/FUZZING.md):
#   byte 0: the protocol (its corpus_id); byte 1: limit index << 5 | the protocol's own configuration
#   bits (corpus_config, 0..31); byte 2: chunking; then the stream.
LIMITS = [0, 16, 64, 100, 1024, 65535, 70000, 1]


def corpus_entry(codec: Codec, data: bytes, chunking: int = 0) -> Optional[bytes]:
    """The libFuzzer input for ``codec`` and ``data`` (None if the targets' tables have no such codec)."""
    bits = codec.spec.corpus_config(codec)
    if codec.max_payload not in LIMITS or bits is None or codec.spec.corpus_id is None:
        return None
    assert 0 <= bits < 32, (codec, bits)
    return bytes([codec.spec.corpus_id, LIMITS.index(codec.max_payload) << 5 | bits, chunking & 0xFF]) + data


def decode_corpus_input(entry: bytes):
    """Inverse of ``corpus_entry``: (codec, data, chunks) exactly as the native targets split it
    (ValueError for an input every target ignores)."""
    if len(entry) < 3:
        raise ValueError(f"a corpus input has at least 3 bytes, this one {len(entry)}")
    pid, cfg, ctl, data = entry[0], entry[1], entry[2], entry[3:]
    proto = next((p for p in registry.all_protocols() if p.corpus_id == pid), None)
    if proto is None:
        raise ValueError(f"no protocol has corpus id {pid} (the targets ignore this input)")
    return proto.corpus_codec(cfg & 31, LIMITS[cfg >> 5]), data, native_chunks(data, ctl)


def native_chunks(data: bytes, ctl: int) -> List[bytes]:
    if ctl == 0 or not data:
        return [data]
    maxc = ctl % 16 + 1
    state = ctl
    out, pos = [], 0
    while pos < len(data):
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        n = min(1 + (state >> 16) % maxc, len(data) - pos)
        out.append(data[pos:pos + n])
        pos += n
    return out


def write_corpus(out_dir: Path, max_len: int = 4096, verdicts: Sequence[str] = ("y", "n", "i")) -> int:
    """Seed corpus from every decode vector (truncated to ``max_len`` bytes: a truncated stream is
    still an interesting input), each once whole and once in small chunks. Returns the count.
    ``verdicts``: only vectors of these kinds (("y",): valid streams only)."""
    from .vectors import load
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n = 0
    for proto in registry.names():
        for v in load(proto):
            if v.kind != "decode" or v.verdict not in verdicts:
                continue
            for ctl in (0, 0x35):
                e = corpus_entry(v.codec, v.data[:max_len], ctl)
                if e is None:
                    continue
                (out_dir / f"{proto}-{v.id}-{ctl:02x}").write_bytes(e)
                n += 1
    return n


def finding_from_input(entry: bytes, found_by: str, testees: Sequence[str] = ()) -> Finding:
    """A libFuzzer input (crash/leak/invariant artifact) as a Finding, so that it is written as a
    vector like a differential disagreement. ``testees``, if given, are run on it: their
    non-conforming answers are recorded (an empty list if they all conform)."""
    codec, data, chunks = decode_corpus_input(entry)
    ts = {c: Testee(c) for c in testees}
    try:
        supported = {c: t.capabilities()[0] for c, t in ts.items()}
        expected, bad = compare(ts, codec, data, chunks, supported)
    finally:
        for t in ts.values():
            t.stop()
    bad.insert(0, Answer(found_by, None, f"{found_by} failed on this input"))
    return Finding(codec, data, chunks, expected, bad, 0, None)
