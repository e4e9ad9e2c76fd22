"""`frameproof net --protocol websocket`: the opening handshake (the client side every connection
runs, and hostile or malformed handshakes), the generic echo cases with WS-* requirement IDs, and
the websocket ones (fragments, ping between them, close handshake, close codes)."""
from __future__ import annotations

import time
from typing import List

from ... import netsuite as N
from ...checks import CheckFailure
from ... import oracle
from ...coverage import declare, note
from ...netsuite import Conn, NetCase
from .codec_json import c_codec_json
from .frames import BINARY, CLOSE, CONT, PING, PONG, TEXT, frame, key_for
from .reference import accept_for

RFC_KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 §1.3


def request_head(key=RFC_KEY, version="13", extra="", method="GET", upgrade="websocket", connection="Upgrade",
                 host="127.0.0.1", target="/ws"):
    lines = [f"{method} {target} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host}")
    if upgrade is not None:
        lines.append(f"Upgrade: {upgrade}")
    if connection is not None:
        lines.append(f"Connection: {connection}")
    if key is not None:
        lines.append(f"Sec-WebSocket-Key: {key}")
    if version is not None:
        lines.append(f"Sec-WebSocket-Version: {version}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def offer_of(codec) -> str:
    """The Sec-WebSocket-Protocol header every connection sends: the configured subprotocol, or none."""
    sub = getattr(codec, "subprotocol", None)
    return f"Sec-WebSocket-Protocol: {sub}\r\n" if sub is not None else ""


def endpoint_head(t, **kw) -> bytes:
    """``request_head`` for the configured echo service: its path, its subprotocol offered."""
    kw.setdefault("extra", "")
    kw["extra"] = offer_of(t.codec) + kw["extra"]
    return request_head(target=t.codec.request_path, **kw)


def offered_in(head: str) -> List[str]:
    """The subprotocols a request head offers (every Sec-WebSocket-Protocol header, as one list)."""
    out = []
    for ln in head.split("\r\n")[1:]:
        k, _, v = ln.partition(":")
        if k.strip().lower() == "sec-websocket-protocol":
            out += [p.strip() for p in v.split(",") if p.strip()]
    return out


def check_selected(hdrs: dict, offered: List[str], ctx="handshake"):
    """WS-HS-4 (RFC 6455 §4.1 item 6): the answer names at most one subprotocol, one the client offered."""
    got = hdrs.get("sec-websocket-protocol")
    if got is not None and got not in offered:
        raise CheckFailure(f"{ctx}: the server selected subprotocol {got!r}, which was not offered (offered: "
                           f"{', '.join(offered) or 'none'}; RFC 6455 §4.1: the client fails the connection)",
                           ["WS-HS-4"])


def read_head(conn, timeout=N.READ_TIMEOUT):
    """(status code, {lower-case header: value}) of the server's HTTP answer; the rest stays in conn.buf."""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in conn.buf:
        if conn.eof:
            raise CheckFailure(f"the server closed before answering the handshake (got {conn.buf[:80]!r})")
        try:
            conn._fill(deadline)
        except Exception:
            raise CheckFailure(f"no complete HTTP answer to the handshake within {timeout:g} s (got {conn.buf[:80]!r})")
    head, conn.buf = conn.buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        raise CheckFailure(f"not an HTTP status line: {lines[0]!r}")
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs


def client_handshake(conn, key=RFC_KEY, extra="", offer=None):
    """The opening handshake of ``conn`` on the configured echo service (``websocket.path``); it offers
    the configured subprotocol, or ``offer`` (a Sec-WebSocket-Protocol value) instead."""
    codec = conn.codec
    if offer is not None:
        extra += f"Sec-WebSocket-Protocol: {offer}\r\n"
    else:
        extra = offer_of(codec) + extra
    head = request_head(key, extra=extra, target=codec.request_path)
    conn.send(head)
    status, hdrs = read_head(conn)
    if status != 101:
        raise CheckFailure(f"handshake on {codec.request_path}: expected status 101, actual {status}")
    if hdrs.get("sec-websocket-accept") != accept_for(key):
        raise CheckFailure(f"handshake: expected Sec-WebSocket-Accept {accept_for(key)}, actual "
                           f"{hdrs.get('sec-websocket-accept')!r}")
    if hdrs.get("upgrade", "").lower() != "websocket" or "upgrade" not in hdrs.get("connection", "").lower():
        raise CheckFailure(f"handshake: expected Upgrade: websocket and Connection: Upgrade, actual {hdrs}")
    check_selected(hdrs, offered_in(head.decode("latin-1")))
    return hdrs


def _raw(t):
    return Conn(t, handshake=False)


def c_accept_rfc_example(t):
    c = _raw(t)
    try:
        hdrs = client_handshake(c, RFC_KEY)
        if hdrs["sec-websocket-accept"] != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=":
            raise CheckFailure("the RFC 6455 §1.3 example accept value differs")
        if "sec-websocket-extensions" in hdrs:
            raise CheckFailure(f"expected no extension, actual {hdrs}")
        N.roundtrip(t, [frame(TEXT, b"after handshake", True, key_for(1))], conn=c)
    finally:
        c.close()


def c_subprotocol(t):
    """The echo service's subprotocol (``websocket.subprotocol``, default frameproof.echo) offered among
    others, alone, and not at all: selected when offered (WS-HS-8, the spec's), never one not offered
    (WS-HS-4, the RFC's); a failure names the one it breaks."""
    sub = t.codec.echo_subprotocol
    for offered, want in [(f"chat, {sub}, superchat", sub), ("chat, superchat", None), (sub, sub)]:
        c = _raw(t)
        try:
            hdrs = client_handshake(c, offer=offered)
            got = hdrs.get("sec-websocket-protocol")
            if got != want:
                names = [x.strip() for x in (got or "").split(",")]
                rfc = got is not None and (len(names) > 1 or names[0] not in [x.strip() for x in offered.split(",")])
                raise CheckFailure(f"offered {offered!r}:\n  expected Sec-WebSocket-Protocol {want!r}\n  actual   {got!r}",
                                   ["WS-HS-4"] if rfc else ["WS-HS-8"])
        finally:
            c.close()


def c_extensions_declined(t):
    """permessage-deflate offered: declined with the extension off (WS-HS-5), accepted as WSD-NEG-3 says
    with it on (the codec's websocket.permessage_deflate); the frames then compressed or not as agreed."""
    from .deflate_net import Link, check_answer
    offer = "permessage-deflate; client_max_window_bits"
    c = _raw(t)
    try:
        hdrs = client_handshake(c, extra=f"Sec-WebSocket-Extensions: {offer}\r\n")
        agreed = check_answer(t.codec, hdrs, [offer], f"the offer {offer!r}")
        if agreed is None and t.codec.permessage_deflate:
            raise CheckFailure(f"the offer {offer!r}:\n  expected accepted (the extension is on)\n  actual   declined",
                               ["WSD-NEG-1"])
        if agreed is None:
            N.roundtrip(t, [frame(TEXT, b"uncompressed", True, key_for(3))], conn=c)
        else:
            link = Link(t, conn=c, agreed=agreed, ctx=f"accepted as {hdrs['sec-websocket-extensions']!r}: ")
            link.echo(b"compressed " * 4, TEXT, reqs=["WSD-CMP-2"])
            link.echo(b"uncompressed", TEXT, compressed=False, reqs=["WSD-FRM-1"])
    finally:
        c.close()


def _opens(t, data: bytes, key: str, pieces: List[bytes], ctx: str):
    """``data`` (split into ``pieces``, each its own TCP segment) must open the connection: 101, the
    accept value of ``key``, no extension unless the codec switches permessage-deflate on (then the
    answer the oracle gives); then a message is echoed on it."""
    c = _raw(t)
    try:
        for i, piece in enumerate(pieces):
            c.send(piece)
            if i < len(pieces) - 1:
                time.sleep(0.002)  # one segment each (the client sets TCP_NODELAY)
        try:
            status, hdrs = read_head(c)
        except CheckFailure as e:
            raise CheckFailure(f"{ctx}:\n  expected 101 with Sec-WebSocket-Accept {accept_for(key)}\n  actual   {e}\n"
                               f"  request ({len(pieces)} segments): {data.decode('latin-1')!r}", e.requirements) from None
        if status != 101 or hdrs.get("sec-websocket-accept") != accept_for(key):
            raise CheckFailure(f"{ctx}:\n  expected 101 with Sec-WebSocket-Accept {accept_for(key)}\n  actual   {status}"
                               f" {hdrs}\n  request ({len(pieces)} segments): {data.decode('latin-1')!r}")
        # no extension with it off (WS-HS-5); with it on, the offers answered as WSD-NEG-* say
        from .deflate_net import Link, check_answer, extension_values
        agreed = check_answer(t.codec, hdrs, extension_values(data.decode("latin-1")), ctx)
        check_selected(hdrs, offered_in(data.decode("latin-1")), ctx)
        if agreed is None:
            N.roundtrip(t, [frame(TEXT, b"opened", True, key_for(4))], conn=c, ctx=f"{ctx}, then a message: ")
        else:
            Link(t, conn=c, agreed=agreed, ctx=f"{ctx}, then a message: ").echo(b"opened", TEXT)
    finally:
        c.close()


def _split(data: bytes, cuts) -> List[bytes]:
    cuts = sorted(set(c for c in cuts if 0 < c < len(data)))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


GRAMMAR_EXAMPLES = 150  # each a connection: about 1.5 s on loopback


def c_handshake_grammar(t):
    """Legal spellings of a valid request (handshake_grammar.opening_requests), each split at up to
    three drawn offsets; Hypothesis shrinks a refused one to its smallest spelling."""
    from hypothesis import HealthCheck, given, settings, strategies as st
    from .handshake_grammar import HS_SEGMENTS, opening_requests, plainest_request
    data, key = plainest_request(t.codec.path, t.codec.subprotocol, bool(t.codec.permessage_deflate))
    _opens(t, data, key, [data], "the plainest valid opening request (before the grammar's spellings)")

    @settings(max_examples=GRAMMAR_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(opening_requests(t.codec.path, t.codec.subprotocol), st.lists(st.integers(1, 400), max_size=3))
    def prop(req, cuts):
        data, key = req
        segments = _split(data, cuts)
        note(HS_SEGMENTS, str(len(segments)))
        _opens(t, data, key, segments, "a legal spelling of a valid opening request")
    prop()


def c_browser_requests(t):
    from .handshake_grammar import browser_requests
    reqs = browser_requests(t.codec.path, t.codec.subprotocol)
    if not reqs:
        raise CheckFailure("no browser request found in conformance/vectors/websocket/opening")
    for name, data, key in reqs:
        _opens(t, data, key, [data], f"the opening request of {name}")
        # and split after every header line
        cuts = [i + 2 for i in range(len(data)) if data[i:i + 2] == b"\r\n"]
        _opens(t, data, key, _split(data, cuts), f"the opening request of {name}, one segment a line")


def c_hostile_handshakes(t):
    N.watched(t, lambda: _hostile_handshakes(t), "hostile handshakes")


def _hostile_handshakes(t):
    for ctx, data in [("64 KiB of header without an end", b"GET / HTTP/1.1\r\nX: " + b"a" * 65536),
                      ("binary garbage", bytes(range(256)) * 64),
                      ("frames before any handshake", b"\x81\x85\x00\x00\x00\x00hello" * 10)]:
        c = _raw(t)
        try:
            try:
                c.send(data)
            except (BrokenPipeError, ConnectionResetError):
                pass
            c.idle(0.5)
            if b"101" in c.buf.split(b"\r\n", 1)[0]:
                raise CheckFailure(f"{ctx}: the server switched protocols")
        finally:
            c.close()


def _read_closing(c, n: int, code: int, ctx: str) -> list:
    """The next ``n`` frames, the last of them the close frame of a failed connection. A server that
    closes the connection instead of sending that close frame did fail the connection (what the input
    breaks is honoured); the failure is narrowed to the missing close frame, WS-ERR-1 (an RFC SHOULD)."""
    got = c.read_frames(n - 1) if n > 1 else []
    try:
        return got + c.read_frames(1)
    except CheckFailure as e:
        if getattr(c, "eof", False) or isinstance(e.__context__, ConnectionResetError):
            raise CheckFailure(f"{ctx}:\n  expected a close frame with code {code}, then the server closes\n"
                               f"  actual   the server closed the connection without a close frame",
                               ["WS-ERR-1"]) from e
        raise


def _close_expect(t, data: bytes, code: int, ctx: str, before=()):
    """``data`` fails the connection with close ``code``; a healthy connection alongside, RSS watched."""
    def body():
        c = Conn(t)
        try:
            c.send(b"".join(c.frame(f) for f in before) + data)
            got = _read_closing(c, len(before) + 1, code, ctx)
            N.check_replies(t, list(before), got[:len(before)], ctx + ": ")
            last = got[-1]
            if last.header.opcode != CLOSE or last.payload[:2] != code.to_bytes(2, "big"):
                raise CheckFailure(f"{ctx}:\n  expected a close frame with code {code}\n  actual   {last.short()}")
            c.expect_closed(what=f" after {ctx}")
        finally:
            c.close()
    N.watched(t, body, ctx)


def c_fragments_and_ping(t):
    c = Conn(t)
    try:
        fs = [frame(TEXT, b"frag", False, key_for(1)), frame(PING, b"mid", True, key_for(2)),
              frame(PONG, b"ignored", True, key_for(3)), frame(CONT, b"ment", True, key_for(4))]
        c.send(b"".join(c.frame(f) for f in fs))
        got = c.read_frames(2)
        exp = [frame(PONG, b"mid"), frame(TEXT, b"fragment")]
        if got != exp:
            raise CheckFailure(f"ping between fragments:\n  expected {[f.short() for f in exp]}\n"
                               f"  actual   {[f.short() for f in got]}")
    finally:
        c.close()


def c_close_handshake(t):
    c = Conn(t)
    try:
        c.send(c.frame(frame(TEXT, b"last", True, key_for(1))) + c.frame(frame(CLOSE, b"\x03\xe8bye", True, key_for(2))))
        got = c.read_frames(2)
        if got != [frame(TEXT, b"last"), frame(CLOSE, b"\x03\xe8")]:
            raise CheckFailure(f"close handshake:\n  expected the echo then a close frame with code 1000\n"
                               f"  actual   {[f.short() for f in got]}")
        c.expect_closed(what=" after the close handshake")
    finally:
        c.close()


def c_unmasked_1002(t):
    _close_expect(t, b"\x82\x05hello", 1002, "an unmasked client frame", [frame(BINARY, b"ok", True, key_for(1))])
    # first in its write, a masked frame after it: a server's fast path for whole masked frames (one that takes
    # the mask bit for granted) would echo it, four of its payload octets taken for a key
    after = oracle.encode(t.codec, frame(BINARY, b"after the unmasked frame", True, key_for(2)))
    _close_expect(t, b"\x82\x05hello" + after, 1002, "an unmasked client frame first in its write, a masked one after it")


def c_utf8_1007(t):
    _close_expect(t, bytes([0x81, 0x85]) + b"\x00\x00\x00\x00" + b"\xce\xba\xed\xa0\x80", 1007, "invalid UTF-8 in a text frame")


def c_oversize_1009(t):
    n = t.limit + 1
    _close_expect(t, t.spec.oversize_header(t.codec, n), 1009, f"a frame of {n} bytes (over the limit)")


def c_nonminimal_1002(t):
    """WS-LEN-3 on a server: a masked frame whose length takes a longer form than it needs, first in its write with
    a valid frame after it (a server's fast path for whole frames must not take it), in the 16- and 64-bit forms."""
    after = oracle.encode(t.codec, frame(BINARY, b"after the frame", True, key_for(2)))
    for form, n in ((126, 125), (127, 65535)):
        head = bytes([0x82, 0x80 | form]) + n.to_bytes(2 if form == 126 else 8, "big") + b"\0\0\0\0"
        _close_expect(t, head + b"x" * n + after, 1002, f"a length of {n} in the {16 if form == 126 else 64}-bit form")


def c_reserved_bits_1002(t):
    _close_expect(t, b"\xc2\x80\x00\x00\x00\x00", 1002, "RSV1 without an extension")


ROLES = dict(prefix="WS", close="WS-ECHO-2", lim="WS-LIM-1", mem="WS-LIM-1", trunc="WS-STR-3", stop="WS-STR-4",
             split="WS-STR-1", half="WS-ECHO-3", order="WS-ECHO-1")


def c_ping_flood(t):
    """10,000 pings written before any read: 10,000 pongs, in order, then the echo of a message."""
    def body():
        c = Conn(t)
        try:
            pings = [frame(PING, b"p%d" % i, True, key_for(i)) for i in range(10000)]
            last = frame(BINARY, b"after-the-pings", True, key_for(7))
            c.send(b"".join(c.frame(f) for f in pings + [last]))
            got = c.read_frames(len(pings) + 1, timeout=N.READ_TIMEOUT * 6)
            exp = [frame(PONG, f.payload) for f in pings] + [frame(BINARY, b"after-the-pings")]
            for i, (e, a) in enumerate(zip(exp, got)):
                if e != a:
                    raise CheckFailure(f"reply {i}:\n  expected {e.short()}\n  actual   {a.short()}")
        finally:
            c.close()
    N.watched(t, body, "10,000 pings written before any read")


def c_message_over_limit_1009(t):
    N.watched(t, lambda: _message_over_limit(t), "a message beyond the message limit")


def _message_over_limit(t):
    n = min(t.limit, 1 << 20)
    total = t.codec.message_limit
    if total // n > 2000:
        raise N.SkipCase(f"the message limit ({total}) takes more than 2000 frames of {n} bytes")
    k = total // n + 1
    frags = [frame(BINARY if i == 0 else CONT, b"f" * n, False, key_for(i)) for i in range(k)]
    c = Conn(t)
    try:
        c.send(b"".join(c.frame(f) for f in frags[:-1]))
        _quiet = frags[-1]
        try:
            c.send(c.frame(_quiet))
        except (BrokenPipeError, ConnectionResetError):
            pass
        got = _read_closing(c, 1, 1009, "a message beyond the message limit")
        if got[0].header.opcode != CLOSE or got[0].payload[:2] != (1009).to_bytes(2, "big"):
            raise CheckFailure(f"a message beyond the message limit:\n  expected a close frame with code 1009\n"
                               f"  actual   {got[0].short()}")
        c.expect_closed(what=" after a message beyond the limit")
    finally:
        c.close()


def c_control_over_125(t):
    _close_expect(t, bytes([0x89, 0x80 | 126, 0, 126]) + b"\x00" * 4 + b"x" * 126, 1002, "a ping of 126 bytes")


def c_continuation_first(t):
    _close_expect(t, c_bytes(frame(CONT, b"orphan", True, key_for(1))), 1002, "a continuation with no message started")


def c_bad_close_code(t):
    N.watched(t, lambda: _bad_close_code(t), "a close frame with code 1005")


def _bad_close_code(t):
    c = Conn(t)
    try:
        c.send(c.frame(frame(CLOSE, (1005).to_bytes(2, "big"), True, key_for(1))))
        got = _read_closing(c, 1, 1002, "a close frame with code 1005")
        if got[0].header.opcode != CLOSE or got[0].payload[:2] != (1002).to_bytes(2, "big"):
            raise CheckFailure(f"a close frame with code 1005:\n  expected a close frame with code 1002\n"
                               f"  actual   {got[0].short()}")
        c.expect_closed(what=" after a close frame with code 1005")
    finally:
        c.close()


#: the classes of close codes (WS-CLOSE-2): (first, last, valid, label)
CLOSE_CLASSES = ((0, 999, False, "0-999, unused"), (1000, 1003, True, "1000-1003"),
                 (1004, 1006, False, "1004-1006, reserved or never sent"), (1007, 1011, True, "1007-1011"),
                 (1012, 1014, True, "1012-1014, IANA registry"), (1015, 1015, False, "1015, never sent"),
                 (1016, 2999, False, "1016-2999, reserved"), (3000, 4999, True, "3000-4999, registered and private"),
                 (5000, 65535, False, "5000 and above, undefined"))
CLOSE_EDGES = (0, 999, 1000, 1003, 1004, 1005, 1006, 1007, 1011, 1012, 1014, 1015, 1016, 2999, 3000, 3999, 4000, 4999,
               5000, 65535)
CLOSE_DRAWS = 27  # codes drawn over the classes (derandomized), besides the edges
#: the close codes sent to the server (this case), by class (frameproof/coverage.py)
CLOSE_CODE_CLASSES = declare("ws.close_code", [c[3] for c in CLOSE_CLASSES], ["WS-CLOSE-2", "WS-CLOSE-5"])


def close_class(code: int):
    return next(c for c in CLOSE_CLASSES if c[0] <= code <= c[1])


def _close_code_answer(t, code: int):
    """A close frame with ``code`` (and a reason): a valid code is echoed (WS-CLOSE-5), any other fails
    the connection with 1002 (WS-CLOSE-2, WS-ERR-1); then the server closes."""
    _lo, _hi, valid, label = close_class(code)
    note(CLOSE_CODE_CLASSES, label)
    want = code if valid else 1002
    ctx = f"a close frame with code {code} ({label}: {'valid' if valid else 'invalid'})"
    c = Conn(t)
    try:
        c.send(c.frame(frame(CLOSE, code.to_bytes(2, "big") + b"why", True, key_for(code))))
        try:
            got = c.read_frames(1)[0]
        except CheckFailure as e:
            if getattr(c, "eof", False) or isinstance(e.__context__, ConnectionResetError):
                raise CheckFailure(f"{ctx}:\n  expected a close frame with code {want}\n  actual   the server closed "
                                   f"without a close frame", ["WS-CLOSE-5" if valid else "WS-ERR-1"]) from e
            raise
        actual = int.from_bytes(got.payload[:2], "big") if got.header.opcode == CLOSE and len(got.payload) >= 2 else None
        if actual != want:
            if (valid and actual == 1002) or (not valid and actual == code):
                reqs = ["WS-CLOSE-2"]  # a valid code refused, or an invalid one taken
            else:
                reqs = ["WS-CLOSE-5"] if valid else ["WS-ERR-1"]
            raise CheckFailure(f"{ctx}:\n  expected a close frame with code {want}{' (the echo)' if valid else ''}\n"
                               f"  actual   {got.short()}", reqs)
        c.expect_closed(what=f" after {ctx}")
    finally:
        c.close()


def c_close_code_classes(t):
    """Every class of close codes with its edges, then codes drawn over the classes by Hypothesis
    (derandomized; a wrong answer shrinks to the smallest code of its class that gets it)."""
    from hypothesis import HealthCheck, given, settings, strategies as st
    for code in CLOSE_EDGES:
        _close_code_answer(t, code)

    @settings(max_examples=CLOSE_DRAWS, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(CLOSE_CLASSES).flatmap(lambda c: st.integers(c[0], c[1])))
    def prop(code):
        _close_code_answer(t, code)
    prop()


def c_bytes(f):
    from .reference import encode
    from .oracle import WsCodec
    return encode(WsCodec("websocket", role="client", max_payload=2 ** 63 - 1, max_message=2 ** 63 - 1), f, 2 ** 63)


def cases() -> List[NetCase]:
    # the refusal cases use the request helpers above: imported here, not at the top (a cycle)
    from .handshake_refusals import (c_bad_request_line, c_bad_requests, c_other_paths, c_version_426,
                                     c_version_missing_426)
    from .control_frames import c_close_code_only, c_nothing_after_close, c_pong_unanswered
    from .server_head_bound import c_request_head_endless
    from .split_reads import c_new_message_mid_fragments, c_payload_like_a_frame
    return [
        NetCase("handshake_rfc_example", ["WS-HS-2", "WS-HS-5"],
                "The RFC 6455 example key gets its Sec-WebSocket-Accept; frames follow", c_accept_rfc_example),
        NetCase("handshake_grammar", ["WS-HS-6", "WS-HS-1", "WS-HS-2"], "Valid opening requests in every legal "
                "spelling (header case, whitespace, order, extra and repeated headers, token lists, any split) are "
                "accepted", c_handshake_grammar),
        NetCase("browser_opening_requests", ["WS-HS-6", "WS-HS-2", "WS-HS-5"], "The opening requests of Chromium, "
                "Firefox and Safari, whole and one segment a line, are accepted", c_browser_requests),
        NetCase("handshake_bad_requests_400", ["WS-HS-1"], "Malformed upgrade requests get a 4xx and no upgrade",
                c_bad_requests),
        NetCase("handshake_request_line_400", ["WS-HS-1"], "An upgrade request with HTTP/1.0, with no HTTP "
                "version, with a fourth part, or with DELETE or PUT in its request line gets a 4xx and no upgrade",
                c_bad_request_line),
        NetCase("handshake_other_path_404", ["WS-HS-9"], "With websocket.path configured, a request for another "
                "target (a prefix, the path with more after it, paths on either side of it) gets a 4xx and no upgrade",
                c_other_paths, when=lambda codec: getattr(codec, "path", None) is not None),
        NetCase("handshake_version_426", ["WS-HS-3"], "Sec-WebSocket-Version 8, 12 or 14 gets 426 with "
                "Sec-WebSocket-Version: 13", c_version_426),
        NetCase("handshake_version_missing_426", ["WS-HS-3"], "A request without Sec-WebSocket-Version gets 426 with "
                "Sec-WebSocket-Version: 13", c_version_missing_426),
        NetCase("handshake_subprotocol_selected", ["WS-HS-8", "WS-HS-4"], "The echo service's subprotocol is selected when offered, no other",
                c_subprotocol),
        NetCase("handshake_deflate_declined", ["WS-HS-5"], "permessage-deflate offered: declined, frames "
                "uncompressed (the extension off); accepted as offered, frames compressed (on)", c_extensions_declined),
        NetCase("handshake_hostile", ["WS-HS-1"], "Endless headers, garbage and frames before the handshake: no "
                "upgrade, the server stays up", c_hostile_handshakes, hostile=True),
        NetCase("handshake_head_endless", ["WS-HS-11"], "A request head whose last header line never ends: a 4xx "
                "or a close before 16 MiB are written", c_request_head_endless, hostile=True),
        N.generic("one_request_one_reply", ["WS-ECHO-1", "WS-MASK-4"]),
        N.generic("pipelined_one_write", ["WS-ECHO-1", "WS-STR-2"]),
        N.generic("dribbled_byte_by_byte", ["WS-STR-1"]),
        N.generic("split_at_every_offset", ["WS-STR-1"]),
        N.generic("largest_allowed_frame", ["WS-LIM-1", "WS-LEN-1"]),
        N.generic("many_connections", ["WS-ECHO-1"]),
        N.generic("fifo_order", ["WS-ECHO-1"]),
        N.generic("oversize_closes_connection", ["WS-ECHO-2", "WS-LIM-1"]),
        N.generic("oversize_whole_frame", ["WS-LIM-1", "WS-ECHO-2"]),
        N.generic("garbage_bytes", ["WS-ECHO-2"]),
        N.generic("stops_mid_frame", ["WS-STR-3"]),
        N.generic("half_close_gets_replies", ["WS-ECHO-3"]),
        NetCase("ping_between_fragments", ["WS-CTL-3", "WS-PING-1", "WS-PING-2", "WS-FRAG-1"],
                "A ping and a pong between fragments: pong answered at once, the message echoed whole",
                c_fragments_and_ping),
        NetCase("pong_unanswered", ["WS-PING-2", "WS-PING-1"], "An unsolicited pong, a ping, a message: the ping "
                "answered, the message echoed, the pong not answered", c_pong_unanswered),
        NetCase("nothing_after_close", ["WS-CLOSE-4", "WS-CLOSE-5"], "A close, a message and a ping in one write: "
                "the close answered, nothing after it read, then the server closes", c_nothing_after_close),
        NetCase("close_code_only", ["WS-CLOSE-5"], "A close with a code and no reason, alone: the same code back, "
                "then the server closes", c_close_code_only),
        NetCase("payload_like_a_frame", ["WS-STR-1"], "A frame whose masked payload is itself a whole frame, its "
                "header sent first: one echo, of the outer payload", c_payload_like_a_frame),
        NetCase("new_message_mid_fragments_1002", ["WS-FRAG-3", "WS-ERR-1"], "A binary frame, in a read of its own, "
                "while a fragmented text message is in progress: close 1002", c_new_message_mid_fragments, hostile=True),
        NetCase("close_handshake", ["WS-CLOSE-5"], "A close frame is answered with its code, then the server closes",
                c_close_handshake),
        NetCase("unmasked_frame_1002", ["WS-ERR-1", "WS-MASK-1"], "An unmasked client frame: close 1002", c_unmasked_1002, hostile=True),
        NetCase("invalid_utf8_1007", ["WS-ERR-1", "WS-UTF8-1"], "Invalid UTF-8 in a text frame: close 1007", c_utf8_1007, hostile=True),
        NetCase("oversize_1009", ["WS-ERR-1", "WS-LIM-1"], "A frame over the limit: close 1009", c_oversize_1009, hostile=True),
        NetCase("reserved_bits_1002", ["WS-ERR-1", "WS-HDR-2"], "RSV1 set: close 1002", c_reserved_bits_1002, hostile=True),
        NetCase("nonminimal_length_1002", ["WS-ERR-1", "WS-LEN-3"], "A length in a longer form than it needs (16- and "
                "64-bit), first in its write: close 1002", c_nonminimal_1002, hostile=True),
        N.generic("tcp_nodelay", ["WS-ECHO-1"]),
        N.generic("long_connection_100k", ["WS-ECHO-1", "WS-STR-2"]),
        N.generic("connection_churn_2000", ["WS-ECHO-1"]),
        NetCase("ping_flood_unread", ["WS-PING-1", "WS-ECHO-1", "WS-RES-5"], "10,000 pings written before any read: "
                "every pong, in order", c_ping_flood, hostile=True),
        NetCase("message_over_limit_1009", ["WS-LIM-2", "WS-ERR-1"], "Fragments adding up to more than the message "
                "limit: close 1009", c_message_over_limit_1009, hostile=True),
        NetCase("control_over_125_1002", ["WS-CTL-2", "WS-ERR-1"], "A ping of 126 bytes: close 1002", c_control_over_125,
                hostile=True),
        NetCase("continuation_first_1002", ["WS-FRAG-2", "WS-ERR-1"], "A continuation frame with no message started: "
                "close 1002", c_continuation_first, hostile=True),
        NetCase("close_code_1005_1002", ["WS-CLOSE-2", "WS-ERR-1"], "A close frame carrying code 1005: close 1002",
                c_bad_close_code, hostile=True),
        NetCase("close_code_classes", ["WS-CLOSE-2", "WS-CLOSE-5", "WS-ERR-1"], "Close codes of every class and its "
                "edges (0, 999, 1000, 1011, 1012, 1014, 1015, 1016, 2999, 3000, 4999, 5000, 65535, ...) and drawn over "
                "the classes: a valid code echoed, any other failed with 1002", c_close_code_classes),
        *N.hostile_cases(ROLES),
        *N.process_cases("WS-RES-1"),
        NetCase("codec_json_read", ["HAR-CODEC-1"], "The codec JSON's optional keys given at their defaults: the "
                "server serves; a role, path, subprotocol, flag or limit the spec refuses: a usage error",
                c_codec_json),
        *deflate_cases(),
    ]


def deflate_cases() -> List[NetCase]:
    """spec/websocket-deflate.md's cases: only under a codec with permessage_deflate on."""
    from .deflate_budget import cases as budget
    from .deflate_net import cases as wsd
    return wsd() + budget()
