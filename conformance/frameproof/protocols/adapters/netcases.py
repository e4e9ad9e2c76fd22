"""The NetCases adapter: the network suite's cases against a server (frameproof.netsuite), the
codec profiles the matrix runs them with, and the request, reply and header bytes the generic cases
and the stress group build them from."""
from __future__ import annotations

from typing import List, Tuple


class NetCases:
    def net_cases(self) -> list:
        """Network cases (frameproof.netsuite.NetCase), in a stable order."""
        return []

    #: network-suite profiles the matrix runs: (label, codec)
    def net_profiles(self) -> List[Tuple[str, object]]:
        return [(self.name, self.codec())]

    def net_request(self, seq: int, payload: bytes):
        """The request frame number ``seq`` (1, 2, ...) carrying ``payload`` that the generic network
        cases and the stress group send."""
        raise NotImplementedError(f"{self.name} has no network request")

    def echo_reply(self, frame):
        """The reply the echo service owes to the request ``frame`` (the spec's echo rule), or None
        when it owes none."""
        raise NotImplementedError(f"{self.name} has no echo service")

    def oversize_header(self, codec, n: int) -> bytes:
        """The bytes of a frame header declaring an ``n``-byte frame (the oversize and hostile cases)."""
        raise NotImplementedError(f"{self.name} has no oversize header")

    def oversize_whole_frame(self, codec, n: int) -> bytes:
        """A whole ``n``-byte frame, valid but for its size (oversize_whole_frame): the header and ``n`` payload
        bytes; a protocol whose body has fields of its own (rpc's names) gives them too, so that a server's
        fast path, which answers valid whole frames where they lie, takes it up to its limit check."""
        from ...loadside import payload_for
        return self.oversize_header(codec, n) + payload_for(n, n)
