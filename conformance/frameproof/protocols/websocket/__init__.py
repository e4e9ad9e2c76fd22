"""The `websocket` protocol (spec/websocket.md): RFC 6455 frames and messages as galay-http
implements them, without extensions; the echo service after the opening handshake."""
from __future__ import annotations

from ... import lazy
from dataclasses import replace

from ... import oracle as O
from ...long_stream import long_stream_check
from ...checks import CheckFailure, check_decode, check_serve, chunk, chunk_every
from ...oracle import Frame
from ..base import Protocol
from . import load, net, oracle, reference
from .frames import BINARY, CLOSE, CONT, PING, PONG, TEXT, WsHeader, frame, key_for
from .oracle import WsCodec

# imported on first use (frameproof/lazy.py): a process that only encodes, decodes or serves never needs them
st = lazy.module("hypothesis.strategies")
P = lazy.module("frameproof.properties")
given = lazy.given


def utf8_vs_python(S):
    """Text messages in random fragments: frames and error as Python's decoder says (§7)."""
    def run(testee):
        @given(st.data())
        def prop(data):
            codec, whole, exp = data.draw(S.text_messages())
            chunks = data.draw(P.splits_of(whole))
            check_decode([exp], testee.decode(codec, chunks), stop="WS-STR-4",
                         context=f"text message {whole[:32].hex(' ')} in {len(chunks)} chunks: ")
        prop()
    return run


def scripted(cases):
    """Fixed serve sessions, each tied to the requirements its expectation states."""
    def run(testee):
        from ...coverage import note
        from .strategies import CLOSE_CODE_CODEC, _close_class as close_body_class
        codec = WsCodec("websocket")
        failures, broken = [], []
        for name, reqs, frames, half_close in cases:
            for f in frames:  # the close codes these sessions send, by class (tests/test_class_coverage.py)
                if not isinstance(f, bytes) and f.header.opcode == CLOSE:
                    note(CLOSE_CODE_CODEC, close_body_class(f.payload))
            data = b"".join(f if isinstance(f, bytes) else oracle.encode(oracle.wide(codec), f) for f in frames)
            for how, chunks in (("whole", [data]), ("byte by byte", chunk_every(data, 1))):
                try:
                    check_serve(oracle.serve(codec, "", chunks, half_close), testee.serve(codec, "", chunks, half_close))
                except CheckFailure as e:
                    failures.append(f"{name} ({how}):\n{e}")
                    broken += [r for r in reqs if r not in broken]
                    break
        if failures:
            raise CheckFailure(f"{len(failures)} of {len(cases)} sessions differ; first: " + failures[0], broken)
    return run


k = key_for
SERVE_CASES = [
    ("text and binary echoed", ["WS-ECHO-1"], [frame(TEXT, b"hello", True, k(1)), frame(BINARY, b"\x00\xff", True, k(2))], True),
    ("fragmented message echoed whole", ["WS-ECHO-1", "WS-FRAG-1"],
     [frame(TEXT, b"Hel", False, k(1)), frame(CONT, b"", False, k(2)), frame(CONT, b"lo", True, k(3))], False),
    ("ping answered with pong", ["WS-PING-1"], [frame(PING, b"are you there", True, k(4))], False),
    ("pong not answered", ["WS-PING-2"], [frame(PONG, b"unsolicited", True, k(5)), frame(TEXT, b"x", True, k(6))], False),
    ("ping between fragments", ["WS-CTL-3", "WS-PING-1"],
     [frame(TEXT, b"frag", False, k(1)), frame(PING, b"mid", True, k(2)), frame(CONT, b"ment", True, k(3))], False),
    ("close echoed with its code", ["WS-CLOSE-5"], [frame(TEXT, b"a", True, k(1)), frame(CLOSE, b"\x0b\xb8bye", True, k(2)),
                                                   frame(TEXT, b"never read", True, k(3))], False),
    ("empty close echoed empty", ["WS-CLOSE-5"], [frame(CLOSE, b"", True, k(7))], False),
    # one close of each class of valid codes the generated streams draw (strategies.VALID_CLOSE_BODIES): under
    # the ci profile's fixed seed a class can go undrawn; here each is sent whatever the seed
    ("close 1001 echoed", ["WS-CLOSE-5"], [frame(CLOSE, b"\x03\xe9", True, k(1))], False),
    ("close 1011 echoed", ["WS-CLOSE-5"], [frame(CLOSE, b"\x03\xf3", True, k(2))], False),
    ("close 1014 echoed", ["WS-CLOSE-5"], [frame(CLOSE, b"\x03\xf6", True, k(3))], False),
    ("close 4000 echoed with its reason dropped", ["WS-CLOSE-5"], [frame(CLOSE, b"\x0f\xa0bye", True, k(4))], False),
    ("close code 1001 echoed", ["WS-CLOSE-5"], [frame(CLOSE, b"\x03\xe9", True, k(7))], False),
    ("protocol error closes with 1002", ["WS-ERR-1", "WS-ECHO-2"], [frame(TEXT, b"a", True, k(1)), b"\x82\x05hello"], False),
    ("bad UTF-8 closes with 1007", ["WS-ERR-1", "WS-ECHO-2"], [frame(TEXT, b"\xc3\x28", True, k(1))], False),
    ("oversize closes with 1009", ["WS-ERR-1", "WS-LIM-1"], [b"\x82\xff" + (11 << 20).to_bytes(8, "big") + b"abcd"], False),
    ("EOF closes silently", ["WS-ECHO-3"], [frame(TEXT, b"a", True, k(1)), oracle.encode(WsCodec("websocket"), frame(TEXT, b"abc", True, k(2)))[:4]], True),
]



def _count(d: dict, key: str) -> int:
    """A limit of the codec JSON: a non-negative integer (0, or absent: the spec's default); ValueError
    otherwise (HAR-CODEC-1: a program refuses it rather than run with another limit)."""
    v = d.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{key} must be a non-negative integer, not {v!r}")
    return v

class WebSocket(Protocol):
    name = "websocket"
    spec_name = "websocket"
    schema = "websocket"
    codec_type = WsCodec
    features = ("decode", "encode", "serve")
    stop_requirement = "WS-STR-4"
    truncation_requirement = "WS-STR-3"
    reference = reference
    strategies = lazy.LazyAttribute("frameproof.protocols.websocket.strategies:WsStrategies")
    mutants = {
        "ws-accepts-rsv": "WS-HDR-2",
        "ws-accepts-reserved-opcode": "WS-HDR-3",
        "ws-16bit-length-little-endian": "WS-LEN-1",
        "ws-64bit-from-65535": "WS-LEN-2",
        "ws-accepts-nonminimal": "WS-LEN-3",
        "ws-ignores-64bit-msb": "WS-LEN-4",
        "ws-accepts-unmasked": "WS-MASK-1",
        "ws-mask-phase-across-frames": "WS-MASK-3",
        "ws-accepts-fragmented-control": "WS-CTL-1",
        "ws-ping-breaks-reassembly": "WS-CTL-3",
        "ws-accepts-orphan-continuation": "WS-FRAG-2",
        "ws-fragmented-text-unchecked": "WS-UTF8-1",
        "ws-utf8-checked-at-end": "WS-UTF8-2",
        "ws-close-payload-unchecked": "WS-CLOSE-2",
        "ws-reads-after-close": "WS-CLOSE-4",
        "ws-close-reply-1000": "WS-CLOSE-5",
        "ws-no-pong": "WS-PING-1",
        "ws-accepts-oversize": "WS-LIM-1",
        "ws-message-limit-unchecked": "WS-LIM-2",
        "ws-error-close-1002": "WS-ERR-1",
        "ignores-chunk-boundaries": "WS-STR-1",
        "continues-after-error": "WS-STR-4",
    }
    server_faults = {
        "ws-masks-replies": "WS-MASK-4",
        "ws-answers-pong": "WS-PING-2",  # answers an unsolicited pong with a pong
        "ws-version-400": "WS-HS-3",
        "ws-echoes-subprotocol-list": "WS-HS-4",
        "ws-names-unoffered-subprotocol": "WS-HS-4",
        "ws-never-selects-subprotocol": "WS-HS-8",
        "ws-no-close-frame-on-error": "WS-ERR-1",
        "ws-header-names-case-sensitive": "WS-HS-6",
        "ws-last-header-wins": "WS-HS-6",
        "ws-close-rejects-4xxx": "WS-CLOSE-2",
        "ws-unbounded-request-head": "WS-HS-11",  # buffers a request head that never ends, without a bound
        "codec-json-lenient": "HAR-CODEC-1",  # takes codec JSON it cannot read, with the defaults (pyserver.codec_arg)
        "ws-open-after-close": "WS-CLOSE-5",  # answers a close frame and keeps the connection open
    }
    #: specs of the layers websocket carries: permessage-deflate (RFC 7692, WSD-*), checked by the network
    #: cases of protocols/websocket/deflate_net.py under a codec with websocket.permessage_deflate true
    layer_specs = ("websocket-deflate",)
    #: server faults only a run with permessage-deflate switched on catches (the codec's
    #: websocket.permessage_deflate; the deflate net cases: conformance/tests/test_ws_deflate_net.py;
    #: Autobahn 12.*, 13.*: conformance/tests/test_autobahn.py), or with websocket.path set
    opt_in_server_faults = {
        "ws-deflate-keeps-context": "WSD-CTX-1",  # agrees to server_no_context_takeover, keeps it anyway
        "ws-deflate-inflater-resets": "WSD-CTX-1",  # resets the client's context between messages
        "ws-deflate-unbounded-inflate": "WSD-LIM-1",  # inflates the whole message, then checks the limit
        "ws-deflate-rsv1-on-continuation": "WSD-FRM-2",  # accepts RSV1 on a continuation frame
        "ws-deflate-first-offer-only": "WSD-NEG-2",  # reads the first offer alone: declining it declines all
        "ws-deflate-eager-state": "WSD-LIM-3",  # makes zlib's state at the opening, not at the first message
        "ws-deflate-always-compresses": "WSD-FRM-3",  # compresses every echo, even one that grows (random bytes)
        "ws-deflate-state-uncounted": "WSD-LIM-2",  # leaves the zlib state out of the memory budget's count
        # and two only the small-limits cell catches (timeouts_in_seconds, budget_unfinished_frames;
        # tests/test_ws_deflate_net.py)
        "ws-handshake-from-last-byte": "WS-RES-3",  # times the opening from its last byte, not the accept
        "ws-budget-skips-fragments": "WS-RES-1",  # leaves an unfinished message's fragments out of the budget
        "ws-deflate-keeps-message": "WSD-LIM-4",  # still counts a message's bytes after its echo
        # and one only a codec naming websocket.path catches (tests/test_ws_endpoint_params.py)
        "ws-serves-any-path": "WS-HS-9",  # upgrades every request target, not only the configured path
    }
    #: planted bugs of the Python load client (frameproof.pyload --fault), caught by client_cases
    load_faults = {**load.FAULTS, **load.DEFLATE_FAULTS, **load.PROSE_FAULTS, **load.MASK_FAULTS, **load.HEAD_FAULTS,
                   "codec-json-lenient": "HAR-CODEC-1"}  # takes codec JSON it cannot read (pyserver.codec_arg)

    # -- configuration
    def codec_from_json(self, d):
        extra = set(d) - {"protocol", "limits", "websocket"}
        if extra:
            raise ValueError(f"unknown codec key(s) for websocket: {', '.join(sorted(extra))}")
        lim = d.get("limits") or {}
        if set(lim) - {"max_payload"}:
            raise ValueError(f"unknown limit(s): {sorted(set(lim) - {'max_payload'})}")
        p = d.get("websocket") or {}
        known = {"role", "max_message", *oracle.ENDPOINT_KEYS}
        if set(p) - known:
            raise ValueError(f"unknown websocket parameter(s): {sorted(set(p) - known)}")
        role = p.get("role", "server")
        if role not in ("server", "client"):
            raise ValueError(f"websocket role must be 'server' or 'client', not {role!r}")
        return WsCodec("websocket", _count(lim, "max_payload"), role, _count(p, "max_message"), **oracle.codec_params(p))

    def codec_from_pb(self, msg):
        w = msg.websocket if msg.HasField("websocket") else None
        role = "client" if w is not None and w.role == 2 else "server"
        return WsCodec("websocket", msg.limits.max_payload if msg.HasField("limits") else 0, role,
                       w.max_message if w is not None else 0)

    def codec_to_pb(self, codec, msg):
        if codec.max_payload:
            msg.limits.max_payload = codec.max_payload
        msg.websocket.role = 2 if codec.role == "client" else 1
        if codec.max_message:
            msg.websocket.max_message = codec.max_message

    # -- frames
    def frame_to_json(self, f):
        from ...vectors import compact_bytes
        h = f.header or WsHeader()
        d = {"fin": h.fin, "opcode": h.opcode, "masked": h.masked}
        if h.rsv:
            d["rsv"] = h.rsv
        if h.mask_key:
            d["mask_key"] = h.mask_key.hex()
        d["payload"] = compact_bytes(f.payload)
        return d

    def frame_from_json(self, d):
        from ...vectors import parse_bytes
        return Frame(0, 0, parse_bytes(d.get("payload", "")), WsHeader(
            bool(d.get("fin", True)), int(d.get("rsv", 0)), int(d.get("opcode", BINARY)), bool(d.get("masked", False)),
            bytes.fromhex(d.get("mask_key", ""))))

    def frame_to_pb(self, f, msg):
        h = f.header or WsHeader()
        msg.payload = f.payload
        w = msg.websocket
        w.fin, w.rsv, w.opcode, w.masked, w.mask_key = h.fin, h.rsv, h.opcode, h.masked, h.mask_key

    def frame_from_pb(self, msg):
        w = msg.websocket
        return Frame(0, 0, bytes(msg.payload), WsHeader(w.fin, w.rsv, w.opcode, w.masked, bytes(w.mask_key)))

    # -- oracle
    def decode(self, codec, data):
        return oracle.decode(codec, data)

    def encode(self, codec, frame_):
        return oracle.encode(codec, frame_)

    def serve(self, codec, endpoint, chunks, half_close):
        return oracle.serve(codec, endpoint, chunks, half_close)

    def echo_reply(self, frame_):
        return oracle.echo_reply(frame_)

    def server_session(self, codec, endpoint=""):
        return reference.WsSession(codec)

    def echo_replier(self, codec, fault=""):
        return reference.net_replier(fault)

    def closing_bytes(self, codec, err, fault=""):
        f = reference.closing_frame(err, fault)
        return reference.encode(codec, f, 2 ** 63) if f is not None else b""

    def held_bytes(self, decoder, replier):
        """What a connection holds for the memory budget (WS-RES-1): the unfinished frame and message, and with
        permessage-deflate its zlib state (WSD-LIM-2)."""
        echo = getattr(replier, "echo", None)
        if echo is None:
            return len(decoder.buf)
        state = echo.state_cost() if hasattr(echo, "state_cost") else 0
        # planted (ws-budget-skips-fragments): the fragments of an unfinished message left out of the count
        parts = 0 if getattr(echo, "fault", "") == "ws-budget-skips-fragments" else sum(len(p) for p in echo.parts)
        if state and getattr(echo, "fault", "") == "ws-deflate-keeps-message":  # planted: a message's buffers kept
            parts += getattr(echo, "last_size", 0)
        return len(decoder.buf) + parts + state

    def largest_unit(self, codec):
        return max(codec.limit, codec.message_limit)

    def server_opening(self, codec, fault=""):
        if fault == "ws-serves-any-path":  # planted: configured with a path, it upgrades every target (WS-HS-9)
            codec = replace(codec, path=None)
        return reference.ServerOpening(fault, codec)

    def client_extension(self, codec):
        return "permessage-deflate" if getattr(codec, "permessage_deflate", None) else None

    def extension_session(self, codec, agreed, fault=""):
        """(decoder, replier) of a connection whose opening accepted permessage-deflate."""
        from .deflate_session import session
        return session(codec, agreed, fault)

    def net_client_codec(self, codec):
        return replace(codec, role="client", max_payload=2 ** 63 - 1, max_message=2 ** 63 - 1)

    def net_handshake(self, conn):
        net.client_handshake(conn)

    def net_goodbye(self):
        return frame(CLOSE, b"\x03\xe8", True, key_for(7))  # close 1000, masked

    def net_is_goodbye(self, f):
        return f.header is not None and f.header.opcode == CLOSE


    # -- the load client
    load_variants = load.VARIANTS
    load_goodbye_frames = 1  # the close frame (code 1000) each connection ends with
    load_client_profiles = (("text", "--variant text --mode pipelined --window 16 --requests 4000"),
                            ("prose", "--variant prose --mode pipelined --window 16 --requests 4000 --payload 200"))

    def load_side(self, codec, variant):
        return load.WsLoadSide(self, codec, variant)

    def client_cases(self):
        """`frameproof net --client`: the client side of the opening handshake (WS-HS-7), fresh masking
        keys (WS-MASK-5), the codec JSON (HAR-CODEC-1) and compression once agreed (HAR-CLI-3)."""
        from . import client_compression, client_head_bound, client_masking, client_opening, codec_json
        return client_opening.client_cases() + client_head_bound.client_cases() + client_masking.client_cases() \
            + codec_json.client_cases() + client_compression.client_cases()

    def counted(self, f):
        return f.header is not None and f.header.opcode in (TEXT, BINARY)

    def corrupt_reply(self, reply, k):
        """Every other corrupted text echo goes out as a binary frame, its payload intact: WS-ECHO-1 gives the
        echo the message's opcode, and a client that compares payloads alone takes it (a binary echo is
        not turned into text: the default variant's payloads are not UTF-8, which a client rightly fails)."""
        if k % 2 and reply.header.opcode == TEXT:
            return replace(reply, header=replace(reply.header, opcode=BINARY))
        return super().corrupt_reply(reply, k)

    def client_request_check(self, variant=None):
        """HAR-CLI-1 for websocket: a load client sends whole messages (FIN text or binary frames,
        masked: the server-role decoder enforces WS-MASK-1) and at most a close at the end; each
        connection's masking keys fresh (WS-MASK-5, client_masking). The messages are of the client's
        --variant (reference-impls/README.md, fp-load): binary frames for binary (the default), text
        frames for text and prose, and prose payloads the contract's words after their index."""
        from .client_masking import KeyWatch
        from .client_compression import ProseWatch
        st = {"n": 0, "closed": False}
        prose = ProseWatch(variant)
        keys = KeyWatch()
        named = variant or load.VARIANTS[0]
        want_op = {"binary": BINARY, "text": TEXT, "prose": TEXT}.get(named)  # an unknown one: the client refuses it
        kind = {BINARY: "binary", TEXT: "text"}

        def check(f):
            st["n"] += 1
            h = f.header
            if h.masked:
                repeated = keys.watch(h.mask_key)
                if repeated:
                    return f"frame {st['n']}: {repeated}"
            if st["closed"]:
                return f"frame {st['n']} comes after the client's close frame (WS-CLOSE-4)"
            if h.opcode == CLOSE:
                st["closed"] = True
                return None
            if h.opcode not in (TEXT, BINARY) or not h.fin:
                return f"frame {st['n']} is opcode {h.opcode} fin={h.fin}; the load client sends single-frame messages"
            prose.watch(f, st["n"])  # HAR-CLI-3: counted, judged by its own case (client_compression)
            if want_op is not None and h.opcode != want_op:
                return (f"frame {st['n']} is a {kind[h.opcode]} frame; the client was run with --variant {named}, "
                        f"whose messages are {kind[want_op]}")
            # --variant prose: the payload names its index (decimal, then a space; the text variant's hex
            # has no space), and the rest must be the contract's words for it (load.prose)
            first, space, _ = bytes(f.payload).partition(b" ")
            if named == "prose" and not h.rsv and not (space and first.isdigit()) and \
                    not (first.isdigit() and len(first) <= 20) and f.payload:  # (compressed: RSV1, not read here)
                return (f"frame {st['n']}: the client was run with --variant prose, and the payload does not start "
                        f"with its index and a space: {bytes(f.payload)[:24]!r}")
            if h.opcode == TEXT and space and first.isdigit():
                want = load.prose(int(first), len(f.payload))
                if bytes(f.payload) != want:
                    at = next(i for i, (a, b) in enumerate(zip(bytes(f.payload), want)) if a != b)
                    return (f"frame {st['n']}: prose payload of request {int(first)} differs from the contract's at "
                            f"byte {at}: {bytes(f.payload)[max(0, at - 8):at + 16]!r}, expected {want[max(0, at - 8):at + 16]!r}")
            return None

        def at_end():
            """The connection ended: after messages, a load client closes the RFC 6455 §7.1.2 way, with a close
            frame (HAR-CLI-1: at most a close at the end; the checking server sends none first)."""
            if st["n"] and not st["closed"]:
                return f"the connection ended after {st['n']} frame(s) without the client's close frame (RFC 6455 §7.1.2)"
            return None
        check.at_end = at_end
        check.extended = prose.agreed  # called when the opening agreed on permessage-deflate
        return check

    def stress_codec(self):
        """1 MiB frames, 4 MiB messages (the message limit must fit the stress budget too)."""
        return WsCodec("websocket", self.STRESS_FRAME, "server", 4 * self.STRESS_FRAME)

    # -- benchmarks: permessage-deflate (spec/websocket-deflate.md) against the same text uncompressed.
    #: The payload is fp-load's --variant prose (English words, load.prose: DEFLATE takes 1 KiB to about
    #: a third with the context of earlier messages), not the hex text, which repeats every 16 characters
    def bench_scenarios(self, quick=False):
        out = []
        for size in ((1024,) if quick else (256, 1024, 16384)):
            w = self.pipeline_window if size <= 1024 else 16
            base = {"group": "deflate", "mode": "pipelined", "payload": size, "connections": 16, "window": w,
                    "args": ["--variant", "prose"], "seed": None}
            out.append(dict(base, tag="uncompressed"))
            out.append(dict(base, tag="permessage-deflate", codec={"websocket": {"permessage_deflate": True}},
                            needs=["permessage-deflate"]))
        return out

    # -- the main job: the real Autobahn testsuite beside frameproof's own suites
    #: the frame limit servers run with under Autobahn: its 9.1.6/9.2.6 send 16 MiB frames, which
    #: the spec's 10 MiB default refuses with 1009 (WS-LIM-1), as it should
    AUTOBAHN_CODEC = {"protocol": "websocket", "limits": {"max_payload": 64 << 20},
                      "websocket": {"max_message": 64 << 20}}

    #: the network suite's permessage-deflate profile (spec/websocket-deflate.md): (label, codec JSON)
    DEFLATE_PROFILE = ("websocket permessage-deflate", {"protocol": "websocket", "websocket": {"permessage_deflate": True}})

    #: the deflate profile with a message limit that a budget of a few MiB allows: deflate_state_in_budget
    #: (WSD-LIM-2) starts a server of its own with --memory-budget, which a budget below max_message refuses
    DEFLATE_BUDGET_PROFILE = ("websocket permessage-deflate budget",
                              {"protocol": "websocket", "limits": {"max_payload": 1 << 20},
                               "websocket": {"permessage_deflate": True, "max_message": 1 << 20}})

    def matrix_suites(self, impl, cmd, profile, scale="full"):
        import json
        import shlex
        from pathlib import Path
        from .autobahn_map import DEFLATE_CASES, DEFLATE_SAMPLE_CASES, SAMPLE_CASES
        # the main job: every category (1-7, 9, 10); CI (scale small): a few cases of each
        cases = ["--cases", ",".join(SAMPLE_CASES)] if scale == "small" else []
        xf = impl.get("xfail_autobahn") or {}
        out = []
        for side, key, flag, label in (("server", "server", "--server-cmd", "autobahn (as server)"),
                                       ("client", "autobahn_client", "--client-cmd", "autobahn (as client)")):
            program = cmd(key)
            if not program:
                continue
            if side == "server":
                program += f" --codec {shlex.quote(json.dumps(self.AUTOBAHN_CODEC))} --listen 127.0.0.1:0"
            argv = ["autobahn", flag, program, "--agent", impl["name"], "--cwd", impl["dir"]] + cases
            if xf.get(side):
                argv += ["--xfail", str(Path(impl["dir"]) / xf[side])]
            out.append(("net" if side == "server" else "client", f"websocket {label}", argv))
        # permessage-deflate (spec/websocket-deflate.md), where the implementation says it has it
        # (impl.json "websocket_extensions"): Autobahn 12.* and 13.* with the extension switched on, and
        # a declined offer failing the case
        exts = impl.get("websocket_extensions") or {}
        if cmd("server") and "permessage-deflate" in exts.get("server", ()):
            # frameproof's own network suite with the extension on (the WSD-* cases, and WS-HS-5 deferring
            # to them): a net profile that only a server claiming the extension gets, so it is made here,
            # where the implementation is known, not in net_profiles (which the matrix runs on every server)
            label, codec = self.DEFLATE_PROFILE
            server = f"{cmd('server')} --codec {shlex.quote(json.dumps(codec))} --listen 127.0.0.1:0"
            argv = ["net", "--codec", json.dumps(codec), "--server-cmd", server, "--name", impl["name"]] + \
                ([] if impl.get("third_party") else ["--contract"])
            xfail = (impl.get("xfail_net") or {}).get(label)
            out.append(("net", label, argv + (["--xfail", str(Path(impl["dir"]) / xfail)] if xfail else [])))
            if impl.get("limit_flags", not impl.get("third_party")):
                # and the zlib state in the memory budget (WSD-LIM-2), for a server with the limit flags
                # (--memory-budget: a third-party library's glue has none), with the budget's count of
                # unfinished frames beside it (WS-RES-1 in seconds: the stress group takes minutes)
                label, codec = self.DEFLATE_BUDGET_PROFILE
                server = f"{cmd('server')} --codec {shlex.quote(json.dumps(codec))} --listen 127.0.0.1:0"
                out.append(("net", label, ["net", "--codec", json.dumps(codec), "--server-cmd", server, "--name",
                                           impl["name"], "--select", "websocket/*/net/deflate_state_in_budget",
                                           "--select", "websocket/*/net/budget_unfinished_frames",
                                           "--select", "websocket/*/net/timeouts_in_seconds",
                                           "--select", "websocket/*/net/deflate_idle_after_large_messages"]))
        if cmd("load") and "permessage-deflate" in exts.get("load", ()):
            # the load client with the extension on (its codec's websocket.permessage_deflate): the client
            # cases against the checking server, which accepts the offer and corrupts or drops a reply
            # before it compresses it (HAR-VERIFY-*), and the client's side of the agreement (WSD-NEG-5)
            label, codec = self.DEFLATE_PROFILE
            j = json.dumps(codec)
            client = (f"{cmd('load')} --codec {shlex.quote(j)} --connect {{host}}:{{port}} --connections 4 --payload 32 "
                      f"--mode pipelined --window 16 --requests {1000 if scale == 'small' else 4000} "
                      "--timeout-ms 2000 --json {json}")
            out.append(("client", label, ["net", "--codec", j, "--client", client, "--name", impl["name"]]))
        for side, key, flag in (("server", "server", "--server-cmd"), ("client", "autobahn_client", "--client-cmd")):
            program = cmd(key)
            if not program or "permessage-deflate" not in exts.get(side, ()):
                continue
            codec = dict(self.AUTOBAHN_CODEC, websocket=dict(self.AUTOBAHN_CODEC["websocket"], permessage_deflate=True))
            program += f" --codec {shlex.quote(json.dumps(codec))}" + (" --listen 127.0.0.1:0" if side == "server" else "")
            # the third-party columns: the sample (every group of 12.* and 13.*) at every scale; the whole
            # 216 are the reference implementations' (10-22 minutes a cell: the main job's time)
            picked = DEFLATE_SAMPLE_CASES if scale == "small" or impl.get("third_party") else DEFLATE_CASES
            argv = ["autobahn", flag, program, "--agent", impl["name"], "--cwd", impl["dir"], "--require-implemented",
                    "--cases", ",".join(picked)]
            if picked is DEFLATE_CASES:  # 216 cases: 10-12 minutes alone on two cores, up to twice that beside other cells
                argv += ["--timeout", "3600"]
            if xf.get(f"{side}_deflate"):
                argv += ["--xfail", str(Path(impl["dir"]) / xf[f"{side}_deflate"])]
            out.append(("net" if side == "server" else "client", f"websocket autobahn permessage-deflate (as {side})", argv))
        return out

    # -- suites
    def properties(self):
        S = self.strategies
        return [
            P.Property("prop_encode_matches_spec", self.name,
                       ["WS-HDR-1", "WS-LEN-1", "WS-LEN-2", "WS-MASK-3", "WS-MASK-4", "WS-HDR-2", "WS-HDR-3",
                        "WS-CTL-1", "WS-CTL-2", "WS-LIM-3"], "encode",
                       "Random frames (masked and unmasked, every length form) encode to the spec's bytes or refusal",
                       P.encode_matches_spec(S)),
            P.Property("prop_encode_decode_roundtrip", self.name, ["WS-HDR-1", "WS-LEN-1", "WS-MASK-3"], "encode",
                       "decode(encode(frames)) gives the frames back, for the codec's role", P.roundtrip(S)),
            P.Property("prop_chunking_independence", self.name, ["WS-STR-1", "WS-STR-2", "WS-FRAG-1", "WS-CTL-3"],
                       "decode", "Any split of a valid stream of messages (fragments, control frames between them, "
                       "a close) decodes to the same frames", P.chunking(S)),
            P.Property("prop_agrees_with_oracle", self.name, ["WS-STR-4", "WS-STR-3", "WS-CLOSE-4"], "decode",
                       "On mutated streams in arbitrary chunks, frames and error equal the oracle's", P.agrees(S)),
            P.Property("prop_invalid_rejected_with_class", self.name,
                       ["WS-HDR-2", "WS-HDR-3", "WS-CTL-1", "WS-CTL-2", "WS-MASK-1", "WS-MASK-2", "WS-LEN-3",
                        "WS-LEN-4", "WS-FRAG-2", "WS-FRAG-3", "WS-LIM-1", "WS-UTF8-1", "WS-UTF8-2", "WS-CLOSE-1",
                        "WS-CLOSE-2", "WS-CLOSE-3", "WS-STR-3"], "decode",
                       "Valid frames then one bad frame: the prefix is delivered, the bad frame rejected with its class",
                       P.invalid(S)),
            P.Property("prop_utf8_agrees_with_python", self.name, ["WS-UTF8-1", "WS-UTF8-2"], "decode",
                       "Text messages of mixed valid and invalid UTF-8 in random fragments fail where Python's "
                       "decoder says, fail-fast", utf8_vs_python(S)),
            P.Property("long_stream_100k_frames", self.name, ["WS-STR-2", "WS-STR-1"], "decode",
                       "100,000 frames through one decoder in chunks of 1 B to 16 KiB", P.long_stream(self.name)),
            P.Property("long_stream_past_4gib", self.name, ["WS-STR-2", "WS-STR-1", "WS-LIM-1"], "long-stream",
                       "One decoder fed a stream the testee makes from a recipe (several GiB in the main job, past "
                       "2^32 bytes): the count, SHA-256 and last of its frames, and the 64-bit offset of an error at "
                       "its end", long_stream_check(self.name)),
            P.Property("prop_serve_agrees_with_model", self.name,
                       ["WS-ECHO-1", "WS-ECHO-2", "WS-ECHO-3", "WS-ERR-1", "WS-PING-1", "WS-CLOSE-5"], "serve",
                       "The echo endpoint, fed valid and mutated streams in any split, writes and closes as the "
                       "model says", P.serving(S)),
            P.Property("serve_scripted", self.name,
                       ["WS-ECHO-1", "WS-ECHO-2", "WS-ECHO-3", "WS-FRAG-1", "WS-PING-1", "WS-PING-2", "WS-CTL-3",
                        "WS-CLOSE-5", "WS-ERR-1", "WS-LIM-1"], "serve",
                       "Fixed echo sessions (fragments, ping between them, close handshake, error close codes), "
                       "whole and byte by byte", scripted(SERVE_CASES)),
        ]

    def net_cases(self):
        return net.cases()

    def net_request(self, seq, payload):
        return frame(BINARY, payload, True, key_for(seq))

    def oversize_header(self, codec, n):
        if n < 126:
            return bytes([0x82, 0x80 | n]) + b"\x00\x00\x00\x00"
        if n < 65536:
            return bytes([0x82, 0x80 | 126]) + n.to_bytes(2, "big") + b"\x00\x00\x00\x00"
        return bytes([0x82, 0x80 | 127]) + (n & (2 ** 63 - 1)).to_bytes(8, "big") + b"\x00\x00\x00\x00"

    def commands(self):
        from . import autobahn  # `frameproof autobahn`: the Autobahn testsuite (docs/autobahn.md)
        return [autobahn.add_parser]

    # -- docs
    def kaitai_frame(self, codec):
        return "websocket_frame", "WebsocketFrame", ()

    def describe_header(self, f):
        return str(f.header) if f.header is not None else ""

    # -- fuzzing
    def wild_codecs(self, draw):
        return WsCodec("websocket", draw(st.sampled_from([0, 125, 126, 65535, 65536])),
                       draw(st.sampled_from(["server", "client"])), draw(st.sampled_from([0, 200, 70000])))

    def edge_header(self, codec, pick):
        n = [125, 126, 65535, 65536, 2 ** 63 - 1, 2 ** 63, codec.limit, codec.limit + 1][pick % 8]
        return self.oversize_header(codec, n & (2 ** 64 - 1)) if n < 2 ** 63 else \
            bytes([0x82, 0xFF]) + n.to_bytes(8, "big") + b"\x00" * 4

    #: byte 0 of the native fuzz targets' input (conformance/FUZZING.md); the limit bounds frames, and
    #: websocket's configuration bits are bit 0 the role (1 client), bits 1-3 the message limit's index
    corpus_id = 3

    def corpus_config(self, codec):
        from ...fuzz_corpus import LIMITS
        if codec.max_message not in LIMITS or codec.role not in ("server", "client"):
            return None
        return (codec.role == "client") | LIMITS.index(codec.max_message) << 1

    def corpus_codec(self, bits, limit):
        from ...fuzz_corpus import LIMITS
        return WsCodec("websocket", limit, "client" if bits & 1 else "server", LIMITS[(bits >> 1) & 7])

    def gen_vectors_codec(self, codec):
        return f"Codec('websocket', {codec.max_payload}, {codec.role!r}, {codec.max_message})"


PROTOCOL = WebSocket()
