"""The `websocket` Python reference codec (streaming receiver with the message layer, encoder,
echo session, and the server side of the opening handshake), written from spec/websocket.md
independently of the oracle. The mutants' bugs sit behind ``frameproof.reference.MUTANT``."""
from __future__ import annotations

import base64
import hashlib
import struct

from ... import reference as R
from ...oracle import Frame
from ...reference import CodecError, StreamDecoder
from .frames import CLOSE, CLOSE_CODE, CONT, GUID, PING, PONG, SUBPROTOCOL, TEXT, BINARY, WsHeader, xor

DEFAULT_MESSAGE = 100 * 1024 * 1024


def _codes_ok(code: int) -> bool:
    if R.MUTANT == "ws-close-payload-unchecked":
        return True
    return 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999


class Utf8:
    """An incremental UTF-8 checker: ``feed`` returns the index of the first byte that makes the
    input so far impossible to complete, or -1."""

    def __init__(self):
        self.left = 0  # continuation bytes still due
        self.first = None  # the byte range of the next continuation byte, when it is constrained

    def feed(self, data: bytes) -> int:
        for i, b in enumerate(data):
            if self.left:
                lo, hi = self.first or (0x80, 0xBF)
                if not lo <= b <= hi:
                    return i
                self.left -= 1
                self.first = None
                continue
            if b <= 0x7F:
                continue
            if b < 0xC2 or b > 0xF4:
                return i
            self.left = 1 if b < 0xE0 else 2 if b < 0xF0 else 3
            self.first = {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F)}.get(b)
        return -1

    def copy(self):
        u = Utf8()
        u.left, u.first = self.left, self.first
        return u


def utf8_ok(data: bytes) -> bool:
    u = Utf8()
    return u.feed(data) < 0 and u.left == 0


class WsDecoder(StreamDecoder):
    """The receiving endpoint: frames with their header checks (§2-§5), then the message layer
    (§6-§8). ``closed`` once a close frame was read: later bytes are ignored (WS-CLOSE-4)."""

    truncation = "WS-STR-3"

    def __init__(self, codec):
        super().__init__()
        self.server = codec.role != "client"
        self.max_frame = codec.max_payload or R.DEFAULT_MAX
        self.max_message = codec.max_message or DEFAULT_MESSAGE
        self.closed = False
        self.in_message = False
        self.text = False
        self.size = 0
        self.utf8 = Utf8()
        self.partial = None  # (stream offset, bytes checked, Utf8) of a text frame still arriving
        self.phase = 0  # the ws-mask-phase-across-frames mutant's running key offset
        self.rsv1_ok = False  # permessage-deflate negotiated: RSV1 marks a compressed message (WSD-FRM-1)
        self.compressed = False  # the message in progress is compressed: its UTF-8 is checked once inflated

    def feed(self, chunk):
        if self.closed and R.MUTANT != "ws-reads-after-close":
            return []
        return super().feed(chunk)

    def finish(self):
        if self.closed:
            return
        super().finish()

    def fail(self, req, pos, msg=""):
        raise CodecError(req, self.base + pos, msg)

    def _scan(self, out):
        b = self.buf
        pos = 0
        M = R.MUTANT
        while pos < len(b) and not (self.closed and M != "ws-reads-after-close"):
            if len(b) - pos < 2:
                return
            b0, b1 = b[pos], b[pos + 1]
            fin, rsv, op = bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F
            masked, n7 = bool(b1 & 0x80), b1 & 0x7F
            ext = 2 if n7 == 126 else 8 if n7 == 127 else 0
            hl = 2 + ext + (4 if masked else 0)
            if len(b) - pos < hl:
                return
            if n7 == 126:
                n = int.from_bytes(b[pos + 2:pos + 4], "little" if M == "ws-16bit-length-little-endian" else "big")
            elif n7 == 127:
                n = int.from_bytes(b[pos + 2:pos + 10], "big")
            else:
                n = n7
            key = bytes(b[pos + hl - 4:pos + hl]) if masked else b""
            control = op >= 8
            if rsv and M != "ws-accepts-rsv":
                if not self.rsv1_ok:
                    self.fail("WS-HDR-2", pos)
                if rsv != 4 or op not in (TEXT, BINARY):  # RSV2/3, or RSV1 on a continuation or control frame
                    if not (rsv == 4 and op == CONT and getattr(self, "rsv1_on_continuation", False)):
                        self.fail("WS-HDR-2" if rsv & 3 else "WSD-FRM-2", pos)
            if op not in (0, 1, 2, 8, 9, 10) and M != "ws-accepts-reserved-opcode":
                self.fail("WS-HDR-3", pos)
            if control and not fin and M != "ws-accepts-fragmented-control":
                self.fail("WS-CTL-1", pos)
            if self.server and not masked and M != "ws-accepts-unmasked":
                self.fail("WS-MASK-1", pos)
            if not self.server and masked:
                self.fail("WS-MASK-2", pos)
            if control and n7 > 125:
                self.fail("WS-CTL-2", pos)
            if M != "ws-accepts-nonminimal" and ((n7 == 126 and n < 126) or (n7 == 127 and n < 0x10000)):
                self.fail("WS-LEN-3", pos)
            if n7 == 127 and n >= 1 << 63:
                if M == "ws-ignores-64bit-msb":
                    n &= (1 << 63) - 1
                else:
                    self.fail("WS-LEN-4", pos)
            if op == CONT and not self.in_message and M != "ws-accepts-orphan-continuation":
                self.fail("WS-FRAG-2", pos)
            if op in (TEXT, BINARY) and self.in_message:
                self.fail("WS-FRAG-3", pos)
            if n > self.max_frame and M != "ws-accepts-oversize":
                self.fail("WS-LIM-1", pos)
            if not control and M != "ws-message-limit-unchecked":
                if (self.size if op == CONT else 0) + n > self.max_message:
                    self.fail("WS-LIM-2", pos)
            comp = bool(rsv & 4) if op in (TEXT, BINARY) else (op == CONT and self.compressed)
            is_text = (op == TEXT or (op == CONT and self.text)) and not comp
            check_utf8 = is_text and not (M == "ws-fragmented-text-unchecked" and not (op == TEXT and fin))
            start = pos + hl
            have = min(n, len(b) - start)
            if check_utf8 and M != "ws-utf8-checked-at-end":
                # WS-UTF8-2: the payload is checked as it arrives, partial frames included
                at = self.base + pos
                if self.partial and self.partial[0] == at:
                    _, done, u = self.partial
                else:
                    done, u = 0, (Utf8() if op == TEXT else self.utf8.copy())
                if have > done:
                    if u.feed(xor(bytes(b[start + done:start + have]), key, done)) >= 0:
                        self.fail("WS-UTF8-1" if fin else "WS-UTF8-2", pos)
                self.partial = (at, have, u)
            if have < n:
                return
            raw = bytes(b[start:start + n])
            if M == "ws-mask-phase-across-frames":
                payload = xor(raw, key, self.phase)
                self.phase += n
            else:
                payload = xor(raw, key)
            if check_utf8:
                if M == "ws-utf8-checked-at-end":
                    u = Utf8() if op == TEXT else self.utf8
                    if u.feed(payload) >= 0:
                        self.fail("WS-UTF8-1", pos)
                else:
                    u = self.partial[2]
                self.partial = None
                if fin and u.left:
                    self.fail("WS-UTF8-1", pos)
                self.utf8 = u
            if op == CLOSE:
                if len(payload) == 1 and M != "ws-close-payload-unchecked":
                    self.fail("WS-CLOSE-1", pos)
                if len(payload) >= 2:
                    if not _codes_ok(struct.unpack(">H", payload[:2])[0]):
                        self.fail("WS-CLOSE-2", pos)
                    if not utf8_ok(payload[2:]) and M != "ws-close-payload-unchecked":
                        self.fail("WS-CLOSE-3", pos)
                self.closed = True
            elif op in (TEXT, BINARY):
                self.in_message, self.text, self.size = not fin, op == TEXT, n
                self.compressed = comp
                if not check_utf8:
                    self.utf8 = Utf8()
            elif op == CONT:
                self.in_message, self.size = not fin, self.size + n
            elif M == "ws-ping-breaks-reassembly" and self.in_message:
                self.in_message = False  # bug (galay-http): the ping ends the message being reassembled
            if op in (TEXT, BINARY, CONT) and fin:
                self.in_message, self.size, self.utf8 = False, 0, Utf8()
            out.append(Frame(0, 0, payload, WsHeader(fin, rsv, op, masked, key)))
            pos = start + n
            self._pos = pos


def decoder(codec):
    return WsDecoder(codec)


def encode(codec, frame, limit=None):
    h = frame.header if frame.header is not None else WsHeader()
    p = frame.payload
    n = len(p)
    if h.rsv and not (h.rsv == 4 and h.opcode in (TEXT, BINARY) and getattr(codec, "permessage_deflate", None)):
        raise CodecError("WS-HDR-2", 0, "RSV bits without an extension")
    if h.opcode not in (0, 1, 2, 8, 9, 10):
        raise CodecError("WS-HDR-3", 0, "reserved opcode")
    if h.opcode >= 8 and not h.fin:
        raise CodecError("WS-CTL-1", 0, "fragmented control frame")
    if h.opcode >= 8 and n > 125:
        raise CodecError("WS-CTL-2", 0, "control payload over 125")
    if (h.masked and len(h.mask_key) != 4) or (not h.masked and h.mask_key):
        raise CodecError("WS-MASK-4", 0, "masking key")
    if n > (codec.max_payload or R.DEFAULT_MAX if limit is None else limit):
        raise CodecError("WS-LIM-3", 0, "payload over the limit")
    out = bytearray([(0x80 if h.fin else 0) | h.rsv << 4 | h.opcode])
    m = 0x80 if h.masked else 0
    big = 65535 if R.MUTANT == "ws-64bit-from-65535" else 65536
    if n <= 125:
        out.append(m | n)
    elif n < big:
        out += bytes([m | 126]) + struct.pack(">H", n)
    else:
        out += bytes([m | 127]) + struct.pack(">Q", n)
    if h.masked:
        out += h.mask_key
        out += xor(p, h.mask_key)
    else:
        out += p
    return bytes(out)


def _server(opcode, payload=b""):
    return Frame(0, 0, payload, WsHeader(True, 0, opcode, False, b""))


class Goodbye(CodecError):
    """The peer's close frame: the endpoint answers ``reply`` and closes (WS-CLOSE-5)."""
    clean = True  # an orderly end, not a protocol error (frameproof.pyserver counts none)

    def __init__(self, offset, reply):
        super().__init__("WS-CLOSE-5", offset, "close handshake")
        self.reply = reply


class Echo:
    """The echo endpoint's answers to decoded frames (§13): ``reply(frame) -> Frame | None``;
    raises Goodbye on a close frame."""

    def __init__(self, fault=""):
        self.parts = []
        self.opcode = BINARY
        self.fault = fault

    def __call__(self, f):
        h = f.header
        if h.opcode == PING:
            return None if R.MUTANT == "ws-no-pong" else _server(PONG, f.payload)
        if h.opcode == PONG:  # planted (ws-answers-pong): a pong for a pong (WS-PING-2)
            return _server(PONG, f.payload) if self.fault == "ws-answers-pong" else None
        if h.opcode == CLOSE:
            code = f.payload[:2]
            if self.fault == "ws-close-rejects-4xxx" and len(code) == 2 and 4000 <= struct.unpack(">H", code)[0] <= 4999:
                raise CodecError("WS-CLOSE-2", 0, "planted: a private-use close code (4000-4999) refused")
            if R.MUTANT == "ws-close-reply-1000" and code:
                code = struct.pack(">H", 1000)
            if self.fault == "ws-open-after-close":  # planted: answers the close, keeps the connection (WS-CLOSE-5)
                return _server(CLOSE, code)
            raise Goodbye(0, _server(CLOSE, code))
        payload = self.assemble(f)
        return None if payload is None else _server(self.opcode, payload)

    def assemble(self, f):
        """A data frame into the message in progress: the message's payload once ``f`` ends it, else None."""
        if f.header.opcode != CONT:
            self.opcode, self.parts = f.header.opcode, []
        self.parts.append(f.payload)
        if not f.header.fin:
            return None
        payload = b"".join(self.parts)
        self.parts = []
        self.last_size = len(payload)  # what a planted ws-deflate-keeps-message still counts (held_bytes)
        return payload


def echo_reply(frame, fault=""):
    try:
        return Echo(fault)(frame)
    except Goodbye as g:
        return g.reply


def closing_frame(err, fault=""):
    """The close frame an endpoint writes before closing on ``err`` (WS-ERR-1, WS-CLOSE-5)."""
    if isinstance(err, Goodbye):
        return err.reply
    code = CLOSE_CODE.get(err.requirement)
    if code is None or fault == "ws-no-close-frame-on-error":
        return None
    if R.MUTANT == "ws-error-close-1002":
        code = 1002
    return _server(CLOSE, struct.pack(">H", code))


class WsSession:
    """The server side of one ``serve`` connection (after the opening handshake)."""

    def __init__(self, codec):
        from dataclasses import replace
        self.codec = replace(codec, role="server")
        self.dec = WsDecoder(self.codec)
        self.echo = Echo()
        self.closed = False
        self.error = None

    def _out(self, frames, err=None) -> bytes:
        out = bytearray()
        for f in frames:
            try:
                r = self.echo(f)
            except Goodbye as g:
                out += encode(self.codec, g.reply, 2 ** 63)
                self.closed = True
                return bytes(out)
            if r is not None:
                out += encode(self.codec, r, 2 ** 63)
        if err is not None:
            self.closed, self.error = True, err
            c = closing_frame(err)
            if c is not None:
                out += encode(self.codec, c, 2 ** 63)
        return bytes(out)

    def feed(self, data: bytes) -> bytes:
        try:
            return self._out(self.dec.feed(data))
        except CodecError as e:
            return self._out(e.frames, e)

    def eof(self) -> bytes:
        self.closed = True
        try:
            self.dec.finish()
        except CodecError as e:
            self.error = e
        return b""


# ------------------------------------------------------------------ the opening handshake (§12)

def accept_for(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


MAX_HEAD = 8192


class ServerOpening:
    """The server side of the opening handshake: ``feed(bytes) -> (reply, leftover)``;
    ``leftover`` is None while the request head is incomplete; ``ok`` says whether frames follow.
    The codec's ``path`` (when set) is the only resource served (another gets 404, RFC 6455 §4.2.2
    item 2, after the checks of WS-HS-1 and before the version's, WS-HS-3); its ``subprotocol``
    (default ``frameproof.echo``) is selected when offered (WS-HS-8), no other (WS-HS-4)."""

    def __init__(self, fault="", codec=None):
        self.buf = b""
        self.fault = fault
        self.ok = False
        self.path = getattr(codec, "path", None)
        self.subprotocol = getattr(codec, "echo_subprotocol", SUBPROTOCOL)
        self.deflate = bool(getattr(codec, "permessage_deflate", None))  # offered extensions considered
        self.extension = None  # the permessage-deflate agreement (deflate.Params), once accepted
        #: the checking server (a client under test) sets it on every other connection: its answer adds
        #: client_no_context_takeover, which a client follows whether it offered it or not (RFC 7692 §7.1.1.2)
        self.ask_client_reset = False

    def feed(self, data: bytes):
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buf) > MAX_HEAD and self.fault != "ws-unbounded-request-head":  # planted: reads on
                return self._status(431, "Request Header Fields Too Large"), b""
            return b"", None
        head, rest = self.buf[:end].decode("latin-1"), self.buf[end + 4:]
        if end > MAX_HEAD:
            return self._status(431, "Request Header Fields Too Large"), b""
        return self.answer(head), rest

    @staticmethod
    def _status(code, reason, extra=""):
        return f"HTTP/1.1 {code} {reason}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n".encode()

    def answer(self, head: str) -> bytes:
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        hdrs = {}
        for ln in lines[1:]:
            if ":" not in ln:
                return self._status(400, "Bad Request")
            k, v = ln.split(":", 1)
            if self.fault == "ws-header-names-case-sensitive":  # planted: knows one spelling of each name
                k = {"Host": "host", "Upgrade": "upgrade", "Connection": "connection", "Sec-WebSocket-Key":
                     "sec-websocket-key", "Sec-WebSocket-Version": "sec-websocket-version"}.get(k, k)
            else:
                k = k.strip().lower()
            if self.fault == "ws-last-header-wins":  # planted: a repeated header replaces the earlier one
                hdrs[k] = v.strip()
            else:
                hdrs[k] = (hdrs[k] + ", " + v.strip()) if k in hdrs else v.strip()
        tokens = lambda k: [t.strip().lower() for t in hdrs.get(k, "").split(",")]
        bad = len(parts) != 3 or parts[0] != "GET" or parts[2] != "HTTP/1.1" or "host" not in hdrs \
            or "websocket" not in tokens("upgrade") or "upgrade" not in tokens("connection")
        key = hdrs.get("sec-websocket-key", "")
        try:
            bad = bad or len(base64.b64decode(key, validate=True)) != 16
        except ValueError:
            bad = True
        if bad:
            return self._status(400, "Bad Request")
        if self.path is not None and parts[1] != self.path:
            return self._status(404, "Not Found")
        if hdrs.get("sec-websocket-version") != "13":
            if self.fault == "ws-version-400":
                return self._status(400, "Bad Request")
            return self._status(426, "Upgrade Required", "Sec-WebSocket-Version: 13\r\n")
        extra = ""
        offered = [p.strip() for p in hdrs.get("sec-websocket-protocol", "").split(",") if p.strip()]
        if self.fault == "ws-echoes-subprotocol-list" and offered:
            extra = f"Sec-WebSocket-Protocol: {hdrs['sec-websocket-protocol']}\r\n"
        elif self.fault == "ws-never-selects-subprotocol":  # planted: an RFC server, not the echo service
            pass
        elif self.subprotocol in offered or self.fault == "ws-names-unoffered-subprotocol":
            extra = f"Sec-WebSocket-Protocol: {self.subprotocol}\r\n"  # planted: named offered or not
        if self.deflate and "sec-websocket-extensions" in hdrs:
            from .deflate import accept
            values = [hdrs["sec-websocket-extensions"]]
            if self.fault == "ws-deflate-first-offer-only":  # planted: a declined first offer declines all (WSD-NEG-2)
                values = [values[0].split(",")[0]]
            from .deflate import Policy
            agreed = accept(values, Policy(client_no_context_takeover=self.ask_client_reset))
            if agreed is not None:
                self.extension = agreed[0]
                extra += f"Sec-WebSocket-Extensions: {agreed[1]}\r\n"
        self.ok = True
        return (f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept_for(key)}\r\n{extra}\r\n").encode()


def net_replier(fault=""):
    echo = Echo(fault)

    def reply(frame):
        r = echo(frame)
        if r is not None and fault == "ws-masks-replies":
            r = Frame(0, 0, r.payload, WsHeader(True, 0, r.header.opcode, True, b"\x01\x02\x03\x04"))
        return r
    reply.echo = echo  # the fragments it holds count against the server's memory budget (WS-RES-1)
    return reply


class ClientMatcher:  # websocket has no client-side matching in this suite (spec/websocket.md §1)
    def __init__(self, codec):
        raise CodecError("WS-HDR-1", 0, "websocket has no client-side matching")
