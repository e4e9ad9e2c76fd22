"""What a protocol package provides (the plug-in interface). Every hook is documented here;
``frameproof.protocols.<name>.PROTOCOL`` is an instance of a subclass.

A protocol that does not have a layer (for example no client-side matching) leaves the hook at
its default, which says so explicitly (an empty list, or ``NotImplementedError`` with the reason);
the project's own tests (conformance/tests/test_protocol_layout.py) fail when a registered
protocol lacks a part it must have.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..paths import ROOT, SPEC_DIR, VECTOR_DIR


class Protocol:
    #: the name used on the command line, in test names and in codec JSON ("length-field")
    name: str = ""
    #: spec/<spec_name>.md and schemas/<schema>.ksy
    spec_name: str = ""
    schema: str = ""
    #: the Codec subclass of this protocol (its configuration)
    codec_type: type = None
    #: the testee harness version that introduced this protocol (spec/testee.md, "Versions")
    since_harness: int = 2
    #: testee features the suite uses for this protocol
    features: Tuple[str, ...] = ("decode", "encode", "match", "serve")
    #: the requirement that a stream ending inside a frame breaks (end-of-stream truncation)
    truncation_requirement: str = ""
    #: the requirement a decoder breaks by going on after an error (stop at the first error)
    stop_requirement: str = ""
    #: the checking server of `frameproof net --client` (and the Python load client) handle it
    load_client_checks: bool = True
    #: Python reference codec module (used by the Python testee, server and load client)
    reference = None
    #: deliberate bugs of the Python testee: name -> the requirement it breaks
    mutants: Dict[str, str] = {}
    #: deliberate bugs of the Python echo server: name -> the requirement it breaks
    server_faults: Dict[str, str] = {}

    # ------------------------------------------------------------ files
    @property
    def spec_file(self) -> Path:
        return SPEC_DIR / f"{self.spec_name}.md"

    @property
    def schema_file(self) -> Path:
        return ROOT / "schemas" / f"{self.schema}.ksy"

    @property
    def vector_dir(self) -> Path:
        return VECTOR_DIR / self.name

    @property
    def id_prefix(self) -> str:
        """The requirement-ID prefix, read from the spec ("STD" for STD-HDR-1)."""
        from ..spec import requirements
        prefixes = {r.id.split("-", 1)[0] for r in requirements().values() if r.protocol == self.name}
        if len(prefixes) != 1:
            raise ValueError(f"{self.spec_file}: requirement IDs with prefixes {sorted(prefixes)}; expected one")
        return prefixes.pop()

    # ------------------------------------------------------------ configuration
    def codec(self, **kw):
        """This protocol's codec with the given parameters (defaults otherwise)."""
        return self.codec_type(self.name, **kw)

    def codec_from_json(self, d: dict):
        """The codec JSON (vectors, --codec) to a Codec; unknown keys are an error."""
        raise NotImplementedError

    def codec_to_pb(self, codec, msg) -> None:
        """Fills the protocol's parameters into a testee ``Codec`` message (``params`` oneof)."""

    #: network-suite profiles the matrix runs: (label, codec)
    def net_profiles(self) -> List[Tuple[str, object]]:
        return [(self.name, self.codec())]

    # ------------------------------------------------------------ frames
    def frame_to_json(self, f) -> dict:
        raise NotImplementedError

    def frame_from_json(self, d: dict):
        raise NotImplementedError

    def frame_to_pb(self, f, msg) -> None:
        msg.payload = f.payload

    def frame_from_pb(self, msg):
        from ..oracle import Frame
        return Frame(0, 0, bytes(msg.payload))

    # ------------------------------------------------------------ the oracle
    def decode(self, codec, data: bytes):
        """The whole stream ``data`` (its end is the end of the stream) -> DecodeResult."""
        raise NotImplementedError

    def encode(self, codec, frame):
        """Canonical bytes of ``frame``, or the ``Error`` an encoder must report."""
        raise NotImplementedError

    def match(self, codec, events: list, timeout_ms: int = 0):
        """The client-side matching model (spec/testee.md, ``match``) -> MatchResult."""
        raise NotImplementedError(f"{self.name} has no client-side matching")

    def serve(self, codec, endpoint: str, chunks: List[bytes], half_close: bool):
        """The server-side endpoint model (spec/testee.md, ``serve``) -> ServeResult."""
        raise NotImplementedError(f"{self.name} has no server model")

    def server_session(self, codec, endpoint: str = ""):
        """The Python reference server side of one ``serve`` connection (the Python testee): an
        object with ``feed(bytes) -> bytes``, ``eof() -> bytes``, ``closed`` and ``error`` (a
        ``CodecError``). Default: the echo session over ``reference`` (one endpoint, stateless
        replies); a protocol with several endpoints or a stateful one returns its own."""
        from ..reference import EchoSession
        return EchoSession(self.reference, codec)

    def echo_replier(self, codec, fault: str = ""):
        """A fresh per-connection ``reply(frame) -> Frame | None`` for the Python echo server
        (frameproof.pyserver); raising ``CodecError`` closes the connection on that frame.
        Default: ``reference.echo_reply(frame, fault)``, stateless."""
        return lambda frame: self.reference.echo_reply(frame, fault)

    def closing_bytes(self, codec, err, fault: str = "") -> bytes:
        """What the Python echo server writes right before it closes a connection on ``err`` (a
        ``CodecError`` from the decoder or the replier), e.g. a close frame. Default: nothing."""
        return b""

    def server_opening(self, codec, fault: str = ""):
        """The server side of an opening handshake that precedes the frames on a network
        connection (frameproof.pyserver), or None (default: frames from the first byte). An object
        with ``feed(bytes) -> (reply bytes, leftover bytes or None while incomplete)`` and ``ok``
        (True: frames follow; False: the server closes after the reply)."""
        return None

    # ------------------------------------------------------------ resource limits (the echo server, *-RES-*)
    def held_bytes(self, decoder, replier) -> int:
        """Input the Python echo server holds for one connection's unfinished frame (RES-1): what
        ``decoder`` (``reference.decoder``) buffers, plus what the ``echo_replier`` keeps (a message's
        fragments). Default: the decoder's buffer."""
        return len(getattr(decoder, "buf", b""))

    def largest_unit(self, codec) -> int:
        """The largest frame (or message) a server with ``codec`` accepts: a memory budget below it is a
        usage error (RES-1). Default: the frame limit."""
        return codec.limit

    # ------------------------------------------------------------ the network client (netsuite)
    def net_client_codec(self, codec):
        """The codec the network suite's client speaks to a server configured with ``codec``.
        Default: the same codec (a protocol with roles returns the peer's)."""
        return codec

    def net_handshake(self, conn) -> None:
        """The client side of an opening handshake on a fresh ``netsuite.Conn`` (raises
        CheckFailure when the server's answer is wrong). Default: none."""

    def net_is_goodbye(self, frame) -> bool:
        """True for a frame a server may send right before it closes a connection (e.g. a close
        frame): ``Conn.expect_closed`` does not count it as a reply. Default: none is."""
        return False

    # ------------------------------------------------------------ suites
    def properties(self) -> list:
        """Hypothesis properties (frameproof.properties.Property), in a stable order."""
        return []

    def net_cases(self) -> list:
        """Network cases (frameproof.netsuite.NetCase), in a stable order."""
        return []

    def client_request_check(self):
        """A fresh per-connection checker the checking server calls as ``check(frame) -> str|None``
        (the HAR-CLI-1 violation, if any) on every request a load client sends."""
        return lambda frame: None

    # ------------------------------------------------------------ the load client (fp-load, net --client)
    #: the values of the load clients' ``--variant`` (reference-impls/README.md); the first is the default
    load_variants: Tuple[str, ...] = ("default",)
    #: the load clients have ``--mode stream`` for this protocol
    load_streams: bool = False
    #: extra load-client runs the matrix checks with ``net --client`` beside the default one:
    #: (label, fp-load arguments replacing the default mode/window/requests)
    load_client_profiles: Tuple[Tuple[str, str], ...] = ()

    #: frames a load client sends on each connection besides its requests (a close frame): a server
    #: counting every frame it receives counts them too (reference-impls/README.md, counters)
    load_goodbye_frames: int = 0

    def load_side(self, codec, variant: str):
        """The protocol side of one Python load-client connection (frameproof.loadside.LoadSide)."""
        from ..loadside import LoadSide
        return LoadSide(self, codec, variant)

    def counted(self, frame) -> bool:
        """True for a frame the checking server counts as a request (from the client) or a reply
        (to it); False for protocol traffic around them (stream set-up, close frames). Default: all."""
        return True

    # ------------------------------------------------------------ extra commands
    def commands(self) -> list:
        """Extra ``frameproof`` subcommands this protocol provides (e.g. websocket's ``autobahn``):
        callables ``add(subparsers)``, each adding one argparse subcommand whose ``fn(args)``
        returns the exit status. Default: none."""
        return []

    # ------------------------------------------------------------ hostile peers at scale (net --stress)
    #: the largest frame of the small-bounds stress configuration (frameproof.stress.SMALL_LIMITS)
    STRESS_FRAME = 1 << 20

    def stress_codec(self):
        """The codec a server runs the small-bounds stress group with (CI and the main job): frames
        up to 1 MiB, so that an 8 MiB budget holds several. Default: the codec that carries 1 MiB
        payloads (``bench_codec``) limited to 1 MiB."""
        return self.bench_codec(self.STRESS_FRAME).with_limit(self.STRESS_FRAME)

    # ------------------------------------------------------------ the main job (frameproof matrix)
    def matrix_suites(self, impl: dict, cmd, profile: str, scale: str = "full") -> List[Tuple[str, str, List[str]]]:
        """Suites of this protocol the matrix runs beside the codec, network and load-client ones:
        (group "codec" | "net" | "client", row label, frameproof CLI arguments without --json). ``impl``
        is the implementation's impl.json (with "dir"), ``cmd(key)`` the shell command of its program
        ``key`` (or None when it has none), ``profile`` the Hypothesis profile ("smoke" in CI), ``scale``
        "full" (the main job) or "small" (CI: every path at small bounds). Default none."""
        return []

    # ------------------------------------------------------------ docs
    def kaitai_frame(self, codec):
        """(generated module, class, parameters) of the Kaitai parser of one frame, for the docs'
        annotated hex dumps; None where there is none."""
        return None

    def describe_header(self, frame) -> str:
        """The header of ``frame`` in words for the docs ("" when the frame is only a payload)."""
        return ""

    # ------------------------------------------------------------ fuzzing
    def wild_codecs(self, draw):
        """Codecs beyond the suite's table (Hypothesis ``draw``), including invalid ones."""
        return self.codec()

    def edge_header(self, codec, pick: int) -> bytes:
        """A frame header declaring a boundary length (a fuzzing dictionary entry)."""
        return b""

    def invalid_config(self, codec) -> bool:
        """True if the codec configuration itself must be refused."""
        return False

    #: bit 0 of the native fuzz targets' config byte (reference-impls/*/fuzz): which protocol
    corpus_id: Optional[int] = None

    def corpus_config(self, codec) -> Optional[int]:
        """Bits 1..4 of the native targets' config byte for ``codec`` (None: not in their table)."""
        return None

    def corpus_codec(self, bits: int, limit: int):
        return self.codec(max_payload=limit)

    def gen_vectors_codec(self, codec) -> str:
        """Python source that builds ``codec`` in tools/gen_vectors (for reproducers)."""
        return f"{self.name!r}"

    # ------------------------------------------------------------ benchmarks (tools/bench, tools/microbench.py)
    #: requests in flight per connection in the benchmark's pipelined (batched) echo: the seeds'
    #: window for this protocol (NewLife SlidingWindowEcho). Default 256, the load clients' own
    #: receive batch; a protocol whose matching bounds what may be pending sets its bound.
    seed_window: int = 256
    #: requests per batch in the load clients' ``--mode batched`` (the seeds' NewLife "batched" echo:
    #: a batch of concurrent requests, all awaited before the next); 0 = ``seed_window``
    seed_batch: int = 0
    #: the seeds' published benchmark figures for this protocol (NewLife X, seed 000), printed beside
    #: the benchmark's own: ``"peaks"``: [(mode, msg/s, where measured)] and ``"allocations"``:
    #: [(mode, concurrency, BenchmarkDotNet Allocated bytes per op)]. Default empty: the seeds
    #: published none, so nothing is printed beside this protocol's figures.
    seed_figures: Dict[str, list] = {}
    #: True for the protocol whose 32-byte frames the seeds' packets-per-recv() claim counts (seed
    #: 001: ~12 packets per recv()); the benchmark's packets-per-recv section runs with it. Default False.
    seed_recv_claim: bool = False
    #: extra baseline echo servers for this protocol, beside the reference servers and the raw echo
    #: (which runs for every protocol the Rust implementation has): name -> a program built from
    #: reference-impls/rust/baselines. Default none.
    bench_baselines: Dict[str, str] = {}

    def bench_scenarios(self, quick: bool = False) -> List[dict]:
        """The protocol's own benchmark scenarios beside the generic ones (the seed's tables on their
        shape): dicts with ``group``, ``mode`` (an fp-load mode), ``payload``, ``connections``,
        ``window`` (pipelined window / stream window), ``args`` (more fp-load arguments, e.g.
        ``["--variant", "bidi"]``) and ``seed`` (the seed's figure for that row: ``{"msgs_per_s": N,
        "what": "where it was measured"}``, or None). Default none."""
        return []

    def bench_codec(self, payload: int):
        """The codec the benchmark runs ``payload``-byte requests with, on the server and the load
        clients alike. Default: this protocol's default codec, which must carry the payload (a
        protocol whose default profile cannot, overrides this with a profile that can)."""
        c = self.codec()
        if payload > min(c.capacity, c.limit):
            raise ValueError(f"{self.name}: the default codec cannot carry {payload}-byte payloads; "
                             f"override Protocol.bench_codec")
        return c


@dataclass
class ServeResult:
    """What a server endpoint did with one connection's input (spec/testee.md, ``serve``)."""
    written: List[bytes] = field(default_factory=list)
    closed: bool = False
    error: Optional[object] = None  # oracle.Error


def echo_serve(codec, chunks: List[bytes], half_close: bool, reply) -> ServeResult:
    """The server model of an echo service over a stateless framing: every complete frame is
    answered (``reply(frame)`` -> reply Frame or None) as soon as the chunk that completes it has
    been fed; a decoding error writes the replies to the frames before it, then closes with that
    error; at EOF the endpoint closes, with the truncation error if a frame was left unfinished."""
    from ..oracle import decode, encode
    out = ServeResult()
    if codec.spec.invalid_config(codec):  # a configuration error: refused before any byte is read
        return ServeResult([], True, decode(codec, b"").error)
    data = b""
    answered = 0
    res = decode(codec, b"")
    for ch in chunks:
        data += ch
        res = decode(codec, data)
        written = b""
        for f in res.frames[answered:]:
            r = reply(f)
            if r is not None:
                written += encode(codec, r)
        answered = len(res.frames)
        out.written.append(written)
        if res.error and res.error.requirement != codec.spec.truncation_requirement:
            out.closed, out.error = True, res.error
            return out
    if half_close:
        out.written.append(b"")
        out.closed = True
        if res.error:  # only a truncation can be left here
            out.error = res.error
    return out
