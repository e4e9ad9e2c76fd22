"""The `length-field` protocol (spec/length-field.md): NewLife LengthFieldCodec, a length
prefix in one of several profiles (offset, size), replies matched FIFO."""
from __future__ import annotations

from ... import lazy
from ...long_stream import long_stream_check
from ...oracle import Frame
from ..base import Protocol, echo_serve
from . import net, oracle, reference
from .oracle import VALID_SIZES, LengthFieldCodec, encode_length

# imported on first use (frameproof/lazy.py): a process that only encodes, decodes or serves never needs them
st = lazy.module("hypothesis.strategies")
P = lazy.module("frameproof.properties")

VARINT_EDGES = [b"\xff\xff\xff\xff\x07", b"\xff\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x08", b"\x80\x80\x80\x80\x80\x01",
                b"\x80\x80\x80\x80\x80", b"\x80\x00", b"\xff\x7f", b"\x80\x80\x01", b"\xff\xff\x03", b"\x80"]
# The native fuzz targets' profile table (reference-impls/rust/fuzz, reference-impls/cpp/fuzz): keep in step.
CORPUS_PROFILES = [(0, 2), (0, -2), (0, 4), (0, -4), (0, 1), (0, 0), (2, 2), (4, -4),
                   (1, 1), (3, 0), (1, -4), (5, 0), (1, 2), (2, -2), (7, 4), (0, 0)]


class LengthField(Protocol):
    name = "length-field"
    spec_name = "length-field"
    schema = "length-field"
    codec_type = LengthFieldCodec
    since_harness = 1
    stop_requirement = "LF-STR-4"
    truncation_requirement = "LF-STR-3"
    reference = reference
    strategies = lazy.LazyAttribute("frameproof.protocols.length_field.strategies:LengthFieldStrategies")
    corpus_id = 1  # byte 0 of the native fuzz targets' input; its bits 0-3: the profile (CORPUS_PROFILES)
    mutants = {
        "lf-big-endian-default": "LF-FMT-2",
        "lf-split-length-throws": "LF-STR-1",
        "lf-varint-overlong-accepted": "LF-LEN-2",
        "lf-truncates-length": "LF-LEN-1",
        "lf-lifo": "LF-MATCH-1",
        "lf-no-fail-on-timeout": "LF-MATCH-3",
    }
    server_faults = {"reverse-order": "LF-ECHO-1"}
    # -- benchmarks: the seeds' window (DefaultMatchQueue capacity) and figures (seed 000 /
    # research/newlife.md 5.4: NewLife X on an i9-10900K, 20 threads, Windows, loopback); the
    # tokio-util LengthDelimitedCodec echo as a baseline (reference-impls/rust/baselines)
    pipeline_window = 256
    #: the batched echo of upstream's shape (fp-load --mode batched) is checked by net --client in the matrix too
    load_client_profiles = (("batched", "--mode batched --batch 16 --requests 4000"),)
    default_batch = 128  # NewLife X's length-field batched echo awaits 128 concurrent requests
    upstream_figures = {
        "peaks": [("per-packet", 273298, "C=256"), ("pipelined", 455373, "C=256, window 256")],
        "allocations": [("per-packet", 64, 1040), ("batched", 64, 849), ("batched", 1024, 803)],
    }
    bench_baselines = {"tokio-lf": "fp-tokio-lf-echo"}

    def bench_codec(self, payload):
        """Payloads beyond a 2-byte length field (64 KiB) use the 4-byte profile on both ends."""
        c = self.codec()
        return c if payload <= c.capacity else self.codec(lf_size=4)

    # -- configuration
    def codec_from_json(self, d):
        extra = set(d) - {"protocol", "limits", "length_field"}
        if extra:
            raise ValueError(f"unknown codec key(s) for length-field: {', '.join(sorted(extra))}")
        lf = d.get("length_field") or {}
        return LengthFieldCodec("length-field", int((d.get("limits") or {}).get("max_payload", 0)),
                                int(lf.get("offset", 0)), int(lf.get("size", 2)))

    def codec_from_pb(self, msg):
        if msg.HasField("length_field"):
            return LengthFieldCodec("length-field", msg.limits.max_payload, msg.length_field.offset, msg.length_field.size)
        return LengthFieldCodec("length-field", msg.limits.max_payload)

    def codec_to_pb(self, codec, msg):
        msg.length_field.offset, msg.length_field.size = codec.lf_offset, codec.lf_size

    def net_profiles(self):
        return [("length-field", LengthFieldCodec("length-field")),
                ("length-field o3 varint", LengthFieldCodec("length-field", 0, 3, 0))]

    # -- frames (payload only)
    def frame_to_json(self, f):
        from ...vectors import compact_bytes
        return {"payload": compact_bytes(f.payload)}

    def frame_from_json(self, d):
        from ...vectors import parse_bytes
        return Frame(0, 0, parse_bytes(d.get("payload", "")))

    # -- oracle
    def decode(self, codec, data):
        return oracle.decode(codec, data)

    def encode(self, codec, frame):
        return oracle.encode(codec, frame)

    def match(self, codec, events, timeout_ms=0):
        return oracle.FifoClient(codec, timeout_ms).run(events)

    def serve(self, codec, endpoint, chunks, half_close):
        return echo_serve(codec, chunks, half_close, oracle.echo_reply)

    def echo_reply(self, frame):
        return oracle.echo_reply(frame)

    def invalid_config(self, codec):
        return codec.lf_size not in VALID_SIZES

    # -- suites
    def properties(self):
        S = self.strategies
        hdr = ["LF-FMT-1", "LF-FMT-3", "LF-LEN-1", "LF-LIM-2"]
        return [
            P.Property("prop_encode_matches_spec", self.name, hdr, "encode",
                       "Random frames encode to the spec's exact bytes (or the spec's refusal)", P.encode_matches_spec(S)),
            P.Property("prop_encode_decode_roundtrip", self.name, ["LF-FMT-5", "LF-FMT-1"], "encode",
                       "decode(encode(frames)) gives the frames back", P.roundtrip(S)),
            P.Property("prop_chunking_independence", self.name, ["LF-STR-1", "LF-STR-2"], "decode",
                       "Any split of a valid stream decodes to the same frames", P.chunking(S)),
            P.Property("prop_agrees_with_oracle", self.name, ["LF-STR-4", "LF-STR-3", "LF-LEN-2"], "decode",
                       "On arbitrary and mutated streams in arbitrary chunks, frames and error equal the oracle's",
                       P.agrees(S)),
            P.Property("prop_invalid_rejected_with_class", self.name, ["LF-LIM-1", "LF-LEN-2", "LF-LEN-3", "LF-STR-3"],
                       "decode", "A valid prefix then one bad frame: the prefix is delivered and the bad frame is "
                                 "rejected with its class", P.invalid(S)),
            P.Property("prop_matching_agrees_with_model", self.name, ["LF-MATCH-1", "LF-MATCH-2", "LF-MATCH-3"], "match",
                       "Random client sessions (sends, replies in any order, stray replies, clock) complete as the "
                       "model says", P.matching(S)),
            P.Property("long_stream_100k_frames", self.name, ["LF-STR-2", "LF-STR-1"], "decode",
                       "100,000 frames through one decoder in chunks of 1 B to 16 KiB", P.long_stream(self.name)),
            P.Property("long_stream_past_4gib", self.name, ["LF-STR-2", "LF-STR-1", "LF-LIM-1"], "long-stream",
                       "One decoder fed a stream the testee makes from a recipe (several GiB in the main job, past "
                       "2^32 bytes): the count, SHA-256 and last of its frames, and the 64-bit offset of an error at "
                       "its end", long_stream_check(self.name)),
            P.Property("prop_serve_agrees_with_model", self.name, ["LF-ECHO-1", "LF-ECHO-2", "LF-ECHO-3"], "serve",
                       "The echo endpoint, fed valid and mutated streams in any split, writes and closes as the "
                       "model says", P.serving(S)),
        ]

    def net_cases(self):
        return net.cases()

    def net_request(self, seq, payload):
        return Frame(0, 0, payload)

    def oversize_header(self, codec, n):
        return bytes(codec.lf_offset) + encode_length(codec, n)

    # -- docs
    def kaitai_frame(self, codec):
        return "length_field_frame", "LengthFieldFrame", (codec.lf_offset, codec.lf_size)

    # -- fuzzing
    def wild_codecs(self, draw):
        limit = draw(st.one_of(st.just(0), st.integers(1, 300), st.integers(65530, 65540)))
        size = draw(st.sampled_from([1, 2, 4, -2, -4, 0, 0, 3, -1, 8]))
        return LengthFieldCodec("length-field", limit, draw(st.integers(0, 9)), size)

    def edge_header(self, codec, pick):
        head = bytes(codec.lf_offset)
        if codec.lf_size == 0 and pick % 2:
            return head + VARINT_EDGES[(pick // 2) % len(VARINT_EDGES)]
        cap = {1: 0xFF, 2: 0xFFFF, -2: 0xFFFF}.get(codec.lf_size, 0xFFFFFFFF)
        n = [codec.limit, codec.limit + 1, cap, 2 ** 31 - 1, 2 ** 31, 0][pick % 6] & cap
        if codec.lf_size == 0:
            return head + encode_length(codec, min(n, 2 ** 35 - 1))
        return head + n.to_bytes(abs(codec.lf_size), "little" if codec.lf_size > 0 else "big")

    def corpus_config(self, codec):
        prof = (codec.lf_offset, codec.lf_size)
        return CORPUS_PROFILES.index(prof) if prof in CORPUS_PROFILES else None

    def corpus_codec(self, bits, limit):
        o, s = CORPUS_PROFILES[bits & 15]
        return LengthFieldCodec("length-field", limit, o, s)

    def gen_vectors_codec(self, codec):
        return f"Codec('length-field', {codec.max_payload}, {codec.lf_offset}, {codec.lf_size})"


PROTOCOL = LengthField()
