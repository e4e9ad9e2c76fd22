#!/usr/bin/env python3
"""Runs each reference implementation's codec micro-benchmarks and writes their figures,
side by side, to results/microbench-<date>.json and .md (never typed by hand):

* Rust: criterion (`cargo bench -p frameproof-codec --bench codec`), read back from
  target/criterion/<group>/<protocol>/<size>/new/estimates.json (64 frames per iteration);
* C#: `fp-bench.exe --json` (ns/op and allocated bytes/op via GC.GetAllocatedBytesForCurrentThread);
* C++: Google Benchmark (`fp-bench --benchmark_format=json`) when the C++ tree is built.

    .venv/bin/python tools/microbench.py [--quick]

These are figures, not tests: nothing here passes or fails on speed. The protocols are the
registered ones (frameproof.protocols); a benchmark belongs to the protocol whose name its own name
carries (spelled with '-', '_' or neither).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "conformance"))  # frameproof from this checkout, venv or not
from frameproof import protocols as registry  # noqa: E402

RUST = ROOT / "reference-impls" / "rust"
CS = ROOT / "reference-impls" / "csharp"
CPP = ROOT / "reference-impls" / "cpp"
SIZES = (32, 1024, 65536)
RUST_BATCH = 64  # frames per criterion iteration (codec/benches/codec.rs)


def _spellings(name: str):
    return dict.fromkeys((name, name.replace("-", "_"), name.replace("-", "")))


def protocol_prefix(name: str):
    """The registered protocol a benchmark name starts with (C#: "length-field(0,4) encode")."""
    name = name.lower()
    for p in sorted(registry.names(), key=len, reverse=True):  # the longest name first
        if any(name.startswith(s) for s in _spellings(p)):
            return p
    return None


def protocol_in(name: str):
    """The registered protocol a benchmark name mentions (Google Benchmark: "BM_Decode/length_field/32")."""
    name = name.lower()
    for p in sorted(registry.names(), key=len, reverse=True):
        if any(s in name for s in _spellings(p)):
            return p
    return None


def rust(quick: bool):
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    args = [cargo, "bench", "-p", "frameproof-codec", "--bench", "codec", "--", "--noplot",
            "--warm-up-time", "0.5" if quick else "1", "--measurement-time", "1" if quick else "3"]
    subprocess.run(["flock", "/tmp/frameproof-build.lock"] + args, cwd=RUST, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = []
    for op in ("encode", "decode"):
        for proto in registry.names():
            for n in SIZES:
                est = RUST / "target" / "criterion" / op / proto / str(n) / "new" / "estimates.json"
                if not est.exists():
                    continue
                mean = json.loads(est.read_text())["mean"]["point_estimate"]  # ns per iteration
                ns = mean / RUST_BATCH
                out.append({"op": op, "protocol": proto, "payload": n, "ns_per_frame": round(ns, 2),
                            "gb_per_s": round(n / ns, 2), "alloc_bytes_per_frame": None})
    return {"tool": "criterion 0.5", "results": out,
            "method": "decode: a read of 64 frames is copied into the decoder's BytesMut (the socket read) and "
                      "split into zero-copy Bytes payloads; encode: 64 frames into a reused BytesMut"}


def csharp(quick: bool):
    exe = CS / "build" / "fp-bench.exe"
    if not exe.exists():
        return None
    jpath = Path("/tmp") / f"fp-bench-cs-{os.getpid()}.json"
    subprocess.run(["mono", str(exe), "--json", str(jpath)] + (["--quick"] if quick else []), cwd=CS, check=True,
                   stdout=subprocess.DEVNULL)
    doc = json.loads(jpath.read_text())
    jpath.unlink()
    out = []
    for r in doc["results"]:
        name = r["name"]
        proto = protocol_prefix(name)
        op = "encode" if " encode" in name else "decode" if "decode (whole" in name else None
        if proto and op and r["payload"] in SIZES:
            ns = r["ns_per_op"]
            out.append({"op": op, "protocol": proto, "payload": r["payload"], "ns_per_frame": ns,
                        "gb_per_s": round(r["payload"] / ns, 2) if ns else None,
                        "alloc_bytes_per_frame": r["allocated_bytes_per_op"]})
    return {"tool": f"fp-bench ({doc.get('allocation_counter')})", "results": out, "raw": doc["results"],
            "method": "decode: one whole frame handed to the decoder as a span, delivered without a copy "
                      "(no socket-read copy counted); encode: one frame into a reused array"}


def cpp(quick: bool):
    exe = CPP / "build" / "fp-bench"
    if not exe.exists():
        return None
    p = subprocess.run([str(exe), "--benchmark_format=json"] + (["--benchmark_min_time=0.05"] if quick else []),
                       cwd=CPP, capture_output=True, text=True, check=True)
    doc = json.loads(p.stdout)
    out = []
    for b in doc.get("benchmarks", []):
        name = b["name"].lower()
        proto = protocol_in(name)
        op = "encode" if "encode" in name else "decode" if "decode" in name else None
        size = next((n for n in SIZES if name.rstrip("/").endswith(f"/{n}") or f"/{n}/" in name), None)
        if not (proto and op and size):
            continue
        ns = b["real_time"] if b.get("time_unit", "ns") == "ns" else b["real_time"] * 1000
        frames = b.get("frames_per_iteration") or b.get("items_per_second") and None
        per = ns / frames if frames else ns
        allocs = b.get("allocs_per_frame")  # a count of allocations, not bytes
        out.append({"op": op, "protocol": proto, "payload": size, "ns_per_frame": round(per, 2),
                    "gb_per_s": round(b["bytes_per_second"] / 1e9, 2) if b.get("bytes_per_second") else round(size / per, 2),
                    "alloc_bytes_per_frame": None, "allocs_per_frame": allocs})
    return {"tool": "Google Benchmark", "results": out}


def render(doc) -> str:
    impls = [k for k in ("rust", "cpp", "csharp") if doc["implementations"].get(k)]
    lines = [f"Codec micro-benchmarks, {doc['generated']} on {doc['machine']['cpu']} "
             f"({doc['machine']['cores']} cores, load average {doc['machine']['loadavg']}); "
             f"ns per frame (GB/s of payload){' and allocated bytes per frame' if 'csharp' in impls else ''}.",
             "", "| op | protocol | payload | " + " | ".join(impls) + " |", "|---|---|---:|" + "---:|" * len(impls)]
    keys = sorted({(r["op"], r["protocol"], r["payload"]) for k in impls for r in doc["implementations"][k]["results"]},
                  key=lambda k: (k[0] != "encode", k[1], k[2]))
    for op, proto, n in keys:
        cells = []
        for k in impls:
            r = next((x for x in doc["implementations"][k]["results"]
                      if (x["op"], x["protocol"], x["payload"]) == (op, proto, n)), None)
            if not r:
                cells.append("—")
                continue
            c = f"{r['ns_per_frame']:.1f} ns ({r['gb_per_s']} GB/s)"
            if r.get("alloc_bytes_per_frame") is not None:
                c += f", {r['alloc_bytes_per_frame']:g} B"
            if r.get("allocs_per_frame") is not None:
                c += f", {r['allocs_per_frame']:g} allocs"
            cells.append(c)
        lines.append(f"| {op} | {proto} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "What each figure measures (they differ, so compare with care):", ""]
    lines += [f"- {k} ({doc['implementations'][k]['tool']}): {doc['implementations'][k].get('method', 'see its benchmark source')}"
              for k in impls]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "results"))
    args = ap.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    doc = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": args.quick,
           "machine": {"cpu": cpu, "cores": os.cpu_count(), "loadavg": round(os.getloadavg()[0], 2)},
           "implementations": {}}
    for name, fn in (("rust", rust), ("csharp", csharp), ("cpp", cpp)):
        try:
            r = fn(args.quick)
        except (subprocess.CalledProcessError, OSError, ValueError) as e:
            print(f"{name}: failed: {e}", file=sys.stderr)
            r = None
        if r:
            doc["implementations"][name] = r
            print(f"{name}: {len(r['results'])} figures")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"microbench-{time.strftime('%Y-%m-%d')}"
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1))
    md = render(doc)
    (out / f"{stem}.md").write_text(md)
    print(md)
    print(f"wrote {out / (stem + '.json')} and {out / (stem + '.md')}")
    return 0 if doc["implementations"] else 1


if __name__ == "__main__":
    sys.exit(main())
