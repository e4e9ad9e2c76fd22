"""The Upstream adapter: the benchmark's shape for this protocol (its pipelining window and batch,
as upstream's own benchmarks use them) and upstream's published figures (NewLife X's benchmark
reports), printed beside the benchmark's own (tools/bench, tools/microbench.py)."""
from __future__ import annotations

from typing import Dict


class Upstream:
    #: requests in flight per connection in the benchmark's pipelined (batched) echo: upstream's
    #: window for this protocol (NewLife X's SlidingWindowEcho benchmark). Default 256, the load clients' own
    #: receive batch; a protocol whose matching bounds what may be pending sets its bound.
    pipeline_window: int = 256
    #: requests per batch in the load clients' ``--mode batched`` (NewLife X's "batched" echo benchmark:
    #: a batch of concurrent requests, all awaited before the next); 0 = ``pipeline_window``
    default_batch: int = 0
    #: upstream's published benchmark figures for this protocol (NewLife X's report), printed beside
    #: the benchmark's own: ``"peaks"``: [(mode, msg/s, where measured)] and ``"allocations"``:
    #: [(mode, concurrency, BenchmarkDotNet Allocated bytes per op)]. Default empty: upstream
    #: published none, so nothing is printed beside this protocol's figures.
    upstream_figures: Dict[str, list] = {}
    #: True for the protocol whose 32-byte frames upstream's packets-per-recv() claim counts (NewLife X's
    #: report: ~12 packets per recv()); the benchmark's packets-per-recv section runs with it. Default False.
    upstream_recv_claim: bool = False
