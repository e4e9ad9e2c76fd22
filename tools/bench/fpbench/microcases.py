"""The micro-benchmark case catalog and the check of one program's JSON (tools/bench/microbench.md).

decode and encode cases come from the protocol registry (every registered protocol x payloads x
frames per read, with the codec ``Protocol.bench_codec(payload)``); protocol-specific cases from
tools/bench/microbench.cases.json. Nothing here parses a case name: a case is a dict, and a
program's answer must repeat the case's fields."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List

from frameproof import protocols as registry

from .report import _validate

BENCH = Path(__file__).resolve().parents[1]
SCHEMA_FILE = BENCH / "microbench.schema.json"
CASES_FILE = BENCH / "microbench.cases.json"
SEEDS_FILE = BENCH / "microbench.seeds.json"
SCHEMA = "frameproof-microbench/1"


def catalog() -> List[dict]:
    d = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    out = []
    for p in registry.names():
        for op in ("decode", "encode"):
            for n in d["payloads"]:
                for f in d["frames_per_read"]:
                    out.append({"case": f"{p}/{op}/{n}/{f}", "protocol": p, "op": op, "payload": n,
                                "frames_per_read": f, "codec": registry.get(p).bench_codec(n).to_json()})
    for x in d["extra"]:
        if x["protocol"] in registry.names():
            out.append(dict(x, codec=registry.get(x["protocol"]).bench_codec(x["payload"]).to_json()))
    return out


def seeds() -> List[dict]:
    return json.loads(SEEDS_FILE.read_text(encoding="utf-8"))["figures"]


def check(doc, case: dict, implementation: str = None) -> List[str]:
    """Problems of one program's JSON for ``case`` (empty = accepted): the schema, then the case's
    own fields repeated exactly, then consistency (min <= median <= max, n = samples)."""
    if not isinstance(doc, dict):
        return ["$: not a JSON object"]
    bad: List[str] = []
    _validate(doc, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), "$", bad)
    if bad:
        return bad
    for k in ("case", "protocol", "op", "payload", "frames_per_read"):
        if doc[k] != case[k]:
            bad.append(f"$.{k}: {doc[k]!r}, but the case asked for has {case[k]!r}")
    if implementation and doc["implementation"] != implementation:
        bad.append(f"$.implementation: {doc['implementation']!r}, expected {implementation!r}")
    t = doc["ns_per_frame"]
    if not t["min"] <= t["median"] <= t["max"]:
        bad.append("$.ns_per_frame: not min <= median <= max")
    if t["n"] != doc["samples"]:
        bad.append(f"$.ns_per_frame.n: {t['n']}, but samples = {doc['samples']}")
    return bad
