"""permessage-deflate (RFC 7692) as spec/websocket-deflate.md states it: the Python reference, and
the oracle the suite's deflate checks will use (issue 30). zlib does the DEFLATE work (Python's
``zlib`` module). This file parses and answers the negotiation, and compresses and inflates one message
at a time with the spec's limits. It is not wired into the suite yet (the spec's status line says so).

  parse_extensions(values)      the Sec-WebSocket-Extensions list (RFC 6455 §9.1), every legal spelling
  offer_params(params)          one offer's parameters, validated (WSD-NEG-2), or None: declined
  accept(values, policy)        the server's choice among the offers, and its response (WSD-NEG-3/4)
  check_response(offer, value)  the client's check of the server's response (WSD-NEG-5)
  Deflater / Inflater           one direction's compression and inflation (WSD-CMP-*, CTX-*, LIM-1);
                                Deflater.payload: a message's payload, uncompressed where compressing
                                would make it longer (WSD-FRM-3)
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

NAME = "permessage-deflate"
TAIL = b"\x00\x00\xff\xff"  # the end of an empty stored block: removed by the sender, added back by the receiver
STEP = 64 * 1024  # inflated bytes per step: the most a receiver holds past its limit (WSD-LIM-1)
_TCHAR = set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class NegotiationError(ValueError):
    """A header that does not parse, or a response a client must refuse (WSD-NEG-5: close 1002)."""


class InflateError(Exception):
    """A compressed message the receiver refuses; ``code`` is the close code (WSD-CMP-3, WSD-LIM-1)."""

    def __init__(self, code: int, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, reason


# ------------------------------------------------------------------ the header grammar (WSD-NEG-1)

def _token(s: str, i: int) -> Tuple[str, int]:
    j = i
    while j < len(s) and s[j] in _TCHAR:
        j += 1
    if j == i:
        raise NegotiationError(f"a token expected at {i} in {s!r}")
    return s[i:j], j


def _ows(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def _quoted(s: str, i: int) -> Tuple[str, int]:
    """A quoted-string starting at s[i] == '"' (RFC 7230 §3.2.6: backslash escapes one octet)."""
    out, i = [], i + 1
    while i < len(s):
        c = s[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(s):
            out.append(s[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    raise NegotiationError(f"an unterminated quoted string in {s!r}")


def parse_extensions(values: List[str]) -> List[Tuple[str, List[Tuple[str, Optional[str]]]]]:
    """Every ``Sec-WebSocket-Extensions`` value of a message (several headers are one list, in order)
    -> [(extension name, [(parameter name, value or None)])]. Names keep their spelling; a quoted value
    is unquoted and must then be a token (RFC 6455 §9.1). Raises NegotiationError on bad syntax."""
    out = []
    for s in values:
        i = _ows(s, 0)
        while i < len(s):
            if s[i] == ",":  # empty list elements are allowed (RFC 7230 §7)
                i = _ows(s, i + 1)
                continue
            name, i = _token(s, i)
            params = []
            i = _ows(s, i)
            while i < len(s) and s[i] == ";":
                i = _ows(s, i + 1)
                pname, i = _token(s, i)
                i = _ows(s, i)
                value = None
                if i < len(s) and s[i] == "=":
                    i = _ows(s, i + 1)
                    if i < len(s) and s[i] == '"':
                        value, i = _quoted(s, i)
                        if not value or any(c not in _TCHAR for c in value):
                            raise NegotiationError(f"the quoted value {value!r} is not a token")
                    else:
                        value, i = _token(s, i)
                    i = _ows(s, i)
                params.append((pname, value))
            out.append((name, params))
            if i < len(s):
                if s[i] != ",":
                    raise NegotiationError(f"',' or ';' expected at {i} in {s!r}")
                i = _ows(s, i + 1)
    return out


# ------------------------------------------------------------------ parameters (WSD-NEG-2..5)

@dataclass(frozen=True)
class Params:
    """One side's view of a permessage-deflate configuration. In an offer, ``client_max_window_bits``
    may be True (the parameter without a value); in an agreement it is the window bits, or None."""
    server_no_context_takeover: bool = False
    client_no_context_takeover: bool = False
    server_max_window_bits: Optional[int] = None
    client_max_window_bits: object = None  # None | True | 8..15

    def header(self) -> str:
        parts = [NAME]
        if self.server_no_context_takeover:
            parts.append("server_no_context_takeover")
        if self.client_no_context_takeover:
            parts.append("client_no_context_takeover")
        if self.server_max_window_bits is not None:
            parts.append(f"server_max_window_bits={self.server_max_window_bits}")
        if self.client_max_window_bits is True:
            parts.append("client_max_window_bits")
        elif self.client_max_window_bits is not None:
            parts.append(f"client_max_window_bits={self.client_max_window_bits}")
        return "; ".join(parts)


def _bits(value: Optional[str]) -> Optional[int]:
    """8..15 written without a leading zero, or None (WSD-NEG-2)."""
    if value is None or not value.isdigit() or value.startswith("0") or not value.isascii():
        return None
    n = int(value)
    return n if 8 <= n <= 15 else None


def _params(params, response: bool) -> Optional[Params]:
    """The parameters of one offer (or response), or None where RFC 7692 §7.1 rejects them."""
    seen, p = set(), Params()
    for raw, value in params:
        name = raw.lower()
        if name in seen:
            return None  # given twice
        seen.add(name)
        if name in ("server_no_context_takeover", "client_no_context_takeover"):
            if value is not None:
                return None
            p = replace(p, **{name: True})
        elif name == "server_max_window_bits":
            n = _bits(value)
            if n is None:
                return None
            p = replace(p, server_max_window_bits=n)
        elif name == "client_max_window_bits":
            if value is None and not response:
                p = replace(p, client_max_window_bits=True)
            else:
                n = _bits(value)
                if n is None:
                    return None
                p = replace(p, client_max_window_bits=n)
        else:
            return None  # a parameter RFC 7692 does not define
    return p


def offer_params(params) -> Optional[Params]:
    """An offer's parameters (from ``parse_extensions``), or None: the offer is declined (WSD-NEG-2)."""
    return _params(params, response=False)


@dataclass(frozen=True)
class Policy:
    """What a server asks for when it accepts: no context takeover of its own, the window bits of
    its compressor (zlib: 9..15, WSD-NEG-4), and the client's window it would like."""
    server_no_context_takeover: bool = False
    server_window_bits: int = 15
    client_no_context_takeover: bool = False
    client_window_bits: Optional[int] = None


def accept(values: List[str], policy: Policy = Policy()) -> Optional[Tuple[Params, str]]:
    """The server's answer to a request's extension headers: the agreed parameters and the response
    header's value, or None (declined: no header). The first offer this server supports wins."""
    try:
        offers = parse_extensions(values)
    except NegotiationError:
        return None  # a list that does not parse: every offer declined
    for name, params in offers:
        if name.lower() != NAME:
            continue
        p = offer_params(params)
        if p is None:
            continue
        server_bits = min(policy.server_window_bits, p.server_max_window_bits or 15)
        if server_bits < 9:
            continue  # zlib cannot compress with 8 bits (WSD-NEG-4)
        if p.client_max_window_bits is None:
            client_bits = None  # the client did not offer it: the response must not name it (WSD-NEG-3)
        else:
            offered = 15 if p.client_max_window_bits is True else p.client_max_window_bits
            client_bits = min(offered, policy.client_window_bits or offered)
        agreed = Params(
            server_no_context_takeover=p.server_no_context_takeover or policy.server_no_context_takeover,
            client_no_context_takeover=p.client_no_context_takeover or policy.client_no_context_takeover,
            server_max_window_bits=server_bits if (p.server_max_window_bits is not None or server_bits < 15) else None,
            client_max_window_bits=client_bits)
        return agreed, agreed.header()
    return None


def check_response(offer: Params, values: List[str]) -> Optional[Params]:
    """A client's reading of the server's ``Sec-WebSocket-Extensions`` (its offer was ``offer``): the
    agreed parameters, None when the server declined, or NegotiationError: fail the connection
    (WSD-NEG-5)."""
    elements = parse_extensions(values)
    if not elements:
        return None
    if len(elements) > 1 or elements[0][0].lower() != NAME:
        raise NegotiationError(f"the response names {[n for n, _ in elements]}; the offer was {NAME} alone")
    p = _params(elements[0][1], response=True)
    if p is None:
        raise NegotiationError(f"a response parameter is unknown, repeated or has an invalid value: {values}")
    if p.client_max_window_bits is not None:
        if offer.client_max_window_bits is None:
            raise NegotiationError("client_max_window_bits in the response, not in the offer")
        if offer.client_max_window_bits is not True and p.client_max_window_bits > offer.client_max_window_bits:
            raise NegotiationError("client_max_window_bits larger than offered")
    if offer.server_max_window_bits is not None and p.server_max_window_bits is not None \
            and p.server_max_window_bits > offer.server_max_window_bits:
        raise NegotiationError("server_max_window_bits larger than offered")
    return p


# ------------------------------------------------------------------ messages (WSD-CMP-*, CTX-*, LIM-1)

class Deflater:
    """One sender's compressor: ``window_bits`` 9..15; ``reset`` after every message when the
    agreement says no context takeover for this sender."""

    def __init__(self, window_bits: int = 15, reset: bool = False, level: int = 6):
        if not 9 <= window_bits <= 15:
            raise ValueError("zlib compresses raw DEFLATE with 9..15 window bits (WSD-NEG-4)")
        self.window_bits, self.reset, self.level = window_bits, reset, level
        self._z = None

    def compress(self, message: bytes) -> bytes:
        """The payload of one compressed message (WSD-CMP-1): sync-flushed, its last four octets
        removed; an empty message is the single octet 0x00."""
        if self._z is None:
            self._z = zlib.compressobj(self.level, zlib.DEFLATED, -self.window_bits)
        out = self._z.compress(message) + self._z.flush(zlib.Z_SYNC_FLUSH)
        if self.reset:
            self._z = None
        if out.endswith(TAIL):
            out = out[:-4]
        return out or b"\x00"

    def cost(self) -> int:
        """Memory of the compressor's state (WSD-LIM-2), 0 until the first message: zlib's deflate state,
        2^(windowBits+2) + 2^(memLevel+9) with memLevel 8 (zlib's zconf.h), and the stream itself."""
        return (1 << (self.window_bits + 2)) + (1 << 17) + 6 * 1024 if self._z is not None else 0

    def payload(self, message: bytes) -> Tuple[bytes, bool]:
        """A sender's payload for one message and whether it is compressed (RSV1): the compressed payload
        (``compress``), or, where that is longer than the message, the message itself, sent uncompressed,
        and the compressor reset (WSD-FRM-3): the message entered its window but enters no receiver's
        (WSD-CTX-3), so its state is dropped (made again at the next message, WSD-LIM-3) and the next
        compressed message refers to nothing earlier."""
        out = self.compress(message)
        if len(out) <= len(message):
            return out, True
        self._z = None
        return message, False


class Inflater:
    """One receiver's decompressor. ``reset``: the sender keeps no context (the window starts empty
    for every message); ``max_message``: the limit on the inflated size (WSD-LIM-1)."""

    def __init__(self, window_bits: int = 15, reset: bool = False, max_message: int = 16 << 20):
        self.window_bits, self.reset, self.max_message = window_bits, reset, max_message
        self._z = None
        self._history = b""  # the last 2^window_bits inflated bytes: the window of a stream after a final block

    def _new(self):
        # 15 bits on our side whatever the sender's: a larger window reads what a smaller one wrote
        if self._history and not self.reset:
            return zlib.decompressobj(-15, zdict=self._history)
        return zlib.decompressobj(-15)

    def cost(self) -> int:
        """Memory of the inflater's state and window history (WSD-LIM-2): zlib's inflate state with its
        32 KiB window (15 bits on this side), about 44 KiB once made, and the history kept for the next message."""
        return ((1 << 15) + 12 * 1024 if self._z is not None else 0) + len(self._history)

    def inflate(self, payload: bytes) -> bytes:
        """One compressed message's payload (all its frames joined) -> its bytes, or InflateError:
        1007 for data that does not inflate (WSD-CMP-3), 1009 past ``max_message`` (WSD-LIM-1). Inflates
        in steps of at most STEP bytes, so a bomb stops at the limit."""
        if self._z is None or self.reset:
            self._z = self._new()
        out, total, data = [], 0, payload + TAIL
        try:
            while True:  # until the input is used up and zlib holds nothing back, or the stream ended
                room = self.max_message - total + 1  # one byte past the limit is enough to know
                chunk = self._z.decompress(data, min(STEP, room))
                data = self._z.unconsumed_tail
                out.append(chunk)
                total += len(chunk)
                if total > self.max_message:
                    self._z = None
                    raise InflateError(1009, f"the message inflates past max_message ({self.max_message} bytes)")
                if self._z.eof or (not data and not chunk):
                    break
        except zlib.error as e:
            self._z = None
            raise InflateError(1007, f"the payload does not inflate: {e}") from None
        message = b"".join(out)
        if self._z.eof:  # a final block (WSD-CMP-5): what follows is ignored, the next message is a new stream
            self._z = None
        if not self.reset:
            self._history = (self._history + message)[-(1 << self.window_bits):]
        return message
