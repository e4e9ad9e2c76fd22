"""The `standard` protocol (spec/standard.md): NewLife StandardCodec, a 4-byte header
(flag, sequence, length), replies matched by sequence number."""
from __future__ import annotations

from ... import lazy
from ...long_stream import long_stream_check
from ...oracle import Frame
from ..base import Protocol, echo_serve
from . import net, oracle, reference
from .oracle import StandardCodec

# imported on first use (frameproof/lazy.py): a process that only encodes, decodes or serves never needs them
st = lazy.module("hypothesis.strategies")
P = lazy.module("frameproof.properties")

_FUZZ_EDGES = [0, 65534, 65535, 0xFFFE, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 70000]


class Standard(Protocol):
    name = "standard"
    spec_name = "standard"
    schema = "standard"
    codec_type = StandardCodec
    since_harness = 1
    stop_requirement = "STD-STR-4"
    truncation_requirement = "STD-STR-3"
    reference = reference
    strategies = lazy.LazyAttribute("frameproof.protocols.standard.strategies:StandardStrategies")
    corpus_id = 0  # byte 0 of the native fuzz targets' input (conformance/FUZZING.md)
    mutants = {
        "wrong-byte-order": "STD-HDR-1",
        "off-by-one-length": "STD-HDR-1",
        "ignores-chunk-boundaries": "STD-STR-1",
        "accepts-oversize": "STD-LIM-1",
        "accepts-noncanonical-ext": "STD-LEN-3",
        "drops-kind-bits": "STD-HDR-4",
        "no-truncation-error": "STD-STR-3",
        "continues-after-error": "STD-STR-4",
        "seq-starts-at-zero": "STD-SEQ-1",
        "mismatched-sequence": "STD-MATCH-1",
        "reuses-pending-sequence": "STD-SEQ-3",
        "no-timeout": "STD-MATCH-3",
    }
    server_faults = {
        "drop-every-100th": "STD-ECHO-1",
        "crash-on-oversize": "STD-ECHO-4",
        "keep-open-on-error": "STD-ECHO-4",
        "ignore-half-close": "STD-ECHO-5",
        "reply-to-one-way": "STD-ECHO-2",
        "allocate-declared": "STD-LIM-3",
    }
    # -- benchmarks: NewLife SlidingWindowEcho's window (the sequence is one byte), and the seeds'
    # figures (seed 000 / research/newlife.md 5.4: NewLife X on an i9-10900K, 20 threads, Windows, loopback)
    pipeline_window = 255
    #: the batched echo of upstream's shape (fp-load --mode batched) is checked by net --client in the matrix too
    load_client_profiles = (("batched", "--mode batched --batch 16 --requests 4000"),)
    upstream_figures = {
        "peaks": [("per-packet", 260213, "C=256"), ("pipelined", 420008, "C=1024, window 255")],
        "allocations": [("per-packet", 64, 1216), ("batched", 64, 955), ("batched", 1024, 906)],
    }
    upstream_recv_claim = True

    # -- configuration
    def codec_from_json(self, d):
        extra = set(d) - {"protocol", "limits"}
        if extra:
            raise ValueError(f"unknown codec key(s) for standard: {', '.join(sorted(extra))}")
        return StandardCodec("standard", int((d.get("limits") or {}).get("max_payload", 0)))

    def codec_from_pb(self, msg):
        return StandardCodec("standard", msg.limits.max_payload)

    # -- frames
    def frame_to_json(self, f):
        from ...vectors import compact_bytes
        return {"flag": f.flag, "sequence": f.sequence, "payload": compact_bytes(f.payload)}

    def frame_from_json(self, d):
        from ...vectors import parse_bytes
        return Frame(int(d.get("flag", 0)), int(d.get("sequence", 0)), parse_bytes(d.get("payload", "")))

    def frame_to_pb(self, f, msg):
        msg.flag, msg.sequence, msg.payload = f.flag, f.sequence, f.payload

    def frame_from_pb(self, msg):
        return Frame(msg.flag, msg.sequence, bytes(msg.payload))

    # -- oracle
    def decode(self, codec, data):
        return oracle.decode(codec, data)

    def encode(self, codec, frame):
        return oracle.encode(codec, frame)

    def match(self, codec, events, timeout_ms=0):
        return oracle.SequenceClient(codec, timeout_ms).run(events)

    def serve(self, codec, endpoint, chunks, half_close):
        return echo_serve(codec, chunks, half_close, oracle.echo_reply)

    def echo_reply(self, frame):
        return oracle.echo_reply(frame)

    # -- suites
    def properties(self):
        S = self.strategies
        hdr = ["STD-HDR-1", "STD-LEN-1", "STD-LEN-2", "STD-LIM-2"]
        return [
            P.Property("prop_encode_matches_spec", self.name, hdr, "encode",
                       "Random frames encode to the spec's exact bytes (or the spec's refusal)", P.encode_matches_spec(S)),
            P.Property("prop_encode_decode_roundtrip", self.name, ["STD-HDR-5", "STD-HDR-1"], "encode",
                       "decode(encode(frames)) gives the frames back", P.roundtrip(S)),
            P.Property("prop_chunking_independence", self.name, ["STD-STR-1", "STD-STR-2"], "decode",
                       "Any split of a valid stream decodes to the same frames", P.chunking(S)),
            P.Property("prop_agrees_with_oracle", self.name, ["STD-STR-4", "STD-STR-3", "STD-STR-5"], "decode",
                       "On arbitrary and mutated streams in arbitrary chunks, frames and error equal the oracle's",
                       P.agrees(S)),
            P.Property("prop_invalid_rejected_with_class", self.name, ["STD-LIM-1", "STD-LEN-3", "STD-LEN-4", "STD-STR-3"],
                       "decode", "A valid prefix then one bad frame: the prefix is delivered and the bad frame is "
                                 "rejected with its class", P.invalid(S)),
            P.Property("prop_matching_agrees_with_model", self.name,
                       ["STD-MATCH-1", "STD-MATCH-2", "STD-MATCH-3", "STD-MATCH-4", "STD-MATCH-5", "STD-SEQ-1"], "match",
                       "Random client sessions (sends, replies in any order, stray replies, clock) complete as the "
                       "model says", P.matching(S)),
            P.Property("long_stream_100k_frames", self.name, ["STD-STR-2", "STD-STR-1", "STD-SEQ-2"], "decode",
                       "100,000 frames through one decoder in chunks of 1 B to 16 KiB", P.long_stream(self.name)),
            P.Property("long_stream_past_4gib", self.name, ["STD-STR-2", "STD-STR-1", "STD-SEQ-2", "STD-LIM-1"], "long-stream",
                       "One decoder fed a stream the testee makes from a recipe (several GiB in the main job, past "
                       "2^32 bytes): the count, SHA-256 and last of its frames, and the 64-bit offset of an error at "
                       "its end", long_stream_check(self.name)),
            P.Property("prop_serve_agrees_with_model", self.name,
                       ["STD-ECHO-1", "STD-ECHO-2", "STD-ECHO-4", "STD-ECHO-5"], "serve",
                       "The echo endpoint, fed valid and mutated streams in any split, writes and closes as the "
                       "model says", P.serving(S)),
        ]

    def client_cases(self):
        return net.client_cases()

    def net_cases(self):
        return net.cases()

    def net_request(self, seq, payload):
        return Frame(1, seq & 0xFF, payload)

    def oversize_header(self, codec, n):
        return oracle.header(1, 9, n)

    def client_request_check(self, variant=None):
        """HAR-CLI-1: requests carry flag 0x01 and sequence numbers 1, 2, ... (STD-SEQ-1)."""
        state = {"expect": 1, "n": 0}

        def check(frame):
            state["n"] += 1
            if frame.flag & 0x80:
                return f"frame {state['n']} has the reply bit set (flag 0x{frame.flag:02X})"
            if frame.sequence != state["expect"]:
                msg = f"request {state['n']} has sequence {frame.sequence}, STD-SEQ-1 expects {state['expect']}"
                state["expect"] = (frame.sequence + 1) & 0xFF
                return msg
            state["expect"] = (frame.sequence + 1) & 0xFF
            return None
        return check

    # -- docs
    def kaitai_frame(self, codec):
        return "standard_frame", "StandardFrame", ()

    def describe_header(self, f):
        return f"flag `0x{f.flag:02X}`, sequence {f.sequence}"

    # -- fuzzing
    def wild_codecs(self, draw):
        return StandardCodec("standard", draw(st.one_of(st.just(0), st.integers(1, 300), st.integers(65530, 65540))))

    def edge_header(self, codec, pick):
        lim = codec.limit
        n = [lim, lim + 1, 0, 65534, 65535, 0xFFFE, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 70000][pick % 10]
        if n >= 0xFFFF or pick % 3 == 0 and n > 0xFFFF - 2:
            return bytes([pick, pick]) + b"\xff\xff" + (n & 0xFFFFFFFF).to_bytes(4, "little")
        return bytes([pick, pick]) + n.to_bytes(2, "little")

    def corpus_config(self, codec):
        return 0  # standard has no configuration bits

    def gen_vectors_codec(self, codec):
        return f"Codec('standard', {codec.max_payload})"


PROTOCOL = Standard()
