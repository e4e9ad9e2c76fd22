"""Test vectors: one JSON file per vector in conformance/vectors/<protocol>/.

Names follow JSONTestSuite: ``y_`` must be accepted, ``n_`` must be rejected,
``i_`` is implementation-defined (any of the listed outcomes conforms).

Byte strings are written as a hex string, or as a list of parts where a part is
a hex string or ``{"repeat": HEX, "count": N}`` (so large payloads stay small on
disk). File format (all keys but id/description/requirements/kind optional):

    {"id": "y_empty_payload", "description": "...", "requirements": ["STD-HDR-5"],
     "kind": "decode" | "encode" | "match",
     "codec": {"protocol": "standard", "limits": {"max_payload": 16},
               "length_field": {"offset": 0, "size": 2}},
     # decode
     "bytes": BYTES, "splits": [21],              # explicit split points (optional)
     "frames": [{"flag": 1, "sequence": 1, "payload": BYTES}], "error": {"requirement": ..., "offset": N},
     "encode": true,                              # y_: encoding `frames` must give `bytes`
     "outcomes": [{"frames": [...], "error": ...}, ...],   # i_: any one conforms
     # encode
     "frame": {...}, "expect": BYTES | {"error": {...}},
     # match
     "timeout_ms": 0, "events": [{"send": BYTES} | {"send_one_way": BYTES} | {"send_frame": {...}} | {"receive": BYTES}
                                 | {"advance_ms": N}],
     "sent": [BYTES, ...], "completions": [{"kind": "REPLY", "request": 0, "frame": {...}}, ...]}
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from .oracle import Codec, Completion, Error, Frame, MatchResult
from .paths import VECTOR_DIR


def parse_bytes(v) -> bytes:
    if v is None:
        return b""
    if isinstance(v, str):
        return bytes.fromhex(v)
    out = bytearray()
    for part in v:
        if isinstance(part, str):
            out += bytes.fromhex(part)
        else:
            out += bytes.fromhex(part["repeat"]) * int(part["count"])
    return bytes(out)


def compact_bytes(b: bytes, threshold: int = 64):
    """Inverse of parse_bytes, folding long runs of one byte (used by the generator)."""
    if len(b) <= threshold:
        return b.hex()
    parts = []
    i = 0
    lit = bytearray()
    while i < len(b):
        j = i
        while j < len(b) and b[j] == b[i]:
            j += 1
        if j - i >= 32:
            if lit:
                parts.append(lit.hex())
                lit = bytearray()
            parts.append({"repeat": b[i:i + 1].hex(), "count": j - i})
        else:
            lit += b[i:j]
        i = j
    if lit:
        parts.append(lit.hex())
    return parts[0] if len(parts) == 1 and isinstance(parts[0], str) else parts


def parse_frame(d: dict, codec: Optional[Codec] = None) -> Frame:
    """A frame's JSON, read by its protocol (``codec``); without one, the flag/sequence/payload form."""
    if codec is not None:
        return codec.spec.frame_from_json(d)
    return Frame(int(d.get("flag", 0)), int(d.get("sequence", 0)), parse_bytes(d.get("payload", "")))


def parse_error(d) -> Optional[Error]:
    return Error(d["requirement"], int(d.get("offset", 0))) if d else None


@dataclass
class Outcome:
    frames: List[Frame]
    error: Optional[Error]


@dataclass
class Vector:
    id: str
    protocol: str
    description: str
    requirements: List[str]
    kind: str
    codec: Codec
    raw: dict
    path: Path

    @property
    def verdict(self) -> str:
        return self.id.split("_", 1)[0]  # y | n | i

    # decode
    @property
    def data(self) -> bytes:
        return parse_bytes(self.raw.get("bytes"))

    @property
    def splits(self) -> Optional[List[int]]:
        return self.raw.get("splits")

    def outcomes(self) -> List[Outcome]:
        if "outcomes" in self.raw:
            return [Outcome([parse_frame(f, self.codec) for f in o.get("frames", [])], parse_error(o.get("error")))
                    for o in self.raw["outcomes"]]
        return [Outcome([parse_frame(f, self.codec) for f in self.raw.get("frames", [])], parse_error(self.raw.get("error")))]

    @property
    def check_encode(self) -> bool:
        return bool(self.raw.get("encode"))

    # encode
    @property
    def frame(self) -> Frame:
        return parse_frame(self.raw["frame"], self.codec)

    @property
    def expect(self):
        e = self.raw["expect"]
        if isinstance(e, dict) and "error" in e:
            return parse_error(e["error"])
        return parse_bytes(e)

    # match
    def events(self) -> list:
        out = []
        for ev in self.raw["events"]:
            (k, v), = ev.items()
            out.append((k, int(v) if k == "advance_ms" else parse_frame(v, self.codec) if k == "send_frame"
                        else parse_bytes(v)))
        return out

    def expected_match(self) -> MatchResult:
        comps = []
        for c in self.raw.get("completions", []):
            comps.append(Completion(c["kind"], c.get("request"), parse_frame(c["frame"], self.codec) if "frame" in c else None))
        return MatchResult([parse_bytes(s) for s in self.raw.get("sent", [])], comps, parse_error(self.raw.get("error")))


def load(protocol: str, vector_dir: Path = VECTOR_DIR) -> List[Vector]:
    out = []
    for path in sorted((vector_dir / protocol).glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw["id"] != path.stem:
            raise ValueError(f"{path}: id {raw['id']!r} does not match the file name")
        out.append(Vector(raw["id"], protocol, raw.get("description", ""), list(raw["requirements"]),
                          raw.get("kind", "decode"), Codec.from_json(raw.get("codec", {"protocol": protocol})),
                          raw, path))
    return out
