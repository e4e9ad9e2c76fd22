"""The opening handshakes a websocket server must refuse (WS-HS-1, WS-HS-3, WS-HS-9): malformed requests (a bad
key, another method, no Host, the request line over its parts and versions) get a 4xx, a version other than 13 or
none gets 426 with Sec-WebSocket-Version: 13, a target other than the configured path a 4xx, and after every
refusal nothing was upgraded."""
from __future__ import annotations

import base64

from ... import netsuite as N
from ...checks import CheckFailure
from .net import _raw, endpoint_head, offer_of, read_head, request_head


def _statuses(want) -> str:
    """``400`` / ``400 or 426`` / ``400-499`` (a run of consecutive codes as a range)."""
    w = sorted(want)
    if len(w) > 2 and w == list(range(w[0], w[-1] + 1)):
        return f"one of {w[0]}-{w[-1]}"
    return " or ".join(map(str, w))


def _refused(t, head: bytes, want, ctx):
    c = _raw(t)
    try:
        c.send(head)
        try:
            status, hdrs = read_head(c)
        except CheckFailure as e:  # no answer at all: say which request and what was due
            raise CheckFailure(f"{ctx}:\n  expected status {_statuses(want)}\n  actual   {e}\n"
                               f"  request: {head.decode('latin-1')!r}", e.requirements) from None
        if status not in want:
            raise CheckFailure(f"{ctx}:\n  expected status {_statuses(want)}\n  actual   {status}\n"
                               f"  request: {head.decode('latin-1')!r}")
        _not_upgraded(c, ctx)
        return hdrs
    finally:
        c.close()


NOT_UPGRADED_PING = b"no-upgrade"


def _not_upgraded(c, ctx):
    """After a refusal, no upgrade (WS-HS-1): a masked ping sent on the connection is not answered with a pong
    (a server may close, keep quiet, or answer the bytes as HTTP; a planted server that refused the request but
    went on to read frames answered it)."""
    key = b"\x11\x22\x33\x44"
    try:
        c.send(bytes([0x89, 0x80 | len(NOT_UPGRADED_PING)]) + key + bytes(b ^ key[i % 4] for i, b in enumerate(NOT_UPGRADED_PING)))
    except OSError:
        return  # closed: nothing was upgraded
    got = c.idle(0.2)
    if bytes([0x8A, len(NOT_UPGRADED_PING)]) + NOT_UPGRADED_PING in got:
        raise CheckFailure(f"{ctx}:\n  expected no upgrade after the refusal\n  actual   a ping sent after it was "
                           f"answered with a pong: the connection was upgraded anyway", ["WS-HS-1"])


def _request_line(head: bytes, change) -> bytes:
    """``head`` with its request line (the first) changed by ``change``."""
    line, rest = head.split(b"\r\n", 1)
    return change(line) + b"\r\n" + rest


def c_bad_requests(t):
    key16 = base64.b64encode(b"0123456789abcdef").decode()
    for ctx, head in [
        ("no Sec-WebSocket-Key", endpoint_head(t, key=None)),
        ("a key of 8 bytes", endpoint_head(t, key=base64.b64encode(b"12345678").decode())),
        ("a key that is not base64", endpoint_head(t, key="not base64 at all!!")),
        ("POST", endpoint_head(t, key=key16, method="POST")),
        ("no Upgrade header", endpoint_head(t, key=key16, upgrade=None)),
        ("Connection without Upgrade", endpoint_head(t, key=key16, connection="keep-alive")),
        ("no Host", endpoint_head(t, key=key16, host=None)),
        # the key over its edges: 20 bytes, and 16 bytes with a character outside base64 in the middle
        ("a key of 20 bytes", endpoint_head(t, key=base64.b64encode(b"0123456789abcdefghij").decode())),
        ("a key with a character outside base64", endpoint_head(t, key=key16[:8] + "*" + key16[8:])),
        ("a header line without a colon", endpoint_head(t, key=key16, extra="X-No-Colon here\r\n")),
    ]:
        _refused(t, head, range(400, 500), f"a handshake with {ctx}")
    N.healthy(t, "after refused handshakes, a fresh connection: ")


def c_bad_request_line(t):
    """The request line: an HTTP/1.1 or higher GET (RFC 6455 §4.2.1 item 1), with all three of its parts;
    an otherwise valid request with HTTP/1.0, with no version, or with another method gets a 4xx."""
    key16 = base64.b64encode(b"0123456789abcdef").decode()
    for ctx, change in [("HTTP/1.0 in the request line", lambda ln: ln.replace(b"HTTP/1.1", b"HTTP/1.0")),
                        ("a request line without its HTTP version", lambda ln: ln.rsplit(b" ", 1)[0]),
                        # methods on either side of GET as text
                        ("a request line of four parts", lambda ln: ln + b" extra"),
                        ("the method DELETE", lambda ln: b"DELETE" + ln[3:]),
                        ("the method PUT", lambda ln: b"PUT" + ln[3:])]:
        _refused(t, _request_line(endpoint_head(t, key=key16), change), range(400, 500), f"a handshake with {ctx}")
    N.healthy(t, "after refused handshakes, a fresh connection: ")


def other_targets(path: str) -> list:
    """Request targets that are not ``path``: its parent and ``path`` less its last character (prefixes),
    ``path`` with a character more, and ``path`` with its last character one below and one above as text
    (a letter or digit only, so that each is still a valid target)."""
    out = [path.rstrip("/").rsplit("/", 1)[0] or "/", path[:-1] or "/x", path + "x"]
    last = path[-1]
    if last.isalnum() and last not in "0aA9zZ":
        out += [path[:-1] + chr(ord(last) - 1), path[:-1] + chr(ord(last) + 1)]
    return [p for i, p in enumerate(out) if p != path and p not in out[:i]]


def c_other_paths(t):
    """A server whose codec names ``websocket.path`` refuses every other target (WS-HS-9): otherwise valid
    requests for a prefix of the path, the path with more after it, and paths on either side of it as text
    get a 4xx and no upgrade."""
    for target in other_targets(t.codec.path):
        _refused(t, request_head(target=target, extra=offer_of(t.codec)), range(400, 500),
                 f"a handshake for {target} (the echo service is at {t.codec.path})")
    N.healthy(t, "after refused handshakes, a fresh connection: ")


def c_version_426(t):
    """A version other than 13 (a draft's 8, 12 which sorts below "13" as text, 14 above it): 426 with
    Sec-WebSocket-Version: 13 (WS-HS-3)."""
    _versions_426(t, ("8", "12", "14"))


def c_version_missing_426(t):
    """No Sec-WebSocket-Version header at all, in an otherwise valid request: 426 too (WS-HS-3)."""
    _versions_426(t, (None,))


def _versions_426(t, versions):
    for version in versions:
        ctx = f"Sec-WebSocket-Version: {version}" if version else "no Sec-WebSocket-Version"
        hdrs = _refused(t, endpoint_head(t, version=version), (426,), ctx)
        if hdrs.get("sec-websocket-version", "").replace(" ", "") not in ("13",) and "13" not in hdrs.get("sec-websocket-version", ""):
            raise CheckFailure(f"426 answer to {ctx}: expected Sec-WebSocket-Version: 13, actual "
                               f"{hdrs.get('sec-websocket-version')!r}")
