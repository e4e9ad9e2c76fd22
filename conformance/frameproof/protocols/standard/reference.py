"""The `standard` Python reference codec (streaming decoder, encoder)."""
from __future__ import annotations

from ... import reference as R
from ...oracle import Frame
from ...reference import CodecError, StreamDecoder


class StandardDecoder(StreamDecoder):
    truncation = "STD-STR-3"

    def __init__(self, max_payload: int = 0):
        super().__init__()
        self.max = max_payload or R.DEFAULT_MAX

    def _scan(self, out):
        pos = 0
        b = self.buf
        mutant = R.MUTANT
        while True:
            if len(b) - pos < 4:
                break
            flag, seq = b[pos], b[pos + 1]
            if mutant == "wrong-byte-order":
                n = (b[pos + 2] << 8) | b[pos + 3]
            else:
                n = b[pos + 2] | (b[pos + 3] << 8)
            hlen = 4
            if n == 0xFFFF:
                if len(b) - pos < 8:
                    break
                n = int.from_bytes(b[pos + 4:pos + 8], "little")
                hlen = 8
                if n < 0xFFFF and mutant != "accepts-noncanonical-ext":
                    raise CodecError("STD-LEN-3", self.base + pos)
                if n >= 1 << 31:
                    raise CodecError("STD-LEN-4", self.base + pos)
            if mutant == "off-by-one-length":
                n += 1
            if n > self.max and mutant != "accepts-oversize":
                raise CodecError("STD-LIM-1", self.base + pos)
            if len(b) - pos < hlen + n:
                break
            if mutant == "drops-kind-bits":
                flag &= 0xC0
            out.append(Frame(flag, seq, bytes(b[pos + hlen:pos + hlen + n])))
            pos += hlen + n
            self._pos = pos

    def finish(self):
        if R.MUTANT != "no-truncation-error":
            super().finish()


def encode_standard(flag, seq, payload, max_payload=0):
    n = len(payload)
    if n > (max_payload or R.DEFAULT_MAX) and R.MUTANT != "accepts-oversize":
        raise CodecError("STD-LIM-2", 0, "payload above maximum")
    if R.MUTANT == "wrong-byte-order":
        return bytes([flag, seq]) + n.to_bytes(2, "big") + payload
    if n < 0xFFFF:
        return bytes([flag, seq]) + n.to_bytes(2, "little") + payload
    return bytes([flag, seq, 0xFF, 0xFF]) + n.to_bytes(4, "little") + payload


# ------------------------------------------------------------ the hooks the generic programs use

def decoder(codec):
    return StandardDecoder(codec.max_payload)


def encode(codec, frame, limit=None):
    """Bytes of ``frame``; ``limit`` overrides the codec's (servers echo whatever they accepted)."""
    return encode_standard(frame.flag, frame.sequence, frame.payload,
                           codec.max_payload if limit is None else limit)


def echo_reply(frame, fault=""):
    """STD-ECHO-1/2 (``fault`` "reply-to-one-way": the deliberately broken server answers all)."""
    if frame.flag & 0xC0 and fault != "reply-to-one-way":
        return None
    return Frame(0x80 | (frame.flag & 0x3F), frame.sequence, frame.payload)


class ClientMatcher(R.KeyedMatcher):
    """Client side: allocates sequence numbers (STD-SEQ-1/3) and matches replies by sequence
    (STD-MATCH-*), as the Python testee's ``match`` and the Python load client need it."""

    def __init__(self, codec, bound=255):
        super().__init__(codec, bound)
        self.counter = -1 if R.MUTANT == "seq-starts-at-zero" else 0

    def next_request(self, payload, one_way=False, check_pending=True):
        """(key, frame) for a new request, or None if its sequence number is still pending."""
        seq = (self.counter + 1) & 0xFF
        if not one_way and check_pending and R.MUTANT != "reuses-pending-sequence" and seq in self.pending:
            return None
        return seq, Frame(0x41 if one_way else 0x01, seq, payload)

    def sent(self, key, entry, one_way=False):
        self.counter = key
        self._pend(key, entry, one_way)

    def take(self, frame):
        """The pending entry a received frame completes; None if unmatched; False: not a reply."""
        if not frame.flag & 0x80:
            return False
        return self._take(frame.sequence, oldest_instead=R.MUTANT == "mismatched-sequence")

    def reply_ok(self, frame):
        return frame.flag == 0x81


def allocate_declared(data: bytes):
    """The "allocate-declared" server fault (STD-LIM-3 broken): allocates and touches what an
    extended header in ``data`` declares (capped at 512 MiB)."""
    at = data.find(b"\xff\xff", 2)
    if not 0 < at <= len(data) - 6:
        return None
    declared = int.from_bytes(data[at + 2:at + 6], "little") & 0x7FFFFFFF
    hog = bytearray(min(declared, 512 * 1024 * 1024))
    for i in range(0, len(hog), 4096):
        hog[i] = 1
    return hog
