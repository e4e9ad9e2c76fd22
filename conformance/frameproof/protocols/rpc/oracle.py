"""The `rpc` oracle (spec/rpc.md): streams walked with the Kaitai-generated ``RpcFrame`` parser,
the limit applied from the header alone; encoding, the id-matching client model and the two echo
endpoints' state machines (unary, stream) from the spec text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import kaitaistruct
from kaitaistruct import BytesIO, KaitaiStream

from ...matching import ClientModel
from ...oracle import Codec, DecodeResult, Error, Frame, walk
from ..adapters.models import decoded_as_fed, end_of_input
from ..base import ServeResult
from .frames import (CANCEL, CODE_METHOD_NOT_FOUND, CODE_OK, CODE_SERVICE_NOT_FOUND, CONTROL_TYPES, DATA,
                     DEFAULT_MAX_BODY, ECHO_METHOD, ECHO_SERVICE, END, END_STREAM, HEADER_LEN, INIT, INIT_ACK,
                     MAGIC, NAMED_TYPES, REQUEST, RESPONSE, TYPE_NAMES, UNARY_ONLY_METHOD, VERSION, RpcHeader,
                     frame)

try:
    from ..._generated.rpc_frame import RpcFrame
except ImportError as e:  # pragma: no cover - a setup problem, not a test outcome
    raise ImportError("generated parsers missing: run `bash tools/bootstrap.sh` (it runs tools/gen.sh)") from e

TRUNCATED = "RPC-STR-3"
# the requirement a malformed body of each type breaks (judged once the whole body is there)
BODY_CLASS = {REQUEST: "RPC-BODY-1", RESPONSE: "RPC-BODY-2", INIT: "RPC-BODY-3"}
# Kaitai validation path -> requirement (schemas/rpc.ksy, header seq index)
_BY_PATH = {"/types/header/seq/0": "RPC-HDR-2", "/types/header/seq/1": "RPC-HDR-3",
            "/types/header/seq/2": "RPC-HDR-4", "/types/header/seq/6": "RPC-BODY-5"}
HUGE = 2 ** 32 - 1
ENDPOINT_NAMES = ("unary", "stream")


@dataclass(frozen=True)
class RpcCodec(Codec):
    """The maximum body (``max_payload`` holds it; JSON ``"rpc": {"max_body": N}``), and what the echo
    server under test offers (spec/rpc.md §9a; the network suite's parameters, never sent to a testee):
    its ``endpoints`` (``unary``, ``stream`` or both; both on one port unless ``stream_address`` names
    the stream endpoint's own), the service and method of its echo handler (``stream_service`` and
    ``stream_method`` where the stream endpoint's differ) and a method registered for UNARY only
    (``unary_only``, RPC-ECHO-8; unset: not tested)."""
    service: bytes = ECHO_SERVICE
    method: bytes = ECHO_METHOD
    endpoints: Tuple[str, ...] = ENDPOINT_NAMES
    stream_address: str = ""
    stream_service: Optional[bytes] = None
    stream_method: Optional[bytes] = None
    unary_only: Optional[bytes] = None

    DEFAULT_MAX = DEFAULT_MAX_BODY
    CAPACITY = 2 ** 32 - 1

    @property
    def max_body(self) -> int:
        return self.max_payload

    @property
    def stream_names(self) -> Tuple[bytes, bytes]:
        """(service, method) of the stream endpoint's echo handler."""
        return (self.service if self.stream_service is None else self.stream_service,
                self.method if self.stream_method is None else self.stream_method)

    def offers(self, endpoint: str) -> bool:
        return endpoint in self.endpoints

    def params_json(self) -> dict:
        p = {}
        if self.max_payload:
            p["max_body"] = self.max_payload
        for key in ("service", "method", "stream_service", "stream_method", "unary_only"):
            v = getattr(self, key)
            if v is not None and v != getattr(RpcCodec, key):
                p[key] = v.decode("utf-8", "surrogateescape")
        if tuple(self.endpoints) != ENDPOINT_NAMES:
            p["endpoints"] = list(self.endpoints)
        if self.stream_address:
            p["stream_address"] = self.stream_address
        return {"rpc": p} if p else {}

    def to_json(self) -> dict:
        return {"protocol": self.protocol, **self.params_json()}


#: the codec JSON's rpc parameters (besides max_body) and the endpoints an echo server may offer
ENDPOINT_KEYS = ("service", "method", "endpoints", "stream_address", "stream_service", "stream_method", "unary_only")


def codec_params(p: dict) -> dict:
    """RpcCodec keyword arguments from the codec JSON's ``rpc`` object (its keys other than max_body);
    ValueError for a bad value."""
    kw = {}
    for key in ("service", "method", "stream_service", "stream_method", "unary_only"):
        if key in p:
            if not isinstance(p[key], str):
                raise ValueError(f"rpc.{key} must be a string (the name's UTF-8 bytes), not {p[key]!r}")
            kw[key] = p[key].encode("utf-8", "surrogateescape")
    if "endpoints" in p:
        eps = p["endpoints"]
        eps = list(ENDPOINT_NAMES) if eps == "both" else [eps] if isinstance(eps, str) else eps
        if not isinstance(eps, list) or not eps or any(e not in ENDPOINT_NAMES for e in eps) or len(set(eps)) != len(eps):
            raise ValueError(f"rpc.endpoints must list 'unary', 'stream' or both (or be one of them, or 'both'), "
                             f"not {p['endpoints']!r}")
        kw["endpoints"] = tuple(e for e in ENDPOINT_NAMES if e in eps)
    if "stream_address" in p:
        addr = p["stream_address"]
        host, _, port = str(addr).rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"rpc.stream_address must be HOST:PORT, not {addr!r}")
        kw["stream_address"] = str(addr)
    if kw.get("stream_address") and "stream" not in kw.get("endpoints", ENDPOINT_NAMES):
        raise ValueError("rpc.stream_address names the stream endpoint's port, but rpc.endpoints has no 'stream'")
    return kw


def header_classes(codec: Codec, h: bytes) -> List[str]:
    """Every class a complete 16-byte header breaks, in the oracle's order (spec §11: any may be
    reported)."""
    out = []
    n = int.from_bytes(h[12:16], "big")
    if h[:4] != MAGIC:
        out.append("RPC-HDR-2")
    if h[4] != VERSION:
        out.append("RPC-HDR-3")
    if h[5] not in TYPE_NAMES:
        out.append("RPC-HDR-4")
    if h[5] in CONTROL_TYPES and n:
        out.append("RPC-BODY-5")
    if n > codec.limit:
        out.append("RPC-LIM-1")
    return out


def decode(codec: Codec, data: bytes) -> DecodeResult:
    io = KaitaiStream(BytesIO(data))

    def alternatives(res, pos, err, frame_, end):
        if err and err != TRUNCATED and len(data) - pos >= HEADER_LEN:
            for other in header_classes(codec, data[pos:pos + HEADER_LEN]):
                if other != err:
                    res.alternatives.append(DecodeResult(list(res.frames), Error(other, pos)))

    return walk(data, lambda pos: _decode_one(codec, io, data, pos), alternatives)


def _decode_one(codec: Codec, io: KaitaiStream, data: bytes, pos: int) -> Tuple[Optional[str], Optional[Frame], int]:
    # 1. the header, judged once its 16 bytes are there (spec §11)
    if len(data) - pos < HEADER_LEN:
        return TRUNCATED, None, pos
    io.seek(pos)
    try:
        h = RpcFrame.Header(io)
    except kaitaistruct.ValidationFailedError as e:
        return _BY_PATH.get(str(e.src_path), "RPC-HDR-2"), None, pos
    if h.len_body > codec.limit:
        return "RPC-LIM-1", None, pos
    if len(data) - pos - HEADER_LEN < h.len_body:
        return TRUNCATED, None, pos
    # 2. the whole frame through the generated top-level parser: the body is all there, so an
    # EOFError can only come from the body's own substream (a malformed body)
    io.seek(pos)
    try:
        f = RpcFrame(io)
    except EOFError:
        return BODY_CLASS[h.type], None, pos
    hd = f.header
    kw = dict(type=hd.type, flags=hd.flags, id=hd.id, version=hd.version, reserved=hd.reserved)
    if hd.type in NAMED_TYPES:
        kw.update(service=bytes(f.body.service), method=bytes(f.body.method))
        payload = bytes(f.body.payload)
    elif hd.type == RESPONSE:
        kw.update(error_code=f.body.error_code)
        payload = bytes(f.body.payload)
    else:
        payload = bytes(f.body)
    return None, frame(RpcHeader(**kw), payload), io.pos()


def _header_of(f: Frame) -> RpcHeader:
    # a frame without an rpc header is the plain echo call (generic code that builds payload-only frames)
    return f.header if f.header is not None else RpcHeader(REQUEST, END_STREAM, 0, ECHO_SERVICE, ECHO_METHOD)


def encode(codec: Codec, f: Frame):
    h = _header_of(f)
    if h.version != VERSION:
        return Error("RPC-HDR-3", 0)
    if h.type not in TYPE_NAMES:
        return Error("RPC-HDR-4", 0)
    if h.type in CONTROL_TYPES and f.payload:
        return Error("RPC-BODY-5", 0)
    if h.type in NAMED_TYPES:
        if len(h.service) > 0xFFFF or len(h.method) > 0xFFFF:
            return Error("RPC-BODY-6", 0)
        body_head = len(h.service).to_bytes(2, "big") + h.service + len(h.method).to_bytes(2, "big") + h.method
    elif h.type == RESPONSE:
        if h.error_code > 0xFFFF:
            return Error("RPC-BODY-2", 0)
        body_head = h.error_code.to_bytes(2, "big")
    else:
        body_head = b""
    n = len(body_head) + len(f.payload)
    if n > codec.limit or n > HUGE:
        return Error("RPC-LIM-2", 0)
    return (MAGIC + bytes([VERSION, h.type, h.flags & 0xFF, h.reserved & 0xFF]) + (h.id & HUGE).to_bytes(4, "big")
            + n.to_bytes(4, "big") + body_head + f.payload)


# ------------------------------------------------------------------ the client (spec §8)

class RpcClient(ClientModel):
    """RPC-ID-*, RPC-MATCH-*: ids 0, 1, 2 ... per connection, responses matched by id."""

    def __init__(self, codec, timeout_ms=0):
        super().__init__(codec, timeout_ms)
        self.next_id = 0

    def request_frame(self, kind, arg):
        rid = self.next_id
        if kind == "send_one_way" or any(k == rid for _r, k, _d in self.pending):
            return None  # rpc has no one-way call; RPC-ID-2
        if kind == "send":
            h = RpcHeader(REQUEST, END_STREAM, rid, ECHO_SERVICE, ECHO_METHOD)
        else:
            h = arg.header
            if h is None or h.type != REQUEST:
                return None  # a client sends calls (REQUESTs) only
            h = RpcHeader(REQUEST, h.flags, rid, h.service, h.method)
        return Frame(0, 0, arg if kind == "send" else arg.payload, h), rid

    def commit(self, kind, key):
        self.next_id = (key + 1) & HUGE

    def pick(self, f):
        if f.header.type != RESPONSE:
            return False  # RPC-MATCH-4
        return next((p for p in self.pending if p[1] == f.header.id), None)


# ------------------------------------------------------------------ the echo endpoints (spec §9, §10)

def _control(kind, sid):
    return frame(RpcHeader(kind, 0, sid))


class Close(Exception):
    """The endpoint closes the connection on this frame (RPC-ECHO-4)."""


class UnaryEndpoint:
    def __init__(self, codec: Optional[Codec] = None):
        self.service = getattr(codec, "service", ECHO_SERVICE)
        self.method = getattr(codec, "method", ECHO_METHOD)

    def on_frame(self, f: Frame) -> Optional[Frame]:
        h = f.header
        if h.type != REQUEST:
            raise Close()
        if h.service != self.service:
            code = CODE_SERVICE_NOT_FOUND
        elif h.method == self.method or h.method == UNARY_ONLY_METHOD and h.flags & 3 == 0:  # RPC-ECHO-8
            code = CODE_OK
        else:
            code = CODE_METHOD_NOT_FOUND
        return frame(RpcHeader(RESPONSE, (h.flags & 3) | END_STREAM, h.id, error_code=code),
                     f.payload if code == CODE_OK else b"")


class StreamEndpoint:
    def __init__(self, codec: Optional[Codec] = None):
        self.open: Optional[int] = None  # the id of the open stream; None: waiting
        names = getattr(codec, "stream_names", None)
        self.names = names or (ECHO_SERVICE, ECHO_METHOD)

    def on_frame(self, f: Frame) -> Optional[Frame]:
        h = f.header
        if self.open is None:
            if h.type == INIT and (h.service, h.method) == self.names:
                self.open = h.id
                return _control(INIT_ACK, h.id)  # RPC-STREAM-1
            return _control(CANCEL, h.id)  # RPC-STREAM-5, RPC-STREAM-6
        sid = self.open
        if h.type == DATA:
            return frame(RpcHeader(DATA, 0, sid), f.payload)  # RPC-STREAM-2
        self.open = None
        if h.type == END:
            return _control(END, sid)  # RPC-STREAM-3
        if h.type == CANCEL:
            return None  # RPC-STREAM-4
        return _control(CANCEL, sid)  # RPC-STREAM-7


ENDPOINTS = {"": UnaryEndpoint, "unary": UnaryEndpoint, "stream": StreamEndpoint}


def echo_reply(f: Frame, codec: Optional[Codec] = None) -> Optional[Frame]:
    """The unary endpoint's answer to one frame (None for a frame it closes on); the echo handler's
    names are the codec's (spec §9a), frameproof.Echo/echo without one."""
    try:
        return UnaryEndpoint(codec).on_frame(f)
    except Close:
        return None


def serve(codec: Codec, endpoint: str, chunks: List[bytes], half_close: bool) -> ServeResult:
    if endpoint not in ENDPOINTS:
        raise ValueError(f"rpc has no endpoint {endpoint!r} (known: unary, stream)")
    ep = ENDPOINTS[endpoint](codec)
    wide = codec.with_limit(HUGE)
    out = ServeResult()
    offset = 0  # stream offset of the next frame
    res = decode(codec, b"")
    for res, frames in decoded_as_fed(decode, codec, chunks):
        written = b""
        for f in frames:
            try:
                r = ep.on_frame(f)
            except Close:
                out.written.append(written)
                out.closed, out.error = True, Error("RPC-ECHO-4", offset)
                return out
            if r is not None:
                written += encode(wide, r)
            offset += len(encode(wide, f))
        out.written.append(written)
        if res.error and res.error.requirement != TRUNCATED:
            out.closed, out.error = True, res.error
            return out
    return end_of_input(out, res, half_close)


def serve_alternatives(codec: Codec, chunks: List[bytes], expected: ServeResult) -> List[str]:
    """The other classes the endpoint may close with (a header breaking several requirements)."""
    e = expected.error
    if e is None or e.requirement in (TRUNCATED, "RPC-ECHO-4"):
        return []
    data = b"".join(chunks)
    h = data[e.offset:e.offset + HEADER_LEN]
    return [c for c in header_classes(codec, h) if c != e.requirement] if len(h) == HEADER_LEN else []
