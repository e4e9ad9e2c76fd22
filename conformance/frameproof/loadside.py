"""The protocol side of one load-client connection (frameproof.pyload), reached through
``Protocol.load_side(codec, variant)``: what is sent before the frames, how requests are built and
matched, how replies are verified, what is sent before closing. The default here fits every
protocol whose client has a ``reference.ClientMatcher``; protocols with more (an opening
handshake, call variants, streams) subclass it in their own folder (reference-impls/README.md,
"fp-load", is the contract the programs follow)."""
from __future__ import annotations

from typing import Optional, Tuple


def payload_for(index: int, size: int) -> bytes:
    """The contract's payload: the request's global index (u64 little-endian), repeated."""
    seed = index.to_bytes(8, "little")
    return (seed * (size // 8 + 1))[:size]


class LoadSide:
    #: pending requests allowed at once (the matcher's bound)
    bound = 1 << 30

    def __init__(self, proto, codec, variant: str):
        self.proto = proto
        self.ref = proto.reference
        self.codec = proto.net_client_codec(codec)
        self.variant = variant
        self.m = self.ref.ClientMatcher(self.codec)
        self.bound = getattr(self.m, "bound", self.bound)

    # -- before the first frame
    def opening(self, host: str) -> bytes:
        """Bytes written right after connecting to ``host`` (an opening handshake), b"" for none."""
        return b""

    def opened(self, data: bytes) -> Optional[bytes]:
        """Feeds the peer's answer to ``opening``: the bytes after it once complete (frames), None
        while incomplete; raises ValueError (the reason) when the answer is wrong."""
        return data

    # -- frames
    def decoder(self):
        return self.ref.decoder(self.codec.with_limit(0))

    def encode(self, frame) -> bytes:
        return self.ref.encode(self.codec, frame)

    def payload(self, index: int, size: int) -> bytes:
        return payload_for(index, size)

    def request(self, payload: bytes) -> Tuple[object, object]:
        """(key, frame) of the next request carrying ``payload``."""
        return self.m.next_request(payload, check_pending=False)

    def sent(self, key, entry, one_way=False):
        self.m.sent(key, entry, one_way=one_way)

    def entries(self):
        return self.m.entries()

    def take(self, frame):
        """The pending entry ``frame`` answers, or None/False (unmatched)."""
        return self.m.take(frame)

    def counted(self, frame) -> bool:
        """True for the replies the report counts (False: protocol traffic such as a close frame):
        the protocol's own rule, the one the checking server counts by (Protocol.counted)."""
        return self.proto.counted(frame)

    def stray(self, frame) -> bool:
        """For a counted frame that answers no pending request (``take`` found none): True when the
        protocol says it completes nothing and is no error, so it is neither a reply nor counted (rpc:
        an unmatched RESPONSE, RPC-MATCH-2); False (the default) makes it an error."""
        return False

    def reply_ok(self, frame, payload: bytes) -> bool:
        return frame.payload == payload and self.m.reply_ok(frame)

    # -- streams (protocols with ``load_streams``)
    def stream_open(self):
        """(stream id, opening frame) of the next stream."""
        raise NotImplementedError(f"{self.proto.name} has no streams")

    def stream_data(self, sid, payload: bytes):
        raise NotImplementedError

    def stream_end(self, sid):
        raise NotImplementedError

    def stream_kind(self, frame):
        """("ack" | "data" | "end" | "other", id) of a reply on a stream."""
        raise NotImplementedError

    # -- the end
    def goodbye(self) -> bytes:
        """Bytes written before closing the connection (a close frame), b"" for none."""
        return b""
