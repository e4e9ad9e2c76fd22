#!/usr/bin/env python3
"""The discovery benchmark on etcd (spec/discovery.md §9, "On etcd"), for the four implementations,
against one etcd member and against a 3-member cluster (127.0.0.1-3), each started here:
results/discovery-etcd-<date>.{json,md}.

Each implementation's benchmark program takes ``--etcd ENDPOINTS --threads N --seconds S --samples N
--json FILE`` and writes the same JSON; the in-process B3 figure of each (``--mode private``, no
--etcd) and upstream's published B3 figure are printed beside, as the comparison the spec names.

    .venv/bin/python tools/bench/discovery_etcd.py [--seconds 2] [--threads 4] [--samples 200] [--runs 3]
        [--only python,rust,cpp,csharp] [--topologies member,cluster] [--allow-noisy] [--out DIR]

Every figure is the median of ``--runs`` runs, with the spread of the rates beside it (a figure that
does not repeat is not a result). Like every benchmark here it writes to results/ only from a quiet machine (fpbench/quiet.py);
otherwise to reports/bench/NOISY-*."""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "conformance"))
sys.path.insert(0, str(ROOT / "tools" / "bench"))
from fpbench import core, quiet  # noqa: E402
from frameproof.protocols.rpc import discovery_etcd, etcd_cluster  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
IMPLS = ROOT / "reference-impls"
# name -> (argv, cwd); the Rust program is built here with the etcd feature (build.sh builds the testee's)
PROGRAMS = {
    "python": ([PY, "-m", "frameproof.protocols.rpc.discovery_etcd_bench"], ROOT / "conformance"),
    "rust": (["target/release/fp-discovery-bench"], IMPLS / "rust"),
    "cpp": (["build/fp-discovery-bench"], IMPLS / "cpp"),
    "csharp": (["mono", "build/fp-discovery-bench.exe"], IMPLS / "csharp"),
}
RUST_BUILD = ["cargo", "build", "--release", "--locked", "-p", "fp-discovery", "--features", "etcd",
              "--bin", "fp-discovery-bench"]
UPSTREAM_B3 = {"ops_per_s": 5432424.0, "where": "galay-rpc B3 (docs/05 at 4003c9b): in-process registries, 100 "
               "coroutine workers on 2 IO schedulers, Apple M4; upstream has no etcd registry"}


def build() -> None:
    lock = ["flock", "/tmp/frameproof-build.lock"] if subprocess.run(["which", "flock"], capture_output=True).returncode == 0 else []
    subprocess.run(lock + RUST_BUILD, cwd=IMPLS / "rust", check=True)


def run_one(name: str, extra: list, timeout: float) -> dict:
    argv, cwd = PROGRAMS[name]
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        cmd = argv + extra + ["--json", str(out)]
        t = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"failed": f"no answer in {timeout:.0f} s", "command": shlex.join(cmd)}
        res = {"command": shlex.join(cmd), "elapsed_s": round(time.monotonic() - t, 1), "stdout": p.stdout.strip()}
        if out.exists():
            res["json"] = json.loads(out.read_text())
        if p.returncode != 0:
            res["failed"] = f"exit status {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}"
        elif "json" not in res:
            res["failed"] = "no JSON written"
        return res


def in_process(name: str, seconds: float, threads: int):
    if name == "python":
        return None  # the Python registry has no in-process benchmark program
    r = run_one(name, ["--mode", "private", "--seconds", str(seconds), "--threads", str(threads)], 120)
    if "failed" in r:
        return {"failed": r["failed"]}
    return r["json"]["runs"][0]["ops_per_s"]


def summary(runs: list) -> dict:
    """The median of each figure over the runs that did not fail; the rates' min and max."""
    ok = [{x["op"]: x for x in r["json"]["runs"]} for r in runs if "failed" not in r]
    if not ok:
        return {}
    out = {}
    for op, keys in (("register", ("ops_per_s", "p50_us", "p99_us")), ("discover", ("ops_per_s", "p50_us", "p99_us")),
                     ("watch", ("p50_us", "p99_us", "max_us"))):
        out[op] = {k: statistics.median(r[op][k] for r in ok) for k in keys}
        if op != "watch":
            out[op]["ops_per_s_range"] = [min(r[op]["ops_per_s"] for r in ok), max(r[op]["ops_per_s"] for r in ok)]
    return out


def render(doc: dict) -> str:
    L = [f"# Discovery on etcd ({doc['date']})", "",
         "spec/discovery.md §9, \"On etcd\": register/s and discover/s from "
         f"{doc['threads']} threads sharing one registry, and the latency from a registration in one registry "
         "to the ADDED callback of a watcher in another (nearest-rank percentiles, µs). "
         f"Each phase ran {doc['seconds']} s; {doc['samples']} watch samples; every figure is the median of "
         f"{doc['repeats']} runs, the rates' range beside it. Command: `{doc['command']}`.", "",
         "etcd runs on the same machine as the benchmark: a cluster's three members replicate every write on the "
         "same CPUs, so its rates are below one member's here; on separate machines the network's round trips "
         "would take that place. A registration is one etcd put (the registry's lease is already granted); a "
         "discover, one range read.", ""]
    L += quiet.banner(doc.get("quiet") or {})
    for topo, label in (("member", "one etcd member"), ("cluster", "a 3-member cluster (127.0.0.1-3)")):
        rows = doc["runs"].get(topo)
        if not rows:
            continue
        L += ["", f"## Against {label}: `{doc['endpoints'][topo]}`", "",
              "| implementation | register/s | p50 | p99 | discover/s | p50 | p99 | watch p50 | p99 | max |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for name, r in rows.items():
            bad = [x["failed"] for x in r["runs"] if "failed" in x]
            if bad:
                L.append(f"| {name} | failed: {bad[0][:120]} |" + " |" * 8)
                continue
            reg, dis, w = r["summary"]["register"], r["summary"]["discover"], r["summary"]["watch"]
            rate = lambda x: f"{x['ops_per_s']:,.0f} ({x['ops_per_s_range'][0]:,.0f}-{x['ops_per_s_range'][1]:,.0f})"  # noqa: E731
            L.append(f"| {name} | {rate(reg)} | {reg['p50_us']:,.0f} | {reg['p99_us']:,.0f} | "
                     f"{rate(dis)} | {dis['p50_us']:,.0f} | {dis['p99_us']:,.0f} | "
                     f"{w['p50_us']:,.0f} | {w['p99_us']:,.0f} | {w['max_us']:,.0f} |")
    L += ["", "## In process, for comparison", "",
          f"The same implementations' B3 loop (register → discover → deregister, `--mode private`, {doc['threads']} "
          f"threads) on their in-process registry, and upstream's published B3 figure: {doc['upstream']['ops_per_s']:,.0f} "
          f"ops/s ({doc['upstream']['where']}).", "", "| implementation | in-process ops/s |", "|---|---:|"]
    for name, v in doc["in_process"].items():
        L.append(f"| {name} | " + ("n/a (no in-process benchmark program)" if v is None else
                                   f"failed: {v['failed'][:100]}" if isinstance(v, dict) else f"{v:,.0f}") + " |")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3, help="runs of each implementation and topology (median)")
    ap.add_argument("--only", default=",".join(PROGRAMS))
    ap.add_argument("--topologies", default="member,cluster")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--allow-noisy", action="store_true")
    ap.add_argument("--out", help="directory for the files (default results/, or reports/bench when noisy)")
    ap.add_argument("--quiet-seconds", type=float, default=3.0)
    a = ap.parse_args(argv)
    names = [n for n in a.only.split(",") if n]
    unknown = set(names) - set(PROGRAMS)
    if unknown:
        ap.error(f"unknown implementations {sorted(unknown)}; known: {list(PROGRAMS)}")
    if not a.no_build and "rust" in names:
        build()
    t0 = time.monotonic()
    before = quiet.sample(a.quiet_seconds)
    doc = {"schema": "frameproof-discovery-etcd/1", "date": datetime.date.today().isoformat(),
           "command": "tools/bench/discovery_etcd.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
           "machine": core.machine(0.25), "threads": a.threads, "seconds": a.seconds, "samples": a.samples,
           "repeats": a.runs,
           "upstream": UPSTREAM_B3, "endpoints": {}, "runs": {}, "in_process": {}}
    extra = ["--threads", str(a.threads), "--seconds", str(a.seconds), "--samples", str(a.samples)]
    timeout = 2 * a.seconds + a.samples * 5.5 + 60
    failed = 0
    for topo in a.topologies.split(","):
        make = {"member": discovery_etcd.LocalEtcd, "cluster": etcd_cluster.LocalEtcdCluster}[topo]
        etcd = discovery_etcd.started(make)
        try:
            ep = etcd.direct if topo == "cluster" else etcd.endpoint
            doc["endpoints"][topo] = ep
            doc["runs"][topo] = {}
            rows = doc["runs"][topo] = {name: {"runs": []} for name in names}
            for i in range(a.runs):  # interleaved: a slow minute of the machine is not one implementation's
                for name in names:
                    r = run_one(name, ["--etcd", ep] + extra, timeout)
                    rows[name]["runs"].append(r)
                    failed += "failed" in r
                    print(f"== {topo} {name} run {i + 1}: " + r.get("failed", "") + "\n" + r.get("stdout", ""),
                          flush=True)
            for name in names:
                rows[name]["summary"] = summary(rows[name]["runs"])
        finally:
            etcd.cleanup()
    for name in names:
        doc["in_process"][name] = in_process(name, a.seconds, a.threads)
    q = quiet.judge(before, quiet.sample(a.quiet_seconds))
    q["allowed"] = not q["ok"] and a.allow_noisy
    doc["quiet"] = q
    doc["elapsed_s"] = round(time.monotonic() - t0, 1)
    stem = f"discovery-etcd-{doc['date']}"
    if q["ok"] or a.allow_noisy:
        out = Path(a.out or ROOT / "results")
    else:
        out = Path(ROOT / "reports" / "bench")
        stem = "NOISY-" + stem
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / f"{stem}.md").write_text(render(doc))
    print(f"wrote {out / stem}.{{json,md}}" + ("" if q["ok"] else " (NOT a quiet machine)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
