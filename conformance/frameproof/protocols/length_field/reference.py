"""The `length-field` Python reference codec (streaming decoder, encoder, FIFO matcher)."""
from __future__ import annotations

from ... import reference as R
from ...oracle import Frame
from ...reference import CodecError, StreamDecoder

SIZES = (1, 2, 4, -2, -4, 0)


def _capacity(size):
    return {1: 0xFF, 2: 0xFFFF, -2: 0xFFFF}.get(size, 0x7FFFFFFF)


class LengthFieldDecoder(StreamDecoder):
    truncation = "LF-STR-3"

    def __init__(self, offset=0, size=2, max_payload=0):
        if size not in SIZES:
            raise CodecError("LF-FMT-3", 0, f"unsupported size {size}")
        super().__init__()
        self.offset, self.size = offset, size
        self.max = min(max_payload or R.DEFAULT_MAX, _capacity(size))

    def _length(self, b, pos):
        """(payload length, bytes of length field) or None if incomplete."""
        p = pos + self.offset
        size = self.size
        mutant = R.MUTANT
        if mutant == "lf-big-endian-default" and size == 2:
            size = -2
        if size == 0:
            n = 0
            for i in range(5):
                if p + i >= len(b):
                    if mutant == "lf-split-length-throws":
                        raise CodecError("LF-STR-1", self.base + pos, "length field split")
                    return None
                byte = b[p + i]
                n |= (byte & 0x7F) << (7 * i)
                if not byte & 0x80:
                    if i == 4 and byte > 7 and mutant != "lf-varint-overlong-accepted":
                        raise CodecError("LF-LEN-2", self.base + pos, "varint above 2^31-1")
                    return n, i + 1
            if mutant == "lf-varint-overlong-accepted":
                while p + 5 < len(b) and b[p + 5] & 0x80:
                    p += 1
                return n, 6
            raise CodecError("LF-LEN-2", self.base + pos, "varint longer than 5 bytes")
        w = abs(size)
        if len(b) < p + w:
            if mutant == "lf-split-length-throws" and len(b) > p:
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
            out.append(Frame(0, 0, bytes(b[start:start + n])))
            pos = start + n
            self._pos = pos


def encode_length_field(payload, offset=0, size=2, max_payload=0):
    if size not in SIZES:
        raise CodecError("LF-FMT-3", 0, f"unsupported size {size}")
    n = len(payload)
    cap = _capacity(size)
    if n > cap:
        if R.MUTANT != "lf-truncates-length":
            raise CodecError("LF-LEN-1", 0, "length does not fit the field")
        n &= cap
    elif n > (max_payload or R.DEFAULT_MAX):
        raise CodecError("LF-LIM-2", 0, "payload above maximum")
    if R.MUTANT == "lf-big-endian-default" and size == 2:
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


# ------------------------------------------------------------ the hooks the generic programs use

def decoder(codec):
    return LengthFieldDecoder(codec.lf_offset, codec.lf_size, codec.max_payload)


def encode(codec, frame, limit=None):
    return encode_length_field(frame.payload, codec.lf_offset, codec.lf_size,
                               codec.max_payload if limit is None else limit)


def echo_reply(frame, fault=""):
    return frame


class ClientMatcher:
    """Client side: FIFO (LF-MATCH-1/2), at most 256 pending (LF-MATCH-4); a timeout fails the
    connection (LF-MATCH-3)."""

    def __init__(self, codec, bound=256):
        self.codec = codec
        self.order = []
        self.bound = bound
        self.fails_on_timeout = R.MUTANT != "lf-no-fail-on-timeout"

    def next_request(self, payload, one_way=False, check_pending=True):
        if check_pending and len(self.order) >= self.bound:
            return None
        return 0, Frame(0, 0, payload)

    def sent(self, key, entry, one_way=False):
        if not one_way:
            self.order.append(entry)

    def take(self, frame):
        if not self.order:
            return None
        return self.order.pop(-1 if R.MUTANT == "lf-lifo" else 0)

    def expire(self, entry):
        self.order.remove(entry)

    def entries(self):
        return list(self.order)

    def reply_ok(self, frame):
        return True
