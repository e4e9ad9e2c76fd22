"""The `websocket` oracle (spec/websocket.md): streams walked with the Kaitai-generated
``WebsocketFrame`` parser, the header judged in the order of §14, then a small message model
written from the spec text (reassembly state, UTF-8 fail-fast, close payload validation);
encoding with the frame's own masking key; the echo endpoint's model (§13)."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from kaitaistruct import BytesIO, KaitaiStream

from ...oracle import Codec, DecodeResult, Error, Frame
from ..adapters.models import decoded_as_fed, end_of_input
from ..base import ServeResult
from .frames import (BINARY, CAPACITY, CLOSE, CLOSE_CODE, CONT, CONTROL, DEFAULT_MAX_FRAME, DEFAULT_MAX_MESSAGE,
                     OPCODES, PING, PONG, SUBPROTOCOL, TEXT, WsHeader, close_code_valid, frame, xor)

try:
    from ..._generated.websocket_frame import WebsocketFrame
except ImportError as e:  # pragma: no cover - a setup problem, not a test outcome
    raise ImportError("generated parsers missing: run `bash tools/bootstrap.sh` (it runs tools/gen.sh)") from e

TRUNCATED = "WS-STR-3"


@dataclass(frozen=True)
class WsCodec(Codec):
    """``max_payload``: the frame limit (WS-LIM-1); ``role``: "server" | "client"; ``max_message``:
    the message limit after reassembly (WS-LIM-2), 0 = 100 MiB. What the echo server under test
    offers (spec/websocket.md §13; the network suite's parameters, never sent to a testee): the
    resource ``path`` of its echo service (None: any path, the suite asks for ``/ws``) and its
    ``subprotocol`` (None: ``frameproof.echo``, offered only by the WS-HS-4 case; set: offered on
    every connection)."""
    role: str = "server"
    max_message: int = 0
    path: Optional[str] = None
    subprotocol: Optional[str] = None
    permessage_deflate: Optional[bool] = None  # the server accepts permessage-deflate (spec/websocket-deflate.md)

    DEFAULT_MAX = DEFAULT_MAX_FRAME
    CAPACITY = CAPACITY

    @property
    def message_limit(self) -> int:
        return self.max_message or DEFAULT_MAX_MESSAGE

    def params_json(self) -> dict:
        p = {}
        if self.role != "server":
            p["role"] = self.role
        if self.max_message:
            p["max_message"] = self.max_message
        for key in ENDPOINT_KEYS:
            if getattr(self, key) is not None:
                p[key] = getattr(self, key)
        return {"websocket": p} if p else {}

    @property
    def request_path(self) -> str:
        """The request target the suite's connections ask for."""
        return self.path if self.path is not None else DEFAULT_PATH

    @property
    def echo_subprotocol(self) -> str:
        """The subprotocol the echo service speaks (WS-HS-4)."""
        return self.subprotocol if self.subprotocol is not None else SUBPROTOCOL

    def with_limit(self, max_payload: int) -> "WsCodec":
        # a wide limit (the network client's) widens the message limit too
        return replace(self, max_payload=max_payload, max_message=max(self.max_message, max_payload)
                       if max_payload > DEFAULT_MAX_FRAME else self.max_message)


#: the codec JSON's websocket parameters naming the echo service (besides role and max_message)
ENDPOINT_KEYS = ("path", "subprotocol", "permessage_deflate")
DEFAULT_PATH = "/ws"
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")  # RFC 7230 §3.2.6 token (RFC 6455 §4.1 item 10)
_PATH = re.compile(r"/[\x21-\x7e]*\Z")  # an origin-form request target: "/", then visible ASCII


def codec_params(p: dict) -> dict:
    """WsCodec keyword arguments from the codec JSON's ``websocket`` object (``path``,
    ``subprotocol``); ValueError for a bad value."""
    kw = {}
    if "path" in p:
        if not isinstance(p["path"], str) or not _PATH.match(p["path"]):
            raise ValueError(f"websocket.path must be a request target starting with '/' (visible ASCII, no "
                             f"space), not {p['path']!r}")
        kw["path"] = p["path"]
    if "subprotocol" in p:
        if not isinstance(p["subprotocol"], str) or not _TOKEN.match(p["subprotocol"]):
            raise ValueError(f"websocket.subprotocol must be one token (RFC 6455 §4.1: no space, comma or "
                             f"separator), not {p['subprotocol']!r}")
        kw["subprotocol"] = p["subprotocol"]
    if "permessage_deflate" in p:
        if not isinstance(p["permessage_deflate"], bool):
            raise ValueError(f"websocket.permessage_deflate must be true or false, not {p['permessage_deflate']!r}")
        kw["permessage_deflate"] = p["permessage_deflate"]
    return kw


# ------------------------------------------------------------------ UTF-8 (RFC 3629 table, spec §7)

# state: (continuation bytes still needed, lowest and highest allowed value of the next one)
UTF8_START = (0, 0x80, 0xBF)


def utf8_step(state, b: int):
    """The state after byte ``b``, or None when no valid UTF-8 can continue this way."""
    need, lo, hi = state
    if need:
        return (need - 1, 0x80, 0xBF) if lo <= b <= hi else None
    if b < 0x80:
        return UTF8_START
    if 0xC2 <= b <= 0xDF:
        return (1, 0x80, 0xBF)
    if b == 0xE0:
        return (2, 0xA0, 0xBF)
    if 0xE1 <= b <= 0xEC or b in (0xEE, 0xEF):
        return (2, 0x80, 0xBF)
    if b == 0xED:
        return (2, 0x80, 0x9F)
    if b == 0xF0:
        return (3, 0x90, 0xBF)
    if 0xF1 <= b <= 0xF3:
        return (3, 0x80, 0xBF)
    if b == 0xF4:
        return (3, 0x80, 0x8F)
    return None


def utf8_run(state, data: bytes) -> Tuple[object, Optional[int]]:
    """(state after ``data``, index of the failing byte or None)."""
    for i, b in enumerate(data):
        state = utf8_step(state, b)
        if state is None:
            return None, i
    return state, None


def utf8_valid(data: bytes) -> bool:
    st, bad = utf8_run(UTF8_START, data)
    return bad is None and st[0] == 0


# ------------------------------------------------------------------ decoding

@dataclass
class Message:
    """The receiver's message state between frames (spec §6, §7)."""
    open: bool = False
    text: bool = False
    size: int = 0
    utf8: tuple = UTF8_START


def header_len(data: bytes, pos: int) -> int:
    """The header's length, once its first 2 bytes are there (else 2)."""
    if len(data) - pos < 2:
        return 2
    l7, masked = data[pos + 1] & 0x7F, data[pos + 1] >> 7
    return 2 + (2 if l7 == 126 else 8 if l7 == 127 else 0) + 4 * masked


def judge_header(codec: WsCodec, h, msg: Message) -> Optional[str]:
    """Steps 1 and 2 of §14 on a complete header (the generated ``Header``)."""
    op = int(h.opcode)
    n = h.len_payload
    if h.rsv:
        return "WS-HDR-2"
    if op not in OPCODES:
        return "WS-HDR-3"
    control = op in CONTROL
    if control and not h.fin:
        return "WS-CTL-1"
    if codec.role == "client" and h.masked:
        return "WS-MASK-2"
    if codec.role != "client" and not h.masked:
        return "WS-MASK-1"
    if control and h.len7 > 125:
        return "WS-CTL-2"
    if (h.len7 == 126 and n < 126) or (h.len7 == 127 and n < 65536):
        return "WS-LEN-3"
    if h.len7 == 127 and n >> 63:
        return "WS-LEN-4"
    if op == CONT and not msg.open:
        return "WS-FRAG-2"
    if op in (TEXT, BINARY) and msg.open:
        return "WS-FRAG-3"
    if n > codec.limit:
        return "WS-LIM-1"
    if not control and (msg.size if op == CONT else 0) + n > codec.message_limit:
        return "WS-LIM-2"
    return None


def judge_close(payload: bytes) -> Optional[str]:
    if len(payload) == 1:
        return "WS-CLOSE-1"
    if len(payload) >= 2:
        if not close_code_valid(int.from_bytes(payload[:2], "big")):
            return "WS-CLOSE-2"
        if not utf8_valid(payload[2:]):
            return "WS-CLOSE-3"
    return None


def error(req: str, pos: int) -> Error:
    return Error(req, pos, CLOSE_CODE.get(req))


def decode(codec: WsCodec, data: bytes) -> DecodeResult:
    res = DecodeResult()
    io = KaitaiStream(BytesIO(data))
    msg = Message()
    pos = 0
    while pos < len(data):
        hl = header_len(data, pos)
        if len(data) - pos < hl:
            res.error = error(TRUNCATED, pos)
            return res
        io.seek(pos)
        h = WebsocketFrame.Header(io)
        err = judge_header(codec, h, msg)
        if err:
            res.error = error(err, pos)
            return res
        op, n = int(h.opcode), h.len_payload
        text = op == TEXT or (op == CONT and msg.text)
        complete = len(data) - pos - hl >= n
        if not complete:
            if text:  # WS-UTF8-2: the received part is judged as it arrives
                part = xor(data[pos + hl:], h.mask_key if h.masked else b"")
                st, bad = utf8_run(msg.utf8 if op == CONT else UTF8_START, part)
                if bad is not None:
                    res.error = error("WS-UTF8-1" if h.fin else "WS-UTF8-2", pos)
                    return res
            res.error = error(TRUNCATED, pos)
            return res
        io.seek(pos)
        f = WebsocketFrame(io)
        payload = bytes(f.payload)
        end = io.pos()
        if text:
            st, bad = utf8_run(msg.utf8 if op == CONT else UTF8_START, payload)
            if bad is not None:
                res.error = error("WS-UTF8-2" if not h.fin else "WS-UTF8-1", pos)
                return res
            if h.fin and st[0]:
                res.error = error("WS-UTF8-1", pos)  # the message ends inside a code point
                return res
        if op == CLOSE:
            err = judge_close(payload)
            if err:
                res.error = error(err, pos)
                return res
        # the message state after this frame
        if op in (TEXT, BINARY):
            msg = Message(not h.fin, op == TEXT, n, st if text else UTF8_START)
        elif op == CONT:
            msg = Message(not h.fin, msg.text, msg.size + n, st if text else UTF8_START)
        if op in (CONT, TEXT, BINARY) and h.fin:
            msg = Message()
        res.frames.append(Frame(0, 0, payload, WsHeader(bool(h.fin), 0, op, bool(h.masked),
                                                         bytes(h.mask_key) if h.masked else b"")))
        pos = res.consumed = end
        if op == CLOSE:
            break  # WS-CLOSE-4: nothing after a close frame is read
    return res


# ------------------------------------------------------------------ encoding

def _hdr(f: Frame) -> WsHeader:
    # a frame without a websocket header (generic code) is an unmasked binary frame
    return f.header if f.header is not None else WsHeader()


def encode(codec: WsCodec, f: Frame):
    h = _hdr(f)
    n = len(f.payload)
    if h.rsv:
        return Error("WS-HDR-2", 0)
    if h.opcode not in OPCODES:
        return Error("WS-HDR-3", 0)
    if h.opcode in CONTROL and not h.fin:
        return Error("WS-CTL-1", 0)
    if h.opcode in CONTROL and n > 125:
        return Error("WS-CTL-2", 0)
    if (h.masked and len(h.mask_key) != 4) or (not h.masked and h.mask_key):
        return Error("WS-MASK-4", 0)
    if n > codec.limit:
        return Error("WS-LIM-3", 0)
    b0 = (0x80 if h.fin else 0) | h.opcode
    m = 0x80 if h.masked else 0
    if n < 126:
        head = bytes([b0, m | n])
    elif n < 65536:
        head = bytes([b0, m | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([b0, m | 127]) + n.to_bytes(8, "big")
    if h.masked:
        return head + h.mask_key + xor(f.payload, h.mask_key)
    return head + f.payload


# ------------------------------------------------------------------ the echo endpoint (§13)

def server_frame(opcode: int, payload: bytes = b"") -> Frame:
    return frame(opcode, payload)


class Endpoint:
    """Answers decoded frames: None, or (reply frames, closes)."""

    def __init__(self):
        self.parts: List[bytes] = []
        self.opcode = 0

    def on_frame(self, f: Frame) -> Tuple[List[Frame], bool]:
        h = f.header
        if h.opcode == PING:
            return [server_frame(PONG, f.payload)], False
        if h.opcode == PONG:
            return [], False
        if h.opcode == CLOSE:
            return [server_frame(CLOSE, f.payload[:2])], True
        if h.opcode != CONT:
            self.opcode, self.parts = h.opcode, []
        self.parts.append(f.payload)
        if h.fin:
            return [server_frame(self.opcode, b"".join(self.parts))], False
        return [], False


def close_frame_for(err: Error) -> Frame:
    return server_frame(CLOSE, CLOSE_CODE[err.requirement].to_bytes(2, "big"))


def wide(codec: WsCodec) -> WsCodec:
    return replace(codec, max_payload=CAPACITY, max_message=CAPACITY)


def serve(codec: WsCodec, endpoint: str, chunks: List[bytes], half_close: bool) -> ServeResult:
    if endpoint not in ("", "echo"):
        raise ValueError(f"websocket has no endpoint {endpoint!r} (known: the default)")
    codec = replace(codec, role="server")
    ep = Endpoint()
    out = ServeResult()
    res = decode(codec, b"")
    for res, frames in decoded_as_fed(decode, codec, chunks):
        written = b""
        for f in frames:
            replies, closes = ep.on_frame(f)
            written += b"".join(encode(wide(codec), r) for r in replies)
            if closes:
                out.written.append(written)
                out.closed = True
                return out
        if res.error and res.error.requirement != TRUNCATED:
            written += encode(wide(codec), close_frame_for(res.error))
            out.written.append(written)
            out.closed, out.error = True, res.error
            return out
        out.written.append(written)
    return end_of_input(out, res, half_close)


def echo_reply(f: Frame) -> Optional[Frame]:
    """The echo of one unfragmented request frame (the network suite's requests)."""
    replies, _ = Endpoint().on_frame(f)
    return replies[0] if replies else None
