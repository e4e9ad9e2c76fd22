"""The echo service on a connection that negotiated permessage-deflate (spec/websocket-deflate.md):
the Python reference server's decoder and replier once the opening handshake accepted an offer
(reference.ServerOpening.extension). Compressed messages are inflated within the message limit
(WSD-LIM-1), checked as UTF-8 once inflated (WSD-CMP-4) and echoed compressed (WSD-FRM-1, CMP-1), or
uncompressed where the compressed payload would be longer than the message (WSD-FRM-3: incompressible
data, an empty message); the zlib state is made at the first compressed message (WSD-LIM-3)."""
from __future__ import annotations

import zlib

from ...oracle import Frame
from ...reference import CodecError
from . import reference
from .deflate import Deflater, Inflater, InflateError, Params
from .frames import CONT, PING, PONG, CLOSE, TEXT, WsHeader

INFLATE_REQ = {1009: "WSD-LIM-1", 1007: "WSD-CMP-3"}


class DeflateEcho(reference.Echo):
    def __init__(self, agreed: Params, max_message: int, fault=""):
        super().__init__(fault)
        self.agreed, self.max_message = agreed, max_message
        self.compressed = False
        self._deflater = self._inflater = None
        #: set by the checking server of `frameproof net --client` (pyserver.EchoServer): "corrupt" or
        #: "drop" for the next echoed message, done before it is compressed, so that the client's
        #: inflater context stays in step with this deflater's (WSD-CTX-1); ``done`` says it was done;
        #: "plain": the next echo goes uncompressed (WSD-FRM-1 lets a sender send any message so)
        self.next_reply, self.done = None, None
        if fault == "ws-deflate-eager-state":  # planted: zlib's state made at the opening (WSD-LIM-3)
            inflater, deflater = self.inflater(), self.deflater()
            inflater._z = inflater._new()
            deflater._z = zlib.compressobj(deflater.level, zlib.DEFLATED, -deflater.window_bits)

    def state_cost(self) -> int:
        """The zlib state this connection holds (WSD-LIM-2), which the server's memory budget counts."""
        if self.fault == "ws-deflate-state-uncounted":  # planted: the budget sees none of it (WSD-LIM-2)
            return 0
        return sum(z.cost() for z in (self._inflater, self._deflater) if z is not None)

    def inflater(self) -> Inflater:
        if self._inflater is None:
            bits = self.agreed.client_max_window_bits if isinstance(self.agreed.client_max_window_bits, int) \
                and self.agreed.client_max_window_bits is not True else 15
            # planted (ws-deflate-inflater-resets): the client's context forgotten between messages (WSD-CTX-1)
            reset = self.agreed.client_no_context_takeover or self.fault == "ws-deflate-inflater-resets"
            self._inflater = Inflater(bits, reset, self.max_message)
        return self._inflater

    def deflater(self) -> Deflater:
        if self._deflater is None:
            reset = self.agreed.server_no_context_takeover and self.fault != "ws-deflate-keeps-context"
            self._deflater = Deflater(self.agreed.server_max_window_bits or 15, reset)
        return self._deflater

    def __call__(self, f):
        h = f.header
        if h.opcode in (PING, PONG, CLOSE):
            return super().__call__(f)
        if h.opcode != CONT:
            self.compressed = bool(h.rsv & 4)
        if not self.compressed:  # an uncompressed message: echoed as it came (WSD-CTX-3)
            reply = super().__call__(f)
            if reply is not None:  # the checking server's corrupt or drop, as for a compressed message
                act, self.next_reply = self.next_reply, None
                if act == "drop":
                    self.done = act
                elif act == "corrupt" and reply.payload:
                    self.done = act
                    reply = Frame(0, 0, bytes([reply.payload[0] ^ 0x01]) + reply.payload[1:], reply.header)
            return reply
        payload = self.assemble(f)
        if payload is None:
            return None
        try:
            if self.fault == "ws-deflate-unbounded-inflate":
                message = unbounded_inflate(payload, self.max_message)
            else:
                message = self.inflater().inflate(payload)
        except InflateError as e:
            raise CodecError(INFLATE_REQ.get(e.code, "WSD-CMP-3"), 0, e.reason) from None
        self.last_size = len(message)  # the inflated size, what a planted ws-deflate-keeps-message counts on
        if self.opcode == TEXT and not reference.utf8_ok(message):
            raise CodecError("WSD-CMP-4", 0, "the inflated text is not UTF-8")
        act, self.next_reply = self.next_reply, None
        if act == "drop":  # never sent: kept out of the deflater's window too
            self.done = act
            return Frame(0, 0, message, WsHeader(True, 4, self.opcode, False, b""))
        if act == "corrupt" and message:  # bit 0 of the first octet: text stays UTF-8
            message, self.done = bytes([message[0] ^ 0x01]) + message[1:], act
        if act == "plain":  # the checking server's uncompressed echo (WSD-FRM-1): the deflater untouched (WSD-CTX-3)
            payload, compressed = message, False
        elif self.fault == "ws-deflate-always-compresses":  # planted: compressed however long (WSD-FRM-3)
            payload, compressed = self.deflater().compress(message), True
        else:  # uncompressed where compressing would make it longer, the deflater reset (WSD-FRM-3)
            payload, compressed = self.deflater().payload(message)
        return Frame(0, 0, payload, WsHeader(True, 4 if compressed else 0, self.opcode, False, b""))


def unbounded_inflate(payload: bytes, max_message: int) -> bytes:
    """Planted (ws-deflate-unbounded-inflate): the whole message inflated first, its size checked
    after, so a bomb is held whole before the 1009 (what WSD-LIM-1 forbids)."""
    import zlib
    try:
        message = zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")
    except zlib.error as e:
        raise InflateError(1007, f"the payload does not inflate: {e}") from None
    if len(message) > max_message:
        raise InflateError(1009, f"the message inflates past max_message ({max_message} bytes)")
    return message


def session(codec, agreed: Params, fault=""):
    """(decoder, replier) for a connection whose opening accepted ``agreed``."""
    dec = reference.decoder(codec)
    dec.rsv1_ok = True
    dec.rsv1_on_continuation = fault == "ws-deflate-rsv1-on-continuation"  # planted (WSD-FRM-2)
    echo = DeflateEcho(agreed, codec.max_message or dec.max_message, fault)

    def reply(frame):
        return echo(frame)
    reply.echo = echo
    return dec, reply
