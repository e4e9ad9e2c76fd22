"""The bytes of the end-to-end tests, through the suite's own codecs (frameproof.protocols, the
registry: each protocol's Python reference encoder and streaming decoder, its frame types), not
copies of them: frames to send, codec JSON, and Client, a connection to the server under test that
reads what the server sends as frames or as raw bytes."""
from __future__ import annotations

import json
import socket
import time
from collections import deque

from frameproof import protocols as registry
from frameproof.oracle import Frame
from frameproof.protocols.rpc import frames as rpc  # noqa: F401  (re-exported: rpc.request, rpc.init ...)
from frameproof.protocols.websocket import frames as ws  # noqa: F401  (ws.frame, ws.TEXT ...)
from frameproof.protocols.websocket.net import RFC_KEY, request_head  # noqa: F401
from frameproof.reference import CodecError

STANDARD = registry.get("standard")
LENGTH_FIELD = registry.get("length-field")
RPC = registry.get("rpc")
WEBSOCKET = registry.get("websocket")

# What the tests send is encoded whatever its size: the limits under test are the server's.
UNLIMITED = 2 ** 63


def encode(proto, frame: Frame, codec=None) -> bytes:
    """The bytes of `frame` (the protocol's reference encoder; `codec`: its default one if None)."""
    return proto.reference.encode(codec if codec is not None else proto.codec(), frame, UNLIMITED)


def std_frame(flag: int, seq: int, payload: bytes) -> bytes:
    return encode(STANDARD, Frame(flag, seq, payload))


def lf(offset: int = 0, size: int = 2, max_payload: int = 0):
    """A length-field codec (profile `offset`, `size`; 0 = the default limit)."""
    return LENGTH_FIELD.codec(max_payload=max_payload, lf_offset=offset, lf_size=size)


def lf_codec(offset: int = 0, size: int = 2, max_payload: int = 0) -> str:
    """--codec JSON of a length-field profile (reference-impls/README.md)."""
    return json.dumps(lf(offset, size, max_payload).to_json())


def lf_frame(payload: bytes, offset: int = 0, size: int = 2, header: bytes = b"") -> bytes:
    """A length-field frame; `header`: the `offset` bytes before the length (zeros if empty)."""
    b = encode(LENGTH_FIELD, Frame(0, 0, payload), lf(offset, size))
    if header:
        assert len(header) == offset, (header, offset)
        b = header + b[offset:]
    return b


def rpc_frame(frame: Frame) -> bytes:
    return encode(RPC, frame)


def ws_frame(frame: Frame) -> bytes:
    return encode(WEBSOCKET, frame)


class Client:
    """A TCP connection to the server under test. Reads what the server sends either as frames
    (`frame()`: the protocol's reference decoder, for the peer of a server with `codec`) or as raw
    bytes (`exactly`, `to_eof`, `head`), which start right after the last frame taken."""

    def __init__(self, port: int, proto=STANDARD, codec=None, host: str = "127.0.0.1", timeout: float = 10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.proto = proto
        self.codec = proto.net_client_codec(codec if codec is not None else proto.codec()).with_limit(2 ** 31 - 1)
        self.dec = proto.reference.decoder(self.codec)
        self.raw = bytearray()  # received, not yet given to the decoder nor taken
        self.frames = deque()  # decoded, not yet taken
        self.eof = False

    def send(self, data: bytes):
        self.sock.sendall(data)

    def shutdown_write(self):
        self.sock.shutdown(socket.SHUT_WR)

    def close(self):
        self.sock.close()

    def _recv(self, deadline: float) -> bytes:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        self.sock.settimeout(left)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            self.eof = True
        return chunk

    def frame(self, timeout: float = 10.0):
        """The next frame the server sent; None if it closed the connection between frames. Fails on
        a close inside a frame, a malformed frame and on a timeout (socket.timeout)."""
        deadline = time.monotonic() + timeout
        while not self.frames:
            if self.raw:
                data, self.raw = bytes(self.raw), bytearray()
            elif self.eof:
                assert not self.dec.buf, f"EOF inside a reply ({len(self.dec.buf)} bytes of it)"
                return None
            else:
                data = self._recv(deadline)
                if not data:
                    continue
            try:
                self.frames.extend(self.dec.feed(data))
            except CodecError as e:
                raise AssertionError(f"malformed frame from the server: {e}") from None
        return self.frames.popleft()

    def frames_to_eof(self, timeout: float = 10.0):
        """Every frame until the server closes (orderly); fails on a partial frame at the end."""
        data = self.to_eof(timeout)
        dec = self.proto.reference.decoder(self.codec)
        try:
            out = dec.feed(data)
            dec.finish()
        except CodecError as e:
            raise AssertionError(f"the stream up to EOF is not whole frames: {e}") from None
        return out

    def _unread(self):
        # raw reads start after the last frame taken: the decoder's unfinished bytes come back
        assert not self.frames, "a raw read while decoded frames are not taken"
        if self.dec.buf:
            self.raw[:0] = self.dec.buf
        self.dec = self.proto.reference.decoder(self.codec)

    def exactly(self, n: int, timeout: float = 10.0) -> bytes:
        """The next n bytes (fewer if the server closes first)."""
        self._unread()
        deadline = time.monotonic() + timeout
        while len(self.raw) < n and not self.eof:
            self.raw += self._recv(deadline)
        out = bytes(self.raw[:n])
        del self.raw[:n]
        return out

    def to_eof(self, timeout: float = 10.0) -> bytes:
        """Everything until the server closes the connection; fails on a reset or no close in time."""
        self._unread()
        deadline = time.monotonic() + timeout
        while not self.eof:
            try:
                self.raw += self._recv(deadline)
            except ConnectionResetError:
                raise AssertionError("connection reset instead of an orderly close") from None
            except socket.timeout:
                raise AssertionError("no EOF within %.0f s" % timeout) from None
        out = bytes(self.raw)
        self.raw.clear()
        return out

    def head(self, timeout: float = 10.0) -> str:
        """An HTTP head up to and including its blank line (what follows stays for the frames)."""
        self._unread()
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.raw:
            assert not self.eof, "EOF in the handshake answer: %r" % bytes(self.raw)
            self.raw += self._recv(deadline)
        end = self.raw.index(b"\r\n\r\n") + 4
        head = bytes(self.raw[:end])
        del self.raw[:end]
        return head.decode("latin-1")

    def closed_within(self, timeout: float) -> bool:
        """True if the peer closed (EOF or reset) within `timeout` s, nothing received."""
        self._unread()
        if self.raw:
            return False
        if self.eof:
            return True
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def ws_handshake(c: Client, extra: str = "") -> str:
    """The client side of the websocket opening handshake (the RFC 6455 §1.3 key); the answer head."""
    c.send(request_head(RFC_KEY, extra=extra))
    return c.head()
