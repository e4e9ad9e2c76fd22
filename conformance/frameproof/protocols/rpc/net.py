"""`frameproof net --protocol rpc`: the network cases (RPC-ECHO-*, RPC-STREAM-*), generic ones from
frameproof.netsuite with this protocol's requirement IDs, and the rpc-only ones: unknown names,
the four call modes, the stream endpoint's transitions (RPC-ECHO-7: the first frame of a connection
picks the endpoint) and hostile headers.

What the server under test offers comes from its codec (spec §9a, ``oracle.RpcCodec``): the endpoints
(``unary``, ``stream`` or both; the stream endpoint on a port of its own when ``rpc.stream_address``
names one) and the names of its echo handler. Every case runs on the endpoint it tests, its healthy
traffic too; a case whose endpoint the server does not offer is skipped with the reason."""
from __future__ import annotations

from dataclasses import replace
from typing import List

from ... import netsuite as N
from ...checks import CheckFailure
from ...coverage import id_class, note
from ...netsuite import Conn, NetCase, SkipCase, payload_for, roundtrip
from ...netsuite.conn import rss_settled
from . import frames as K

ENDPOINTS = ("unary", "stream")


def on_endpoint(t, endpoint):
    """The target serving ``endpoint`` (the stream endpoint's own address where the codec gives one);
    SkipCase when the server does not offer it."""
    eps = tuple(getattr(t.codec, "endpoints", ENDPOINTS))
    if endpoint not in eps:
        raise SkipCase(f"needs the {endpoint} endpoint; the server offers only {' and '.join(eps)} "
                       f"(codec rpc.endpoints)")
    addr = getattr(t.codec, "stream_address", "")
    if endpoint == "stream" and addr:
        host, _, port = addr.rpartition(":")
        return replace(t, host=host.strip("[]"), port=int(port), pid=None)  # its RSS is not watched
    return t


def _on(endpoint, case: NetCase) -> NetCase:
    run = case.run
    return replace(case, run=lambda t: run(on_endpoint(t, endpoint)))


def unary(case: NetCase) -> NetCase:
    """``case`` runs on the unary endpoint (skipped where the server has none)."""
    return _on("unary", case)


def stream(case: NetCase) -> NetCase:
    """``case`` runs on the stream endpoint (skipped where the server has none)."""
    return _on("stream", case)


def _names(t):
    c = t.codec
    return getattr(c, "service", K.ECHO_SERVICE), getattr(c, "method", K.ECHO_METHOD)


def _stream_names(t):
    return getattr(t.codec, "stream_names", (K.ECHO_SERVICE, K.ECHO_METHOD))


def _other(name: bytes) -> bytes:
    """A name that is not ``name``."""
    return name + b"-unknown" if name else b"unknown"


def _req(t, rid, payload=b"", flags=K.END_STREAM, method=None):
    service, meth = _names(t)
    return K.request(rid, payload, service, meth if method is None else method, flags)


def _init(t, sid, service=None, method=None):
    s, m = _stream_names(t)
    return K.init(sid, s if service is None else service, m if method is None else method)


def _hdr(kind, rid, n, version=1, magic=b"GRPC", flags=0):
    return magic + bytes([version, kind, flags, 0]) + rid.to_bytes(4, "big") + n.to_bytes(4, "big")


def exchange(t, frames, expected, ctx, quiet=0.3):
    """Sends ``frames`` in one write on a fresh connection; the replies must be ``expected`` exactly,
    and nothing more must arrive within ``quiet`` seconds."""
    c = Conn(t)
    try:
        c.send(b"".join(c.frame(f) for f in frames))
        got = c.read_frames(len(expected))
        for i, (e, a) in enumerate(zip(expected, got)):
            if e != a:
                raise CheckFailure(f"{ctx}reply {i}:\n  expected {e.short()}\n  actual   {a.short()}")
        extra = c.idle(quiet)
        if extra:
            raise CheckFailure(f"{ctx}expected nothing more, got {len(extra)} bytes: {extra[:24].hex(' ')}")
    finally:
        c.close()


class StreamAlongside:
    """A healthy stream kept open during a hostile case on the stream endpoint and checked at its end
    (the stream endpoint's healthy traffic: STREAM_INIT, DATA, END, never a REQUEST)."""

    SID = 0xA1

    def __init__(self, t):
        self.t = t
        self.c = Conn(t)
        self._check([_init(t, self.SID), K.stream(K.DATA, self.SID, b"alongside-before")],
                    [K.stream(K.INIT_ACK, self.SID), K.stream(K.DATA, self.SID, b"alongside-before")],
                    "healthy stream before the hostile input: ")

    def _check(self, frames, expected, ctx):
        self.c.send(b"".join(self.c.frame(f) for f in frames))
        for i, (e, a) in enumerate(zip(expected, self.c.read_frames(len(expected)))):
            if e != a:
                raise CheckFailure(f"{ctx}reply {i}:\n  expected {e.short()}\n  actual   {a.short()}")

    def check(self):
        try:
            self._check([K.stream(K.DATA, self.SID, b"alongside-after"), K.stream(K.END, self.SID)],
                        [K.stream(K.DATA, self.SID, b"alongside-after"), K.stream(K.END, self.SID)],
                        "the healthy stream opened before the hostile input: ")
        finally:
            self.c.close()


def stream_healthy(t, ctx):
    s = K.stream
    exchange(t, [_init(t, 77)] + [s(K.DATA, 77, b"still-alive-%d" % i) for i in range(1, 4)] + [s(K.END, 77)],
             [s(K.INIT_ACK, 77)] + [s(K.DATA, 77, b"still-alive-%d" % i) for i in range(1, 4)] + [s(K.END, 77)], ctx)


def stream_watched(t, body, ctx):
    """netsuite.watched on the stream endpoint: ``body()`` with a healthy stream alongside, then a
    fresh stream connection; RSS bounded."""
    side = StreamAlongside(t)
    before = N.rss_kib(t.pid)
    body()
    side.check()
    stream_healthy(t, f"after {ctx}, a fresh stream connection: ")
    rss_settled(t, before, ctx, 64 * 1024)


# Ids a server copies, over the whole u32 range: its edges (K.ID_EDGES) and a fixed sample between
# (RPC-HDR-7: carried verbatim)
ID_EDGES = K.ID_EDGES
ID_SAMPLE = (0x00010000, 0x01000000, 0x12345678, 0x9E3779B9, 0xC0000000, 0xDEADBEEF, 0xFF000000, 0xFFFF0000)


def c_ids_whole_range(t):
    for rid in ID_EDGES + ID_SAMPLE:
        note("rpc.id", id_class(rid))
    reqs = [_req(t, rid, b"id-%08x" % rid, flags=rid % 8) for rid in ID_EDGES + ID_SAMPLE]
    roundtrip(t, reqs, "unary requests with ids over the whole u32 range, each answered with its own id: ")


def c_stream_ids_whole_range(t):
    for sid in ID_EDGES:
        note("rpc.id", id_class(sid))
        exchange(t, [_init(t, sid), K.stream(K.DATA, sid, b"sid-%08x" % sid), K.stream(K.END, sid)],
                 [K.stream(K.INIT_ACK, sid), K.stream(K.DATA, sid, b"sid-%08x" % sid), K.stream(K.END, sid)],
                 f"a stream with id {sid:#010x}: ")


def c_modes(t):
    reqs = [_req(t, i, b"mode-%d" % fl, flags=fl) for i, fl in enumerate((0, 4, 1, 5, 2, 6, 3, 7))]
    roundtrip(t, reqs, "one response per request in every call mode, flags mode|END_STREAM: ")


def c_unknown_names(t):
    service, method = _names(t)
    reqs = [K.request(20, b"a", _other(service), method), K.request(21, b"b", service, _other(method)),
            K.request(22, b"c", b"" if service else b"x", b""), _req(t, 23, b"still served")]
    roundtrip(t, reqs, "unknown service (code 2), unknown method (code 3), then an echo: ")


def c_largest(t):
    service, method = _names(t)
    n = t.limit - 4 - len(service) - len(method)
    roundtrip(t, [_req(t, 3, payload_for(n, n)), _req(t, 4, b"after-largest")],
              f"a REQUEST whose body is the largest allowed ({t.limit} bytes): ")


def c_stream_echo(t):
    s = K.stream
    exchange(t, [_init(t, 7), s(K.DATA, 7, b"abc"), s(K.DATA, 99, b"other id"), s(K.END, 7), _init(t, 8),
                 s(K.DATA, 8, b"second stream"), s(K.END, 8)],
             [s(K.INIT_ACK, 7), s(K.DATA, 7, b"abc"), s(K.DATA, 7, b"other id"), s(K.END, 7), s(K.INIT_ACK, 8),
              s(K.DATA, 8, b"second stream"), s(K.END, 8)],
             "stream INIT, DATA (one with another id), END, then a second stream: ")


def c_stream_cancel(t):
    s = K.stream
    exchange(t, [_init(t, 7), s(K.DATA, 7, b"x"), s(K.CANCEL, 7), _init(t, 9), s(K.DATA, 9, b"y")],
             [s(K.INIT_ACK, 7), s(K.DATA, 7, b"x"), s(K.INIT_ACK, 9), s(K.DATA, 9, b"y")],
             "a client CANCEL gets no reply and the next INIT opens a stream: ")


def c_stream_refusals(t):
    s = K.stream
    service, method = _stream_names(t)
    exchange(t, [s(K.DATA, 8, b"before init"), _init(t, 3, _other(service)), _init(t, 4, service, _other(method)),
                 _init(t, 5), _init(t, 6), s(K.DATA, 6, b"z")],
             [s(K.CANCEL, 8), s(K.CANCEL, 3), s(K.CANCEL, 4), s(K.INIT_ACK, 5), s(K.CANCEL, 5), s(K.CANCEL, 6)],
             "DATA before INIT, unknown service and method, a second INIT while a stream is open: ")


def c_first_frame_stream_types(t):
    """RPC-ECHO-7 at the edges of the stream types (0x10-0x14): a connection whose first frame is a
    STREAM_INIT_ACK, a STREAM_END or a STREAM_CANCEL is the stream endpoint's, which cancels it (RPC-STREAM-5)
    and then serves a stream; the unary endpoint would have closed the connection (RPC-ECHO-4)."""
    s = K.stream
    for kind in (K.INIT_ACK, K.END, K.CANCEL):
        exchange(t, [s(kind, 9), _init(t, 5), s(K.DATA, 5, b"ok"), s(K.END, 5)],
                 [s(K.CANCEL, 9), s(K.INIT_ACK, 5), s(K.DATA, 5, b"ok"), s(K.END, 5)],
                 f"a {K.TYPE_NAMES[kind]} as the connection's first frame, then a stream: ")


def c_first_frame_endpoint(t):
    """RPC-ECHO-7 and §9a: the first frame of each endpoint's kind on a fresh connection. Both endpoints on one port:
    a REQUEST is echoed, a STREAM_INIT opens a stream. A server offering the unary endpoint only closes on a
    STREAM_INIT (RPC-ECHO-4); one offering the stream endpoint only cancels a REQUEST (RPC-STREAM-5) and then
    serves a stream (a one-endpoint server that still chose by the first frame's type passed every other case)."""
    s = K.stream
    eps = tuple(getattr(t.codec, "endpoints", ENDPOINTS))
    stream_rest = [_init(t, 6), s(K.DATA, 6, b"ok"), s(K.END, 6)]
    stream_back = [s(K.INIT_ACK, 6), s(K.DATA, 6, b"ok"), s(K.END, 6)]
    if "unary" in eps:
        u = on_endpoint(t, "unary")
        if "stream" in eps and not getattr(t.codec, "stream_address", ""):
            exchange(u, stream_rest, stream_back, "a STREAM_INIT as the first frame of a server with both endpoints: ")
        elif "stream" not in eps:
            _init_t = _init(u, 6)
            N.hostile(u, Conn(u).frame(_init_t), "a STREAM_INIT as the first frame of a server offering the unary "
                      "endpoint only", expect_replies=0)
        r = _req(u, 5, b"first")
        exchange(u, [r], [K.response(5, b"first")], "a REQUEST as the first frame: ")
    if eps == ("stream",):
        exchange(t, [_req(t, 5, b"x")] + stream_rest, [s(K.CANCEL, 5)] + stream_back,
                 "a REQUEST as the first frame of a server offering the stream endpoint only, then a stream: ")


def c_stream_end_with_body(t):
    stream_watched(t, lambda: _stream_end_with_body(t), "a STREAM_END with a body")


def _stream_end_with_body(t):
    c = Conn(t)
    try:
        c.send(c.frame(_init(t, 7)) + _hdr(K.END, 7, 3) + b"abc" + c.frame(_init(t, 8)))
        got = c.read_frames(1)
        if got[0] != K.stream(K.INIT_ACK, 7):
            raise CheckFailure(f"reply 0:\n  expected {K.stream(K.INIT_ACK, 7).short()}\n  actual   {got[0].short()}")
        c.expect_closed(what=" after a STREAM_END with a 3-byte body")
    finally:
        c.close()


def c_gigabytes(t):
    N.hostile(t, _hdr(K.REQUEST, 9, 2 ** 32 - 1, flags=4), "a header promising a 4 GiB body")


def c_unary_only(t):
    """RPC-ECHO-8: the method registered for UNARY only is served in mode 0 and answered
    METHOD_NOT_FOUND in the three other modes (the server routes by service, method and mode)."""
    only = getattr(t.codec, "unary_only", None)
    if only is None:
        raise SkipCase("the codec names no method registered for the UNARY call mode only (rpc.unary_only; "
                       "the conformance echo service's is \"unary_only\", RPC-ECHO-8)")
    service, _ = _names(t)
    c = Conn(t)
    try:
        flags = (4, 0, 1, 5, 2, 6, 3, 7)
        reqs = [K.request(i, b"unary-only-%d" % fl, service, only, fl) for i, fl in enumerate(flags)]
        c.send(b"".join(c.frame(r) for r in reqs) + c.frame(_req(t, 8, b"echo after")))
        exp = [K.response(i, r.payload if fl & 3 == 0 else b"", 0 if fl & 3 == 0 else K.CODE_METHOD_NOT_FOUND,
                          (fl & 3) | K.END_STREAM) for i, (r, fl) in enumerate(zip(reqs, flags))]
        exp.append(K.response(8, b"echo after"))
        for i, (e, a) in enumerate(zip(exp, c.read_frames(len(exp)))):
            if e != a:
                mode = flags[i] & 3 if i < len(flags) else 0
                raise CheckFailure(f"{service.decode(errors='replace')}/{only.decode(errors='replace')} in call mode "
                                   f"{mode} (registered for UNARY only), reply {i}:\n  expected {e.short()}\n"
                                   f"  actual   {a.short()}")
    finally:
        c.close()


ROLES = dict(prefix="RPC", close="RPC-ECHO-4", lim="RPC-LIM-1", mem="RPC-LIM-3", trunc="RPC-STR-3",
             stop="RPC-STR-4", split="RPC-STR-1", half="RPC-ECHO-5", order="RPC-ECHO-3")


def c_stream_flood_unread(t):
    """A stream: INIT, then 20,000 DATA frames written before any read: every echo, in order."""
    s = K.stream

    def body():
        c = Conn(t)
        try:
            frames = [_init(t, 5)] + [s(K.DATA, 5, payload_for(i, 12)) for i in range(20000)] + [s(K.END, 5)]
            c.send(b"".join(c.frame(f) for f in frames))
            got = c.read_frames(len(frames), timeout=N.READ_TIMEOUT * 6)
            exp = [s(K.INIT_ACK, 5)] + frames[1:]
            for i, (e, a) in enumerate(zip(exp, got)):
                if e != a:
                    raise CheckFailure(f"stream reply {i}:\n  expected {e.short()}\n  actual   {a.short()}")
        finally:
            c.close()
    stream_watched(t, body, "20,000 stream DATA frames written before any read")


def c_counters_on_stop_streams(t):
    """HAR-SRV-1 on the stream endpoint: two connections of one stream each on a server started for the case
    (STREAM_DATA payloads of 0, 1, 255, 4096 and 65536 bytes), then SIGTERM: the JSON line counts the two
    connections, the DATA frames (the INIT and END of each stream may count too) and their payload bytes."""
    from ...netsuite.process_cases import _own_server, check_counters
    if not t.server_cmd:
        raise SkipCase("needs the server's command (frameproof net --server-cmd), not a running server")
    if getattr(t.codec, "stream_address", ""):
        raise SkipCase("the stream endpoint has an address of its own (rpc.stream_address): a server started for "
                       "the case would not serve it")
    on_endpoint(t, "stream")  # skips where the server has no stream endpoint
    srv = _own_server(t)
    s = K.stream
    sizes = [n for n in (0, 1, 255, 4096, 65536) if n + 64 <= t.limit]
    frames = nbytes = 0
    try:
        own = replace(t, host=srv.host, port=srv.port, pid=srv.proc.pid)
        for k, sid in enumerate((3, 0xFFFFFFF0)):
            data = [s(K.DATA, sid, payload_for(k * 10 + i, n)) for i, n in enumerate(sizes[k:] + sizes[:k])]
            exchange(own, [_init(own, sid)] + data + [s(K.END, sid)], [s(K.INIT_ACK, sid)] + data + [s(K.END, sid)],
                     f"stream {sid} on the server started for this case: ", quiet=0.05)
            frames += len(data)
            nbytes += sum(len(f.payload) for f in data)
    finally:
        stopped = srv.stop()
    check_counters(stopped, {"connections": [2], "frames": [frames, frames + 4], "bytes": [nbytes], "protocol_errors": [0]},
                   f"2 connections of one stream each, {frames} STREAM_DATA frames of {nbytes} payload bytes (sizes "
                   f"{sizes}) between each stream's INIT and END")


def c_heartbeat_flood(t):
    """10,000 HEARTBEAT frames on the unary endpoint: a protocol violation at the first one (RPC-ECHO-4)."""
    N.hostile(t, _hdr(K.HEARTBEAT, 1, 0) * 10000, "10,000 heartbeats on the unary endpoint")


def cases() -> List[NetCase]:
    h = N.hostile
    u, st = unary, stream
    return [
        u(N.generic("one_request_one_reply", ["RPC-ECHO-1"])),
        u(N.generic("pipelined_one_write", ["RPC-ECHO-3", "RPC-STR-2"])),
        u(N.generic("dribbled_byte_by_byte", ["RPC-STR-1"])),
        u(N.generic("split_at_every_offset", ["RPC-STR-1"])),
        u(NetCase("largest_allowed_frame", ["RPC-LIM-1", "RPC-ECHO-1"], "A REQUEST whose body is exactly the limit",
                  c_largest)),
        u(N.generic("many_connections", ["RPC-ECHO-3"])),
        u(N.generic("fifo_order", ["RPC-ECHO-3"])),
        u(NetCase("call_modes", ["RPC-MODE-1", "RPC-MODE-2", "RPC-ECHO-1"],
                  "Each of the four call modes, with and without END_STREAM: one response, flags mode|END", c_modes)),
        u(NetCase("unary_only_routing", ["RPC-ECHO-8", "RPC-MODE-1"], "A method registered for UNARY only: "
                  "echoed in mode 0, METHOD_NOT_FOUND in modes 1-3 (runs when the codec names it, rpc.unary_only)",
                  c_unary_only)),
        u(NetCase("ids_whole_range", ["RPC-HDR-7", "RPC-ECHO-1"], "Requests with ids over the whole u32 range (0, "
                  "2^31 - 1, 2^31, 2^32 - 1, a sample between) are answered with their own ids", c_ids_whole_range)),
        st(NetCase("stream_ids_whole_range", ["RPC-HDR-7", "RPC-STREAM-2"], "Streams with ids at the edges of the "
                   "u32 range: ACK, DATA and END carry the stream's id", c_stream_ids_whole_range)),
        u(NetCase("unknown_service_and_method", ["RPC-ECHO-2"],
                  "Unknown service: code 2; unknown method: code 3; the connection stays open", c_unknown_names)),
        st(NetCase("stream_echo", ["RPC-STREAM-1", "RPC-STREAM-2", "RPC-STREAM-3", "RPC-ECHO-7"],
                   "A connection starting with STREAM_INIT is a stream: ACK, DATA echoed with the INIT's id, END",
                   c_stream_echo)),
        st(NetCase("stream_cancel", ["RPC-STREAM-4", "RPC-STREAM-1"], "A client CANCEL is not answered",
                   c_stream_cancel)),
        NetCase("first_frame_endpoint", ["RPC-ECHO-7", "RPC-ECHO-4", "RPC-STREAM-5"], "A REQUEST or a STREAM_INIT "
                "as a connection's first frame: the endpoint it picks, or on a server offering one endpoint, that one",
                c_first_frame_endpoint, hostile=True),
        st(NetCase("first_frame_stream_types", ["RPC-ECHO-7", "RPC-STREAM-5"], "A STREAM_INIT_ACK, STREAM_END or "
                   "STREAM_CANCEL as a connection's first frame picks the stream endpoint: cancelled, then a stream "
                   "is served", c_first_frame_stream_types)),
        st(NetCase("stream_refusals", ["RPC-STREAM-5", "RPC-STREAM-6", "RPC-STREAM-7", "RPC-ECHO-7"],
                   "DATA before INIT, unknown names and a second INIT are answered with CANCEL", c_stream_refusals)),
        st(NetCase("stream_end_with_body_closes", ["RPC-BODY-5", "RPC-STREAM-8"],
                   "A STREAM_END with a body closes the connection", c_stream_end_with_body, hostile=True)),
        u(N.generic("oversize_closes_connection", ["RPC-ECHO-4", "RPC-LIM-1"])),
        u(N.generic("oversize_whole_frame", ["RPC-LIM-1", "RPC-ECHO-4"])),
        u(NetCase("header_promises_4gib", ["RPC-LIM-3", "RPC-LIM-1"], "A header promising 4 GiB: no allocation, "
                  "server keeps serving", c_gigabytes, hostile=True)),
        u(NetCase("bad_magic_closes", ["RPC-HDR-2", "RPC-ECHO-4"], "A header with magic GRPX closes the connection",
                  lambda t: h(t, _hdr(K.REQUEST, 1, 0, magic=b"GRPX"), "magic GRPX"), hostile=True)),
        u(NetCase("bad_version_closes", ["RPC-HDR-3", "RPC-ECHO-4"], "A header with version 2 closes the connection",
                  lambda t: h(t, _hdr(K.REQUEST, 1, 4, version=2) + b"\0\0\0\0", "version 2"), hostile=True)),
        u(NetCase("bad_type_closes", ["RPC-HDR-4", "RPC-ECHO-4"], "A header with type 0x55 closes the connection",
                  lambda t: h(t, _hdr(0x55, 1, 0), "type 0x55"), hostile=True)),
        u(NetCase("short_request_body_closes", ["RPC-BODY-1", "RPC-ECHO-4"],
                  "A REQUEST whose service length runs past its body closes the connection",
                  lambda t: h(t, _hdr(K.REQUEST, 1, 3, flags=4) + b"\x00\x09a", "a short REQUEST body"), hostile=True)),
        u(NetCase("end_with_body_closes", ["RPC-BODY-5", "RPC-ECHO-4"], "A STREAM_END with a body on a unary "
                  "connection closes it", lambda t: h(t, _hdr(K.END, 1, 3) + b"abc", "a STREAM_END with a body"),
                  hostile=True)),
        u(NetCase("non_request_closes", ["RPC-ECHO-4"], "A RESPONSE sent to the unary endpoint closes the connection",
                  lambda t: h(t, _hdr(K.RESPONSE, 1, 2) + b"\x00\x00", "a RESPONSE frame"), hostile=True)),
        u(NetCase("first_frame_non_request_closes", ["RPC-ECHO-7", "RPC-ECHO-4"], "A RESPONSE, then a HEARTBEAT, "
                  "as a connection's very first frame: not a stream type, so the unary endpoint takes the connection "
                  "and closes it (every other case opens with a REQUEST, which picks the unary endpoint by itself)",
                  lambda t: [h(t, _hdr(kind, 1, n) + bytes(n), f"a {name} as the first frame", expect_replies=0)
                             for kind, n, name in ((K.RESPONSE, 2, "RESPONSE"), (K.HEARTBEAT, 0, "HEARTBEAT"))],
                  hostile=True)),
        u(NetCase("stream_frame_after_request_closes", ["RPC-ECHO-7", "RPC-ECHO-4"], "A REQUEST, then a valid "
                  "STREAM_INIT to the echo service on the same connection: the REQUEST chose the unary endpoint, which "
                  "closes on the STREAM_INIT (a server that kept choosing by each frame's type would open a stream)",
                  lambda t: h(t, _hdr(K.INIT, 9, 4 + len(K.ECHO_SERVICE) + len(K.ECHO_METHOD))
                              + len(K.ECHO_SERVICE).to_bytes(2, "big") + K.ECHO_SERVICE
                              + len(K.ECHO_METHOD).to_bytes(2, "big") + K.ECHO_METHOD,
                              "a STREAM_INIT after a REQUEST"), hostile=True)),
        u(N.generic("garbage_bytes", ["RPC-LIM-3", "RPC-HDR-2"])),
        u(N.generic("stops_mid_frame", ["RPC-STR-3"])),
        u(N.generic("half_close_gets_replies", ["RPC-ECHO-5"])),
        u(N.generic("tcp_nodelay", ["RPC-ECHO-6"])),
        u(N.generic("long_connection_100k", ["RPC-ECHO-3", "RPC-HDR-7"])),
        u(N.generic("connection_churn_2000", ["RPC-ECHO-3"])),
        st(NetCase("stream_flood_unread", ["RPC-STREAM-2", "RPC-ECHO-3", "RPC-RES-5"], "A stream of 20,000 DATA "
                   "frames written before any read: every echo, in order", c_stream_flood_unread, hostile=True)),
        NetCase("counters_on_stop_streams", ["HAR-SRV-1", "RPC-STREAM-2"], "A server started for the case counts "
                "the stream endpoint's DATA frames and payload bytes, and prints them on SIGTERM",
                c_counters_on_stop_streams),
        u(NetCase("heartbeat_flood_closes", ["RPC-ECHO-4"], "10,000 HEARTBEATs on the unary endpoint: closed at the "
                  "first", c_heartbeat_flood, hostile=True)),
        *[u(c) for c in N.hostile_cases(ROLES)],
        *[u(c) for c in N.process_cases("RPC-RES-1")],
    ]
