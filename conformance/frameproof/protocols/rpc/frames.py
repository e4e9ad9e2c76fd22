"""The rpc frame's header as the suite carries it (``frameproof.oracle.Frame.header``), the type
codes and the conformance echo service's names (spec/rpc.md §2, §3, §9). Plain data shared by the
oracle and the reference codec: no parsing here."""
from __future__ import annotations

from dataclasses import dataclass

from ...oracle import Frame

MAGIC = b"GRPC"
VERSION = 1
HEADER_LEN = 16
REQUEST, RESPONSE, HEARTBEAT, ERROR = 0x01, 0x02, 0x03, 0x04
# Ids at the edges of the u32 range a server copies (RPC-HDR-7): 0, 1, the sign bit of a 32-bit int
# and its neighbours, the largest
ID_EDGES = (0, 1, 0x7FFFFFFE, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF)
INIT, INIT_ACK, DATA, END, CANCEL = 0x10, 0x11, 0x12, 0x13, 0x14
TYPE_NAMES = {REQUEST: "REQUEST", RESPONSE: "RESPONSE", HEARTBEAT: "HEARTBEAT", ERROR: "ERROR",
              INIT: "STREAM_INIT", INIT_ACK: "STREAM_INIT_ACK", DATA: "STREAM_DATA", END: "STREAM_END",
              CANCEL: "STREAM_CANCEL"}
STREAM_TYPES = (INIT, INIT_ACK, DATA, END, CANCEL)
CONTROL_TYPES = (INIT_ACK, END, CANCEL)  # empty body (RPC-BODY-5)
NAMED_TYPES = (REQUEST, INIT)  # service and method in the body
END_STREAM = 0x04
DEFAULT_MAX_BODY = 16 * 1024 * 1024
# the conformance echo service (spec/rpc.md §9)
ECHO_SERVICE = b"frameproof.Echo"
ECHO_METHOD = b"echo"
# the method the echo service registers for the UNARY call mode only (RPC-ECHO-8)
UNARY_ONLY_METHOD = b"unary_only"
CODE_OK, CODE_SERVICE_NOT_FOUND, CODE_METHOD_NOT_FOUND = 0, 2, 3


@dataclass(frozen=True)
class RpcHeader:
    """The 16-byte header and the typed body fields before the payload."""
    type: int = REQUEST
    flags: int = 0
    id: int = 0
    service: bytes = b""  # REQUEST, STREAM_INIT
    method: bytes = b""  # REQUEST, STREAM_INIT
    error_code: int = 0  # RESPONSE
    version: int = VERSION
    reserved: int = 0

    def __str__(self):
        s = f"{TYPE_NAMES.get(self.type, f'type 0x{self.type:02X}')} id={self.id} flags=0x{self.flags:02X}"
        if self.type in NAMED_TYPES or self.service or self.method:
            s += f" {_name(self.service)}/{_name(self.method)}"
        if self.type == RESPONSE or self.error_code:
            s += f" code={self.error_code}"
        if self.version != VERSION:
            s += f" version={self.version}"
        if self.reserved:
            s += f" reserved=0x{self.reserved:02X}"
        return s


def frame(h: RpcHeader, payload: bytes = b"") -> Frame:
    return Frame(0, 0, payload, h)


def request(rid: int, payload: bytes = b"", service: bytes = ECHO_SERVICE, method: bytes = ECHO_METHOD,
            flags: int = END_STREAM) -> Frame:
    return frame(RpcHeader(REQUEST, flags, rid, service, method), payload)


def response(rid: int, payload: bytes = b"", code: int = 0, flags: int = END_STREAM) -> Frame:
    return frame(RpcHeader(RESPONSE, flags, rid, error_code=code), payload)


def stream(kind: int, sid: int, payload: bytes = b"", service: bytes = b"", method: bytes = b"", flags: int = 0) -> Frame:
    return frame(RpcHeader(kind, flags, sid, service, method), payload)


def init(sid: int, service: bytes = ECHO_SERVICE, method: bytes = ECHO_METHOD) -> Frame:
    return stream(INIT, sid, b"", service, method)


def _name(b: bytes) -> str:
    """A name as shown in messages: whole up to 40 bytes, else its start and its length."""
    return repr(b) if len(b) <= 40 else f"{b[:16]!r}…[{len(b)} bytes]"
