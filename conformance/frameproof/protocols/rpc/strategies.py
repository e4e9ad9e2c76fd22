"""Hypothesis strategies for `rpc` streams, frames, client sessions and server sessions."""
from __future__ import annotations

from hypothesis import strategies as st

from ... import oracle
from ...checks import chunk
from ...coverage import ID_CLASSES, declare, id_class, note
from ...oracle import Error, Frame
from ...properties import Edge, Strategies, payloads, splits_of
from . import frames as K
from .frames import RpcHeader
from .oracle import RpcCodec

#: the id a server copies (RPC-HDR-7), drawn by the serve scripts and sent by the network cases
RPC_ID = declare("rpc.id", ID_CLASSES, ["RPC-HDR-7"])
#: the id of the frames the codec properties draw (encode, roundtrip, chunking, agreement, invalid)
RPC_ID_CODEC = declare("rpc.id.codec", ID_CLASSES, ["RPC-HDR-7", "RPC-HDR-1"])

NAMES = [K.ECHO_SERVICE, K.ECHO_METHOD, b"", b"svc", b"BenchEchoService", "服务".encode()]
#: the length of a service or method name (a u16 prefix, RPC-BODY-1): its byte edges, the largest (65535) and,
#: on the encoder's side only, one past it (refused, RPC-BODY-6)
NAME_LEN_CLASSES = ("0", "1-254", "255", "256", "257-65534", "65535", "65536")
NAME_LEN = declare("rpc.name_len", NAME_LEN_CLASSES, ["RPC-BODY-1", "RPC-BODY-6"])
NAME_EDGES = (255, 256, 4096, 65535)


def name_len_class(n: int) -> str:
    return ("0" if n == 0 else "1-254" if n < 255 else str(n) if n in (255, 256, 65535) else
            "257-65534" if n < 65535 else "65536")


def names():
    return st.one_of(st.sampled_from(NAMES), st.binary(max_size=12))


def edge_names(over: bool = False):
    """A name at an edge of its length field (b"n" * 255, 256, 65535, and 4096 between; with ``over`` also 65536)."""
    return st.sampled_from(NAME_EDGES + ((65536,) if over else ())).map(lambda n: bytes([0x6E]) * n)


class RpcStrategies(Strategies):
    splices = (b"GRPC\x01\x01\x04\x00\x00\x00\x00\x01\xff\xff\xff\xff", b"GRPC\x02", b"GRPC\x01\x55",
               b"GRPC\x01\x13\x00\x00\x00\x00\x00\x07\x00\x00\x00\x03abc", b"GRPC\x01\x01\x04\x00\x00\x00\x00\x01\x00\x00\x00\x01")

    def codecs(self, small_limits=True):
        limits = st.sampled_from([0, 0, 0, 16, 100, 70000]) if small_limits else st.just(0)
        return st.builds(lambda m: RpcCodec("rpc", m), limits)

    def frames_for(self, codec):
        return _frames(codec.limit)

    def encode_edges(self):
        """A REQUEST and a STREAM_INIT with the service, then the method, at 65535 bytes (the largest a u16
        prefix declares) and at 65536 (refused, RPC-BODY-6); a REQUEST of version 0, 2 and 255, either side of
        the one a sender writes (refused, RPC-HDR-3: the frame strategies draw version 1 only)."""
        out = [(RpcCodec("rpc", 0), Frame(0, 0, b"x", RpcHeader(K.REQUEST, 0, 7, K.ECHO_SERVICE, K.ECHO_METHOD, 0, v, 0)))
               for v in (0, 2, 255)]
        for kind in K.NAMED_TYPES:
            for n in (65535, 65536):
                name = bytes([0x6E]) * n
                for service, method in ((name, K.ECHO_METHOD), (K.ECHO_SERVICE, name)):
                    note(NAME_LEN, name_len_class(n))
                    out.append((RpcCodec("rpc", 0), Frame(0, 0, b"x", RpcHeader(kind, 0, 7, service, method, 0, 1, 0))))
        return out

    def invalid_edges(self):
        """The default limit (16 MiB, RPC-LIM-1) of a codec that sets none: a header declaring one byte past it is
        refused at the header; one declaring exactly it is no error (the stream ends inside that frame:
        RPC-STR-3). After a valid frame, so that the error's offset is not 0."""
        codec = RpcCodec("rpc", 0)
        first = K.request(5, b"ok")
        pre = oracle.encode(codec, first)
        return [(codec, pre + _hdr(K.DATA, 1, n) + b"abc", [first], Error(cls, len(pre)), Edge(what, ("RPC-LIM-1",)))
                for n, cls, what in ((K.DEFAULT_MAX_BODY + 1, "RPC-LIM-1", "a header one byte past the default limit"),
                                     (K.DEFAULT_MAX_BODY, "RPC-STR-3", "a header declaring exactly the default limit"))]

    def encode_cases(self):
        # half the cases a named frame with a name at an edge of its length field, one past it included
        return st.one_of(st.tuples(self.codecs(), _frames(100000)), st.tuples(self.codecs(), _edge_named_frames()))

    def invalid_streams(self):
        return _invalid_streams(self)

    def match_scripts(self):
        return _match_scripts()

    def serve_scripts(self):
        return _serve_scripts(self)


@st.composite
def _frames(draw, limit):
    kind = draw(st.sampled_from(list(K.TYPE_NAMES)))
    flags = draw(st.one_of(st.sampled_from([0, 4, 1, 5, 2, 6, 3, 7]), st.integers(0, 255)))
    rid = draw(st.one_of(st.integers(0, 300), st.sampled_from(K.ID_EDGES), st.integers(0, 2 ** 32 - 1)))
    note(RPC_ID_CODEC, id_class(rid))
    reserved = draw(st.sampled_from([0, 0, 0, 0xFF]))
    service = method = b""
    code = 0
    room = limit
    if kind in K.NAMED_TYPES:
        # one name in eight at an edge of its length field (255, 256, 65535 bytes), as room allows
        any_name = st.one_of(*[names()] * 7, edge_names())
        service, method = draw(any_name), draw(any_name)
        room -= 4 + len(service) + len(method)
        if room < 0:
            service = method = b""
            room = limit - 4
        note(NAME_LEN, name_len_class(len(service)))
        note(NAME_LEN, name_len_class(len(method)))
    elif kind == K.RESPONSE:
        code = draw(st.one_of(st.integers(0, 10), st.integers(0, 65535)))
        room -= 2
    payload = b"" if kind in K.CONTROL_TYPES or room < 0 else draw(payloads(min(room, 2 ** 31 - 1)))
    if kind in K.NAMED_TYPES and room < 0 or kind == K.RESPONSE and room < 0:
        kind = K.DATA  # the limit is too small for this type's fields
        service = method = b""
    return Frame(0, 0, payload, RpcHeader(kind, flags, rid, service, method, code, 1, reserved))


@st.composite
def _edge_named_frames(draw):
    """A REQUEST or STREAM_INIT whose service or method (or both) is at an edge of its length field, one past
    the largest (65536 bytes, which the encoder refuses: RPC-BODY-6) included."""
    kind = draw(st.sampled_from(K.NAMED_TYPES))
    service, method = draw(st.one_of(
        st.tuples(edge_names(over=True), names()), st.tuples(names(), edge_names(over=True)),
        st.tuples(edge_names(over=True), edge_names(over=True))))
    for n in (service, method):
        note(NAME_LEN, name_len_class(len(n)))
    rid = draw(st.one_of(st.integers(0, 300), st.sampled_from(K.ID_EDGES)))
    note(RPC_ID_CODEC, id_class(rid))
    flags = draw(st.sampled_from([0, 4, 1, 5, 2, 6, 3, 7]))
    return Frame(0, 0, draw(st.binary(max_size=8)), RpcHeader(kind, flags, rid, service, method, 0, 1, 0))


def _hdr(kind, rid, n, version=1, magic=b"GRPC"):
    return magic + bytes([version, kind, 0, 0]) + rid.to_bytes(4, "big") + n.to_bytes(4, "big")


@st.composite
def _invalid_streams(draw, S):
    codec, frames, prefix = draw(S.valid_streams())
    off = len(prefix)
    kind = draw(st.sampled_from(["oversize", "default_limit", "magic", "version", "type", "control_body", "short_body",
                                 "truncated"]))
    if kind == "default_limit":
        # the default limit (16 MiB, RPC-LIM-1) of a codec that sets none: one byte past it refused at the header;
        # exactly it is no error (the stream then ends inside that frame: RPC-STR-3)
        codec = RpcCodec("rpc", 0)
        frames = [f for f in frames if not isinstance(oracle.encode(codec, f), Error)]
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        over = draw(st.booleans())
        n = K.DEFAULT_MAX_BODY + 1 if over else K.DEFAULT_MAX_BODY
        return (codec, prefix + _hdr(K.DATA, 1, n) + draw(st.binary(max_size=16)), frames,
                Error("RPC-LIM-1" if over else "RPC-STR-3", len(prefix)))
    if kind == "oversize":
        limit = draw(st.integers(1, 70000))
        codec = RpcCodec("rpc", limit)
        frames = [f for f in frames if not isinstance(oracle.encode(codec, f), Error)]
        prefix = b"".join(oracle.encode(codec, f) for f in frames)
        n = draw(st.one_of(st.integers(limit + 1, limit + 100000), st.just(2 ** 32 - 1)))
        return codec, prefix + _hdr(K.REQUEST, 1, n) + draw(st.binary(max_size=16)), frames, Error("RPC-LIM-1", len(prefix))
    if kind == "magic":
        # next to GRPC on both sides (a decoder comparing by order, not equality), or any
        magic = draw(st.one_of(st.sampled_from([b"GRPB", b"GRPD", b"FRPC", b"HRPC", b"\x00\x00\x00\x00"]),
                               st.binary(min_size=4, max_size=4).filter(lambda m: m != b"GRPC")))
        return codec, prefix + _hdr(K.DATA, 1, 0, magic=magic), frames, Error("RPC-HDR-2", off)
    if kind == "version":
        v = draw(st.integers(0, 255).filter(lambda v: v != 1))
        return codec, prefix + _hdr(K.DATA, 1, 0, version=v), frames, Error("RPC-HDR-3", off)
    if kind == "type":
        t = draw(st.integers(0, 255).filter(lambda t: t not in K.TYPE_NAMES))
        return codec, prefix + _hdr(t, 1, 0), frames, Error("RPC-HDR-4", off)
    if kind == "control_body":
        t = draw(st.sampled_from(K.CONTROL_TYPES))
        n = draw(st.integers(1, min(codec.limit, 64)))
        return codec, prefix + _hdr(t, 7, n) + bytes(n), frames, Error("RPC-BODY-5", off)
    if kind == "short_body":
        t = draw(st.sampled_from([K.REQUEST, K.INIT, K.RESPONSE]))
        if t == K.RESPONSE:
            body = draw(st.binary(max_size=1))
        else:
            # the last two: the method name one byte beyond the body (4 + sl + ml = len + 1, where
            # 4 | sl or (4 + sl) | ml would not exceed it)
            body = draw(st.sampled_from([b"", b"\x00", b"\x00\x05abc", b"\x00\x01a\x00", b"\x00\x01a\x00\x09xy",
                                         b"\x00\x05abcde\x00\x01", b"\x00\x01a\x00\x01"]))
        if len(body) > codec.limit:
            body = b""
        cls = {K.REQUEST: "RPC-BODY-1", K.INIT: "RPC-BODY-3", K.RESPONSE: "RPC-BODY-2"}[t]
        return codec, prefix + _hdr(t, 3, len(body)) + body, frames, Error(cls, off)
    f = draw(S.frames_for(codec))
    enc = oracle.encode(codec, f)
    cut = draw(st.integers(1, len(enc) - 1))
    return codec, prefix + enc[:cut], frames, Error("RPC-STR-3", off)


def _ids():
    """An id a peer sends (RPC-HDR-7: copied verbatim): small, an edge of the u32 range, or any."""
    return st.one_of(st.integers(0, 9), st.sampled_from(K.ID_EDGES), st.integers(0, 2 ** 32 - 1))


@st.composite
def _match_scripts(draw):
    """Random client sessions: plain and framed calls, responses in any order (some error codes,
    some split), stray responses, frames of other types, one-way sends (refused), clock advances."""
    codec = RpcCodec("rpc")
    timeout = draw(st.sampled_from([0, 50, 1000]))
    events = []
    outstanding = []
    rid = 0
    for _ in range(draw(st.integers(1, 30))):
        op = draw(st.sampled_from(["send", "send", "frame", "reply", "reply", "stray", "other", "advance",
                                   "frame_other", "one_way"]))
        if op == "send":
            events.append(("send", draw(st.binary(max_size=12))))
            outstanding.append(rid)
            rid += 1
        elif op == "frame":
            f = K.request(draw(_ids()), draw(st.binary(max_size=8)), draw(names()), draw(names()),
                          draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7])))
            events.append(("send_frame", f))
            outstanding.append(rid)
            rid += 1
        elif op == "frame_other":
            # a frame that is no call (a client sends REQUESTs only): refused, and takes no id (RPC-ID-1)
            f = draw(st.sampled_from([K.stream(K.DATA, draw(_ids()), b"d"), K.response(draw(_ids()), b"r"),
                                      K.init(draw(_ids())), K.stream(K.END, draw(_ids()))]))
            events.append(("send_frame", f))
        elif op == "one_way":
            # rpc has no one-way call: refused, and takes no id (spec/testee.md, RPC-ID-1)
            events.append(("send_one_way", draw(st.binary(max_size=4))))
        elif op == "reply" and outstanding:
            r = outstanding.pop(draw(st.integers(0, len(outstanding) - 1)))
            f = K.response(r, draw(st.binary(max_size=12)), draw(st.sampled_from([0, 0, 2, 3])),
                           draw(st.sampled_from([4, 5, 0])))
            data = oracle.encode(codec, f)
            for piece in chunk(data, draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=2))):
                events.append(("receive", piece))
        elif op == "stray":
            events.append(("receive", oracle.encode(codec, K.response(draw(_ids()), b"s"))))
        elif op == "other":
            events.append(("receive", oracle.encode(codec, K.stream(K.DATA, draw(st.integers(0, 5)), b"d"))))
        elif op == "advance":
            events.append(("advance_ms", draw(st.sampled_from([1, 10, 49, 50, 999, 3000]))))
    return codec, events, timeout


@st.composite
def _client_frames(draw, endpoint):
    """Frames a client might send to ``endpoint``: mostly the endpoint's own, some foreign; ids over
    the whole u32 range (small ones often, so that a stream's frames share its id; the edges; any)."""
    rid = draw(_ids())
    note(RPC_ID, id_class(rid))
    if endpoint == "stream":
        kind = draw(st.sampled_from([K.INIT, K.INIT, K.DATA, K.DATA, K.DATA, K.END, K.CANCEL, K.INIT_ACK,
                                     K.REQUEST, K.HEARTBEAT]))
    else:
        kind = draw(st.sampled_from([K.REQUEST] * 6 + [K.RESPONSE, K.DATA, K.HEARTBEAT]))
    if kind in K.NAMED_TYPES:
        svc = draw(st.sampled_from([K.ECHO_SERVICE, K.ECHO_SERVICE, b"other"]))
        # unknown methods sorting after and before `echo` (compared for equality, RPC-ECHO-2)
        meth = draw(st.sampled_from([K.ECHO_METHOD, K.ECHO_METHOD, b"nope", b"abc"]))
        f = K.request(rid, draw(_echo_payloads()), svc, meth, draw(st.integers(0, 7)))
        return f if kind == K.REQUEST else K.init(rid, svc, meth)
    if kind == K.RESPONSE:
        return K.response(rid, b"r")
    return K.stream(kind, rid, b"" if kind in K.CONTROL_TYPES else draw(_echo_payloads()))


def _echo_payloads():
    """Payloads a client sends to an echo endpoint: mostly short, some of a few dozen to 300 bytes
    (replies beyond what a wrongly bounded reply encoder lets through, RPC-ECHO-1, RPC-STREAM-2)."""
    return st.one_of(st.binary(max_size=10), st.binary(max_size=10),
                     st.builds(lambda n, b: bytes([b]) * n, st.sampled_from([31, 32, 34, 300]), st.integers(0, 255)))


@st.composite
def unary_only_scripts(draw, S):
    """Sessions of the unary endpoint calling the method registered for the UNARY call mode only (RPC-ECHO-8) in
    every call mode and flags byte, between calls of `echo` (and a name that only starts like it), any split."""
    codec = draw(S.codecs(small_limits=False))
    frames = []
    for _ in range(draw(st.integers(1, 8))):
        rid = draw(_ids())
        meth = draw(st.sampled_from([K.UNARY_ONLY_METHOD] * 4 + [K.ECHO_METHOD, b"unary_onl", b"unary_only_"]))
        frames.append(K.request(rid, draw(_echo_payloads()), K.ECHO_SERVICE, meth, draw(st.integers(0, 7))))
    data = b"".join(oracle.encode(codec, f) for f in frames)
    return codec, "unary", data, draw(splits_of(data)), draw(st.booleans())


@st.composite
def _serve_scripts(draw, S):
    """A session of either endpoint: the endpoint's frames (valid or mutated), split anyhow."""
    endpoint = draw(st.sampled_from(["", "unary", "stream"]))
    codec = draw(S.codecs(small_limits=False))
    frames = draw(st.lists(_client_frames(endpoint), max_size=8))
    data = b"".join(oracle.encode(codec, f) for f in frames)
    if draw(st.integers(0, 3)) == 0:
        _c, bad = draw(S.arbitrary_streams())
        data += bad
    return codec, endpoint, data, draw(splits_of(data)), draw(st.booleans())
