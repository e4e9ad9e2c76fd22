"""The Properties adapter: the codec suite's Hypothesis properties and the strategies they (and the
differential fuzzer) draw from."""
from __future__ import annotations


class Properties:
    #: the protocol's ``frameproof.properties.Strategies`` instance (codecs, frames, invalid streams,
    #: client scripts); the fuzzer draws frames from it too
    strategies = None

    def properties(self) -> list:
        """Hypothesis properties (frameproof.properties.Property), in a stable order."""
        return []
