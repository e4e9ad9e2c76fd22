"""The `rpc` protocol (spec/rpc.md): galay-rpc's frames, a 16-byte big-endian header and a typed
body; unary calls matched by request id, and a stream echo endpoint beside the unary one."""
from __future__ import annotations

from ... import lazy
from ... import oracle as O
from ...long_stream import long_stream_check
from ...checks import CheckFailure, check_serve, chunk, chunk_every
from ...oracle import Error, Frame
from ..base import Protocol
from . import frames as K
from . import discovery, discovery_pb, load, net, oracle, reference
from .frames import RpcHeader
from .oracle import RpcCodec

# imported on first use (frameproof/lazy.py): a process that only encodes, decodes or serves never needs them
st = lazy.module("hypothesis.strategies")
P = lazy.module("frameproof.properties")
discovery_suite = lazy.module("frameproof.protocols.rpc.discovery_suite")
strategies_mod = lazy.module("frameproof.protocols.rpc.strategies")
given = lazy.given

_HEADER_KEYS = ("type", "flags", "id", "service", "method", "error_code", "version", "reserved")


def _serve_check(codec, endpoint, chunks, half_close, got, context=""):
    """check_serve, where a header breaking several requirements may close with any of them (§11)."""
    exp = oracle.serve(codec, endpoint, chunks, half_close)
    if got.error is not None and exp.error is not None and got.error.offset == exp.error.offset and \
            got.error.requirement in oracle.serve_alternatives(codec, chunks, exp):
        exp.error = got.error
    check_serve(exp, got, context)


def serving(S):
    def run(testee):
        @given(S.serve_scripts())
        def prop(case):
            codec, endpoint, whole, chunks, half_close = case
            got = testee.serve(codec, endpoint, chunks, half_close)
            _serve_check(codec, endpoint, chunks, half_close, got,
                         f"endpoint {endpoint or 'default'}: {len(whole)} bytes in {len(chunks)} chunks"
                         f"{', then EOF' if half_close else ''} ({codec}): ")
        prop()
    return run


def scripted(cases):
    """Fixed serve sessions, each tied to the requirements its expectation states."""
    def run(testee):
        codec = RpcCodec("rpc")
        failures, broken = [], []
        for name, reqs, endpoint, frames, half_close, splits in cases:
            data = b"".join(f if isinstance(f, bytes) else O.encode(codec, f) for f in frames)
            for how, chunks in (("whole", [data]), ("as given", chunk(data, splits)), ("byte by byte", chunk_every(data, 1))):
                if how == "as given" and not splits:
                    continue
                try:
                    _serve_check(codec, endpoint, chunks, half_close,
                                 testee.serve(codec, endpoint, chunks, half_close))
                except CheckFailure as e:
                    failures.append(f"{name} ({how}, endpoint {endpoint or 'default'}):\n{e}")
                    broken += [r for r in reqs if r not in broken]
                    break
        if failures:
            raise CheckFailure(f"{len(failures)} of {len(cases)} sessions differ; first: " + failures[0], broken)
    return run


E = K.ECHO_SERVICE


def _valid_request_tail(rid):
    """Bytes 4.. of an encoded REQUEST to the echo service (everything after the magic)."""
    return oracle.encode(RpcCodec("rpc"), K.request(rid, b"tail"))[4:]


UNARY_CASES = [
    ("echo in the four modes", ["RPC-ECHO-1", "RPC-MODE-1", "RPC-MODE-2"], "unary",
     [K.request(i, b"m%d" % i, flags=fl) for i, fl in enumerate([0, 4, 1, 5, 2, 6, 3, 7])], True, [20]),
    ("flags bits 3-7 are not echoed", ["RPC-MODE-2"], "unary", [K.request(9, b"x", flags=0xFD)], False, []),
    ("unknown service and method", ["RPC-ECHO-2"], "",
     [K.request(20, b"a", b"BenchEchoService"), K.request(21, b"b", E, b"nope"), K.request(22, b"c")], False, [30]),
    ("a RESPONSE closes the connection", ["RPC-ECHO-4"], "", [K.request(1, b"a"), K.response(2, b"r"), K.request(3)], False, []),
    ("a STREAM_INIT closes the unary connection", ["RPC-ECHO-4"], "unary", [K.request(1, b"a"), K.init(2), K.request(3)], True, []),
    ("half-close answers complete requests", ["RPC-ECHO-5"], "",
     [K.request(1, b"a"), K.request(2, b"b"), oracle.encode(RpcCodec("rpc"), K.request(3, b"c"))[:20]], True, [5]),
    ("a decoding error closes after earlier responses", ["RPC-ECHO-4", "RPC-STR-4"], "",
     [K.request(1, b"a"), b"GRPC\x02\x01\x04\x00\x00\x00\x00\x02\x00\x00\x00\x00", K.request(3)], False, []),
    # replies longer than a few dozen bytes: a reply encoder with a wrong bound refuses them
    ("long payloads are echoed whole", ["RPC-ECHO-1"], "unary",
     [K.request(1, bytes(range(32))), K.request(2, bytes(range(34))), K.request(3, b"L" * 300)], False, [40]),
    # method names compared for equality, not order: names sorting before and after `echo` and `unary_only`
    ("method names are compared exactly", ["RPC-ECHO-2"], "unary",
     [K.request(30, b"a", E, b"abc"), K.request(31, b"b", E, b""), K.request(32, b"c", E, b"ech", flags=0),
      K.request(33, b"d", E, b"echo\x00", flags=5), K.request(34, b"e", E, b"zzz", flags=0)], False, []),
    # the magic compared for equality: one just below and one just above GRPC, the rest a valid REQUEST
    ("a magic just below GRPC closes", ["RPC-HDR-2", "RPC-ECHO-4"], "",
     [K.request(1, b"a"), b"GRPB" + _valid_request_tail(2)], False, []),
    ("a magic just above GRPC closes", ["RPC-HDR-2", "RPC-ECHO-4"], "",
     [K.request(1, b"a"), b"GRPD" + _valid_request_tail(2)], False, []),
    # a method name one byte beyond the body (service length 5: 4 + 5 and 4 | 5 differ, as do 9 + 1, 9 | 1)
    ("a method name one byte beyond the body closes", ["RPC-BODY-1", "RPC-ECHO-4"], "",
     [K.request(1, b"a"), b"GRPC\x01\x01\x04\x00\x00\x00\x00\x02\x00\x00\x00\x09\x00\x05abcde\x00\x01",
      K.request(3)], False, [20]),
]
S_ = K.stream
STREAM_CASES = [
    ("INIT is acknowledged", ["RPC-STREAM-1"], "stream", [K.init(7)], False, [3]),
    ("DATA is echoed with the INIT's id", ["RPC-STREAM-2"], "stream",
     [K.init(7), S_(K.DATA, 7, b"abc"), S_(K.DATA, 99, b"other id"), S_(K.DATA, 7, b"")], False, [40]),
    ("END is answered and the next INIT opens a stream", ["RPC-STREAM-3", "RPC-STREAM-1"], "stream",
     [K.init(7), S_(K.DATA, 7, b"x"), S_(K.END, 7), K.init(8), S_(K.DATA, 8, b"y"), S_(K.END, 8)], True, []),
    ("CANCEL is answered with nothing", ["RPC-STREAM-4"], "stream",
     [K.init(7), S_(K.CANCEL, 7), K.init(9), S_(K.DATA, 9, b"z")], False, []),
    ("frames before INIT are cancelled", ["RPC-STREAM-5"], "stream",
     [S_(K.DATA, 8, b"early"), S_(K.END, 4), S_(K.CANCEL, 5), K.request(6, b"unary"), S_(K.HEARTBEAT, 2), K.init(7),
      S_(K.DATA, 7, b"ok")], False, []),
    ("unknown service or method is cancelled", ["RPC-STREAM-6"], "stream",
     [K.init(3, b"StreamBenchService"), K.init(4, E, b"nope"), S_(K.DATA, 4, b"d"), K.init(5)], False, []),
    ("one stream at a time", ["RPC-STREAM-7"], "stream",
     [K.init(7), K.init(8), S_(K.DATA, 8, b"d"), K.init(9), S_(K.INIT_ACK, 9), S_(K.DATA, 9, b"e")], False, []),
    ("EOF with a stream open closes without END", ["RPC-STREAM-8"], "stream",
     [K.init(7), S_(K.DATA, 7, b"a")], True, []),
    ("END with a body closes the connection", ["RPC-STREAM-8", "RPC-BODY-5"], "stream",
     [K.init(7), b"GRPC\x01\x13\x00\x00\x00\x00\x00\x07\x00\x00\x00\x03abc", K.init(8)], False, []),
]


class _UnaryOnlyScripts:
    """The rpc strategies with serve_scripts() drawing sessions that call `unary_only` (prop_serve_unary_only)."""

    def __init__(self, S):
        self.S = S

    def serve_scripts(self):
        return strategies_mod.unary_only_scripts(self.S)


class Rpc(Protocol):
    name = "rpc"
    #: byte 0 of the native fuzz targets' input (conformance/FUZZING.md); their limit is rpc's maximum body
    corpus_id = 2

    def corpus_config(self, codec):
        return 0
    spec_name = "rpc"
    schema = "rpc"
    codec_type = RpcCodec
    stop_requirement = "RPC-STR-4"
    truncation_requirement = "RPC-STR-3"
    reference = reference
    strategies = lazy.LazyAttribute("frameproof.protocols.rpc.strategies:RpcStrategies")
    mutants = {
        "rpc-length-little-endian": "RPC-HDR-1",
        "rpc-ignores-version": "RPC-HDR-3",
        "rpc-drops-end-flag": "RPC-HDR-5",
        "rpc-name-length-little-endian": "RPC-BODY-1",
        "rpc-end-body-consumed": "RPC-BODY-5",
        "rpc-accepts-oversize": "RPC-LIM-1",
        "rpc-ids-start-at-1": "RPC-ID-1",
        "rpc-fifo-matching": "RPC-MATCH-1",
        "rpc-response-without-end": "RPC-MODE-2",
        "rpc-unknown-service-code-3": "RPC-ECHO-2",
        "rpc-keeps-non-request": "RPC-ECHO-4",
        "rpc-no-init-ack": "RPC-STREAM-1",
        "rpc-data-echo-own-id": "RPC-STREAM-2",
        "rpc-end-not-answered": "RPC-STREAM-3",
        "rpc-cancel-answered": "RPC-STREAM-4",
        "rpc-data-before-init-ignored": "RPC-STREAM-5",
        "rpc-unknown-method-opens": "RPC-STREAM-6",
        "rpc-second-init-reopens": "RPC-STREAM-7",
        "rpc-id-31-bits": "RPC-HDR-7",
        "rpc-refuses-longest-name": "RPC-BODY-6",  # a 65535-byte name refused (the name-length edges)
        "rpc-default-limit-15mib": "RPC-LIM-1",  # the default limit 1 MiB short (the limit's edges, default codec)
        "rpc-ignores-mode": "RPC-ECHO-8",  # unary_only answered in every call mode (as the server fault of that name)
    }
    mutants.update(discovery.MUTANTS)  # the service registry's (spec/discovery.md)
    #: specs of the layers rpc carries: service discovery (DISC-*), checked through the testee's
    #: registry scripts (feature "discovery")
    layer_specs = ("discovery",)
    server_faults = {
        "rpc-code-0-for-unknown": "RPC-ECHO-2",
        "rpc-keep-open-on-non-request": "RPC-ECHO-4",
        "rpc-drop-init-ack": "RPC-STREAM-1",
        "rpc-id-31-bits": "RPC-HDR-7",
        "rpc-first-frame-picks-stream": "RPC-ECHO-7",  # a first frame that is no REQUEST opens the stream endpoint
    }
    #: server faults only an opt-in network case catches (here unary_only_routing, which runs when the
    #: codec names the server's unary-only method, rpc.unary_only): conformance/tests/test_rpc_endpoints.py
    opt_in_server_faults = {
        "rpc-ignores-mode": "RPC-ECHO-8",
    }

    # -- configuration
    def codec_from_json(self, d):
        extra = set(d) - {"protocol", "rpc"}
        if extra:
            raise ValueError(f"unknown codec key(s) for rpc: {', '.join(sorted(extra))} (the limit is rpc.max_body)")
        p = d.get("rpc") or {}
        known = {"max_body", *oracle.ENDPOINT_KEYS}
        if set(p) - known:
            raise ValueError(f"unknown rpc parameter(s): {', '.join(sorted(set(p) - known))} "
                             f"(known: {', '.join(sorted(known))})")
        return RpcCodec("rpc", int(p.get("max_body", 0)), **oracle.codec_params(p))

    def codec_from_pb(self, msg):
        return RpcCodec("rpc", msg.rpc.max_body if msg.HasField("rpc") else 0)

    def codec_to_pb(self, codec, msg):
        msg.limits.max_payload = 0  # rpc's limit travels as rpc.max_body
        if codec.max_payload:
            msg.rpc.max_body = codec.max_payload

    # -- frames
    def frame_to_json(self, f):
        from ...vectors import compact_bytes
        h = f.header or RpcHeader()
        d = {"type": h.type, "flags": h.flags, "id": h.id}
        if h.type in K.NAMED_TYPES or h.service or h.method:
            d.update(service=h.service.hex(), method=h.method.hex())
        if h.type == K.RESPONSE or h.error_code:
            d["error_code"] = h.error_code
        if h.version != K.VERSION:
            d["version"] = h.version
        if h.reserved:
            d["reserved"] = h.reserved
        d["payload"] = compact_bytes(f.payload)
        return d

    def frame_from_json(self, d):
        from ...vectors import parse_bytes
        return Frame(0, 0, parse_bytes(d.get("payload", "")), RpcHeader(
            int(d.get("type", K.REQUEST)), int(d.get("flags", 0)), int(d.get("id", 0)),
            bytes.fromhex(d.get("service", "")), bytes.fromhex(d.get("method", "")), int(d.get("error_code", 0)),
            int(d.get("version", K.VERSION)), int(d.get("reserved", 0))))

    def frame_to_pb(self, f, msg):
        h = f.header or RpcHeader()
        msg.payload = f.payload
        r = msg.rpc
        r.version, r.type, r.flags, r.reserved, r.id = h.version, h.type, h.flags, h.reserved, h.id
        r.service, r.method, r.error_code = h.service, h.method, h.error_code

    def frame_from_pb(self, msg):
        r = msg.rpc
        return Frame(0, 0, bytes(msg.payload), RpcHeader(r.type, r.flags, r.id, bytes(r.service), bytes(r.method),
                                                         r.error_code, r.version, r.reserved))

    # -- oracle
    def decode(self, codec, data):
        return oracle.decode(codec, data)

    def encode(self, codec, frame):
        return oracle.encode(codec, frame)

    def match(self, codec, events, timeout_ms=0):
        return oracle.RpcClient(codec, timeout_ms).run(events)

    def serve(self, codec, endpoint, chunks, half_close):
        return oracle.serve(codec, endpoint, chunks, half_close)

    def echo_reply(self, frame):
        return oracle.echo_reply(frame)

    def echo_reply_for(self, codec, frame):
        """The reply of the echo service whose handler's names the codec gives (spec §9a)."""
        return oracle.echo_reply(frame, codec)

    def server_session(self, codec, endpoint=""):
        return reference.RpcSession(codec, endpoint)

    def echo_replier(self, codec, fault=""):
        return reference.net_replier(fault, codec)

    # -- suites
    def properties(self):
        S = self.strategies
        return [
            P.Property("prop_encode_matches_spec", self.name,
                       ["RPC-HDR-1", "RPC-LIM-2", "RPC-BODY-1", "RPC-BODY-2", "RPC-BODY-3", "RPC-BODY-4", "RPC-ERR-1",
                        "RPC-BODY-6"],
                       "encode", "Random frames of every type encode to the spec's exact bytes (or the spec's refusal); "
                       "names at the edges of their u16 length first",
                       P.encode_matches_spec(S)),
            P.Property("prop_encode_decode_roundtrip", self.name,
                       ["RPC-BODY-7", "RPC-HDR-1", "RPC-HDR-5", "RPC-HDR-6", "RPC-HDR-7", "RPC-BODY-6"], "encode",
                       "decode(encode(frames)) gives the frames back", P.roundtrip(S)),
            P.Property("prop_chunking_independence", self.name, ["RPC-STR-1", "RPC-STR-2"], "decode",
                       "Any split of a valid stream decodes to the same frames", P.chunking(S)),
            P.Property("prop_agrees_with_oracle", self.name, ["RPC-STR-4", "RPC-STR-3", "RPC-STR-5"], "decode",
                       "On arbitrary and mutated streams in arbitrary chunks, frames and error equal the oracle's",
                       P.agrees(S)),
            P.Property("prop_invalid_rejected_with_class", self.name,
                       ["RPC-LIM-1", "RPC-HDR-2", "RPC-HDR-3", "RPC-HDR-4", "RPC-BODY-5", "RPC-BODY-1", "RPC-BODY-2",
                        "RPC-BODY-3", "RPC-STR-3"], "decode",
                       "A valid prefix then one bad frame: the prefix is delivered and the bad frame is rejected "
                       "with its class", P.invalid(S)),
            P.Property("prop_matching_agrees_with_model", self.name,
                       ["RPC-MATCH-1", "RPC-MATCH-2", "RPC-MATCH-3", "RPC-MATCH-4", "RPC-MATCH-5", "RPC-ID-1",
                        "RPC-ID-2"], "match",
                       "Random client sessions (calls in any mode, responses in any order, stray and foreign "
                       "frames, clock) complete as the model says", P.matching(S)),
            P.Property("long_stream_100k_frames", self.name, ["RPC-STR-2", "RPC-STR-1"], "decode",
                       "100,000 frames through one decoder in chunks of 1 B to 16 KiB", P.long_stream(self.name)),
            P.Property("long_stream_past_4gib", self.name, ["RPC-STR-2", "RPC-STR-1", "RPC-LIM-1"], "long-stream",
                       "One decoder fed a stream the testee makes from a recipe (several GiB in the main job, past "
                       "2^32 bytes): the count, SHA-256 and last of its frames, and the 64-bit offset of an error at "
                       "its end", long_stream_check(self.name)),
            P.Property("prop_serve_agrees_with_model", self.name,
                       ["RPC-ECHO-1", "RPC-ECHO-2", "RPC-ECHO-3", "RPC-ECHO-4", "RPC-ECHO-5", "RPC-MODE-1",
                        "RPC-STREAM-8", "RPC-HDR-7", "RPC-STREAM-2"], "serve",
                       "Both echo endpoints, fed valid and mutated streams in any split, with ids over the whole "
                       "u32 range, write and close as the model says", serving(S)),
            P.Property("prop_serve_unary_only", self.name, ["RPC-ECHO-8"], "rpc-unary-only",
                       "The method registered for the UNARY call mode only, called in every call mode and flags "
                       "byte between other calls: echoed in mode 0, METHOD_NOT_FOUND otherwise",
                       P.serving(_UnaryOnlyScripts(S))),
            P.Property("serve_unary_scripted", self.name,
                       ["RPC-ECHO-1", "RPC-ECHO-2", "RPC-ECHO-4", "RPC-ECHO-5", "RPC-MODE-1", "RPC-MODE-2"], "serve",
                       "Fixed unary sessions (four modes, unknown names, non-requests, half-close), whole, as "
                       "given and byte by byte", scripted(UNARY_CASES)),
            P.Property("serve_stream_scripted", self.name,
                       ["RPC-STREAM-1", "RPC-STREAM-2", "RPC-STREAM-3", "RPC-STREAM-4", "RPC-STREAM-5",
                        "RPC-STREAM-6", "RPC-STREAM-7", "RPC-STREAM-8"], "serve",
                       "Every transition of the stream endpoint, whole, as given and byte by byte",
                       scripted(STREAM_CASES)),
        ] + discovery_suite.properties(self.name)

    def net_cases(self):
        return net.cases()

    #: testee features the registry scripts need (spec/testee.md, ``discovery``)
    registry_features = ("discovery", "discovery-etcd")
    #: testee features of this protocol's own (spec/testee.md): its serve endpoint registers `unary_only` (RPC-ECHO-8)
    testee_features = ("rpc-unary-only",)

    def registry_script(self, req):
        """The Python reference registry's answer to a registry script (spec/testee.md, ``discovery``):
        in-process, or on etcd when the request names one."""
        ops = [discovery_pb.op_from_pb(op) for op in req.ops]
        if not req.HasField("etcd"):
            results, events = discovery.ScriptRunner().run(ops)
            return discovery_pb.response_to_pb(results, events)
        from .discovery_etcd import EtcdRegistry
        reg = EtcdRegistry(req.etcd.endpoint, req.etcd.prefix, req.etcd.lease_ttl_s, req.etcd.request_timeout_ms / 1000)
        try:
            results, events = discovery.ScriptRunner(reg).run(ops)
        finally:
            reg.close(abandon=req.etcd.abandon)
        return discovery_pb.response_to_pb(results, events)

    def net_request(self, seq, payload):
        return K.request(seq, payload)

    def net_request_for(self, codec, seq, payload):
        """The echo call to the handler the codec names (spec §9a: the server under test's names)."""
        return K.request(seq, payload, getattr(codec, "service", K.ECHO_SERVICE), getattr(codec, "method", K.ECHO_METHOD))

    def oversize_header(self, codec, n):
        return K.MAGIC + bytes([1, K.REQUEST, K.END_STREAM, 0]) + (9).to_bytes(4, "big") + (n & 0xFFFFFFFF).to_bytes(4, "big")

    def oversize_whole_frame(self, codec, n):
        """A REQUEST to the echo service whose body (its names and payload) is ``n`` bytes."""
        from ...loadside import payload_for
        names = (len(K.ECHO_SERVICE).to_bytes(2, "big") + K.ECHO_SERVICE + len(K.ECHO_METHOD).to_bytes(2, "big")
                 + K.ECHO_METHOD)
        return self.oversize_header(codec, n) + names + payload_for(n, n - len(names))

    def largest_load_payload(self, codec):
        """A REQUEST's body is the echo service's names (each behind its u16 length) and the payload; in stream
        mode too (a STREAM_DATA could carry the names' 24 bytes more: the bound is the call's, as the Rust and
        C++ clients check it)."""
        return min(codec.limit, codec.capacity) - 4 - len(K.ECHO_SERVICE) - len(K.ECHO_METHOD)

    def client_request_check(self, variant=None):
        return load.request_check(variant)

    # -- the load client
    load_variants = load.VARIANTS
    load_streams = True
    load_client_profiles = (("bidi", "--variant bidi --mode pipelined --window 16 --requests 4000"),
                            ("stream", "--mode stream --frames-per-stream 16 --window 4 --requests 300"))

    def load_side(self, codec, variant):
        return load.RpcLoadSide(self, codec, variant)

    #: planted bugs of the Python load client (frameproof.pyload --fault), caught by client_cases
    load_faults = load.FAULTS

    def client_cases(self):
        """`frameproof net --client`: stray frames on unary calls (RPC-MATCH-2, RPC-MATCH-4)."""
        from . import client_strays
        return client_strays.client_cases()

    def counted(self, f):
        return f.header is not None and f.header.type in (K.REQUEST, K.RESPONSE, K.DATA)


    # -- benchmarks: the seed's B2 (unary echo) and B5 (STREAM_* echo) tables, on their shapes
    # (seed 002, Apple M4, 2 IO schedulers unless said; figures as published there)
    B2_SEED = "seed 002 (galay-rpc B1/B2, Apple M4)"

    def bench_scenarios(self, quick=False):
        def row(group, mode, payload, conns, window=1, args=(), seed=None):
            return {"group": group, "mode": mode, "payload": payload, "connections": conns, "window": window,
                    "args": list(args), "seed": {"msgs_per_s": seed, "what": self.B2_SEED} if seed else None}
        out = [row("b2-connections", "per-packet", 256, c, seed=q) for c, q in ((50, 170629), (100, 183338), (200, 169673))]
        out += [row("b2-payload", "per-packet", n, 100, seed=q) for n, q in ((1024, 178606), (4096, 155697))]
        out += [row("b2-pipeline", "pipelined", 47, 200, 4, seed=324686),
                row("b2-pipeline", "per-packet", 65536, 100, seed=87572)]
        out += [row("b2-modes", "pipelined", 47, 200, 4, ("--variant", v), q)
                for v, q in (("unary", 345965), ("client-stream", 277020), ("server-stream", 293926), ("bidi", 283218))]
        # B5: 100 connections, 128-byte frames, 16 frames per stream; msgs_per_s = DATA frames per second
        b5 = ((1, 29840), (2, 25332), (4, 76374), (8, 90325), (16, 90571))
        out += [row("b5-window", "stream", 128, 100, w, ("--frames-per-stream", "16"), q)
                for w, q in (b5[::2] if quick else b5)]
        return out[:4] + out[-2:] if quick else out

    # -- the main job: the service registry's conformance (spec/discovery.md) as a row of its own
    def matrix_suites(self, impl, cmd, profile, scale="full"):
        testee = cmd("testee")
        if not testee:
            return []
        return [("codec", "rpc discovery (DISC-*)", ["run", "--testee", testee, "--protocol", "rpc",
                                                      "--select", "rpc/DISC-*", "--profile", profile,
                                                      "--name", impl["name"]])]

    # -- docs
    def kaitai_frame(self, codec):
        return "rpc_frame", "RpcFrame", ()

    def describe_header(self, f):
        return str(f.header) if f.header is not None else ""

    # -- fuzzing
    def wild_codecs(self, draw):
        return RpcCodec("rpc", draw(st.one_of(st.just(0), st.integers(1, 300), st.integers(65530, 65540))))

    def edge_header(self, codec, pick):
        lim = codec.limit
        n = [lim, lim + 1, 0, 1, 2 ** 31, 2 ** 32 - 1, 16 << 20, (16 << 20) + 1][pick % 8] & 0xFFFFFFFF
        kind = [K.REQUEST, K.RESPONSE, K.INIT, K.DATA, K.END, K.CANCEL, 0x55][pick % 7]
        return K.MAGIC + bytes([1, kind, pick & 7, 0]) + pick.to_bytes(4, "big") + n.to_bytes(4, "big")

    def corpus_codec(self, bits, limit):
        return RpcCodec("rpc", limit)  # rpc has no configuration bits

    def gen_vectors_codec(self, codec):
        return f"Codec('rpc', {codec.max_payload})"


PROTOCOL = Rpc()
