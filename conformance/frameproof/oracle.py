"""The suite's oracle: what a conforming implementation must answer.

This module holds the protocol-neutral result types and dispatches to the protocol packages
(``frameproof.protocols``): each protocol's oracle walks a stream with the parser the Kaitai
Struct compiler generates from ``schemas/<protocol>.ksy`` (never hand-edited), applies the
configured limits, and names the requirement a failure breaks (each spec's "Error
classification"). Encoding, client-side matching and the server model follow the spec text.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, List, Optional

DEFAULT_MAX_PAYLOAD = 10 * 1024 * 1024
DEFAULT_TIMEOUT_MS = 3000


@dataclass(frozen=True)
class Codec:
    """A protocol and its configuration; each protocol subclasses it with its parameters.
    JSON form: the vectors' ``"codec"`` object and the programs' ``--codec`` argument."""
    protocol: str
    max_payload: int = 0  # 0 = the protocol's default

    DEFAULT_MAX: ClassVar[int] = DEFAULT_MAX_PAYLOAD
    #: the largest payload the framing itself can express
    CAPACITY: ClassVar[int] = 2 ** 31 - 1

    @property
    def limit(self) -> int:
        return self.max_payload or self.DEFAULT_MAX

    @property
    def capacity(self) -> int:
        return self.CAPACITY

    def params_json(self) -> dict:
        """The protocol's parameters as JSON keys (empty when all are defaults)."""
        return {}

    def to_json(self) -> dict:
        d = {"protocol": self.protocol}
        if self.max_payload:
            d["limits"] = {"max_payload": self.max_payload}
        d.update(self.params_json())
        return d

    def with_limit(self, max_payload: int) -> "Codec":
        from dataclasses import replace
        return replace(self, max_payload=max_payload)

    @staticmethod
    def from_json(d: dict) -> "Codec":
        from .protocols import get
        return get(d["protocol"]).codec_from_json(d)

    @property
    def spec(self):
        """The protocol object of this codec (frameproof.protocols)."""
        from .protocols import get
        return get(self.protocol)


@dataclass(frozen=True)
class Frame:
    flag: int = 0
    sequence: int = 0
    payload: bytes = b""
    header: object = None  # protocol-specific header (protocols whose frames carry more)

    def to_json(self) -> dict:
        return {"flag": self.flag, "sequence": self.sequence, "payload": self.payload.hex()}

    def short(self) -> str:
        p = self.payload
        shown = p[:16].hex() + ("…" if len(p) > 16 else "")
        if self.header is not None:
            return f"Frame({self.header}, payload[{len(p)}]={shown})"
        return f"Frame(flag=0x{self.flag:02X}, seq={self.sequence}, payload[{len(p)}]={shown})"


@dataclass(frozen=True)
class Error:
    requirement: str
    offset: int
    # protocol-specific wire detail (testee v2 ProtocolError.detail); not part of equality: the
    # checks compare it only where the expectation names one (checks.same_error)
    detail: object = field(default=None, compare=False)

    def short(self) -> str:
        return f"{self.requirement} @ {self.offset}" + (f" ({self.detail})" if self.detail is not None else "")


@dataclass
class DecodeResult:
    frames: List[Frame] = field(default_factory=list)
    error: Optional[Error] = None
    consumed: int = 0  # bytes taken by the delivered frames
    # Other conforming results where the spec leaves a choice (LF-LEN-4: a receiver
    # may reject a non-minimal varint with LF-LEN-2 instead of accepting it).
    alternatives: List["DecodeResult"] = field(default_factory=list)


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


def walk(data: bytes, step, alternatives=None) -> DecodeResult:
    """Decodes a whole stream frame by frame: ``step(pos)`` -> (error class or None, frame, end);
    stops at the first error. ``alternatives(res, pos, err, frame, end)`` may add the other
    conforming results (DecodeResult.alternatives) the spec allows at that point."""
    res = DecodeResult()
    pos = 0
    while pos < len(data):
        err, frame, end = step(pos)
        if alternatives:
            alternatives(res, pos, err, frame, end)
        if err:
            res.error = Error(err, pos)
            return res
        res.frames.append(frame)
        pos = res.consumed = end
    return res


# ---------------------------------------------------------------- dispatch to the protocol

def decode(codec: Codec, data: bytes) -> DecodeResult:
    """Decode a complete byte stream (the end of ``data`` is the end of the stream)."""
    return codec.spec.decode(codec, data)


def encode(codec: Codec, frame: Frame):
    """Returns the canonical bytes of ``frame``, or an ``Error`` the encoder must report."""
    return codec.spec.encode(codec, frame)


def match(codec: Codec, events: list, timeout_ms: int = 0) -> MatchResult:
    """Model of one client connection (spec/testee.md, `match`)."""
    return codec.spec.match(codec, events, timeout_ms)


def serve(codec: Codec, endpoint: str, chunks: List[bytes], half_close: bool):
    """Model of one server connection (spec/testee.md, `serve`)."""
    return codec.spec.serve(codec, endpoint, chunks, half_close)


def is_truncation(codec: Codec, err: Optional[Error]) -> bool:
    """True if ``err`` only says the stream ended inside a frame (more bytes may complete it)."""
    return err is not None and err.requirement == codec.spec.truncation_requirement
