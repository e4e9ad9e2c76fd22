"""The websocket side of the Python load client (reference-impls/README.md, "websocket: what
changes"): the opening handshake (WS-HS-1/2, client side), messages as single masked FIN frames
with a fresh key each (WS-MASK-3), echoes matched first in, first out, a close with 1000 at the end."""
from __future__ import annotations

import base64
import collections
import os

from ...loadside import LoadSide, payload_for
from .frames import BINARY, CLOSE, TEXT, frame
from .reference import accept_for

VARIANTS = ("binary", "text")
#: planted bugs of the Python load client (`python -m frameproof.pyload --fault NAME`): name -> requirement
FAULTS = {"ws-client-header-case": "WS-HS-7",  # compares header names case-sensitively
          "ws-client-exact-connection": "WS-HS-7"}  # takes `Connection: Upgrade` only, not a token list
#: planted bugs of the permessage-deflate layer (spec/websocket-deflate.md), caught by the client case
#: deflate_response_refused
DEFLATE_FAULTS = {"ws-client-ignores-extensions": "WSD-NEG-5"}  # never reads Sec-WebSocket-Extensions


class WsLoadSide(LoadSide):
    fault = ""  # one of FAULTS (set by frameproof.pyload --fault)

    def __init__(self, proto, codec, variant):
        self.proto = proto
        self.ref = proto.reference
        self.codec = proto.net_client_codec(codec)
        self.variant = variant
        self.opcode = TEXT if variant == "text" else BINARY
        self.pending = collections.deque()  # (key, entry), in send order: echoes come back in order
        self.next_key = 0
        self.key = base64.b64encode(os.urandom(16)).decode()
        self.head = b""

    def opening(self, host):
        """The opening request for the echo service at ``websocket.path`` (default ``/``), offering
        ``websocket.subprotocol`` when the codec names one."""
        path = self.codec.path if self.codec.path is not None else "/"
        offer = f"Sec-WebSocket-Protocol: {self.codec.subprotocol}\r\n" if self.codec.subprotocol is not None else ""
        return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {self.key}\r\nSec-WebSocket-Version: 13\r\n{offer}\r\n").encode()

    def opened(self, data):
        """The client's checks of the 101 (RFC 6455 §4.1 items 1-6, WS-HS-7): any legal spelling."""
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) > 16384:
                raise ValueError("the handshake answer has no end within 16 KiB")
            return None
        lines = self.head[:end].decode("latin-1").split("\r\n")
        status = lines[0].split(" ", 2)
        if len(status) < 2 or not status[0].startswith("HTTP/1.") or status[1] != "101":
            raise ValueError(f"handshake answered {lines[0]!r}, expected status 101 (WS-HS-7)")
        hdrs = {}
        for ln in lines[1:]:
            k, sep, v = ln.partition(":")
            if not sep:
                raise ValueError(f"handshake answer: not a header line {ln!r}")
            k = k.strip() if self.fault == "ws-client-header-case" else k.strip().lower()
            hdrs[k] = f"{hdrs[k]}, {v.strip()}" if k in hdrs else v.strip()  # repeated: one list
        names = (("Upgrade", "Connection", "Sec-WebSocket-Accept", "Sec-WebSocket-Extensions", "Sec-WebSocket-Protocol")
                 if self.fault == "ws-client-header-case" else  # planted: knows one spelling of each name
                 ("upgrade", "connection", "sec-websocket-accept", "sec-websocket-extensions", "sec-websocket-protocol"))
        upgrade, connection, accept, ext, sub = (hdrs.get(n) for n in names)
        tokens = lambda v: [t.strip().lower() for t in (v or "").split(",")]
        if "websocket" not in tokens(upgrade):
            raise ValueError(f"handshake answer: Upgrade {upgrade!r}, expected websocket (WS-HS-7)")
        if self.fault == "ws-client-exact-connection":
            if connection != "Upgrade":  # planted: one spelling of the Connection header
                raise ValueError(f"handshake answer: Connection {connection!r}, expected 'Upgrade' (WS-HS-7)")
        elif "upgrade" not in tokens(connection):
            raise ValueError(f"handshake answer: Connection {connection!r} has no Upgrade token (WS-HS-7)")
        if accept != accept_for(self.key):
            raise ValueError(f"Sec-WebSocket-Accept {accept!r}, expected {accept_for(self.key)!r} (WS-HS-7)")
        if sub is not None and sub == self.codec.subprotocol:
            sub = None  # the one subprotocol offered, selected
        if self.fault == "ws-client-ignores-extensions":
            ext = None  # planted: takes any permessage-deflate response, valid or not (WSD-NEG-5)
        if ext is not None or sub is not None:
            raise ValueError(f"handshake answer names an extension or subprotocol not offered: {ext or sub!r} (WS-HS-7)")
        return self.head[end + 4:]

    def payload(self, index, size):
        if self.opcode == TEXT:  # the hex of the binary payload: valid UTF-8, unique per index
            return payload_for(index, (size + 1) // 2).hex()[:size].encode()
        return payload_for(index, size)

    def request(self, payload):
        key = self.next_key
        return key, frame(self.opcode, payload, True, os.urandom(4))

    def sent(self, key, entry, one_way=False):
        self.next_key = key + 1
        if not one_way:
            self.pending.append((key, entry))

    def entries(self):
        return [e for _k, e in self.pending]

    def take(self, f):
        if not self.counted(f) or not self.pending:
            return None
        return self.pending.popleft()[1]

    def reply_ok(self, f, payload):
        h = f.header
        return f.payload == payload and h.opcode == self.opcode and h.fin and not h.masked

    def goodbye(self):
        return self.encode(frame(CLOSE, (1000).to_bytes(2, "big"), True, os.urandom(4)))
