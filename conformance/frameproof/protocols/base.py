"""What a protocol package provides (the plug-in interface). ``frameproof.protocols.<name>.PROTOCOL``
is an instance of a subclass of :class:`Protocol`.

The interface is split by concern, as tokio-util splits ``Decoder`` and ``Encoder``: this module
holds the core every protocol has (its identity and files, its codec, decode and encode), and
``frameproof.protocols.adapters`` one small class for each other concern (``Wire``, ``Models``,
``PythonImpl``, ``Limits``, ``Properties``, ``NetCases``, ``NetClient``, ``LoadClient``,
``Commands``, ``MatrixSuites``, ``Docs``, ``Fuzzing``, ``Upstream``, ``Benchmarks``, ``Layers``), each
member documented there. :class:`Protocol` composes the core and every adapter; a protocol
overrides the members of the adapters it implements.

A protocol that does not have a layer (for example no client-side matching) leaves the hook at
its default, which says so explicitly (an empty list, or ``NotImplementedError`` with the reason);
the project's own tests (conformance/tests/test_protocol_layout.py) fail when a registered
protocol lacks a part it must have.
"""
from __future__ import annotations

from pathlib import Path
from typing import Tuple

from ..paths import ROOT, SPEC_DIR, VECTOR_DIR
from .adapters import (Benchmarks, Commands, Docs, Fuzzing, Layers, Limits, LoadClient, MatrixSuites, Models,
                       NetCases, NetClient, Properties, PythonImpl, Upstream, Wire)
from .adapters.models import ServeResult, echo_serve  # noqa: F401  (imported from here by the protocols and testee.py)


class ProtocolCore:
    """The identity and codec core: what every protocol has."""
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

    # ------------------------------------------------------------ the codec
    def codec(self, **kw):
        """This protocol's codec with the given parameters (defaults otherwise)."""
        return self.codec_type(self.name, **kw)

    def invalid_config(self, codec) -> bool:
        """True if the codec configuration itself must be refused."""
        return False

    def decode(self, codec, data: bytes):
        """The whole stream ``data`` (its end is the end of the stream) -> DecodeResult."""
        raise NotImplementedError

    def encode(self, codec, frame):
        """Canonical bytes of ``frame``, or the ``Error`` an encoder must report."""
        raise NotImplementedError


class Protocol(ProtocolCore, Wire, Models, PythonImpl, Limits, Properties, NetCases, NetClient, LoadClient,
               Commands, MatrixSuites, Docs, Fuzzing, Upstream, Benchmarks, Layers):
    """The core and every adapter, each at its neutral default: every registered protocol subclasses
    this, so the suites, the tools and the docs reach any member of any protocol."""
