"""The Docs adapter: what the docs site (tools/docs/gen_docs.py) needs to annotate a frame."""
from __future__ import annotations


class Docs:
    def kaitai_frame(self, codec):
        """(generated module, class, parameters) of the Kaitai parser of one frame, for the docs'
        annotated hex dumps; None where there is none."""
        return None

    def describe_header(self, frame) -> str:
        """The header of ``frame`` in words for the docs ("" when the frame is only a payload)."""
        return ""
