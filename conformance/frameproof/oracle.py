"""The suite's oracle: what a conforming implementation must answer.

Decoding uses the parsers that the Kaitai Struct compiler generates from
``schemas/*.ksy`` (never hand-edited); this module only walks a stream frame by
frame, applies the configured limits, and names the requirement a failure breaks
(each spec's "Error classification" section). Encoding and client-side matching
follow the spec text directly; they are small and have no Kaitai counterpart.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import kaitaistruct
from kaitaistruct import KaitaiStream, BytesIO

try:
    from ._generated.standard_frame import StandardFrame
    from ._generated.length_field_frame import LengthFieldFrame
except ImportError as e:  # pragma: no cover - a setup problem, not a test outcome
    raise ImportError("generated parsers missing: run `bash tools/bootstrap.sh` (it runs tools/gen.sh)") from e

DEFAULT_MAX_PAYLOAD = 10 * 1024 * 1024
DEFAULT_TIMEOUT_MS = 3000
LF_VALID_SIZES = (1, 2, 4, -2, -4, 0)
LF_MAX_PENDING = 256


@dataclass(frozen=True)
class Codec:
    protocol: str
    max_payload: int = 0  # 0 = default
    lf_offset: int = 0
    lf_size: int = 2

    @property
    def limit(self) -> int:
        return self.max_payload or DEFAULT_MAX_PAYLOAD

    def to_json(self) -> dict:
        d = {"protocol": self.protocol}
        if self.max_payload:
            d["limits"] = {"max_payload": self.max_payload}
        if self.protocol == "length-field" and (self.lf_offset, self.lf_size) != (0, 2):
            d["length_field"] = {"offset": self.lf_offset, "size": self.lf_size}
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Codec":
        lf = d.get("length_field") or {}
        return cls(d["protocol"], int((d.get("limits") or {}).get("max_payload", 0)),
                   int(lf.get("offset", 0)), int(lf.get("size", 2)))


@dataclass(frozen=True)
class Frame:
    flag: int = 0
    sequence: int = 0
    payload: bytes = b""

    def to_json(self) -> dict:
        return {"flag": self.flag, "sequence": self.sequence, "payload": self.payload.hex()}

    def short(self) -> str:
        p = self.payload
        shown = p[:16].hex() + ("…" if len(p) > 16 else "")
        return f"Frame(flag=0x{self.flag:02X}, seq={self.sequence}, payload[{len(p)}]={shown})"


@dataclass(frozen=True)
class Error:
    requirement: str
    offset: int

    def short(self) -> str:
        return f"{self.requirement} @ {self.offset}"


@dataclass
class DecodeResult:
    frames: List[Frame] = field(default_factory=list)
    error: Optional[Error] = None
    consumed: int = 0  # bytes taken by the delivered frames
    # Other conforming results where the spec leaves a choice (LF-LEN-4: a receiver
    # may reject a non-minimal varint with LF-LEN-2 instead of accepting it).
    alternatives: List["DecodeResult"] = field(default_factory=list)


# ---------------------------------------------------------------- decoding

def _lf_capacity(size: int) -> int:
    return {1: 0xFF, 2: 0xFFFF, -2: 0xFFFF}.get(size, 0x7FFFFFFF)


def decode(codec: Codec, data: bytes) -> DecodeResult:
    """Decode a complete byte stream (the end of ``data`` is the end of the stream)."""
    res = DecodeResult()
    if codec.protocol == "length-field" and codec.lf_size not in LF_VALID_SIZES:
        res.error = Error("LF-FMT-3", 0)
        return res
    io = KaitaiStream(BytesIO(data))
    pos = 0
    n = len(data)
    while pos < n:
        err, frame, end = _decode_one(codec, io, pos)
        if not err and codec.protocol == "length-field" and codec.lf_size == 0 and not res.alternatives:
            vstart = pos + codec.lf_offset
            nbytes = end - vstart - len(frame.payload)
            if nbytes > 1 and data[vstart + nbytes - 1] == 0:
                res.alternatives.append(DecodeResult(list(res.frames), Error("LF-LEN-2", pos)))
        if err:
            res.error = Error(err, pos)
            return res
        res.frames.append(frame)
        pos = res.consumed = end
    return res


def _decode_one(codec: Codec, io: KaitaiStream, pos: int) -> Tuple[Optional[str], Optional[Frame], int]:
    std = codec.protocol == "standard"
    trunc = "STD-STR-3" if std else "LF-STR-3"
    # 1. the header alone: classify malformed headers and oversize before the payload is needed.
    io.seek(pos)
    try:
        if std:
            hdr = StandardFrame.Header(io)
            declared = hdr.len_payload
        else:
            hdr = _LfHeaderOnly(codec, io)
            declared = hdr.len_payload
    except kaitaistruct.ValidationFailedError as e:
        return _classify_validation(std, e), None, pos
    except EOFError:
        return trunc, None, pos
    if declared > codec.limit or (not std and declared > _lf_capacity(codec.lf_size)):
        return ("STD-LIM-1" if std else "LF-LIM-1"), None, pos
    # 2. the whole frame through the generated top-level parser.
    io.seek(pos)
    try:
        if std:
            f = StandardFrame(io)
            h = f.header
            flag = (h.flag.reply << 7) | (h.flag.error_or_one_way << 6) | h.flag.kind
            frame = Frame(flag, h.sequence, bytes(f.payload))
        else:
            f = LengthFieldFrame(codec.lf_offset, codec.lf_size, io)
            frame = Frame(0, 0, bytes(f.payload))
    except kaitaistruct.ValidationFailedError as e:  # pragma: no cover - caught in step 1
        return _classify_validation(std, e), None, pos
    except EOFError:
        return trunc, None, pos
    return None, frame, io.pos()


def _classify_validation(std: bool, e: Exception) -> str:
    if std:
        # len32 is valid in [65535, 2^31-1]: below = non-canonical, above = bit 31 set.
        return "STD-LEN-3" if isinstance(e, kaitaistruct.ValidationLessThanError) else "STD-LEN-4"
    # u4 lengths with bit 31 set, or a varint of more than 5 bytes / above 2^31-1.
    return "LF-LEN-2" if "varint" in str(getattr(e, "src_path", "")) else "LF-LEN-3"


class _LfHeaderOnly:
    """Reads only the header and length field of a length-field frame, using the
    generated parser's own field readers, so that oversize can be decided before
    the payload is read."""

    def __init__(self, codec: Codec, io: KaitaiStream):
        # LengthFieldFrame reads header+length+payload in one _read(); build an
        # instance without reading, then run the same steps up to the payload.
        f = LengthFieldFrame.__new__(LengthFieldFrame)
        kaitaistruct.KaitaiStruct.__init__(f, io)
        f._parent = None
        f._root = f
        f.len_header = codec.lf_offset
        f.size = codec.lf_size
        f.header = io.read_bytes(codec.lf_offset)
        size = codec.lf_size
        if size == 1:
            f.len_u1 = io.read_u1()
        elif size == 2:
            f.len_u2le = io.read_u2le()
        elif size == 4:
            f.len_u4le = io.read_u4le()
            if f.len_u4le > 0x7FFFFFFF:
                raise kaitaistruct.ValidationGreaterThanError(0x7FFFFFFF, f.len_u4le, io, "/seq/3")
        elif size == -2:
            f.len_u2be = io.read_u2be()
        elif size == -4:
            f.len_u4be = io.read_u4be()
            if f.len_u4be > 0x7FFFFFFF:
                raise kaitaistruct.ValidationGreaterThanError(0x7FFFFFFF, f.len_u4be, io, "/seq/5")
        else:
            f.len_varint = LengthFieldFrame.Varint(io, f, f)
        self.len_payload = f.len_payload


# ---------------------------------------------------------------- encoding

def encode_length(codec: Codec, n: int) -> bytes:
    s = codec.lf_size
    if s == 1:
        return bytes([n])
    if s == 2:
        return n.to_bytes(2, "little")
    if s == -2:
        return n.to_bytes(2, "big")
    if s == 4:
        return n.to_bytes(4, "little")
    if s == -4:
        return n.to_bytes(4, "big")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode(codec: Codec, frame: Frame):
    """Returns the canonical bytes of ``frame``, or an ``Error`` the encoder must report."""
    n = len(frame.payload)
    if codec.protocol == "standard":
        if n >= 2 ** 31:
            return Error("STD-LEN-4", 0)
        if n > codec.limit:
            return Error("STD-LIM-2", 0)
        if n < 0xFFFF:
            hdr = bytes([frame.flag, frame.sequence]) + n.to_bytes(2, "little")
        else:
            hdr = bytes([frame.flag, frame.sequence, 0xFF, 0xFF]) + n.to_bytes(4, "little")
        return hdr + frame.payload
    if codec.lf_size not in LF_VALID_SIZES:
        return Error("LF-FMT-3", 0)
    if n > _lf_capacity(codec.lf_size):
        return Error("LF-LEN-1", 0)
    if n > codec.limit:
        return Error("LF-LIM-2", 0)
    return bytes(codec.lf_offset) + encode_length(codec, n) + frame.payload


# ---------------------------------------------------------------- matching model

@dataclass
class Completion:
    kind: str  # REPLY | TIMEOUT | UNMATCHED | FAILED | REFUSED
    request: Optional[int] = None
    frame: Optional[Frame] = None

    def short(self) -> str:
        s = self.kind
        if self.request is not None:
            s += f"(req {self.request})"
        if self.frame is not None:
            s += " " + self.frame.short()
        return s


@dataclass
class MatchResult:
    sent: List[bytes] = field(default_factory=list)
    completions: List[Completion] = field(default_factory=list)
    error: Optional[Error] = None


def match(codec: Codec, events: list, timeout_ms: int = 0) -> MatchResult:
    """Model of one client connection (spec/testee.md, `match`). ``events`` is a list of
    ("send", bytes) | ("send_one_way", bytes) | ("receive", bytes) | ("advance_ms", int)."""
    timeout = timeout_ms or DEFAULT_TIMEOUT_MS
    std = codec.protocol == "standard"
    out = MatchResult()
    now = 0
    counter = 0  # last allocated sequence
    pending = []  # list of (request index, seq, deadline), in send order
    buf = b""
    consumed = 0  # stream offset of buf[0]
    failed = False
    index = 0

    def fail_all(kind="FAILED"):
        for req, _seq, _dl in pending:
            out.completions.append(Completion(kind, req))
        pending.clear()

    for ev, arg in events:
        if ev in ("send", "send_one_way"):
            req = index
            index += 1
            if failed:
                out.sent.append(b"")
                out.completions.append(Completion("REFUSED", req))
                continue
            if std:
                seq = (counter + 1) & 0xFF
                if ev == "send" and any(s == seq for _r, s, _d in pending):
                    out.sent.append(b"")
                    out.completions.append(Completion("REFUSED", req))
                    continue
                counter = seq
                flag = 0x01 if ev == "send" else 0x41
                enc = encode(codec, Frame(flag, seq, arg))
            else:
                if len(pending) >= LF_MAX_PENDING:
                    out.sent.append(b"")
                    out.completions.append(Completion("REFUSED", req))
                    continue
                seq = 0
                enc = encode(codec, Frame(0, 0, arg))
            if isinstance(enc, Error):
                out.sent.append(b"")
                out.completions.append(Completion("REFUSED", req))
                continue
            out.sent.append(enc)
            if ev == "send":
                pending.append((req, seq, now + timeout))
        elif ev == "receive":
            if failed:
                continue
            buf += arg
            # decode as many complete frames as possible; an incomplete tail waits
            res = decode(codec, buf)
            frames = res.frames
            err = res.error
            used = res.consumed
            for fr in frames:
                if std:
                    if not fr.flag & 0x80:
                        continue
                    hit = next((p for p in pending if p[1] == fr.sequence), None)
                    if hit:
                        pending.remove(hit)
                        out.completions.append(Completion("REPLY", hit[0], fr))
                    else:
                        out.completions.append(Completion("UNMATCHED", None, fr))
                else:
                    if pending:
                        req = pending.pop(0)
                        out.completions.append(Completion("REPLY", req[0], fr))
                    else:
                        out.completions.append(Completion("UNMATCHED", None, fr))
            if err and err.requirement not in ("STD-STR-3", "LF-STR-3"):
                out.error = Error(err.requirement, consumed + err.offset)
                fail_all()
                failed = True
                buf = b""
            else:
                buf = buf[used:]
                consumed += used
        elif ev == "advance_ms":
            if failed:
                now += arg
                continue
            now += arg
            expired = [p for p in pending if p[2] <= now]
            for p in expired:
                pending.remove(p)
                out.completions.append(Completion("TIMEOUT", p[0]))
            if expired and not std:
                fail_all()
                failed = True
        else:  # pragma: no cover
            raise ValueError(ev)
    return out
