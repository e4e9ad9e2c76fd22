"""The Fuzzing adapter: the differential fuzzer's codecs and dictionary (frameproof.fuzz) and the
native libFuzzer targets' input layout (frameproof.fuzz_corpus)."""
from __future__ import annotations

from typing import Optional


class Fuzzing:
    def wild_codecs(self, draw):
        """Codecs beyond the suite's table (Hypothesis ``draw``), including invalid ones."""
        return self.codec()

    def edge_header(self, codec, pick: int) -> bytes:
        """A frame header declaring a boundary length (a fuzzing dictionary entry)."""
        return b""

    #: byte 0 of the native fuzz targets' input (reference-impls/*/fuzz, conformance/FUZZING.md): the
    #: protocol's own number, unique among the registered protocols
    corpus_id: Optional[int] = None

    def corpus_config(self, codec) -> Optional[int]:
        """The protocol's own bits (0..31) of byte 1 of the native targets' input for ``codec``, under
        the limit's index in bits 5-7 (None: not in their tables)."""
        return None

    def corpus_codec(self, bits: int, limit: int):
        return self.codec(max_payload=limit)

    def gen_vectors_codec(self, codec) -> str:
        """Python source that builds ``codec`` in tools/gen_vectors (for reproducers)."""
        return f"{self.name!r}"
