"""The client side of the opening handshake (WS-HS-7), checked on a load client (`frameproof net
--client`): the suite plays the echo server and answers each of the client's connections with its own
spelling of a valid 101 response, drawn by Hypothesis; the client must accept every one (it sends its
messages on that connection and reports no error). Then it answers responses a client MUST refuse
(RFC 6455 §4.1, the client's checks 1-6): the client must send no frame on those connections.

What may vary in a valid response, and whose rule it is:
- the reason phrase, empty included (RFC 7230 §3.1.2: the client SHOULD ignore it);
- header names in any case (RFC 7230 §3.2); `Upgrade: websocket` and the `Upgrade` token of
  `Connection` in any case (RFC 6455 §4.1, client checks 2-3: ASCII case-insensitive);
- `Connection` a token list (`Upgrade, keep-alive`), also spread over repeated headers (RFC 7230 §3.2.2,
  §6.1, §7); optional whitespace after the colon and after the value (RFC 7230 §3.2, OWS);
- headers in any order, and headers the client does not know (`Server`, `Date`, a
  `Sec-WebSocket-Version` echo, ...) (RFC 7230 §3.2.1-2);
- the response split at any byte across TCP segments (RFC 7230 §3: a byte stream);
- and, in a case of its own (the canonical response), the first frame arriving in the same segment as
  the response's end: an unsolicited pong (WS-PING-2), also cut inside it (RFC 6455 §4.1: frames follow
  the blank line at once).

A spelling is shrunk towards the RFC's own example (RFC 6455 §1.3): case flips, whitespace, extra
headers, list tokens and segment boundaries all shrink away, so a refused spelling is reported with
only what the client cannot take."""
from __future__ import annotations

import math
import os
import shlex
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

from hypothesis import strategies as st

from ...checks import CheckFailure
from ...clientsuite import client_results
from ...coverage import CASE_CLASSES, OWS_CLASSES, declare, note
from .frames import CLOSE
from ...reference import CodecError
from .handshake_grammar import connection_values, note_spelling
from .net import offered_in
from .reference import ServerOpening, accept_for

ACCEPT = "\x00"  # the accept value's place in a head; replaced by the value of the connection's key
PONG_BYTES = b"\x8a\x02fp"  # an unsolicited pong from the server (unmasked), payload "fp"
WRONG_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="  # RFC 6455 §1.3's value: the accept of another key
REASONS = ("Switching Protocols", "", "Web Socket Protocol Handshake", "switching protocols", "OK", "Upgrade")
EXTRA = (("Server", "nginx/1.25.3"), ("Date", "Tue, 15 Nov 1994 08:12:31 GMT"), ("Sec-WebSocket-Version", "13"),
         ("X-Powered-By", "frameproof"), ("Cache-Control", "no-cache, private"), ("Via", "1.1 proxy"),
         ("Set-Cookie", "a=b; Path=/; HttpOnly"), ("X-Frameproof", "a: value, with: colons"))
OWS_AFTER_COLON = st.sampled_from([" ", "", "  ", "\t", " \t "])
OWS_TRAILING = st.sampled_from(["", " ", "\t", " \t"])
CANONICAL = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", ACCEPT)]
GRAMMAR_SPELLINGS = 40  # spellings per client suite run, each on its own connection
MAX_RUNS = 16  # client runs for them at most (a run opens as many connections as its command says)
SHRINK_RUNS = 30  # client runs spent shrinking a refused spelling at most
CASE_TIMEOUT = float(os.environ.get("FRAMEPROOF_CLIENT_TIMEOUT", "60"))

# The variants ``responses`` draws, one dimension each (frameproof/coverage.py; noted per drawn response)
_HS7 = ["WS-HS-7"]
R_REASON = declare("ws.client101.reason", ("canonical", "empty", "other"), _HS7)
R_NAME_CASE = declare("ws.client101.name_case", CASE_CLASSES, _HS7)  # of each header name
R_OWS = declare("ws.client101.ows", OWS_CLASSES, _HS7)  # after the colon and after the value
R_ORDER = declare("ws.client101.order", ("canonical", "shuffled"), _HS7)
R_CONNECTION = declare("ws.client101.connection", ("single token", "token list", "repeated headers"), _HS7)
R_EXTRA = declare("ws.client101.extra_headers", ("none", "some"), _HS7)
R_UPGRADE_CASE = declare("ws.client101.upgrade_case", CASE_CLASSES, _HS7)
R_TOKEN_CASE = declare("ws.client101.connection_token_case", CASE_CLASSES, _HS7)
R_SEGMENTS = declare("ws.client101.segments", ("1", "2", "3", "4"), _HS7)


@dataclass(frozen=True)
class Spelling:
    """One response: its head (``ACCEPT`` in place of the accept value), the offsets where it is cut
    into TCP segments, and how many bytes of an unsolicited pong share the head's last segment (None:
    no frame follows the head). A drawn spelling keeps its parts (the reason phrase, and for each header
    its canonical name, its spelling, its value and the whitespace around the value) so that it can be
    simplified part by part (``simpler``); a fixed one is a ``raw`` head."""
    raw: str = ""
    cuts: Tuple[int, ...] = ()
    pong: Optional[int] = None
    reason: str = "Switching Protocols"
    headers: Tuple[Tuple[str, str, str, str, str], ...] = ()  # (canonical name, spelled name, value, OWS, OWS)

    @property
    def head(self) -> str:
        if self.raw:
            return self.raw
        return "\r\n".join([f"HTTP/1.1 101 {self.reason}"] + [f"{n}:{a}{v}{b}" for _c, n, v, a, b in self.headers]) \
            + "\r\n\r\n"

    def segments(self, key: str) -> List[bytes]:
        head = self.head.replace(ACCEPT, accept_for(key)).encode("latin-1")
        cuts = sorted(set(c for c in self.cuts if 0 < c < len(head)))
        segs = [head[a:b] for a, b in zip([0] + cuts, cuts + [len(head)])]
        if self.pong is not None:
            segs[-1] += PONG_BYTES[:self.pong]
            if PONG_BYTES[self.pong:]:
                segs.append(PONG_BYTES[self.pong:])
        return segs

    def show(self) -> str:
        text = repr(self.head.replace(ACCEPT, "<accept>"))
        if self.cuts:
            text += f", cut at {sorted(set(self.cuts))}"
        if self.pong is not None:
            text += f", then a pong, {self.pong} of its {len(PONG_BYTES)} bytes in the head's last segment"
        return text


CANONICAL_VALUE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Accept": ACCEPT}
ORDER = {"Upgrade": 0, "Connection": 1, "Sec-WebSocket-Accept": 2}


def simpler(sp: Spelling):
    """Spellings one step closer to RFC 6455 §1.3's (each undoes one variation of ``sp``), coarse first."""
    from dataclasses import replace
    if sp.pong is not None:
        yield replace(sp, pong=None)
    if sp.cuts:
        yield replace(sp, cuts=())
    if sp.reason != "Switching Protocols":
        yield replace(sp, reason="Switching Protocols")
    hs = list(sp.headers)
    extra = [i for i, h in enumerate(hs) if h[0] not in CANONICAL_VALUE]
    if extra:
        yield replace(sp, headers=tuple(h for h in hs if h[0] in CANONICAL_VALUE))
    for i in extra:
        yield replace(sp, headers=tuple(hs[:i] + hs[i + 1:]))
    conns = [i for i, h in enumerate(hs) if h[0] == "Connection"]
    if len(conns) > 1:
        first = hs[conns[0]]
        yield replace(sp, headers=tuple((first[0], first[1], "Upgrade", first[3], first[4]) if i == conns[0] else h
                                        for i, h in enumerate(hs) if i == conns[0] or h[0] != "Connection"))
    for i, (c, n, v, a, b) in enumerate(hs):
        for fixed in ((c, c, v, a, b), (c, n, CANONICAL_VALUE.get(c, v), a, b), (c, n, v, " ", "")):
            if fixed != hs[i]:
                yield replace(sp, headers=tuple(hs[:i] + [fixed] + hs[i + 1:]))
    ordered = sorted(hs, key=lambda h: ORDER.get(h[0], 3))
    if ordered != hs:
        yield replace(sp, headers=tuple(ordered))


def head_of(status: str, headers) -> str:
    return "\r\n".join([status] + [f"{k}: {v}" for k, v in headers]) + "\r\n\r\n"


def _vary_case(draw, canonical: str) -> str:
    """``canonical`` with letters flipped one by one, or (now and then) all lower or all upper."""
    style = draw(st.sampled_from(["flips", "flips", "lower", "upper"]))
    if style != "flips":
        return canonical.lower() if style == "lower" else canonical.upper()
    flips = draw(st.lists(st.booleans(), min_size=len(canonical), max_size=len(canonical)))
    return "".join(c.swapcase() if f else c for c, f in zip(canonical, flips))


@st.composite
def responses(draw) -> Spelling:
    """A valid 101 response in one legal spelling (shrinking towards RFC 6455 §1.3's)."""
    reason = draw(st.sampled_from(REASONS))
    token = _vary_case(draw, "Upgrade")
    connection = connection_values(draw, token)
    upgrade = _vary_case(draw, "websocket")
    headers = [("Upgrade", upgrade)] + [("Connection", v) for v in connection]
    headers += [("Sec-WebSocket-Accept", ACCEPT)]
    extra = draw(st.lists(st.sampled_from(EXTRA), max_size=4, unique=True))
    canonical = headers + extra
    headers = draw(st.permutations(canonical))
    parts = tuple((name, _vary_case(draw, name), value, draw(OWS_AFTER_COLON), draw(OWS_TRAILING))
                  for name, value in headers)
    cuts = tuple(draw(st.lists(st.integers(1, 240), max_size=3)))
    sp = Spelling("", cuts, None, reason, parts)  # a frame in the head's segment: c_frame_with_the_head
    note(R_REASON, "canonical" if reason == "Switching Protocols" else "empty" if not reason else "other")
    note_spelling((R_NAME_CASE, R_OWS, R_ORDER, R_CONNECTION, R_EXTRA, R_UPGRADE_CASE, R_TOKEN_CASE),
                  [(spelled, before, after) for _c, spelled, _v, before, after in parts],
                  list(headers) == canonical, connection, extra, upgrade, token)
    n = len(sp.head.replace(ACCEPT, "x" * 28))  # the head's length once the accept value is in
    note(R_SEGMENTS, str(1 + len({c for c in cuts if 0 < c < n})))
    return sp


def _without(name):
    return [(k, v) for k, v in CANONICAL if k != name]


#: responses a client MUST refuse (RFC 6455 §4.1, the client's checks 1-6): (what is wrong, head)
REFUSE = [
    ("status 200, not 101 (§4.1 check 1)", head_of("HTTP/1.1 200 OK", CANONICAL)),
    ("status 426 (§4.1 check 1)", head_of("HTTP/1.1 426 Upgrade Required", CANONICAL + [("Sec-WebSocket-Version", "13")])),
    ("no Upgrade header (§4.1 check 2)", head_of("HTTP/1.1 101 Switching Protocols", _without("Upgrade"))),
    ("Upgrade: h2c (§4.1 check 2)", head_of("HTTP/1.1 101 Switching Protocols",
                                            [("Upgrade", "h2c")] + _without("Upgrade"))),
    ("Connection: keep-alive, no Upgrade token (§4.1 check 3)",
     head_of("HTTP/1.1 101 Switching Protocols", _without("Connection") + [("Connection", "keep-alive")])),
    ("no Sec-WebSocket-Accept (§4.1 check 4)", head_of("HTTP/1.1 101 Switching Protocols",
                                                       _without("Sec-WebSocket-Accept"))),
    ("a wrong Sec-WebSocket-Accept, the value of another key (§4.1 check 4)",
     head_of("HTTP/1.1 101 Switching Protocols", _without("Sec-WebSocket-Accept") +
             [("Sec-WebSocket-Accept", WRONG_ACCEPT)])),
    ("Sec-WebSocket-Extensions: permessage-deflate, not offered (§4.1 check 5)",
     head_of("HTTP/1.1 101 Switching Protocols", CANONICAL + [("Sec-WebSocket-Extensions", "permessage-deflate")])),
    ("Sec-WebSocket-Protocol: chat, not offered (§4.1 check 6)",
     head_of("HTTP/1.1 101 Switching Protocols", CANONICAL + [("Sec-WebSocket-Protocol", "chat")])),
]


def request_problem(codec, text: str) -> Optional[str]:
    """What is wrong with a client's opening request head for the configured echo service: not valid
    (WS-HS-1), another resource than ``websocket.path``, or ``websocket.subprotocol`` not offered."""
    op = ServerOpening("", codec)
    reply = op.answer(text)
    target = text.split("\r\n", 1)[0].split(" ")
    if not op.ok and reply.startswith(b"HTTP/1.1 404") and len(target) == 3:
        return f"the request asks for {target[1]!r}, not the configured websocket.path {codec.path!r}: {text!r}"
    if not op.ok:
        return f"not a valid opening request (WS-HS-1): {text!r} (answer {reply[:12]!r})"
    sub = getattr(codec, "subprotocol", None)
    if sub is not None and sub not in offered_in(text):
        return f"the request does not offer the configured websocket.subprotocol {sub!r}: {text!r}"
    return None


def _names_only_offered(head: str, offered: str) -> bool:
    """Whether every extension and subprotocol the response ``head`` names was offered (so a client may
    take the response for that reason)."""
    named = []
    for ln in head.split("\r\n")[1:]:
        k, _, v = ln.partition(":")
        if k.strip().lower() in ("sec-websocket-extensions", "sec-websocket-protocol"):
            named += [x.split(";", 1)[0].strip() for x in v.split(",") if x.strip()]
    # an offer's name without its parameters: a client offering `permessage-deflate; client_max_window_bits`
    # offered permessage-deflate (a deflate client took the bare answer and was failed for it)
    have = [x.split(";", 1)[0].strip() for x in offered.split(",")]
    return bool(named) and all(x in have for x in named)


# -- the checking server: one thread a connection, each answered with its own response
class _Conn:
    def __init__(self, no: int, spelling: Spelling):
        self.no, self.spelling = no, spelling
        self.request_error = None  # the client's request is not a valid opening request (WS-HS-1)
        self.offered = ""  # extensions / subprotocols the client offered
        self.answered = False
        self.frames = 0  # frames the client sent after the response
        self.first = None  # the first of them (in refuse mode, the only one read)
        self.error = None  # a malformed frame from the client


class ScriptedServer:
    """Answers connection i with ``plan(i)`` (a Spelling); in ``refuse`` mode a frame after it is noted
    and the connection closed, otherwise the connection is an echo server (WS-ECHO-1, WS-CLOSE-5)."""

    def __init__(self, codec, plan, refuse=False, sink=False):
        self.codec, self.proto, self.plan, self.refuse, self.sink = codec, codec.spec, plan, refuse, sink
        self.conns: List[_Conn] = []
        self.stop = threading.Event()
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.lsock.settimeout(0.1)
        self.port = self.lsock.getsockname()[1]
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                sock, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c = _Conn(len(self.conns) + 1, self.plan(len(self.conns)))
            self.conns.append(c)
            th = threading.Thread(target=self._serve, args=(sock, c), daemon=True)
            self.threads.append(th)
            th.start()

    def _recv(self, sock) -> bytes:
        """The next bytes; b"" at EOF or once the server stops."""
        while not self.stop.is_set():
            try:
                return sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return b""
        return b""

    def _serve(self, sock, c: _Conn):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(0.1)
            buf = b""
            while b"\r\n\r\n" not in buf:
                data = self._recv(sock)
                if not data:
                    c.request_error = f"the client closed before its request was complete ({buf[:80]!r})"
                    return
                buf += data
                if len(buf) > 65536:
                    c.request_error = "the client's request head has no end within 64 KiB"
                    return
            head, rest = buf.split(b"\r\n\r\n", 1)
            text = head.decode("latin-1")
            c.request_error = request_problem(self.codec, text)
            if c.request_error:
                return
            hdrs = {}
            for ln in text.split("\r\n")[1:]:
                k, _, v = ln.partition(":")
                hdrs[k.strip().lower()] = v.strip()
            c.offered = ", ".join(hdrs[k] for k in ("sec-websocket-extensions", "sec-websocket-protocol") if k in hdrs)
            sub = getattr(self.codec, "subprotocol", None)
            if sub is not None and not self.refuse and not c.spelling.raw and c.no % 2 == 0:
                # every other connection selects the configured subprotocol it offered (RFC 6455 §4.1 item 6)
                from dataclasses import replace
                c.spelling = replace(c.spelling, headers=c.spelling.headers + (
                    ("Sec-WebSocket-Protocol", "Sec-WebSocket-Protocol", sub, " ", ""),))
            segs = c.spelling.segments(hdrs["sec-websocket-key"])
            for i, seg in enumerate(segs):
                sock.sendall(seg)
                if i < len(segs) - 1:
                    time.sleep(0.003)  # one segment each (TCP_NODELAY)
            c.answered = True
            self._frames(sock, c, rest)
        except OSError:
            pass
        finally:
            sock.close()

    def _frames(self, sock, c: _Conn, data: bytes):
        ref, codec = self.proto.reference, self.codec
        dec = ref.decoder(codec)
        replier = self.proto.echo_replier(codec)
        while True:
            if not data:
                data = self._recv(sock)
                if not data:
                    return
            err = None
            try:
                frames = dec.feed(data)
            except CodecError as e:
                frames, err = e.frames, e
            data = b""
            out = bytearray()
            for f in frames:
                c.frames += 1
                if c.first is None:
                    c.first = f
                if self.refuse:
                    return
                try:
                    r = replier(f)
                except CodecError as e:
                    err = e
                    break
                if r is not None and not (self.sink and self.proto.counted(r)):
                    out += ref.encode(codec, r, 2 ** 31 - 1)
            if err is not None:
                if not getattr(err, "clean", False):
                    c.error = f"a malformed frame from the client ({err})"
                out += self.proto.closing_bytes(codec, err)
            if out:
                sock.sendall(bytes(out))
            if err is not None:
                return

    def close(self):
        self.stop.set()
        try:
            self.lsock.close()
        except OSError:
            pass
        for th in self.threads:
            th.join(2)


@dataclass
class Run:
    rc: int
    report: Optional[dict]
    conns: List[_Conn]
    output: str


def run_client(t, plan, refuse=False, timeout=CASE_TIMEOUT) -> Run:
    """One run of the client's command against a ScriptedServer."""
    srv = ScriptedServer(t.codec, plan, refuse, t.sink)
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fp-client-")
    os.close(fd)
    os.unlink(jpath)
    cmd = t.command.replace("{host}", "127.0.0.1").replace("{port}", str(srv.port)).replace("{json}", jpath)
    out = tempfile.TemporaryFile()
    try:
        p = subprocess.Popen(shlex.split(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=t.cwd, start_new_session=True)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            raise CheckFailure(f"the client did not finish within {timeout:g} s")
    finally:
        srv.close()
    text, report = client_results(out, jpath)
    if report is not None and "__invalid__" in report:
        report = None  # an unreadable report counts as none here
    return Run(p.returncode, report, list(srv.conns), text[-2000:])


def _request_problems(r: Run) -> List[str]:
    return [f"connection {c.no}: {c.request_error}" for c in r.conns if c.request_error]


def _grammar_verdict(r: Run) -> Optional[Tuple[str, List[Spelling]]]:
    """None when the client accepted every response of the run, else (why, the refused spellings)."""
    bad = _request_problems(r)
    if bad:
        raise CheckFailure("the client's opening request is not valid (WS-HS-1):\n  " + "\n  ".join(bad))
    if not r.conns:
        return "the client opened no connection\n--- client output ---\n" + r.output, []
    refused = [c for c in r.conns if c.answered and c.frames == 0]
    errs = (r.report or {}).get("errors")
    details = (r.report or {}).get("error_details") or []
    if refused:
        why = "\n".join(f"  connection {c.no}: sent no frame after {c.spelling.show()}" for c in refused)
        return (f"the client refused {len(refused)} of {len(r.conns)} valid responses:\n{why}\n  client's errors: "
                f"{details[:3] or r.output[-600:]}"), [c.spelling for c in refused]
    if errs or r.rc != 0 or any(c.error for c in r.conns):
        why = "; ".join(c.error for c in r.conns if c.error)
        return (f"after valid responses the client reports errors = {errs}, exit status {r.rc} {why}\n"
                f"  client's errors: {details[:3] or r.output[-600:]}\n  responses: "
                + "\n    ".join(c.spelling.show() for c in r.conns)), [c.spelling for c in r.conns]
    return None


def connections_of(t) -> int:
    from ...clientsuite import clean
    return max(1, min(16, clean(t).stats.connections))


def _refused_alone(t, sp: Spelling) -> bool:
    """Whether the client refuses ``sp`` on a run whose every connection is answered with it."""
    return _grammar_verdict(run_client(t, lambda i: sp)) is not None


def shrink(t, sp: Spelling, budget: int) -> Tuple[Spelling, int]:
    """``sp`` made as simple as the client still refuses (``simpler``, greedy), within ``budget`` runs."""
    runs, changed = 0, True
    while changed and runs < budget:
        changed = False
        for cand in simpler(sp):
            if runs >= budget:
                break
            runs += 1
            if _refused_alone(t, cand):
                sp, changed = cand, True
                break
    return sp, runs


def c_response_grammar(t):
    """Valid 101 responses in legal spellings, drawn by Hypothesis (derandomized, GRAMMAR_SPELLINGS in
    all): each run of the client answers its k connections with k spellings. A refused spelling is
    confirmed on a run of its own, then shrunk (``simpler``) and reported in its smallest form."""
    from hypothesis import HealthCheck, Phase, given, settings

    k = connections_of(t)
    runs = max(4, min(MAX_RUNS, math.ceil(GRAMMAR_SPELLINGS / k)))
    found = []  # the first failing run's verdict

    @settings(max_examples=runs, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.lists(responses(), min_size=k, max_size=k))
    def prop(spellings):
        if not found:
            v = _grammar_verdict(run_client(t, lambda i: spellings[i % len(spellings)]))
            if v is not None:
                found.append(v)
    prop()
    if not found:
        return
    why, suspects = found[0]
    for sp in dict.fromkeys(suspects):
        if _refused_alone(t, sp):
            small, n = shrink(t, sp, SHRINK_RUNS)
            raise CheckFailure(f"the client refuses a valid 101 response; smallest refused spelling (shrunk in {n} "
                               f"runs, every connection answered with it):\n  {small.show()}\n  as drawn: "
                               f"{sp.show()}\nthe run that found it: {why}", ["WS-HS-7"])
    raise CheckFailure(why, ["WS-HS-7"])


def c_frame_with_the_head(t):
    """The canonical 101 with an unsolicited pong (WS-PING-2) in the same segment as its end: whole,
    cut inside its header, and in a segment of its own; the client must read it as a frame and carry on."""
    plan = [Spelling(head_of("HTTP/1.1 101 Switching Protocols", CANONICAL), (), n) for n in (len(PONG_BYTES), 1, 0)]
    v = _grammar_verdict(run_client(t, lambda i: plan[i % len(plan)]))
    if v is not None:
        raise CheckFailure("a frame arriving with the end of the 101 (an unsolicited pong, which a client accepts and "
                           "does not answer, WS-PING-2): " + v[0])


def c_refuses_bad_responses(t):
    """Each response a client MUST refuse, on every connection of one run: the client sends no frame on
    any of them and exits non-zero."""
    failures = []
    for what, head in REFUSE:
        r = run_client(t, lambda i, h=head: Spelling(h), refuse=True, timeout=min(CASE_TIMEOUT, 30))
        bad = _request_problems(r)
        if bad:
            raise CheckFailure("the client's opening request is not valid (WS-HS-1):\n  " + "\n  ".join(bad))
        took = [c for c in r.conns if c.answered and c.frames and not _names_only_offered(head, c.offered)]
        if took:
            failures.append(f"{what}: the client sent frames on {len(took)} of {len(r.conns)} connections "
                            f"answered {Spelling(head).show()}")
        elif r.conns and r.rc == 0:
            failures.append(f"{what}: the client sent nothing but exited 0 (a refused handshake is an error)")
    if failures:
        raise CheckFailure(f"the client accepts {len(failures)} of {len(REFUSE)} responses it MUST refuse "
                           f"(RFC 6455 §4.1):\n  " + "\n  ".join(failures), ["WS-HS-7"])


# responses naming permessage-deflate that no client may take (WSD-NEG-5): invalid whatever the client
# offered, and a client that offered nothing fails any response naming the extension
DEFLATE_REFUSE = [
    ("an unknown parameter", "permessage-deflate; foo"),
    ("a parameter given twice", "permessage-deflate; server_no_context_takeover; server_no_context_takeover"),
    ("server_max_window_bits=16", "permessage-deflate; server_max_window_bits=16"),
    ("a window value with a leading zero", "permessage-deflate; server_max_window_bits=010"),
    ("a value on client_no_context_takeover", "permessage-deflate; client_no_context_takeover=1"),
    ("two permessage-deflate elements", "permessage-deflate, permessage-deflate"),
]


def _is_close(frame, code: int) -> bool:
    """``frame`` is a close frame carrying ``code``."""
    h = getattr(frame, "header", None)
    return h is not None and h.opcode == CLOSE and bytes(frame.payload[:2]) == code.to_bytes(2, "big")


def c_refuses_bad_deflate_responses(t):
    """Each permessage-deflate response a client MUST fail (WSD-NEG-5): after it the client sends no
    frame but a close 1002 (the spec's "close 1002, sending nothing else"), and exits non-zero."""
    failures = []
    for what, value in DEFLATE_REFUSE:
        head = head_of("HTTP/1.1 101 Switching Protocols", CANONICAL + [("Sec-WebSocket-Extensions", value)])
        r = run_client(t, lambda i, h=head: Spelling(h), refuse=True, timeout=min(CASE_TIMEOUT, 30))
        took = [c for c in r.conns if c.answered and c.frames and not _is_close(c.first, 1002)]
        if took:
            failures.append(f"{what} (Sec-WebSocket-Extensions: {value}): the client sent frames on {len(took)} of "
                            f"{len(r.conns)} connections")
        elif r.conns and r.rc == 0:
            failures.append(f"{what} (Sec-WebSocket-Extensions: {value}): the client sent nothing but exited 0")
    if failures:
        raise CheckFailure(f"the client accepts {len(failures)} of {len(DEFLATE_REFUSE)} permessage-deflate responses it "
                           f"MUST fail (RFC 7692 §7.1):\n  expected each refused (no frame but a close 1002, a non-zero exit)\n  actual\n  "
                           + "\n  ".join(failures), ["WSD-NEG-5"])


def client_cases():
    from ...clientsuite import ClientCase
    return [
        ClientCase("opening_response_grammar", ["WS-HS-7"], "The client accepts valid 101 responses in every legal "
                   "spelling (header case, whitespace, order, extra headers, token lists, reason phrase, any split); "
                   "a refused one is shrunk", c_response_grammar),
        ClientCase("opening_response_then_frame", ["WS-HS-7", "WS-PING-2"], "The client reads a frame (an "
                   "unsolicited pong) that arrives in the same segment as the end of the 101, also cut inside it",
                   c_frame_with_the_head),
        ClientCase("opening_response_refused", ["WS-HS-7"], "The client refuses a 101 it MUST fail (status, "
                   "Upgrade, Connection, Sec-WebSocket-Accept, an extension or subprotocol not offered)",
                   c_refuses_bad_responses),
        ClientCase("deflate_response_refused", ["WSD-NEG-5"], "The client fails a 101 whose permessage-deflate "
                   "element is invalid (unknown or repeated parameter, bad window value, two elements), offered or not",
                   c_refuses_bad_deflate_responses),
    ]
