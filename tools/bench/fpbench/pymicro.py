"""A micro-benchmark program following tools/bench/microbench.md, over the Python reference codecs.

    cd tools/bench && python -m fpbench.pymicro --case standard/decode/32/16 --iterations 1000 --json out.json

It is the worked example of the contract (and what the project's tests run microbench.py with):
decode = the read's bytes fed to the reference streaming decoder (``feed`` copies them into its
buffer, as a socket read lands in a connection's buffer), every frame consumed; encode = the replies
the reference echo gives, encoded into a reused bytearray. Generic over the protocol registry: the
protocol-specific cases (websocket mask/utf8) are not implemented here (exit status 3). Python
allocates per operation and has no cheap exact counter, so the allocation figures are null (not
measured). Its figures are microseconds, not nanoseconds: it shows the contract, not a fast codec.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from frameproof import protocols as registry
from frameproof.loadside import payload_for

from .microcases import SCHEMA, catalog


def _frames(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def prepare(case: dict):
    """(iteration function returning a checksum, wire bytes per frame)."""
    proto = registry.get(case["protocol"])
    codec = proto.codec_from_json(case["codec"])
    side = proto.load_side(codec, proto.load_variants[0])
    ref = proto.reference
    f, n = case["frames_per_read"], case["payload"]
    reqs = [side.request(payload_for(i, n))[1] for i in range(f)]
    wire = [side.encode(r) for r in reqs]
    read = b"".join(wire)
    dec = ref.decoder(codec)
    if case["op"] == "decode":
        def one():
            s = 0
            got = dec.feed(read)
            for fr in got:
                p = fr.payload
                s += len(p) + (p[0] if p else 0)
            if len(got) != f:
                raise SystemExit(f"pymicro: {len(got)} frames decoded from a read of {f}")
            return s
        return one, len(wire[0])
    replies = [r for fr in dec.feed(read) for r in _frames(ref.echo_reply(fr))]
    out = bytearray()
    enc = ref.encode

    def one():
        out.clear()
        for r in replies:
            out.extend(enc(codec, r))
        return len(out) + out[-1]
    return one, len(enc(codec, replies[0]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fpbench.pymicro")
    ap.add_argument("--case")
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--samples", type=int, default=11)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--json")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    mine = {c["case"]: c for c in catalog() if c["op"] in ("decode", "encode")}
    if a.list:
        print("\n".join(mine))
        return 0
    if not (a.case and a.iterations and a.json) or a.iterations < 1 or a.samples < 1:
        ap.print_usage(sys.stderr)
        print("usage error: --case, --iterations N >= 1 and --json are required", file=sys.stderr)
        return 2
    case = mine.get(a.case)
    if case is None:
        print(f"pymicro: case {a.case!r} is not implemented here", file=sys.stderr)
        return 3
    one, bpf = prepare(case)
    warm = a.warmup if a.warmup is not None else max(1, a.iterations // 10)
    check = 0
    for _ in range(warm):
        check += one()
    per = []
    for _ in range(a.samples):
        t0 = time.perf_counter_ns()
        for _ in range(a.iterations):
            check += one()
        per.append((time.perf_counter_ns() - t0) / (a.iterations * case["frames_per_read"]))
    per.sort()
    doc = {"schema": SCHEMA, "implementation": "python", "case": case["case"], "protocol": case["protocol"],
           "op": case["op"], "payload": case["payload"], "frames_per_read": case["frames_per_read"],
           "iterations": a.iterations, "samples": a.samples, "warmup_iterations": warm,
           "ns_per_frame": {"median": round(per[len(per) // 2], 2), "min": round(per[0], 2), "max": round(per[-1], 2),
                            "n": len(per)},
           "bytes_per_frame": bpf, "allocs_per_frame": None, "bytes_alloc_per_frame": None,
           "allocation_counter": "none (Python: not measured)", "instructions_per_frame": None,
           "checksum": check & ((1 << 62) - 1)}
    with open(a.json, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
