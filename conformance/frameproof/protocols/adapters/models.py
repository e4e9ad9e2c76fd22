"""The Models adapter: the client-side matching model and the server-side endpoint model
(spec/testee.md, ``match`` and ``serve``), and the generic server model of an echo service over a
stateless framing (``echo_serve``) with its result (``ServeResult``)."""
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


def echo_serve(codec, chunks: List[bytes], half_close: bool, reply) -> ServeResult:
    """The server model of an echo service over a stateless framing: every complete frame is
    answered (``reply(frame)`` -> reply Frame or None) as soon as the chunk that completes it has
    been fed; a decoding error writes the replies to the frames before it, then closes with that
    error; at EOF the endpoint closes, with the truncation error if a frame was left unfinished."""
    from ...oracle import decode, encode
    out = ServeResult()
    if codec.spec.invalid_config(codec):  # a configuration error: refused before any byte is read
        return ServeResult([], True, decode(codec, b"").error)
    data = b""
    answered = 0
    res = decode(codec, b"")
    for ch in chunks:
        data += ch
        res = decode(codec, data)
        written = b""
        for f in res.frames[answered:]:
            r = reply(f)
            if r is not None:
                written += encode(codec, r)
        answered = len(res.frames)
        out.written.append(written)
        if res.error and res.error.requirement != codec.spec.truncation_requirement:
            out.closed, out.error = True, res.error
            return out
    if half_close:
        out.written.append(b"")
        out.closed = True
        if res.error:  # only a truncation can be left here
            out.error = res.error
    return out
