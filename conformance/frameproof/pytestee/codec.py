"""Streaming codecs for the Python testee, written from the spec text and
independent of the oracle. ``MUTANT`` switches on exactly one deliberate bug."""
from __future__ import annotations

DEFAULT_MAX = 10 * 1024 * 1024
MUTANT = ""  # set by __main__


class CodecError(Exception):
    def __init__(self, requirement: str, offset: int, message: str = ""):
        super().__init__(f"{requirement} at {offset}: {message}")
        self.frames = []  # frames completed before the error, in the same feed() call
        self.requirement = requirement
        self.offset = offset
        self.message = message


class StreamDecoder:
    """Buffers a byte stream; subclasses' ``_scan(out)`` appends complete frames and advances
    ``self._pos`` past each one."""

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
        return out

    def _scan(self, out):  # pragma: no cover - abstract
        raise NotImplementedError


class StandardDecoder(StreamDecoder):
    def __init__(self, max_payload: int = 0):
        super().__init__()
        self.max = max_payload or DEFAULT_MAX


    def _scan(self, out):
        pos = 0
        b = self.buf
        while True:
            if len(b) - pos < 4:
                break
            flag, seq = b[pos], b[pos + 1]
            if MUTANT == "wrong-byte-order":
                n = (b[pos + 2] << 8) | b[pos + 3]
            else:
                n = b[pos + 2] | (b[pos + 3] << 8)
            hlen = 4
            if n == 0xFFFF:
                if len(b) - pos < 8:
                    break
                n = int.from_bytes(b[pos + 4:pos + 8], "little")
                hlen = 8
                if n < 0xFFFF and MUTANT != "accepts-noncanonical-ext":
                    self._fail("STD-LEN-3", pos)
                if n >= 1 << 31:
                    self._fail("STD-LEN-4", pos)
            if MUTANT == "off-by-one-length":
                n += 1
            if n > self.max and MUTANT != "accepts-oversize":
                self._fail("STD-LIM-1", pos)
            if len(b) - pos < hlen + n:
                break
            if MUTANT == "drops-kind-bits":
                flag &= 0xC0
            out.append((flag, seq, bytes(b[pos + hlen:pos + hlen + n])))
            pos += hlen + n
            self._pos = pos

    def _fail(self, req, pos):
        raise CodecError(req, self.base + pos)

    def finish(self):
        if self.buf and MUTANT != "no-truncation-error":
            raise CodecError("STD-STR-3", self.base, "stream ended inside a frame")


LF_SIZES = (1, 2, 4, -2, -4, 0)


class LengthFieldDecoder(StreamDecoder):
    def __init__(self, offset=0, size=2, max_payload=0):
        if size not in LF_SIZES:
            raise CodecError("LF-FMT-3", 0, f"unsupported size {size}")
        super().__init__()
        self.offset, self.size = offset, size
        cap = {1: 0xFF, 2: 0xFFFF, -2: 0xFFFF}.get(size, 0x7FFFFFFF)
        self.max = min(max_payload or DEFAULT_MAX, cap)

    def _length(self, b, pos):
        """(payload length, bytes of length field) or None if incomplete."""
        p = pos + self.offset
        size = self.size
        if MUTANT == "lf-big-endian-default" and size == 2:
            size = -2
        if size == 0:
            n = 0
            for i in range(5):
                if p + i >= len(b):
                    if MUTANT == "lf-split-length-throws":
                        raise CodecError("LF-STR-1", self.base + pos, "length field split")
                    return None
                byte = b[p + i]
                n |= (byte & 0x7F) << (7 * i)
                if not byte & 0x80:
                    if i == 4 and byte > 7 and MUTANT != "lf-varint-overlong-accepted":
                        raise CodecError("LF-LEN-2", self.base + pos, "varint above 2^31-1")
                    return n, i + 1
            if MUTANT == "lf-varint-overlong-accepted":
                while p + 5 < len(b) and b[p + 5] & 0x80:
                    p += 1
                return n, 6
            raise CodecError("LF-LEN-2", self.base + pos, "varint longer than 5 bytes")
        w = abs(size)
        if len(b) < p + w:
            if MUTANT == "lf-split-length-throws" and len(b) > p:
                raise CodecError("LF-STR-1", self.base + pos, "length field split")
            return None
        n = int.from_bytes(b[p:p + w], "little" if size > 0 else "big")
        if w == 4 and n >= 1 << 31:
            raise CodecError("LF-LEN-3", self.base + pos, "bit 31 set")
        return n, w

    def _scan(self, out):
        pos = 0
        b = self.buf
        while len(b) > pos:
            r = self._length(b, pos)
            if r is None:
                break
            n, w = r
            if n > self.max:
                raise CodecError("LF-LIM-1", self.base + pos, f"payload {n} above {self.max}")
            start = pos + self.offset + w
            if len(b) < start + n:
                break
            out.append((0, 0, bytes(b[start:start + n])))
            pos = start + n
            self._pos = pos

    def finish(self):
        if self.buf:
            raise CodecError("LF-STR-3", self.base, "stream ended inside a frame")


def encode_standard(flag, seq, payload, max_payload=0):
    n = len(payload)
    if n > (max_payload or DEFAULT_MAX) and MUTANT != "accepts-oversize":
        raise CodecError("STD-LIM-2", 0, "payload above maximum")
    if MUTANT == "wrong-byte-order":
        return bytes([flag, seq]) + n.to_bytes(2, "big") + payload
    if n < 0xFFFF:
        return bytes([flag, seq]) + n.to_bytes(2, "little") + payload
    return bytes([flag, seq, 0xFF, 0xFF]) + n.to_bytes(4, "little") + payload


def encode_length_field(payload, offset=0, size=2, max_payload=0):
    if size not in LF_SIZES:
        raise CodecError("LF-FMT-3", 0, f"unsupported size {size}")
    n = len(payload)
    cap = {1: 0xFF, 2: 0xFFFF, -2: 0xFFFF}.get(size, 0x7FFFFFFF)
    if n > cap:
        if MUTANT != "lf-truncates-length":
            raise CodecError("LF-LEN-1", 0, "length does not fit the field")
        n &= cap
    elif n > (max_payload or DEFAULT_MAX):
        raise CodecError("LF-LIM-2", 0, "payload above maximum")
    if MUTANT == "lf-big-endian-default" and size == 2:
        size = -2
    if size == 0:
        field = bytearray()
        v = n
        while True:
            if v >= 0x80:
                field.append((v & 0x7F) | 0x80)
                v >>= 7
            else:
                field.append(v)
                break
        field = bytes(field)
    else:
        field = n.to_bytes(abs(size), "little" if size > 0 else "big")
    return bytes(offset) + field + payload
