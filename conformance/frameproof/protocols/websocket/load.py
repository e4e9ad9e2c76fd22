"""The websocket side of the Python load client (reference-impls/README.md, "websocket: what
changes"): the opening handshake (WS-HS-1/2, client side), messages as single masked FIN frames
with a fresh key each (WS-MASK-3), echoes matched first in, first out, a close with 1000 at the end.
With ``websocket.permessage_deflate`` in its codec it offers the extension (with
``client_max_window_bits``), checks the answer (WSD-NEG-5), compresses its messages once agreed (HAR-CLI-3;
uncompressed where that is shorter, WSD-FRM-3) and inflates compressed echoes (spec/websocket-deflate.md)."""
from __future__ import annotations

import base64
import collections
import os

from ...loadside import LoadSide, payload_for
from .deflate import Deflater, Inflater, InflateError, NegotiationError, Params, check_response
from .frames import BINARY, CLOSE, TEXT, frame
from .reference import accept_for

VARIANTS = ("binary", "text", "prose")

#: --variant prose (reference-impls/README.md, fp-load): text of English words, about as compressible
#: as prose is (DEFLATE: 2.3x for 1 KiB alone, 3x with the context of earlier messages), where the hex
#: of the text variant repeats every 16 characters (60x at 1 KiB): the benchmark's permessage-deflate
#: rows. 64 of the commonest English words, picked by splitmix64 (six bits a word).
PROSE_WORDS = ("the of and to in is that it for was on are as with his they at be this from have or by one had "
               "not but what all were when we there can an your which their said if do will each about how up "
               "out them then she many some so these would other into has more her two like him see").split()
_M64 = (1 << 64) - 1


def prose(index: int, size: int, neighbour: bool = False) -> bytes:
    """The prose payload of request ``index``: its decimal digits, then words (" " + word) drawn by
    splitmix64 from the state ``index`` (state += 0x9E3779B97F4A7C15 before each draw; the word is
    the top six bits of the mixed state), cut at ``size`` bytes. Unique per index while ``size``
    holds its digits; the checking server reads the index back from them (client_request_check).
    ``neighbour``: the planted bug ws-prose-neighbour-word (the word after the contract's)."""
    out = bytearray(str(index).encode())
    s = index & _M64
    while len(out) < size:
        s = (s + 0x9E3779B97F4A7C15) & _M64
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        z ^= z >> 31
        out += b" " + PROSE_WORDS[(z >> 58) ^ neighbour].encode()
    return bytes(out[:size])
#: planted bugs of the Python load client (`python -m frameproof.pyload --fault NAME`): name -> requirement
FAULTS = {"ws-client-header-case": "WS-HS-7",  # compares header names case-sensitively
          "ws-client-exact-connection": "WS-HS-7"}  # takes `Connection: Upgrade` only, not a token list
#: a planted bug of the bound on the 101's head, caught by the client case opening_response_endless
HEAD_FAULTS = {"ws-client-unbounded-head": "WS-HS-10"}  # reads a 101 whose head never ends without bound
#: planted bugs of the permessage-deflate layer (spec/websocket-deflate.md), caught by the client case
#: deflate_response_refused
DEFLATE_FAULTS = {"ws-client-ignores-extensions": "WSD-NEG-5",  # never reads Sec-WebSocket-Extensions
                  "ws-deflate-no-offer": "HAR-COUNT-1",  # a deflate codec, and no offer made (counts_agree)
                  "ws-deflate-sends-plain": "HAR-CLI-3"}  # agrees, then sends every message uncompressed
#: planted bugs of the variants (--variant text, prose), caught by the checking server: its request check
#: (client_request_check, HAR-CLI-1) and its corrupted replies (corrupt_reply, HAR-VERIFY-1)
PROSE_FAULTS = {"ws-prose-neighbour-word": "HAR-CLI-1",  # draws the word next to the contract's
               "ws-client-ignores-variant": "HAR-CLI-1",  # sends binary frames whatever --variant names
               "ws-prose-as-text": "HAR-CLI-1",  # --variant prose sends the text variant's hex
               "ws-client-ignores-opcode": "HAR-VERIFY-1",  # takes an echo of another opcode, payload alone
               "ws-client-no-close": "HAR-CLI-1"}  # ends its connections without a close frame (RFC 6455 §7.1.2)
#: a planted bug of the masking keys, caught by the checking server (client_masking, WS-MASK-5)
MASK_FAULTS = {"ws-client-fixed-mask-key": "WS-MASK-5",  # one key for every frame
               "ws-client-key-byte-repeats": "WS-MASK-5"}  # each key's second byte a copy of its first


class WsLoadSide(LoadSide):
    fault = ""  # one of FAULTS (set by frameproof.pyload --fault)

    def __init__(self, proto, codec, variant):
        self.proto = proto
        self.ref = proto.reference
        self.codec = proto.net_client_codec(codec)
        self.variant = variant
        self.opcode = TEXT if variant in ("text", "prose") else BINARY
        self.pending = collections.deque()  # (key, entry), in send order: echoes come back in order
        self.next_key = 0
        self.key = base64.b64encode(os.urandom(16)).decode()
        self.head = b""
        # permessage-deflate: the offer (None: not offered), then the agreement's compressor and decompressor
        self.offer = Params(client_max_window_bits=True) if getattr(codec, "permessage_deflate", None) else None
        self.deflater = self.inflater = None

    def opening(self, host):
        """The opening request for the echo service at ``websocket.path`` (default ``/``), offering
        ``websocket.subprotocol`` when the codec names one."""
        path = self.codec.path if self.codec.path is not None else "/"
        offer = f"Sec-WebSocket-Protocol: {self.codec.subprotocol}\r\n" if self.codec.subprotocol is not None else ""
        if self.offer is not None and self.fault != "ws-deflate-no-offer":  # planted: never offered
            offer += f"Sec-WebSocket-Extensions: {self.offer.header()}\r\n"
        return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {self.key}\r\nSec-WebSocket-Version: 13\r\n{offer}\r\n").encode()

    def opened(self, data):
        """The client's checks of the 101 (RFC 6455 §4.1 items 1-6, WS-HS-7): any legal spelling."""
        start = max(0, len(self.head) - 3)  # only the new bytes (and three before them) can end the head
        self.head += data
        end = self.head.find(b"\r\n\r\n", start)
        if end < 0:
            if len(self.head) > 16384 and self.fault != "ws-client-unbounded-head":  # planted: reads on (WS-HS-10)
                raise ValueError("the handshake answer has no end within 16 KiB (WS-HS-10)")
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
        elif ext is not None and self.offer is not None and self.fault != "ws-deflate-no-offer":
            self.agree(ext)
            ext = None
        if ext is not None or sub is not None:
            raise ValueError(f"handshake answer names an extension or subprotocol not offered: {ext or sub!r} (WS-HS-7)")
        return self.head[end + 4:]

    def agree(self, ext: str):
        """The server's Sec-WebSocket-Extensions read against the offer (WSD-NEG-5): a compressor and a
        decompressor as agreed, or ValueError (the connection fails)."""
        try:
            agreed = check_response(self.offer, [ext])
        except NegotiationError as e:
            raise ValueError(f"handshake answer: Sec-WebSocket-Extensions {ext!r}: {e} (WSD-NEG-5)")
        if agreed is None:
            return
        bits = agreed.client_max_window_bits if type(agreed.client_max_window_bits) is int else 15
        # an 8-bit window zlib cannot compress with (WSD-NEG-4): every message goes uncompressed then
        self.deflater = Deflater(bits, agreed.client_no_context_takeover) if bits >= 9 else None
        self.inflater = Inflater(15, agreed.server_no_context_takeover, 2 ** 62)

    def decoder(self):
        dec = super().decoder()
        dec.rsv1_ok = self.inflater is not None  # RSV1 marks a compressed echo (WSD-FRM-1)
        return dec

    def payload(self, index, size):
        if self.variant == "prose" and self.fault != "ws-prose-as-text":  # planted: the hex below instead
            return prose(index, size, self.fault == "ws-prose-neighbour-word")
        if self.opcode == TEXT:  # the hex of the binary payload: valid UTF-8, unique per index
            return payload_for(index, (size + 1) // 2).hex()[:size].encode()
        return payload_for(index, size)

    def request(self, payload):
        key = self.next_key
        mask = b"\x37\xfa\x21\x3d" if self.fault == "ws-client-fixed-mask-key" else os.urandom(4)
        if self.fault == "ws-client-key-byte-repeats":  # planted: 2^24 keys (WS-MASK-5)
            mask = mask[:1] * 2 + mask[2:]
        opcode = BINARY if self.fault == "ws-client-ignores-variant" else self.opcode  # planted: one opcode
        if self.deflater is not None and self.fault != "ws-deflate-sends-plain":  # planted: agreed, never used
            body, packed = self.deflater.payload(payload)  # in send order: the compressor's context (WSD-CTX-1)
            return key, frame(opcode, body, True, mask, rsv=4 if packed else 0)
        return key, frame(opcode, payload, True, mask)

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
        """Called once per echo, in order: a compressed one is inflated here, in the context of those before."""
        h = f.header
        same_op = h.opcode == self.opcode or self.fault == "ws-client-ignores-opcode"  # planted: payload alone
        got = f.payload
        if h.rsv & 4 and self.inflater is not None:
            try:
                got = self.inflater.inflate(bytes(f.payload))
            except InflateError:
                return False
        return got == payload and same_op and h.fin and not h.masked

    def goodbye(self):
        if self.fault == "ws-client-no-close":  # planted: ends its connections without a close frame
            return b""
        return self.encode(frame(CLOSE, (1000).to_bytes(2, "big"), True, os.urandom(4)))
