"""`frameproof net` under a codec with ``websocket.permessage_deflate`` true: the cases of
spec/websocket-deflate.md (WSD-*) against a server that accepts the extension. The Python reference
(deflate.py, on zlib) is the oracle: the answer to an offer (WSD-NEG-*), the compressor a client
uses and the inflater that reads the server's messages. Every case here runs only when the codec
switches the extension on (NetCase.when); with it off, websocket.md's WS-HS-5 (every offer declined)
is checked instead, by the same helpers (``check_answer``)."""
from __future__ import annotations

import os
import random
import time
import zlib
from functools import lru_cache
from typing import List, Optional, Tuple

from ... import netsuite as N
from ...checks import CheckFailure
from ...coverage import CASE_CLASSES, OWS_CLASSES, case_class, declare, note, ows_class
from ...netsuite import Conn
from . import deflate as D
from .frames import BINARY, CLOSE, CONT, PING, TEXT, key_for, xor

HEADER = "Sec-WebSocket-Extensions"


def deflate_on(codec) -> bool:
    return bool(getattr(codec, "permessage_deflate", False))


def extension_values(head: str) -> List[str]:
    """The values of every Sec-WebSocket-Extensions header of a request head, in order."""
    out = []
    for ln in head.split("\r\n")[1:]:
        k, _, v = ln.partition(":")
        if k.strip().lower() == "sec-websocket-extensions":
            out.append(v.strip())
    return out


def chosen_offer(values: List[str]) -> Tuple[Optional[D.Params], int]:
    """The offer a zlib server accepts (the first it supports, WSD-NEG-2/4) and its index among the
    permessage-deflate offers, or (None, -1)."""
    try:
        offers = D.parse_extensions(values)
    except D.NegotiationError:
        return None, -1
    i = -1
    for name, params in offers:
        if name.lower() != D.NAME:
            continue
        i += 1
        p = D.offer_params(params)
        if p is None or (p.server_max_window_bits or 15) < 9:
            continue
        return p, i
    return None, -1


def _has_8_bit_offer(values: List[str]) -> bool:
    try:
        offers = D.parse_extensions(values)
    except D.NegotiationError:
        return False
    return any(n.lower() == D.NAME and (D.offer_params(p) or D.Params()).server_max_window_bits == 8 for n, p in offers)


def check_answer(codec, hdrs: dict, values: List[str], ctx: str) -> Optional[D.Params]:
    """The server's answer to the extension offers ``values`` (every Sec-WebSocket-Extensions value of
    the request, in order): with the extension off, none (WS-HS-5); with it on, what WSD-NEG-1..4 and
    the oracle (deflate.accept) say. Returns the agreed parameters as the response states them, or None."""
    got = hdrs.get("sec-websocket-extensions")
    offers = "; ".join(repr(v) for v in values) or "none"
    if not deflate_on(codec):
        if got is not None:
            raise CheckFailure(f"{ctx}:\n  expected no Sec-WebSocket-Extensions (the extension is off)\n  actual   "
                               f"{got!r}\n  offers   {offers}", ["WS-HS-5"])
        return None
    want = D.accept(values)
    offer, index = chosen_offer(values)
    if want is None:
        if got is not None:
            try:
                D.parse_extensions(values)
            except D.NegotiationError as e:  # the list does not parse: every offer declined (WSD-NEG-6)
                raise CheckFailure(f"{ctx}:\n  expected no Sec-WebSocket-Extensions (the list does not parse: {e}; "
                                   f"every offer in it declined)\n  actual   {got!r}\n  offers   {offers}",
                                   ["WSD-NEG-6"]) from None
            req = "WSD-NEG-4" if _has_8_bit_offer(values) else "WSD-NEG-2"
            raise CheckFailure(f"{ctx}:\n  expected no Sec-WebSocket-Extensions (every offer declined: an invalid, "
                               f"unknown or repeated parameter, or server_max_window_bits=8)\n  actual   {got!r}\n"
                               f"  offers   {offers}", [req])
        return None
    if got is None:
        raise CheckFailure(f"{ctx}:\n  expected the offer accepted, e.g. {want[1]!r}\n  actual   no "
                           f"Sec-WebSocket-Extensions\n  offers   {offers}", ["WSD-NEG-2" if index > 0 else "WSD-NEG-1"])
    try:
        agreed = D.check_response(offer, [got])
    except D.NegotiationError as e:
        raise CheckFailure(f"{ctx}:\n  expected a response to the offer {offer.header()!r} (e.g. {want[1]!r})\n"
                           f"  actual   {got!r}: {e}\n  offers   {offers}", ["WSD-NEG-3"]) from None
    if agreed is None:
        raise CheckFailure(f"{ctx}: the response {got!r} names no permessage-deflate element", ["WSD-NEG-3"])
    if offer.server_no_context_takeover and not agreed.server_no_context_takeover:
        raise CheckFailure(f"{ctx}:\n  expected server_no_context_takeover in the response (the offer asks for it)\n"
                           f"  actual   {got!r}\n  offers   {offers}", ["WSD-NEG-3"])
    if agreed.server_max_window_bits == 8:
        raise CheckFailure(f"{ctx}:\n  expected server_max_window_bits 9..15 or a declined offer (zlib cannot "
                           f"compress with 8 bits)\n  actual   {got!r}\n  offers   {offers}", ["WSD-NEG-4"])
    return agreed


# ------------------------------------------------------------------ one connection with the extension

def raw_frame(b0: int, payload: bytes, key: bytes) -> bytes:
    """A masked client frame with first octet ``b0`` (FIN, RSV, opcode as given: no check)."""
    n = len(payload)
    if n < 126:
        head = bytes([b0, 0x80 | n])
    elif n < 65536:
        head = bytes([b0, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([b0, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + key + xor(payload, key)


def data_frames(opcode: int, payload: bytes, cuts=(), rsv1=True, seq=0) -> bytes:
    """One message's frames: ``payload`` split at ``cuts``, RSV1 on the first frame when ``rsv1``."""
    cuts = sorted(set(c for c in cuts if 0 < c < len(payload)))
    parts = [payload[a:b] for a, b in zip([0] + cuts, cuts + [len(payload)])] or [b""]
    out = []
    for i, p in enumerate(parts):
        b0 = (0x80 if i == len(parts) - 1 else 0) | (0x40 if rsv1 and i == 0 else 0) | (opcode if i == 0 else CONT)
        out.append(raw_frame(b0, p, key_for(seq * 31 + i)))
    return b"".join(out)


class Link:
    """A client connection that offered permessage-deflate and had it accepted: compresses what it
    sends as agreed, reads the server's frames (RSV1 allowed on a message's first frame) and inflates
    its compressed messages with the agreed context mode."""

    def __init__(self, t, offer="permessage-deflate; client_max_window_bits", ctx="", conn=None, agreed=None):
        self.t, self.ctx = t, ctx
        if conn is None:
            from .net import client_handshake
            conn = Conn(t, handshake=False)
            try:
                hdrs = client_handshake(conn, extra=f"{HEADER}: {offer}\r\n")
                agreed = check_answer(t.codec, hdrs, [offer], f"{ctx}the offer {offer!r}")
            except BaseException:
                conn.close()
                raise
            if agreed is None:
                conn.close()
                raise CheckFailure(f"{ctx}the offer {offer!r}: expected accepted, actual declined", ["WSD-NEG-1"])
        self.c, self.agreed = conn, agreed
        cbits = agreed.client_max_window_bits if isinstance(agreed.client_max_window_bits, int) \
            and agreed.client_max_window_bits is not True else 15
        self.deflater = D.Deflater(max(9, cbits), agreed.client_no_context_takeover)
        big = 1 << 62
        self.inflater = D.Inflater(15, agreed.server_no_context_takeover, big)
        self.kept = D.Inflater(15, False, big)  # beside it: tells a server that kept its context (WSD-CTX-1)
        self.seq = 0

    def close(self):
        self.c.close()

    def send(self, data: bytes):
        try:
            self.c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send_message(self, message: bytes, opcode=BINARY, cuts=(), compressed=True):
        self.seq += 1
        payload = self.deflater.compress(message) if compressed else message
        self.send(data_frames(opcode, payload, cuts, compressed, self.seq))
        return payload

    def read_frame(self, timeout=None):
        """(fin, rsv, opcode, payload) of the server's next frame."""
        c = self.c
        deadline = time.monotonic() + (timeout or N.READ_TIMEOUT)
        while True:
            b = c.buf
            if len(b) >= 2:
                n7 = b[1] & 0x7F
                hl = 2 + (2 if n7 == 126 else 8 if n7 == 127 else 0)
                if b[1] & 0x80:
                    raise CheckFailure(f"{self.ctx}the server sent a masked frame: {b[:16].hex(' ')}", ["WS-MASK-4"])
                if len(b) >= hl:
                    n = n7 if hl == 2 else int.from_bytes(b[2:hl], "big")
                    if len(b) >= hl + n:
                        c.buf = b[hl + n:]
                        return bool(b[0] & 0x80), (b[0] >> 4) & 7, b[0] & 0x0F, bytes(b[hl:hl + n])
            if c.eof:
                raise CheckFailure(f"{self.ctx}the server closed the connection (expected a frame)")
            try:
                c._fill(deadline)
            except (ConnectionResetError, BrokenPipeError):
                raise CheckFailure(f"{self.ctx}the connection was reset (expected a frame)")
            except OSError:
                raise CheckFailure(f"{self.ctx}no frame within {timeout or N.READ_TIMEOUT:g} s")

    def read_message(self, what="the echo") -> Tuple[int, bytes, bool]:
        """(opcode, message, compressed) of the server's next data message; a close frame instead
        fails with its code. Checks WSD-FRM-1 and inflates (WSD-CMP-1, WSD-CTX-1)."""
        fin, rsv, op, payload = self.read_frame()
        if op == CLOSE:
            code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
            raise CheckFailure(f"{self.ctx}{what}:\n  expected a data message\n  actual   a close frame with code {code} "
                               f"{payload[2:]!r}")
        if op not in (TEXT, BINARY):
            raise CheckFailure(f"{self.ctx}{what}: expected a data frame, actual opcode {op}")
        if rsv & 3:
            raise CheckFailure(f"{self.ctx}{what}: RSV2/RSV3 set (rsv={rsv})", ["WSD-FRM-1"])
        compressed, parts = bool(rsv & 4), [payload]
        while not fin:
            fin, rsv, cop, payload = self.read_frame()
            if cop != CONT:
                raise CheckFailure(f"{self.ctx}{what}: expected a continuation frame, actual opcode {cop}")
            if rsv:
                raise CheckFailure(f"{self.ctx}{what}:\n  expected RSV clear on a continuation frame\n  actual   "
                                   f"rsv={rsv}", ["WSD-FRM-1"])
            parts.append(payload)
        data = b"".join(parts)
        if not compressed:
            return op, data, False
        try:
            message = self.inflater.inflate(data)
        except D.InflateError as e:
            try:
                self.kept.inflate(data)
                kept = True
            except D.InflateError:
                kept = False
            if kept and self.agreed.server_no_context_takeover:
                raise CheckFailure(f"{self.ctx}{what}: the server agreed to server_no_context_takeover and its message "
                                   f"refers back to an earlier one ({e.reason}); payload {data[:32].hex(' ')}",
                                   ["WSD-CTX-1"]) from None
            raise CheckFailure(f"{self.ctx}{what}: the server's compressed message does not inflate ({e.reason}); "
                               f"payload {data[:32].hex(' ')}", ["WSD-CMP-1"]) from None
        else:
            try:
                self.kept.inflate(data)
            except D.InflateError:
                self.kept = D.Inflater(15, False, 1 << 62)
        return op, message, True

    def echo(self, message: bytes, opcode=BINARY, cuts=(), compressed=True, what=None, reqs=None):
        """Sends ``message`` and checks its echo (WS-ECHO-1 after inflating)."""
        what = what or f"a {len(message)}-byte {'compressed' if compressed else 'uncompressed'} message in " \
                       f"{len(set(c for c in cuts if 0 < c < len(message))) + 1} frame(s)"
        sent = self.send_message(message, opcode, cuts, compressed)
        try:
            op, got, _ = self.read_message(f"the echo of {what}")
        except CheckFailure as e:
            if compressed and not e.requirements and not reqs and not standalone(sent, message):
                # the message refers back into earlier ones (context takeover) and the server could not
                # take it: its inflater lost the client's context
                reqs = ["WSD-CTX-1"]
                what += " that refers back into the earlier messages (context takeover)"
            if reqs and not e.requirements:
                e.requirements = list(reqs)
            if reqs or e.requirements:
                raise CheckFailure(f"{e}\n  minimal input: {what}, payload sent {sent[:48].hex(' ')}",
                                   e.requirements or reqs) from None
            raise
        if op != opcode or got != message:
            raise CheckFailure(f"{self.ctx}the echo of {what}:\n  expected opcode {opcode}, {len(message)} bytes "
                               f"{message[:32]!r}\n  actual   opcode {op}, {len(got)} bytes {got[:32]!r}\n"
                               f"  payload sent {sent[:48].hex(' ')}", reqs or ["WSD-CMP-2"])


def standalone(payload: bytes, message: bytes) -> bool:
    """Whether a compressed message's payload inflates to ``message`` with an empty window (it does
    not refer back into earlier messages)."""
    try:
        return zlib.decompressobj(-15).decompress(payload + D.TAIL) == message
    except zlib.error:
        return False


def expect_close(link: Link, code: int, ctx: str, reqs):
    """The next frame is a close frame with ``code``, then the server closes."""
    seen = []
    try:
        fin, rsv, op, payload = link.read_frame()
        while op in (TEXT, BINARY, CONT):  # the echo of what came before (if any) may come first
            seen.append(f"opcode {op} rsv={rsv} ({len(payload)} bytes)")
            fin, rsv, op, payload = link.read_frame()
    except CheckFailure as e:
        msg = str(e).replace(link.ctx, "", 1)
        raise CheckFailure(f"{ctx}:\n  expected a close frame with code {code}\n  actual   "
                           f"{'frames ' + ', '.join(seen) + ', then ' if seen else ''}{msg}", reqs) from None
    got = int.from_bytes(payload[:2], "big") if op == CLOSE and len(payload) >= 2 else None
    if op != CLOSE or got != code:
        raise CheckFailure(f"{ctx}:\n  expected a close frame with code {code}\n  actual   opcode {op} code {got}", reqs)
    link.c.expect_closed(what=f" after {ctx}")


def closes(t, offer, build, code, ctx, reqs):
    """A Link with ``offer``; ``build(link)`` returns the bytes that must fail it with ``code``; a
    healthy connection alongside and RSS watched (N.watched)."""
    def body():
        link = Link(t, offer, f"{ctx}: ")
        try:
            link.send(build(link))
            expect_close(link, code, ctx, reqs)
        finally:
            link.close()
    N.watched(t, body, ctx)


# ------------------------------------------------------------------ negotiation (WSD-NEG-1..4)

NEG_EXAMPLES = int(os.environ.get("FRAMEPROOF_WSD_NEG_EXAMPLES", "120"))

# offers whose answer is fixed by the spec, before the drawn ones
NEG_FIXED = [
    ["permessage-deflate"],
    ["permessage-deflate; server_max_window_bits=8"],  # declined (WSD-NEG-4)
    ["permessage-deflate; server_max_window_bits=8, permessage-deflate; client_max_window_bits"],
    ["permessage-deflate; client_max_window_bits=8"],  # accepted: inflating needs no care
    ["permessage-deflate; foo=1, permessage-deflate; server_no_context_takeover"],
    ["permessage-deflate; server_no_context_takeover; server_no_context_takeover"],  # repeated: declined
    ["permessage-deflate; server_max_window_bits=010"],  # leading zero: declined
    ["PerMessage-Deflate ; Server_Max_Window_Bits = \"10\" ; CLIENT_MAX_WINDOW_BITS"],
    ["x-webkit-deflate-frame", "permessage-deflate; client_no_context_takeover"],
    ["permessage-deflate; server_max_window_bits"],  # requires a value: declined
    # quoted-pair (RFC 7230 §3.2.6): a backslash escapes one octet; "1\\0" is the token 10, accepted
    ['permessage-deflate; server_max_window_bits="1\\0"; client_max_window_bits="\\9"'],
    ['permessage-deflate; client_max_window_bits="1\\"'],  # escapes its closing quote: unterminated, declined
    ['permessage-deflate; client_max_window_bits="10'],  # unterminated at the header's end: declined
    ['permessage-deflate; client_max_window_bits="1\\'],  # a backslash as the header's last octet: declined
    ["permessage-deflate; client_max_window_bits=08"],  # a leading zero on a window in range: declined
    ["permessage-deflate; client_max_window_bits=+9"],  # a sign (a token, not a window value): declined
    [", permessage-deflate", "foo,, permessage-deflate"],  # empty list elements (RFC 7230 §7): read past
    ["permessage-deflate; client_max_window_bits="],  # '=' and no value, the header's last octet: declined
    # a list that does not parse declines every offer in it (WSD-NEG-6), a valid one after the fault too
    ['permessage-deflate; client_max_window_bits="1 0", permessage-deflate'],
    ['permessage-deflate; server_no_context_takeover="", permessage-deflate'],
    ["permessage-deflate server_no_context_takeover"],  # a parameter without its ';': a token where ',' belongs
]


# the classes of WSD-NEG-1..4's input space the drawn offers cover (frameproof.coverage; the ci
# profile must draw every one: conformance/tests/test_class_coverage.py)
_NEG = ["WSD-NEG-1", "WSD-NEG-2", "WSD-NEG-3", "WSD-NEG-4"]
NEG_CASE = declare("wsd.neg.name_case", CASE_CLASSES, _NEG)  # of the extension token and each parameter name
NEG_OWS = declare("wsd.neg.ows", OWS_CLASSES, _NEG)  # around ";", "=" and ","
NEG_VALUE = declare("wsd.neg.value_form", ("none", "token", "quoted", "quoted with escapes"), _NEG)
NEG_BITS = declare("wsd.neg.window_bits", ("absent", "8", "9..15", "out of range", "malformed"), _NEG)
NEG_PARAMS = declare("wsd.neg.params", ("known", "unknown", "repeated", "value where none is allowed"), _NEG)
NEG_OFFERS = declare("wsd.neg.offers", ("1", "several", "other extension first"), _NEG)
NEG_HEADERS = declare("wsd.neg.headers", ("1", "several"), _NEG)
NEG_VERDICT = declare("wsd.neg.verdict", ("accepted", "declined"), _NEG)


_KNOWN = ("server_no_context_takeover", "client_no_context_takeover", "server_max_window_bits",
          "client_max_window_bits")


def _bits_class(v: Optional[str]) -> str:
    if v is None:
        return "absent"
    if not v.isdigit() or (len(v) > 1 and v[0] == "0"):
        return "malformed"
    n = int(v)
    return "8" if n == 8 else "9..15" if 9 <= n <= 15 else "out of range"


def offer_values():
    """Hypothesis: the Sec-WebSocket-Extensions values of a request, drawn over WSD-NEG-1's grammar
    (case, OWS, quoted values, several offers, several headers) and WSD-NEG-2's invalid forms; each
    draw notes its classes (NEG_* above)."""
    from hypothesis import strategies as st

    def spell(s, mode):
        return [s.lower(), s.upper(), s.title(), "".join(ch.upper() if i % 2 else ch for i, ch in enumerate(s))][mode]

    value = st.one_of(st.integers(8, 15).map(str), st.sampled_from(["0", "7", "16", "08", "010", "abc", "1a", "99", "+9"]))
    param = st.one_of(
        st.tuples(st.sampled_from(["server_no_context_takeover", "client_no_context_takeover"]),
                  st.one_of(st.none(), st.none(), st.sampled_from(["1", "true"]))),
        st.tuples(st.just("server_max_window_bits"), st.one_of(value, value, st.none())),
        st.tuples(st.just("client_max_window_bits"), st.one_of(st.none(), value)),
        st.tuples(st.sampled_from(["foo", "x_max_window_bits", "mux"]), st.one_of(st.none(), st.just("1"))))
    ows_st = st.sampled_from(["", "", " ", "  ", "\t", " \t"])

    def ows(draw):
        w = draw(ows_st)
        note(NEG_OWS, ows_class(w))
        return w

    def spelled(draw, text):
        out = spell(text, draw(st.integers(0, 3)))
        note(NEG_CASE, case_class(out))
        return out

    @st.composite
    def offer(draw):
        name = draw(st.sampled_from(["permessage-deflate"] * 5 + ["x-webkit-deflate-frame", "foo"]))
        s = spelled(draw, name)
        params = draw(st.lists(param, max_size=4))
        seen = set()
        for pname, v in params:
            s += ows(draw) + ";" + ows(draw) + spelled(draw, pname)
            note(NEG_PARAMS, "repeated" if pname in seen else "known" if pname in _KNOWN else "unknown")
            seen.add(pname)
            if pname.endswith("_max_window_bits"):
                note(NEG_BITS, _bits_class(v))
            elif v is not None and pname in _KNOWN:
                note(NEG_PARAMS, "value where none is allowed")
            if v is not None:
                q = draw(st.sampled_from(["token", "quoted", "quoted with escapes"]))
                note(NEG_VALUE, q)
                if q == "quoted with escapes":  # a quoted-pair for some octets (RFC 7230 §3.2.6), at least one
                    esc = draw(st.lists(st.booleans(), min_size=len(v), max_size=len(v)).filter(any))
                    v = "".join("\\" + ch if e else ch for ch, e in zip(v, esc))
                s += ows(draw) + "=" + ows(draw) + (v if q == "token" else f'"{v}"')
            else:
                note(NEG_VALUE, "none")
        return name, s

    @st.composite
    def values(draw):
        drawn = draw(st.lists(offer(), min_size=1, max_size=4))
        offers = [s for _, s in drawn]
        note(NEG_OFFERS, "1" if len(offers) == 1 else "several")
        if drawn[0][0] != "permessage-deflate" and any(n == "permessage-deflate" for n, _ in drawn):
            note(NEG_OFFERS, "other extension first")
        cuts = sorted(set(draw(st.lists(st.integers(1, len(offers) - 1), max_size=2)))) if len(offers) > 1 else []
        groups = [offers[a:b] for a, b in zip([0] + cuts, cuts + [len(offers)])]
        note(NEG_HEADERS, "1" if len(groups) == 1 else "several")
        return [(ows(draw) + "," + ows(draw)).join(g) for g in groups]
    return values()


def negotiate_once(t, values: List[str], ctx: str):
    """One connection offering ``values`` (one header each, in drawn letter case): the answer per
    WSD-NEG-1..4; when accepted, a compressed message echoed with the agreed parameters."""
    from .net import client_handshake
    names = ["Sec-WebSocket-Extensions", "sec-websocket-extensions", "SEC-WEBSOCKET-EXTENSIONS"]
    extra = "".join(f"{names[i % 3]}: {v}\r\n" for i, v in enumerate(values))
    c = Conn(t, handshake=False)
    try:
        hdrs = client_handshake(c, extra=extra)
        agreed = check_answer(t.codec, hdrs, values, ctx)
        note(NEG_VERDICT, "declined" if agreed is None else "accepted")
        if agreed is not None:
            link = Link(t, ctx=f"{ctx} (accepted as {hdrs['sec-websocket-extensions']!r}): ", conn=c, agreed=agreed)
            link.echo(b"negotiated " * 8, TEXT, what="a text message with the agreed parameters")
    finally:
        c.close()


def c_negotiation(t):
    from hypothesis import HealthCheck, given, settings
    for values in NEG_FIXED:
        negotiate_once(t, values, f"the offers {values!r}")

    @settings(max_examples=NEG_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(offer_values())
    def prop(values):
        negotiate_once(t, values, f"the offers {values!r}")
    prop()


# ------------------------------------------------------------------ framing (WSD-FRM-*)

def c_rsv1_continuation(t):
    msg = D.Deflater().compress(b"fragmented " * 20)

    def build(link):
        return raw_frame(0x40 | BINARY, msg[:5], key_for(1)) + raw_frame(0x80 | 0x40 | CONT, msg[5:], key_for(2))
    closes(t, "permessage-deflate", build, 1002, "RSV1 on a continuation frame", ["WSD-FRM-2"])


def c_rsv1_control(t):
    closes(t, "permessage-deflate", lambda link: raw_frame(0x80 | 0x40 | PING, b"ping", key_for(3)), 1002,
           "RSV1 on a ping frame", ["WSD-FRM-2"])


def c_rsv23(t):
    """RSV2 or RSV3 on a data frame of a connection that agreed on permessage-deflate (which defines RSV1 only):
    close 1002, as without the extension (WS-HDR-2); also with RSV1 beside them on a compressed message."""
    msg = D.Deflater().compress(b"rsv bits " * 8)
    for bits, payload, name in ((0x20, b"plain", "RSV2"), (0x10, b"plain", "RSV3"), (0x60, msg, "RSV1 and RSV2")):
        closes(t, "permessage-deflate", lambda link, b=bits, p=payload: raw_frame(0x80 | b | BINARY, p, key_for(5)),
               1002, f"{name} on a binary frame of a permessage-deflate connection", ["WS-HDR-2"])


def c_rsv1_not_negotiated(t):
    """With the extension on, a connection that offered nothing: RSV1 fails it (WSD-FRM-2)."""
    def body():
        from .net import client_handshake
        c = Conn(t, handshake=False)
        try:
            client_handshake(c)
            link = Link(t, conn=c, agreed=D.Params(), ctx="RSV1 where nothing was negotiated: ")
            link.send(raw_frame(0x80 | 0x40 | BINARY, D.Deflater().compress(b"hello"), key_for(4)))
            expect_close(link, 1002, "RSV1 on a connection without the extension", ["WSD-FRM-2"])
        finally:
            c.close()
    N.watched(t, body, "RSV1 without the extension")


# ------------------------------------------------------------------ messages (WSD-CMP-*, CTX-*)

MODES = [
    ("permessage-deflate; client_max_window_bits", "context takeover both ways"),
    ("permessage-deflate; server_no_context_takeover; client_no_context_takeover", "no context takeover"),
    ("permessage-deflate; server_no_context_takeover", "server_no_context_takeover"),
    ("permessage-deflate; client_max_window_bits=9; server_max_window_bits=9", "9-bit windows"),
    ("permessage-deflate; server_max_window_bits=12; client_no_context_takeover", "12-bit server window"),
]


def _messages(seed: int) -> List[bytes]:
    import random
    r = random.Random(seed)
    words = [b"frame", b"proof", b"deflate", b"context", b"window", b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"]
    text = b" ".join(r.choice(words) for _ in range(300))
    # the last: 300,000 bytes that inflate in several of a receiver's steps (64 KiB at a time in the references),
    # long back-references crossing each step's end while compressed input is left
    return [text, b"", bytes(r.getrandbits(8) for _ in range(700)), text[:1000].decode("utf-8", "ignore").encode(),
            b"x" * 5000, b" ".join(r.choice(words) for _ in range(40_000))[:300_000]]


def c_roundtrips(t):
    """Each context mode: text, empty, incompressible, repeated and long messages, whole and
    fragmented (at every byte for a short one), with an uncompressed message between them."""
    for offer, mode in MODES:
        link = Link(t, offer, f"{mode}: ")
        try:
            for i, m in enumerate(_messages(len(mode))):
                op = TEXT if i in (0, 3) else BINARY
                link.echo(m, op)
                link.echo(m, op, cuts=(1, 7, len(m) // 2))
                if i == 1:
                    link.echo(b"plain between compressed ones", BINARY, compressed=False, reqs=["WSD-CTX-3"])
            short = b"abcabcabc-split-me"
            payload = D.Deflater(15, True).compress(short)
            link.echo(short, TEXT, cuts=range(1, len(payload)))  # one byte a frame (payload bytes)
        finally:
            link.close()


def c_back_reference(t):
    """With context takeover, a message that is a back-reference into the previous one: an inflater
    that resets between messages cannot read it (WSD-CTX-1); then across an uncompressed message
    (WSD-CTX-3) and over a 9-bit window (WSD-CTX-2)."""
    import random
    block = bytes(random.Random(7).getrandbits(8) for _ in range(3000))
    link = Link(t, "permessage-deflate; client_max_window_bits", "context takeover: ")
    try:
        link.echo(block, what="3000 random bytes")
        link.echo(block, what="the same 3000 bytes again (a back-reference into the previous message)",
                  reqs=["WSD-CTX-1"])
        link.echo(b"uncompressed between", compressed=False, reqs=["WSD-CTX-3"])
        link.echo(block, cuts=(2, 5), what="the same bytes a third time, fragmented, after an uncompressed message",
                  reqs=["WSD-CTX-3"])
    finally:
        link.close()
    small = block[:200]
    link = Link(t, "permessage-deflate; client_max_window_bits=9", "client_max_window_bits=9: ")
    try:
        link.echo(small, what="200 random bytes")
        link.echo(small + small, what="a back-reference within a 512-byte window", reqs=["WSD-CTX-2"])
    finally:
        link.close()


HELLO = b"Hello"
RFC_PAYLOADS = [  # RFC 7692 §7.2.3: each inflates to "Hello"
    ("§7.2.3.1 (one dynamic/fixed block)", bytes.fromhex("f248cdc9c90700")),
    ("§7.2.3.3 (a stored block)", bytes.fromhex("0005 00faff 48656c6c6f 00".replace(" ", ""))),
    ("§7.2.3.4 (BFINAL 1)", bytes.fromhex("f348cdc9c90700 00".replace(" ", ""))),
    ("§7.2.3.5 (two blocks)", bytes.fromhex("f248050000 00ffff cac9c90700".replace(" ", ""))),
]


def _blocks(message: bytes, level: int, strategy: int) -> bytes:
    z = zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)
    out = z.compress(message) + z.flush(zlib.Z_SYNC_FLUSH)
    return out[:-4]


def c_inflate_forms(t):
    """WSD-CMP-2: the RFC's examples whole and one byte a frame; stored, fixed and dynamic blocks.
    Each on a connection of its own without client context (client_no_context_takeover)."""
    msg = b"inflate forms " * 40
    forms = [(name, HELLO, p) for name, p in RFC_PAYLOADS] + [
        ("stored blocks (level 0)", msg, _blocks(msg, 0, zlib.Z_DEFAULT_STRATEGY)),
        ("fixed Huffman (Z_FIXED)", msg, _blocks(msg, 9, zlib.Z_FIXED)),
        ("dynamic Huffman", msg, _blocks(msg, 9, zlib.Z_DEFAULT_STRATEGY))]
    link = Link(t, "permessage-deflate; client_no_context_takeover", "inflate forms: ")
    try:
        for name, message, payload in forms:
            for cuts in ((), range(1, len(payload))):
                link.seq += 1
                link.send(data_frames(TEXT, payload, cuts, True, link.seq))
                what = f"the payload {name} {payload.hex(' ')} in {len(list(cuts)) + 1} frame(s)"
                op, got, _ = link.read_message(f"the echo of {what}")
                if got != message:
                    raise CheckFailure(f"the echo of {what}:\n  expected {message[:40]!r}\n  actual   {got[:40]!r}",
                                       ["WSD-CMP-2"])
    finally:
        link.close()


def c_final_block(t):
    """WSD-CMP-5: a message ending with a final block and bytes after it (ignored), then, with context
    takeover, a new stream that refers back into it."""
    first = b"final block message " * 10
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    payload = z.compress(first) + z.flush(zlib.Z_FINISH) + b"\x00\x00\xff\xff"  # an empty stored block follows
    z2 = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=first)
    second = z2.compress(first) + z2.flush(zlib.Z_SYNC_FLUSH)
    link = Link(t, "permessage-deflate", "a final block: ")
    try:
        link.seq += 1
        link.send(data_frames(TEXT, payload, (), True, link.seq))
        op, got, _ = link.read_message("the echo of a message ending with BFINAL 1 and an empty block after it")
        if got != first:
            raise CheckFailure(f"a message ending with a final block and bytes after it:\n  expected {first[:40]!r}\n"
                               f"  actual   {got[:40]!r}\n  payload {payload.hex(' ')}", ["WSD-CMP-5"])
        link.seq += 1
        link.send(data_frames(TEXT, second[:-4], (), True, link.seq))
        try:
            op, got, _ = link.read_message("the echo of a new stream referring back past the final block")
        except CheckFailure as e:
            raise CheckFailure(f"{e}\n  minimal input: {payload.hex(' ')} then {second[:-4].hex(' ')}",
                               ["WSD-CMP-5"]) from None
        if got != first:
            raise CheckFailure(f"a new stream after a final block, referring back:\n  expected {first[:40]!r}\n"
                               f"  actual   {got[:40]!r}", ["WSD-CMP-5"])
    finally:
        link.close()


def c_invalid_deflate(t):
    """WSD-CMP-3: DEFLATE data that does not inflate fails the connection with 1007."""
    back = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=b"0123456789" * 10)
    far = back.compress(b"0123456789" * 3) + back.flush(zlib.Z_SYNC_FLUSH)
    for name, payload in [("a reserved block type (BTYPE 11)", b"\x06\x00\x00"),
                          ("a stored block whose NLEN is not ~LEN", bytes.fromhex("000500000048656c6c6f")),
                          ("a distance before the start of the window", far[:-4])]:
        closes(t, "permessage-deflate; client_no_context_takeover",
               lambda link, p=payload: data_frames(BINARY, p, (), True, 1), 1007,
               f"a compressed message with {name} ({payload.hex(' ')})", ["WSD-CMP-3"])


def c_inflated_utf8(t):
    """WSD-CMP-4: UTF-8 is checked on the inflated text: a valid text whose compressed bytes are not
    UTF-8 is echoed; an inflated text that is not UTF-8 fails the connection with 1007."""
    text = "κόσμε, frameproof — ünïcödé ".encode() * 4
    link = Link(t, "permessage-deflate; client_no_context_takeover", "inflated UTF-8: ")
    try:
        link.echo(text, TEXT, what="a valid UTF-8 text whose compressed payload is not UTF-8", reqs=["WSD-CMP-4"])
    finally:
        link.close()
    bad = b"valid so far \xce\xba then \xed\xa0\x80 a surrogate"
    closes(t, "permessage-deflate; client_no_context_takeover",
           lambda link: data_frames(TEXT, D.Deflater(15, True).compress(bad), (3,), True, 1), 1007,
           f"a compressed text that inflates to invalid UTF-8 ({bad!r})", ["WSD-CMP-4"])


# ------------------------------------------------------------------ incompressible messages (WSD-FRM-3)

INCOMPRESSIBLE_SEED = 6455
TWICE = 4096  # phase 2's random blocks, each sent twice: 4 KiB apart, past a 512-byte window, within 32 KiB


def incompressible(size: int, twice: bool = False, seed: int = INCOMPRESSIBLE_SEED) -> bytes:
    """``size`` random bytes (seeded). ``twice``: each block of TWICE random bytes twice in a row, which a
    32 KiB window (the client's) compresses to half and a 512-byte one (``server_max_window_bits=9``, a
    longest distance of 250 bytes in zlib) not at all: DEFLATE then expands it, 22 KB over 10 MiB."""
    r = random.Random(seed)
    if not twice:
        return r.randbytes(size)
    out = bytearray()
    while len(out) < size:
        block = r.randbytes(TWICE)
        out += block + block
    return bytes(out[:size])


def _echo_frames(link: Link, what: str):
    """The server's next data message as [(rsv, payload length)] of its frames, its opcode and its payload."""
    fin, rsv, op, payload = link.read_frame(N.READ_TIMEOUT * 4)
    if op == CLOSE:
        code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None
        raise CheckFailure(f"{link.ctx}{what}:\n  expected a data message\n  actual   a close frame with code {code}",
                           ["WSD-FRM-3"])
    frames, parts = [(rsv, len(payload))], [payload]
    while not fin:
        fin, rsv, _op, payload = link.read_frame(N.READ_TIMEOUT * 4)
        frames.append((rsv, len(payload)))
        parts.append(payload)
    return frames, op, b"".join(parts)


def _sizes(frames) -> str:
    return ", ".join(f"{n:,} bytes{' RSV1' if rsv & 4 else ''}" for rsv, n in frames[:4]) + \
        (f", ... ({len(frames)} frames)" if len(frames) > 4 else "")


def c_incompressible(t):
    """WSD-FRM-3: random bytes (seeded) of the largest message one frame carries (the server's max_message,
    or its frame limit where that is smaller), each way a server may have to compress them: sent
    uncompressed on a connection with the default offer (a server that compresses every echo gets random
    bytes), then compressed on one where the server's window is 512 bytes (server_max_window_bits=9; the
    message is random blocks each twice, 4 KiB apart: half its size on the wire, incompressible in the
    server's window). Each echo's payload (its frames joined) must be at most the message's size and be
    the message once inflated; then a message made of the big one's last bytes, compressed, must inflate
    at a client that kept its window: a server that sent the big one uncompressed reset its compressor."""
    limit, frame_limit = t.codec.message_limit, t.limit
    size = min(limit, frame_limit)
    for offer, twice, compressed in (("permessage-deflate; client_max_window_bits", False, False),
                                     ("permessage-deflate; server_max_window_bits=9", True, True)):
        message = incompressible(size, twice)
        what = (f"{size:,} random bytes{' (4 KiB blocks, each twice)' if twice else ''} sent "
                f"{'compressed' if compressed else 'uncompressed'} (max_message {limit:,}, max_payload "
                f"{frame_limit:,}), offer {offer!r}")
        link = Link(t, offer, "")
        try:
            sent = link.send_message(message, BINARY, range(frame_limit, size, frame_limit), compressed)
            frames, op, payload = _echo_frames(link, f"the echo of {what}")
            total = sum(n for _rsv, n in frames)
            if total > size:  # the message's payload, its frames joined (a server may fragment its echo)
                raise CheckFailure(f"the echo of {what}:\n  expected a payload of at most {size:,} bytes, the message's "
                                   f"size (uncompressed where compressing makes it longer)\n  actual   {total:,} bytes "
                                   f"({total - size:+,} over the message) in {_sizes(frames)}"
                                   f"\n  payload sent {len(sent):,} bytes", ["WSD-FRM-3"])
            got = payload
            if frames[0][0] & 4:
                try:
                    got = link.inflater.inflate(payload)
                except D.InflateError as e:
                    raise CheckFailure(f"the echo of {what}: {_sizes(frames)} does not inflate ({e.reason})",
                                       ["WSD-FRM-3"]) from None
            if op != BINARY or got != message:
                raise CheckFailure(f"the echo of {what}:\n  expected opcode {BINARY}, {size:,} bytes {message[:16].hex(' ')}"
                                   f"\n  actual   opcode {op}, {len(got):,} bytes {got[:16].hex(' ')} (frames: "
                                   f"{_sizes(frames)})", ["WSD-FRM-3"])
            # the server's compressor reset (WSD-FRM-3) if it sent the message uncompressed: one that kept it
            # refers back into bytes this client's window never got (WSD-CTX-3)
            after = message[-200:] * 3 + b" after the incompressible message"
            then = f"a {len(after)}-byte compressed message repeating the last 200 bytes of the previous one"
            link.send_message(after, BINARY)
            try:
                _op, got, _c = link.read_message(f"the echo of {then}")
            except CheckFailure as e:
                raise CheckFailure(f"{e}\n  after the echo of {what} in {_sizes(frames)}: a server that sends a "
                                   "message uncompressed resets its compressor", ["WSD-FRM-3"]) from None
            if got != after:
                raise CheckFailure(f"the echo of {then}, after the echo of {what} in {_sizes(frames)}:\n  expected "
                                   f"{len(after)} bytes {after[:16].hex(' ')}\n  actual   {len(got)} bytes "
                                   f"{got[:16].hex(' ')}", ["WSD-FRM-3"])
        finally:
            link.close()


# ------------------------------------------------------------------ the bomb (WSD-LIM-1, LIM-2)

BOMB_MIB = int(os.environ.get("FRAMEPROOF_WSD_BOMB_MIB", "1024"))
RSS_SLACK_KIB = 96 * 1024  # the runtime's own growth over the limit plus one 64 KiB step


@lru_cache(maxsize=2)
def bomb(mib: int = BOMB_MIB) -> bytes:
    """A compressed message of ``mib`` MiB of zeros: about 1 KiB on the wire a MiB (1037 bytes: each
    MiB ends with a full flush, so every MiB compresses to the same bytes)."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    unit = z.compress(b"\x00" * (1 << 20)) + z.flush(zlib.Z_FULL_FLUSH)
    return unit * mib


def hwm_kib(pid) -> Optional[int]:
    """The server's peak RSS (VmHWM), or None where /proc does not say."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def c_bomb(t):
    """About 1 KiB a MiB on the wire, inflating to 1 GiB of zeros, whole and in 16 fragments: close
    1009 as soon as the message limit is passed, the peak RSS (VmHWM) within the limit plus slack, a
    healthy connection alongside still echoing."""
    limit = t.codec.message_limit
    payload = bomb()
    bound = limit // 1024 + RSS_SLACK_KIB
    for frags in (1, 16):
        ctx = (f"a compressed message of {len(payload)} bytes inflating to {BOMB_MIB} MiB of zeros, in {frags} "
               f"frame(s) (message limit {limit} bytes)")

        def body():
            before = hwm_kib(t.pid)
            sampled = [N.rss_kib(t.pid) or 0]
            link = Link(t, "permessage-deflate; client_no_context_takeover", ctx + ": ")
            try:
                step = len(payload) // frags + 1
                link.send(data_frames(BINARY, payload, range(step, len(payload), step), True, 1))
                deadline = time.monotonic() + N.READ_TIMEOUT * 4
                try:
                    expect_close(link, 1009, ctx, ["WSD-LIM-1"])
                finally:
                    sampled.append(N.rss_kib(t.pid) or 0)
                    if time.monotonic() > deadline:
                        raise CheckFailure(f"{ctx}: the close took longer than {N.READ_TIMEOUT * 4:g} s", ["WSD-LIM-1"])
            finally:
                link.close()
            after = hwm_kib(t.pid)
            if before is not None and after is not None and after - before > bound:
                raise CheckFailure(f"{ctx}:\n  expected the server's peak RSS to grow by at most {bound} KiB (the "
                                   f"limit plus one step, plus {RSS_SLACK_KIB // 1024} MiB for the runtime)\n  actual   "
                                   f"VmHWM {before} KiB -> {after} KiB (+{after - before} KiB); VmRSS samples "
                                   f"{sampled}", ["WSD-LIM-1", "WSD-LIM-2"])
        N.watched(t, body, ctx, rss_bound_kib=bound)


def c_message_at_limit(t):
    """WSD-LIM-1 at its edge: a compressed message that inflates to exactly the message limit is echoed (the limit
    is allowed; one byte more is deflate_bomb_1009's). Zeros: about 100 KiB on the wire for the default 100 MiB."""
    n = t.codec.message_limit
    link = Link(t, "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                "a message at the limit: ")
    try:
        link.echo(bytes(n), what=f"a compressed message of exactly the message limit ({n} bytes of zeros)",
                  reqs=["WSD-LIM-1"])
    finally:
        link.close()


# ------------------------------------------------------------------ idle connections (WSD-LIM-3)

IDLE_CONNS = 200
IDLE_KIB = 32  # a connection's allowance; an eager zlib deflater and inflater hold about 86 KiB resident


def _idle_growth(t, offer, ctx) -> Optional[int]:
    """The server's VmRSS growth (KiB) while IDLE_CONNS connections sit idle after their opening, each
    offering ``offer`` (accepted) or nothing."""
    conns = []
    before = N.rss_kib(t.pid)
    try:
        for _ in range(IDLE_CONNS):
            if offer:
                conns.append(Link(t, offer, ctx).c)
            else:
                conns.append(Conn(t))
        time.sleep(0.3)
        after = N.rss_kib(t.pid)
    finally:
        for c in conns:
            c.close()
    time.sleep(0.3)
    return None if before is None or after is None else after - before


def c_idle_lazy(t):
    """200 idle connections that agreed on the extension cost the server at most 32 KiB a connection more
    resident memory than 200 without it: no zlib state before the first compressed message."""
    ctx = f"{IDLE_CONNS} connections idle after their opening"
    if N.rss_kib(t.pid) is None:
        from ...netsuite import SkipCase
        raise SkipCase("the server's memory is not visible here (no /proc/<pid>/status for it)")
    _idle_growth(t, None, ctx)  # warm-up: the server's own buffers and tables for that many connections
    bound = IDLE_CONNS * IDLE_KIB
    for attempt in range(2):  # a second pair of measurements before a verdict: a collector's timing moves RSS
        on = _idle_growth(t, "permessage-deflate; client_max_window_bits", ctx + " (with the extension): ")
        # a runtime that hands memory back while the baseline runs (Mono's collector shrinking its heap: -17 MiB
        # once, in a CI run) reads as negative growth; the baseline is then no growth, not a credit
        off = max(_idle_growth(t, None, ctx), 0)
        if on - off <= bound:
            break
    if on - off > bound:
        raise CheckFailure(f"{ctx}:\n  expected the server's resident memory to grow by at most {bound} KiB more "
                           f"with permessage-deflate than without ({IDLE_KIB} KiB a connection)\n  actual   +{on} KiB "
                           f"with it, +{off} KiB without (+{(on - off) // IDLE_CONNS} KiB a connection): zlib state "
                           "made before the first compressed message", ["WSD-LIM-3"])


def cases() -> list:
    from ...netsuite import NetCase
    on = deflate_on
    return [
        NetCase("deflate_negotiation", ["WSD-NEG-1", "WSD-NEG-2", "WSD-NEG-3", "WSD-NEG-4", "WSD-NEG-6"], "Offers drawn over the "
                "extension grammar (case, whitespace, quoted values, several offers and headers, invalid, unknown and "
                "repeated parameters, server_max_window_bits=8): answered as the zlib oracle says, then a message "
                "echoed with the agreed parameters", c_negotiation, when=on),
        NetCase("deflate_rsv1_continuation_1002", ["WSD-FRM-2"], "RSV1 on a continuation frame: close 1002",
                c_rsv1_continuation, hostile=True, when=on),
        NetCase("deflate_rsv1_control_1002", ["WSD-FRM-2"], "RSV1 on a ping frame: close 1002", c_rsv1_control,
                hostile=True, when=on),
        NetCase("deflate_rsv23_1002", ["WS-HDR-2", "WSD-FRM-1"], "RSV2 or RSV3 on a data frame of a connection that "
                "agreed on the extension (it defines RSV1 only): close 1002", c_rsv23, hostile=True, when=on),
        NetCase("deflate_rsv1_not_negotiated_1002", ["WSD-FRM-2"], "RSV1 on a connection that did not negotiate the "
                "extension (the server has it on): close 1002", c_rsv1_not_negotiated, hostile=True, when=on),
        NetCase("deflate_roundtrips", ["WSD-CMP-2", "WSD-FRM-1", "WSD-CMP-1", "WSD-CTX-1", "WSD-CTX-2", "WSD-CTX-3"],
                "Compressed messages in every context mode and window size, whole and fragmented, with uncompressed "
                "ones between: echoed, the replies' RSV1 and compression as agreed", c_roundtrips, when=on),
        NetCase("deflate_back_reference", ["WSD-CTX-1", "WSD-CTX-2", "WSD-CTX-3"], "A message that refers back into "
                "the previous one (context takeover), across an uncompressed message and in a 9-bit window",
                c_back_reference, when=on),
        NetCase("deflate_inflate_forms", ["WSD-CMP-2"], "RFC 7692's worked examples (one block, stored, BFINAL 1, two "
                "blocks) and stored, fixed and dynamic blocks, whole and one byte a frame", c_inflate_forms, when=on),
        NetCase("deflate_final_block", ["WSD-CMP-5", "WSD-CMP-2"], "A final block with bytes after it, then a new "
                "stream referring back into it", c_final_block, when=on),
        NetCase("deflate_invalid_1007", ["WSD-CMP-3"], "DEFLATE that does not inflate (reserved block type, bad "
                "stored length, distance too far back): close 1007", c_invalid_deflate, hostile=True, when=on),
        NetCase("deflate_inflated_utf8", ["WSD-CMP-4"], "UTF-8 is checked on the inflated text: valid text echoed, "
                "inflated invalid UTF-8 closed with 1007", c_inflated_utf8, hostile=True, when=on),
        NetCase("deflate_incompressible", ["WSD-FRM-3"], "Random bytes of the largest message one frame carries, "
                "uncompressed, then compressed where the server's window (9 bits) finds nothing to refer to: echoed "
                "in no more bytes than the message (uncompressed, RSV1 clear), the next compressed message "
                "inflating at a client that kept its window", c_incompressible, when=on),
        NetCase("deflate_bomb_1009", ["WSD-LIM-1", "WSD-LIM-2"], "About 1 MiB on the wire inflating to 1 GiB, whole "
                "and fragmented: close 1009 without holding it (peak RSS watched), a healthy connection alongside",
                c_bomb, hostile=True, when=on),
        NetCase("deflate_message_at_limit", ["WSD-LIM-1"], "A compressed message that inflates to exactly the "
                "message limit: echoed", c_message_at_limit, when=on),
        NetCase("deflate_idle_lazy", ["WSD-LIM-3"], f"{IDLE_CONNS} connections idle after agreeing on the extension "
                f"cost at most {IDLE_KIB} KiB a connection more than without it (zlib state made lazily)", c_idle_lazy,
                when=on),
    ]
