"""The Benchmarks adapter: the protocol's own benchmark scenarios, baselines and payload codec
(tools/bench, tools/microbench.py)."""
from __future__ import annotations

from typing import Dict, List


class Benchmarks:
    #: extra baseline echo servers for this protocol, beside the reference servers and the raw echo
    #: (which runs for every protocol the Rust implementation has): name -> a program built from
    #: reference-impls/rust/baselines. Default none.
    bench_baselines: Dict[str, str] = {}

    def bench_scenarios(self, quick: bool = False) -> List[dict]:
        """The protocol's own benchmark scenarios beside the generic ones (the seed's tables on their
        shape): dicts with ``group``, ``mode`` (an fp-load mode), ``payload``, ``connections``,
        ``window`` (pipelined window / stream window), ``args`` (more fp-load arguments, e.g.
        ``["--variant", "bidi"]``) and ``seed`` (the seed's figure for that row: ``{"msgs_per_s": N,
        "what": "where it was measured"}``, or None); optionally ``codec`` (codec keys merged over
        ``bench_codec``'s, e.g. ``{"websocket": {"permessage_deflate": True}}``), ``tag`` (the row's name for
        them, in its key and label) and ``needs`` (what a server must list in impl.json's
        ``websocket_extensions.server`` to run the row). Default none."""
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
