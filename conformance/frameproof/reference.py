"""The Python reference codecs' shared machinery: written from the spec text, independent of the
oracle, used by the Python testee, echo server and load client. Each protocol's codec is in
``frameproof.protocols.<name>.reference``. ``MUTANT`` switches on exactly one deliberate bug
(set by the Python testee's ``--mutant``)."""
from __future__ import annotations

DEFAULT_MAX = 10 * 1024 * 1024
MUTANT = ""


class CodecError(Exception):
    def __init__(self, requirement: str, offset: int, message: str = ""):
        super().__init__(f"{requirement} at {offset}: {message}")
        self.frames = []  # frames completed before the error, in the same feed() call
        self.requirement = requirement
        self.offset = offset
        self.message = message


class StreamDecoder:
    """Buffers a byte stream; subclasses' ``_scan(out)`` appends complete frames and advances
    ``self._pos`` past each one. ``truncation`` is the requirement a stream ending inside a
    frame breaks."""

    truncation = ""

    def __init__(self):
        self.buf = bytearray()
        self.base = 0  # stream offset of buf[0]
        self._pos = 0

    def feed(self, chunk: bytes):
        """Returns the frames completed by ``chunk`` as (flag, seq, payload); raises CodecError,
        whose ``frames`` holds the frames completed before the error."""
        if MUTANT == "ignores-chunk-boundaries":
            # bug: a partial frame at the end of a chunk is forgotten
            self.base += len(self.buf)
            self.buf = bytearray()
        self.buf += chunk
        out = []
        self._pos = 0
        try:
            self._scan(out)
        except CodecError as e:
            e.frames = out
            raise
        finally:
            del self.buf[:self._pos]
            self.base += self._pos
            if MUTANT == "offset-wraps-at-4gib":
                self.base &= 0xFFFFFFFF  # bug: the stream offset is kept in 32 bits
        return out

    def _scan(self, out):  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self):
        """End of stream: a partial frame left is an error."""
        if self.buf:
            raise CodecError(self.truncation, self.base, "stream ended inside a frame")

    def skip(self, n: int = 1):
        """Drops n buffered bytes (only the continues-after-error mutant resynchronises)."""
        del self.buf[:n]
        self.base += n


class EchoSession:
    """The server side of one echo-service connection over a protocol's reference codec
    (``ref``: frameproof.protocols.<name>.reference): bytes in, reply bytes out; closes on a
    decoding error (after the replies to the frames before it) and at EOF."""

    def __init__(self, ref, codec):
        self.ref, self.codec = ref, codec
        self.dec = ref.decoder(codec)
        self.closed = False
        self.error = None

    def replies(self, frames) -> bytes:
        out = bytearray()
        for f in frames:
            r = self.ref.echo_reply(f)
            if r is not None:
                out += self.ref.encode(self.codec, r, 2 ** 31 - 1)
        return bytes(out)

    def feed(self, data: bytes) -> bytes:
        try:
            return self.replies(self.dec.feed(data))
        except CodecError as e:
            self.closed, self.error = True, e
            return self.replies(e.frames)

    def eof(self) -> bytes:
        self.closed = True
        try:
            self.dec.finish()
        except CodecError as e:
            self.error = e
        return b""


class KeyedMatcher:
    """The client-side pending table of protocols whose replies carry the request's key (a
    sequence number, a request id): entries by key and in send order. Subclasses allocate keys
    (``next_request``, ``sent`` via ``_pend``) and find a reply's key (``take`` via ``_take``)."""
    fails_on_timeout = False

    def __init__(self, codec, bound):
        self.codec = codec
        self.pending = {}  # key -> entry
        self.order = []  # (key, entry) in send order
        self.bound = bound

    def _pend(self, key, entry, one_way):
        if not one_way:
            self.pending[key] = entry
            self.order.append((key, entry))

    def _take(self, key, oldest_instead: bool = False):
        """The entry pending under ``key`` (the oldest one when ``oldest_instead``: a mutant)."""
        if oldest_instead:
            key = self.order[0][0] if self.order else None
        entry = self.pending.pop(key, None)
        if entry is not None:
            self.order.remove((key, entry))
        return entry

    def expire(self, entry):
        key = next(k for k, e in self.order if e is entry)
        self.order.remove((key, entry))
        del self.pending[key]

    def entries(self):
        return [e for _k, e in self.order]
