"""The Models adapter: the client-side matching model and the server-side endpoint model
(spec/testee.md, ``match`` and ``serve``), the generic server model of an echo service over a
stateless framing (``echo_serve``) with its result (``ServeResult``), and what every protocol's
server model shares: the input decoded as it arrives (``decoded_as_fed``) and the end of the input
(``end_of_input``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


class Models:
    def match(self, codec, events: list, timeout_ms: int = 0):
        """The client-side matching model (spec/testee.md, ``match``) -> MatchResult."""
        raise NotImplementedError(f"{self.name} has no client-side matching")

    def serve(self, codec, endpoint: str, chunks: List[bytes], half_close: bool):
        """The server-side endpoint model (spec/testee.md, ``serve``) -> ServeResult."""
        raise NotImplementedError(f"{self.name} has no server model")


@dataclass
class ServeResult:
    """What a server endpoint did with one connection's input (spec/testee.md, ``serve``)."""
    written: List[bytes] = field(default_factory=list)
    closed: bool = False
    error: Optional[object] = None  # oracle.Error


def decoded_as_fed(decode, codec, chunks: List[bytes]):
    """One connection's input decoded as it arrives: for each chunk, ``(res, frames)``, the
    decoding of all the input so far (``decode(codec, data)``) and the frames that chunk completed."""
    data = b""
    handled = 0
    for ch in chunks:
        data += ch
        res = decode(codec, data)
        yield res, res.frames[handled:]
        handled = len(res.frames)


def end_of_input(out: ServeResult, res, half_close: bool) -> ServeResult:
    """``out`` once all the input is consumed without closing: at EOF (``half_close``) the endpoint
    writes nothing more and closes, with the error of ``res`` (the decoding of the whole input: only
    a truncation can be left there)."""
    if half_close:
        out.written.append(b"")
        out.closed = True
        if res.error:
            out.error = res.error
    return out


def echo_serve(codec, chunks: List[bytes], half_close: bool, reply) -> ServeResult:
    """The server model of an echo service over a stateless framing: every complete frame is
    answered (``reply(frame)`` -> reply Frame or None) as soon as the chunk that completes it has
    been fed; a decoding error writes the replies to the frames before it, then closes with that
    error; at EOF the endpoint closes, with the truncation error if a frame was left unfinished."""
    from ...oracle import decode, encode
    out = ServeResult()
    if codec.spec.invalid_config(codec):  # a configuration error: refused before any byte is read
        return ServeResult([], True, decode(codec, b"").error)
    res = decode(codec, b"")
    for res, frames in decoded_as_fed(decode, codec, chunks):
        written = b""
        for f in frames:
            r = reply(f)
            if r is not None:
                written += encode(codec, r)
        out.written.append(written)
        if res.error and res.error.requirement != codec.spec.truncation_requirement:
            out.closed, out.error = True, res.error
            return out
    return end_of_input(out, res, half_close)
