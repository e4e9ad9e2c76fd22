"""The opening request as a grammar (WS-HS-6): every legal spelling of a valid opening request, drawn
by Hypothesis, and the browsers' own requests (conformance/vectors/websocket/opening/).

What may vary in a valid request, and whose rule it is:
- header names in any case (RFC 7230 §3.2: field names are case-insensitive);
- optional whitespace, spaces or tabs, after the colon and after the value (RFC 7230 §3.2, OWS);
- headers in any order, and headers the server does not know (RFC 7230 §3.2.2, §3.2.1);
- `Upgrade: websocket` and the `Upgrade` token of `Connection` in any case (RFC 6455 §4.2.1 items 3-4:
  ASCII case-insensitive); `Connection` a token list, `Upgrade` anywhere in it, with `,` and OWS
  between tokens (RFC 7230 §6.1, §7), and that list spread over repeated `Connection` headers
  (RFC 7230 §3.2.2: a recipient may combine them into one list);
- the request target (any path and query, RFC 6455 §4.1 /resource name/; the configured one,
  `websocket.path`, when the codec names it) and the `Host` value (with a port or not, a name or an
  address);
- the key: any 16 bytes (RFC 6455 §4.1 item 7), so the accept value is computed, not recalled;
- the request split anywhere across TCP segments (RFC 7230 §3: a byte stream)."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import List, Optional, Tuple

from hypothesis import strategies as st

from ...coverage import CASE_CLASSES, OWS_CLASSES, case_class, declare, note, ows_class
from ...paths import ROOT

OPENING_DIR = ROOT / "conformance" / "vectors" / "websocket" / "opening"

OWS = st.sampled_from(["", "", " ", "  ", "\t", " \t "])
TARGETS = ("/", "/ws", "/chat?room=1", "/a/b/c.json?x=%20y&z", "/?")
HOSTS = ("127.0.0.1", "127.0.0.1:8080", "localhost", "localhost:80", "[::1]:9000", "example.com")
EXTRA_HEADERS = (("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) frameproof"), ("Origin", "http://127.0.0.1"),
                 ("Pragma", "no-cache"), ("Cache-Control", "no-cache"), ("Accept", "*/*"),
                 ("Accept-Encoding", "gzip, deflate, br, zstd"), ("Accept-Language", "en-US,en;q=0.9"),
                 ("Sec-Fetch-Mode", "websocket"), ("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits"),
                 ("X-Frameproof", "a: value, with: colons"), ("Cookie", "a=b; c=d"))
CONNECTION_OTHERS = ("keep-alive", "Keep-Alive", "TE", "x-token")

# The variants the grammar draws, one dimension each (frameproof/coverage.py; noted per drawn request)
_HS = ["WS-HS-6"]
HS_NAME_CASE = declare("ws.hs.name_case", CASE_CLASSES, _HS)  # of each header name
HS_OWS = declare("ws.hs.ows", OWS_CLASSES, _HS)  # after the colon and after the value
HS_ORDER = declare("ws.hs.order", ("canonical", "shuffled"), _HS)
HS_CONNECTION = declare("ws.hs.connection", ("single token", "token list", "repeated headers"), _HS)
HS_EXTRA = declare("ws.hs.extra_headers", ("none", "some"), _HS)
HS_UPGRADE_CASE = declare("ws.hs.upgrade_case", CASE_CLASSES, _HS + ["WS-HS-1"])  # Upgrade: websocket
HS_TOKEN_CASE = declare("ws.hs.connection_token_case", CASE_CLASSES, _HS + ["WS-HS-1"])  # Connection's Upgrade
HS_SEGMENTS = declare("ws.hs.segments", ("1", "2", "3", "4"), _HS)  # noted where the request is sent (net.py)


def _any_case(draw, text: str) -> str:
    """``text`` in any case: each letter flipped on its own, or (as often) all lower or all upper."""
    style = draw(st.sampled_from(["any", "lower", "upper"]))
    if style != "any":
        return text.lower() if style == "lower" else text.upper()
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if f else c.lower() for c, f in zip(text, flips))


def _token_list(draw, tokens: List[str]) -> str:
    seps = [draw(st.sampled_from([",", ", ", " ,", " , ", ",\t"])) for _ in tokens[1:]]
    out = tokens[0]
    for sep, tok in zip(seps, tokens[1:]):
        out += sep + tok
    return out


def connection_values(draw, upgrade: str) -> List[str]:
    """The values of the Connection header(s): the ``upgrade`` token (as spelled) among up to two
    others, in any order, as a token list or spread over two headers (RFC 7230 §3.2.2, §6.1)."""
    tokens = [upgrade] + list(draw(st.lists(st.sampled_from(CONNECTION_OTHERS), max_size=2, unique=True)))
    tokens = draw(st.permutations(tokens))
    if len(tokens) > 1 and draw(st.booleans()):  # the list spread over two Connection headers
        cut = draw(st.integers(1, len(tokens) - 1))
        return [_token_list(draw, tokens[:cut]), _token_list(draw, tokens[cut:])]
    return [_token_list(draw, tokens)]


@st.composite
def opening_requests(draw, path: Optional[str] = None, subprotocol: Optional[str] = None) -> Tuple[bytes, str]:
    """(a valid opening request in one legal spelling, its key); for the echo service at ``path`` (None:
    any target) offering ``subprotocol`` (None: no Sec-WebSocket-Protocol header)."""
    key = base64.b64encode(draw(st.binary(min_size=16, max_size=16))).decode()
    token = _any_case(draw, "upgrade")
    connection = connection_values(draw, token)
    upgrade = _any_case(draw, "websocket")
    headers = [("Host", draw(st.sampled_from(HOSTS))), ("Upgrade", upgrade),
               ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]
    headers += [("Connection", v) for v in connection]
    if subprotocol is not None:
        headers.append(("Sec-WebSocket-Protocol", subprotocol))
    extra = draw(st.lists(st.sampled_from(EXTRA_HEADERS), max_size=5, unique=True))
    canonical = headers + extra
    headers = draw(st.permutations(canonical))
    lines = [f"GET {path if path is not None else draw(st.sampled_from(TARGETS))} HTTP/1.1"]
    spellings = []
    for name, value in headers:
        spelled, before, after = _any_case(draw, name), draw(OWS), draw(OWS)
        lines.append(f"{spelled}:{before}{value}{after}")
        spellings.append((spelled, before, after))
    note_spelling((HS_NAME_CASE, HS_OWS, HS_ORDER, HS_CONNECTION, HS_EXTRA, HS_UPGRADE_CASE, HS_TOKEN_CASE),
                  spellings, list(headers) == canonical, connection, extra, upgrade, token)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), key


def plainest_request(path: Optional[str] = None, subprotocol: Optional[str] = None, deflate=False) -> Tuple[bytes, str]:
    """(the plainest valid opening request, its key): the RFC's spelling of each header, in its order, the
    RFC 6455 §1.3 example key, one segment; offering ``subprotocol`` and, with ``deflate``, permessage-deflate.
    The grammar case sends it first: a server that fails it fails every spelling, and Hypothesis need not
    shrink towards it, one network timeout a step (minutes against a server that never answers)."""
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    lines = [f"GET {path or '/'} HTTP/1.1", "Host: 127.0.0.1", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    lines += [f"Sec-WebSocket-Protocol: {subprotocol}"] if subprotocol is not None else []
    lines += ["Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits"] if deflate else []
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), key


def note_spelling(dims, spellings, in_order: bool, connection, extra, upgrade: str, token: str):
    """The classes one drawn head covers (the opening request's, or the 101 response's): ``dims``
    are its dimensions (name case, OWS, order, Connection, extra headers, Upgrade's case, the
    Connection token's case), ``spellings`` each header's (name as spelled, OWS before, OWS after)."""
    name_case, ows, order, conn, extras, upgrade_case, token_case = dims
    for spelled, before, after in spellings:
        note(name_case, case_class(spelled))
        note(ows, ows_class(before))
        note(ows, ows_class(after))
    note(order, "canonical" if in_order else "shuffled")
    note(conn, "repeated headers" if len(connection) > 1 else "token list" if "," in connection[0] else "single token")
    note(extras, "some" if extra else "none")
    note(upgrade_case, case_class(upgrade))
    note(token_case, case_class(token))


def for_endpoint(data: bytes, path: Optional[str] = None, subprotocol: Optional[str] = None) -> bytes:
    """A browser's request made for the configured echo service: its target replaced by ``path``, and
    ``subprotocol`` offered (a Sec-WebSocket-Protocol header before the blank line, as a browser sends
    it when the page names one, `new WebSocket(url, [subprotocol])`)."""
    if path is not None:
        first, rest = data.split(b"\r\n", 1)
        method, _target, version = first.split(b" ", 2)
        data = b" ".join((method, path.encode("latin-1"), version)) + b"\r\n" + rest
    if subprotocol is not None:
        data = data[:-2] + f"Sec-WebSocket-Protocol: {subprotocol}\r\n\r\n".encode("latin-1")
    return data


def browser_requests(path: Optional[str] = None, subprotocol: Optional[str] = None) -> List[Tuple[str, bytes, str]]:
    """(file name, request bytes, key) of every browser request in conformance/vectors/websocket/opening,
    for the echo service at ``path`` offering ``subprotocol`` (``for_endpoint``; None: as captured)."""
    out = []
    for p in sorted(Path(OPENING_DIR).glob("*.http")):
        data = for_endpoint(p.read_bytes(), path, subprotocol)
        key = next(ln.split(b":", 1)[1].strip().decode() for ln in data.split(b"\r\n")
                   if ln.lower().startswith(b"sec-websocket-key:"))
        out.append((p.name, data, key))
    return out
