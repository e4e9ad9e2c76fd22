"""The `rpc` Python reference codec (streaming decoder, encoder, client matcher, the two echo
endpoints), written from spec/rpc.md independently of the oracle. Deliberate bugs for the mutants
are behind ``frameproof.reference.MUTANT``; server faults behind ``fault``."""
from __future__ import annotations

from ... import reference as R
from ...oracle import Frame
from ...reference import CodecError, StreamDecoder
from .frames import RpcHeader

_KNOWN = {0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x12, 0x13, 0x14}
_EMPTY_BODY = {0x11, 0x13, 0x14}
_WITH_NAMES = {0x01: "RPC-BODY-1", 0x10: "RPC-BODY-3"}
_MAX_DEFAULT = 16 << 20
_SERVICE, _METHOD = b"frameproof.Echo", b"echo"
_UNARY_ONLY = b"unary_only"  # registered for call mode 0 only (RPC-ECHO-8)


def _u16(b, i, little=False):
    return b[i] | (b[i + 1] << 8) if little else (b[i] << 8) | b[i + 1]


class RpcDecoder(StreamDecoder):
    truncation = "RPC-STR-3"

    def __init__(self, max_body: int = 0):
        super().__init__()
        self.max = max_body or (_MAX_DEFAULT - (1 << 20) if R.MUTANT == "rpc-default-limit-15mib" else _MAX_DEFAULT)
        self.starts = []  # stream offsets of the frames of the last feed()

    def _scan(self, out):
        b = self.buf
        m = R.MUTANT
        pos = 0
        self.starts = []
        while len(b) - pos >= 16:
            at = self.base + pos
            if bytes(b[pos:pos + 4]) != b"GRPC":
                raise CodecError("RPC-HDR-2", at, "bad magic")
            version, kind, flags, reserved = b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]
            if version != 1 and m != "rpc-ignores-version":
                raise CodecError("RPC-HDR-3", at, f"version {version}")
            if kind not in _KNOWN:
                raise CodecError("RPC-HDR-4", at, f"type 0x{kind:02x}")
            ident = int.from_bytes(b[pos + 8:pos + 12], "big")
            n = int.from_bytes(b[pos + 12:pos + 16], "little" if m == "rpc-length-little-endian" else "big")
            if kind in _EMPTY_BODY and n and m != "rpc-end-body-consumed":
                raise CodecError("RPC-BODY-5", at, "control frame with a body")
            if n > self.max and m != "rpc-accepts-oversize":
                raise CodecError("RPC-LIM-1", at, f"body of {n} bytes")
            if len(b) - pos - 16 < n:
                break
            body = bytes(b[pos + 16:pos + 16 + n])
            service = method = b""
            code = 0
            if kind in _WITH_NAMES:
                service, method, payload = _names(body, at, _WITH_NAMES[kind])
            elif kind == 0x02:
                if n < 2:
                    raise CodecError("RPC-BODY-2", at, "response body shorter than its error code")
                code, payload = _u16(body, 0), body[2:]
            else:
                payload = body
            if m == "rpc-drops-end-flag":
                flags &= 0x03
            out.append(Frame(0, 0, payload, RpcHeader(kind, flags, ident, service, method, code, version, reserved)))
            self.starts.append(at)
            pos += 16 + n
            self._pos = pos


def _names(body, at, req):
    little = R.MUTANT == "rpc-name-length-little-endian"
    if len(body) < 2:
        raise CodecError(req, at, "no service length")
    sl = _u16(body, 0, little)
    if 2 + sl + 2 > len(body):
        raise CodecError(req, at, "service name beyond the body")
    ml = _u16(body, 2 + sl)
    if 4 + sl + ml > len(body):
        raise CodecError(req, at, "method name beyond the body")
    return body[2:2 + sl], body[4 + sl:4 + sl + ml], body[4 + sl + ml:]


def encode_rpc(h: RpcHeader, payload: bytes, max_body: int = 0) -> bytes:
    if h.version != 1:
        raise CodecError("RPC-HDR-3", 0, "version must be 1")
    if h.type not in _KNOWN:
        raise CodecError("RPC-HDR-4", 0, "unknown type")
    if h.type in _EMPTY_BODY and payload:
        raise CodecError("RPC-BODY-5", 0, "control frames carry no body")
    if h.type in _WITH_NAMES:
        if max(len(h.service), len(h.method)) > (65534 if R.MUTANT == "rpc-refuses-longest-name" else 65535):
            raise CodecError("RPC-BODY-6", 0, "name longer than 65535 bytes")
        pre = len(h.service).to_bytes(2, "big") + h.service + len(h.method).to_bytes(2, "big") + h.method
    elif h.type == 0x02:
        if h.error_code > 65535:
            raise CodecError("RPC-BODY-2", 0, "error code above 65535")
        pre = h.error_code.to_bytes(2, "big")
    else:
        pre = b""
    n = len(pre) + len(payload)
    if n > min(max_body or _MAX_DEFAULT, 2 ** 32 - 1) and R.MUTANT != "rpc-accepts-oversize":
        raise CodecError("RPC-LIM-2", 0, "body above maximum")
    order = "little" if R.MUTANT == "rpc-length-little-endian" else "big"
    return b"".join((b"GRPC", bytes((1, h.type, h.flags & 0xFF, h.reserved & 0xFF)),
                     (h.id & 0xFFFFFFFF).to_bytes(4, "big"), n.to_bytes(4, order), pre, payload))


# ------------------------------------------------------------ the hooks the generic programs use

def decoder(codec):
    return RpcDecoder(codec.max_payload)


def encode(codec, frame, limit=None):
    h = frame.header or RpcHeader(0x01, 0x04, 0, _SERVICE, _METHOD)
    return encode_rpc(h, frame.payload, codec.max_payload if limit is None else limit)


def _id(rid: int, fault: str) -> int:
    """The id a reply carries: the request's, verbatim (RPC-HDR-7); the server fault
    ``rpc-id-31-bits`` (and the mutant of that name) keeps 31 bits of it, as a server holding ids in a
    signed int might."""
    return rid & 0x7FFFFFFF if "rpc-id-31-bits" in (fault, R.MUTANT) else rid


def _resp(req: RpcHeader, code: int, payload: bytes, fault: str = "") -> Frame:
    flags = req.flags & 0x03
    if R.MUTANT != "rpc-response-without-end":
        flags |= 0x04
    return Frame(0, 0, payload, RpcHeader(0x02, flags, _id(req.id, fault), error_code=code))


def unary_endpoint(fault="", service=_SERVICE, method=_METHOD):
    """One connection of the unary echo endpoint: frame -> reply (or None); raises CodecError
    (RPC-ECHO-4) for a frame it closes the connection on. The handler is ``service``/``method`` in
    every call mode, and ``service``/unary_only in mode 0 (RPC-ECHO-8)."""
    def reply(f):
        h = f.header
        if h.type != 0x01:
            if R.MUTANT == "rpc-keeps-non-request" or fault == "rpc-keep-open-on-non-request":
                return None
            raise CodecError("RPC-ECHO-4", 0, "not a REQUEST")
        routed = h.method == method or h.method == _UNARY_ONLY and (h.flags & 3 == 0 or "rpc-ignores-mode" in (fault, R.MUTANT))
        if h.service == service and routed or fault == "rpc-code-0-for-unknown":
            return _resp(h, 0, f.payload, fault)
        if h.service != service and R.MUTANT != "rpc-unknown-service-code-3":
            return _resp(h, 2, b"", fault)
        return _resp(h, 3, b"", fault)
    return reply


def stream_endpoint(fault="", service=_SERVICE, method=_METHOD):
    """One connection of the stream echo endpoint (one stream at a time), its handler
    ``service``/``method``."""
    st = {"sid": None}

    def ctl(kind, sid):
        return Frame(0, 0, b"", RpcHeader(kind, 0, _id(sid, fault)))

    def reply(f):
        h = f.header
        m = R.MUTANT
        sid = st["sid"]
        if sid is None:
            if h.type != 0x10:
                return None if m == "rpc-data-before-init-ignored" else ctl(0x14, h.id)
            if (h.service, h.method) != (service, method) and m != "rpc-unknown-method-opens":
                return ctl(0x14, h.id)
            st["sid"] = h.id
            if m == "rpc-no-init-ack" or fault == "rpc-drop-init-ack":
                return None
            return ctl(0x11, h.id)
        if h.type == 0x12:
            return Frame(0, 0, f.payload, RpcHeader(0x12, 0, _id(h.id if m == "rpc-data-echo-own-id" else sid, fault)))
        if h.type == 0x10 and m == "rpc-second-init-reopens":
            st["sid"] = h.id
            return ctl(0x11, h.id)
        st["sid"] = None
        if h.type == 0x13:
            return None if m == "rpc-end-not-answered" else ctl(0x13, sid)
        if h.type == 0x14:
            return ctl(0x14, sid) if m == "rpc-cancel-answered" else None
        return ctl(0x14, sid)
    return reply


def endpoint(name, fault=""):
    if name in ("", "unary"):
        return unary_endpoint(fault)
    if name == "stream":
        return stream_endpoint(fault)
    raise ValueError(f"rpc has no endpoint {name!r}")


def net_replier(fault="", codec=None):
    """The network echo server's connection. With both endpoints on one port (the default,
    RPC-ECHO-7) the first frame's type picks the endpoint; a server offering one endpoint
    (``codec.endpoints``, as galay-rpc's RpcServer and RpcStreamServer each do) serves every
    connection with it. The handlers' names are the codec's (frameproof.Echo/echo by default)."""
    eps = tuple(getattr(codec, "endpoints", ("unary", "stream")))
    service, method = getattr(codec, "service", _SERVICE), getattr(codec, "method", _METHOD)
    s_service, s_method = getattr(codec, "stream_names", (service, method))
    chosen = []

    def pick(f):
        stream_type = 0x10 <= f.header.type <= 0x14 or fault == "rpc-first-frame-picks-stream" and f.header.type != 0x01
        if eps == ("unary",) or eps != ("stream",) and not stream_type:
            return unary_endpoint(fault, service, method)
        return stream_endpoint(fault, s_service, s_method)

    def reply(f):
        if not chosen:
            chosen.append(pick(f))
        return chosen[0](f)
    return reply


def echo_reply(frame, fault=""):
    """The unary endpoint's answer to one frame, statelessly (None where it would close)."""
    try:
        return unary_endpoint(fault)(frame)
    except CodecError:
        return None


class RpcSession:
    """The server side of one connection of ``endpoint`` (the Python testee's ``serve``)."""

    def __init__(self, codec, name=""):
        self.codec = codec
        self.dec = decoder(codec)
        self.reply = endpoint(name)
        self.closed = False
        self.error = None

    def _answer(self, frames):
        out = bytearray()
        for f, at in zip(frames, self.dec.starts):
            try:
                r = self.reply(f)
            except CodecError as e:
                e.offset = at
                self.closed, self.error = True, e
                break
            if r is not None:
                out += encode(self.codec, r, 2 ** 32 - 1)
        return bytes(out)

    def feed(self, data: bytes) -> bytes:
        try:
            frames = self.dec.feed(data)
        except CodecError as e:
            out = self._answer(e.frames)
            if not self.closed:
                self.closed, self.error = True, e
            return out
        return self._answer(frames)

    def eof(self) -> bytes:
        self.closed = True
        try:
            self.dec.finish()
        except CodecError as e:
            self.error = e
        return b""


class ClientMatcher(R.KeyedMatcher):
    """Client side: ids 0, 1, 2 ... (RPC-ID-1/2), responses matched by id (RPC-MATCH-*), as the
    Python testee's ``match`` and the Python load client need it."""

    def __init__(self, codec, bound=4096):
        super().__init__(codec, bound)
        self.next_id = 1 if R.MUTANT == "rpc-ids-start-at-1" else 0

    def next_request(self, arg, one_way=False, check_pending=True):
        rid = self.next_id
        if one_way or (check_pending and rid in self.pending):
            return None
        if isinstance(arg, Frame):
            h = arg.header
            if h is None or h.type != 0x01:
                return None
            return rid, Frame(0, 0, arg.payload, RpcHeader(0x01, h.flags, rid, h.service, h.method))
        return rid, Frame(0, 0, arg, RpcHeader(0x01, 0x04, rid, _SERVICE, _METHOD))

    def sent(self, key, entry, one_way=False):
        self.next_id = (key + 1) & 0xFFFFFFFF
        self._pend(key, entry, one_way)

    def take(self, frame):
        if frame.header.type != 0x02:
            return False
        return self._take(frame.header.id, oldest_instead=R.MUTANT == "rpc-fifo-matching")

    def reply_ok(self, frame):
        return frame.header.type == 0x02 and frame.header.error_code == 0
