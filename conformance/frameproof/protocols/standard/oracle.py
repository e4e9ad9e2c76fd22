"""The `standard` oracle (spec/standard.md): streams walked with the Kaitai-generated
``StandardFrame`` parser; encoding, the sequence-matching client model and the echo server
model from the spec text."""
from __future__ import annotations

from typing import Optional, Tuple

import kaitaistruct
from kaitaistruct import BytesIO, KaitaiStream

from ...matching import ClientModel
from ...oracle import Codec, DecodeResult, Error, Frame, walk

try:
    from ..._generated.standard_frame import StandardFrame
except ImportError as e:  # pragma: no cover - a setup problem, not a test outcome
    raise ImportError("generated parsers missing: run `bash tools/bootstrap.sh` (it runs tools/gen.sh)") from e


class StandardCodec(Codec):
    """No parameters beyond the limit."""


def decode(codec: Codec, data: bytes) -> DecodeResult:
    io = KaitaiStream(BytesIO(data))

    def either(res, pos, err, frame, end):
        if err in ("STD-LEN-3", "STD-LEN-4") and len(data) >= pos + 8 and \
                int.from_bytes(data[pos + 4:pos + 8], "little") > codec.limit:
            # malformed and above the limit at once: either class is right (spec 8a)
            res.alternatives.append(DecodeResult(list(res.frames), Error("STD-LIM-1", pos)))

    return walk(data, lambda pos: _decode_one(codec, io, pos), either)


def _decode_one(codec: Codec, io: KaitaiStream, pos: int) -> Tuple[Optional[str], Optional[Frame], int]:
    # 1. the header alone: classify malformed headers and oversize before the payload is needed.
    io.seek(pos)
    try:
        declared = StandardFrame.Header(io).len_payload
    except kaitaistruct.ValidationFailedError as e:
        return _classify(e), None, pos
    except EOFError:
        return "STD-STR-3", None, pos
    if declared > codec.limit:
        return "STD-LIM-1", None, pos
    # 2. the whole frame through the generated top-level parser.
    io.seek(pos)
    try:
        f = StandardFrame(io)
    except kaitaistruct.ValidationFailedError as e:  # pragma: no cover - caught in step 1
        return _classify(e), None, pos
    except EOFError:
        return "STD-STR-3", None, pos
    h = f.header
    flag = (h.flag.reply << 7) | (h.flag.error_or_one_way << 6) | h.flag.kind
    return None, Frame(flag, h.sequence, bytes(f.payload)), io.pos()


def _classify(e: Exception) -> str:
    # len32 is valid in [65535, 2^31-1]: below = non-canonical, above = bit 31 set.
    return "STD-LEN-3" if isinstance(e, kaitaistruct.ValidationLessThanError) else "STD-LEN-4"


def header(flag: int, seq: int, n: int) -> bytes:
    """The header declaring ``n`` payload bytes (extended form from 65535 on)."""
    if n < 0xFFFF:
        return bytes([flag, seq]) + n.to_bytes(2, "little")
    return bytes([flag, seq, 0xFF, 0xFF]) + (n & 0xFFFFFFFF).to_bytes(4, "little")


def encode(codec: Codec, frame: Frame):
    n = len(frame.payload)
    if n >= 2 ** 31:
        return Error("STD-LEN-4", 0)
    if n > codec.limit:
        return Error("STD-LIM-2", 0)
    return header(frame.flag, frame.sequence, n) + frame.payload


class SequenceClient(ClientModel):
    """STD-SEQ-*, STD-MATCH-*: sequence allocation, replies matched by sequence number."""

    def __init__(self, codec, timeout_ms=0):
        super().__init__(codec, timeout_ms)
        self.counter = 0  # last allocated sequence

    def request_frame(self, kind, arg):
        seq = (self.counter + 1) & 0xFF
        if kind == "send" and any(s == seq for _r, s, _d in self.pending):
            return None  # STD-SEQ-3
        return Frame(0x01 if kind == "send" else 0x41, seq, arg), seq

    def commit(self, kind, key):
        self.counter = key

    def pick(self, frame):
        if not frame.flag & 0x80:
            return False  # STD-MATCH-5: not a reply
        return next((p for p in self.pending if p[1] == frame.sequence), None)


def echo_reply(frame: Frame) -> Optional[Frame]:
    """STD-ECHO-1/2: requests get 0x80|kind, same sequence and payload; others nothing."""
    if frame.flag & 0xC0:
        return None
    return Frame(0x80 | (frame.flag & 0x3F), frame.sequence, frame.payload)
