"""The websocket frame header as the suite carries it (``frameproof.oracle.Frame.header``), the
opcodes, the close codes and the UTF-8 reference check against Python's own decoder
(spec/websocket.md §2, §7, §8, §10). Plain data shared by the oracle, the reference codec and the
strategies: no stream parsing here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...oracle import Frame

CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
OPCODES = (CONT, TEXT, BINARY, CLOSE, PING, PONG)
CONTROL = (CLOSE, PING, PONG)
NAMES = {CONT: "CONT", TEXT: "TEXT", BINARY: "BINARY", CLOSE: "CLOSE", PING: "PING", PONG: "PONG"}
DEFAULT_MAX_FRAME = 10 * 1024 * 1024
DEFAULT_MAX_MESSAGE = 100 * 1024 * 1024
CAPACITY = 2 ** 63 - 1
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
SUBPROTOCOL = "frameproof.echo"

# WS-ERR-1: the close code each error class sends
CLOSE_CODE = {"WS-UTF8-1": 1007, "WS-UTF8-2": 1007, "WS-CLOSE-3": 1007, "WS-LIM-1": 1009, "WS-LIM-2": 1009}
for _r in ("WS-HDR-2", "WS-HDR-3", "WS-LEN-3", "WS-LEN-4", "WS-MASK-1", "WS-MASK-2", "WS-CTL-1", "WS-CTL-2",
           "WS-FRAG-2", "WS-FRAG-3", "WS-CLOSE-1", "WS-CLOSE-2"):
    CLOSE_CODE[_r] = 1002
# permessage-deflate (spec/websocket-deflate.md §7), on a connection that negotiated it
CLOSE_CODE.update({"WSD-FRM-2": 1002, "WSD-CMP-3": 1007, "WSD-CMP-4": 1007, "WSD-LIM-1": 1009})


def close_code_valid(code: int) -> bool:
    """WS-CLOSE-2: the codes a peer may send."""
    return code in (1000, 1001, 1002, 1003) or 1007 <= code <= 1014 or 3000 <= code <= 4999


@dataclass(frozen=True)
class WsHeader:
    fin: bool = True
    rsv: int = 0
    opcode: int = BINARY
    masked: bool = False
    mask_key: bytes = b""

    def __str__(self):
        s = f"{NAMES.get(self.opcode, f'op 0x{self.opcode:X}')}{'' if self.fin else ' FIN=0'}"
        if self.rsv:
            s += f" rsv={self.rsv}"
        if self.masked:
            s += f" key={self.mask_key.hex()}"
        elif self.mask_key:
            s += f" unmasked key={self.mask_key.hex()}"
        return s


def frame(opcode: int, payload: bytes = b"", fin: bool = True, key: Optional[bytes] = None, rsv: int = 0) -> Frame:
    """A frame; ``key`` given = masked with it (a client's frame)."""
    return Frame(0, 0, bytes(payload), WsHeader(fin, rsv, opcode, key is not None, key or b""))


def key_for(i: int) -> bytes:
    """A deterministic masking key for test frames (encode takes the key from the frame)."""
    return bytes(((i * 97 + k * 61 + 13) & 0xFF) for k in range(4))


def xor(data: bytes, key: bytes, phase: int = 0) -> bytes:
    if not key or not data:
        return bytes(data)
    k = (key * (len(data) // 4 + 2))[phase % 4:phase % 4 + len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(len(data), "big")


def python_fail_fast(b: bytes) -> Optional[int]:
    """The index of the first byte after which ``b[:i+1]`` can no longer be completed to valid
    UTF-8, decided by Python's strict decoder (None: ``b`` is a valid prefix). Every validity
    constraint on a continuation byte is a range with bounds among PROBES, so trying those
    suffices."""
    def completable(t: bytes) -> bool:
        # t is a valid prefix iff t, or t plus 1..3 continuation bytes, decodes
        try:
            t.decode("utf-8")
            return True
        except UnicodeDecodeError as e:
            if e.end < len(t) and e.reason != "unexpected end of data":
                return False
            start = e.start
        tail = t[start:]
        if len(tail) >= 4:
            return False
        from itertools import product
        for k in range(1, 4 - len(tail) + 1):
            for c in product(PROBES, repeat=k):
                try:
                    (tail + bytes(c)).decode("utf-8")
                    return True
                except UnicodeDecodeError:
                    pass
        return False
    if completable(b):
        return None
    lo, hi = 0, len(b) - 1  # the smallest i with b[:i+1] not completable (monotone)
    while lo < hi:
        mid = (lo + hi) // 2
        if completable(b[:mid + 1]):
            lo = mid + 1
        else:
            hi = mid
    return lo


PROBES = (0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF)
