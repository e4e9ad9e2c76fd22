#!/usr/bin/env python3
"""Codec micro-benchmarks of every implementation, case by case, with one definition for all
(tools/bench/microbench.md): results/microbench-<date>.{json,md}.

Each implementation names its micro-benchmark program in impl.json (``"microbench": [argv]``); the
program takes ``--case NAME --iterations N --samples S --json FILE`` and writes the JSON shape of
tools/bench/microbench.schema.json. This script reads only that shape: a file that does not match
it, or answers another case, is rejected (listed, exit status 1), never interpreted.

    .venv/bin/python tools/microbench.py [--quick] [--cases 'standard/*'] [--instructions]
                                         [--program NAME=CMD] [--allow-noisy]
    .venv/bin/python tools/microbench.py --list-cases
"""
from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "conformance"))  # frameproof from this checkout, venv or not
sys.path.insert(0, str(ROOT / "tools" / "bench"))
from fpbench import core, microcases, quiet  # noqa: E402

IMPL_DIR = ROOT / "reference-impls"
# iterations per sample by payload (a sample of a few milliseconds natively); --quick divides by 10
ITERATIONS = {32: 200000, 1024: 50000, 65536: 1000}
MANAGED = ("mono", "dotnet", "java")


def programs(extra):
    """name -> {"argv", "cwd", "protocols"} from impl.json "microbench" keys, then --program NAME=CMD."""
    out = {}
    for f in sorted(IMPL_DIR.glob("*/impl.json")):
        d = json.loads(f.read_text())
        if "microbench" in d:
            argv = list(d["microbench"])
            for i in (0, 1):
                if i < len(argv) and not argv[i].startswith("/") and (f.parent / argv[i]).exists():
                    argv[i] = str(f.parent / argv[i])
                    break
            out[d["name"]] = {"argv": argv, "cwd": str(f.parent), "protocols": d.get("protocols")}
        else:
            out[d["name"]] = {"missing": "impl.json has no \"microbench\" program (tools/bench/README.md, "
                                         "'What each implementation must provide')"}
    for e in extra:
        name, _, cmd = e.partition("=")
        out[name.strip()] = {"argv": shlex.split(cmd), "cwd": str(ROOT / "tools" / "bench"), "protocols": None}
    return out


def managed(argv) -> bool:
    return Path(argv[0]).name in MANAGED or (len(argv) > 1 and argv[1] == "-m")


def run_case(prog, case, n, samples, wrap=None, timeout=600, env=None):
    """(status, document or None, message). status: ok | rejected | not-implemented | failed."""
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fp-micro-")
    os.close(fd)
    os.unlink(jpath)
    argv = (wrap or []) + prog["argv"] + ["--case", case["case"], "--iterations", str(n), "--samples", str(samples),
                                          "--json", jpath]
    try:
        p = subprocess.run(argv, cwd=prog["cwd"], capture_output=True, text=True, timeout=timeout,
                           env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        return "failed", None, f"timed out after {timeout} s"
    try:
        if p.returncode == 3:
            return "not-implemented", None, (p.stderr.strip().splitlines() or [""])[-1][:200]
        if p.returncode != 0:
            return "failed", None, f"exit status {p.returncode}: {(p.stdout + p.stderr)[-300:]}"
        try:
            doc = json.loads(Path(jpath).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            return "rejected", None, f"no readable JSON at --json: {e}"
        return "ok", doc, ""
    finally:
        if os.path.exists(jpath):
            os.unlink(jpath)


def _functions(cg_file: str, jit_map: dict) -> dict:
    """{function: Ir} of one callgrind output (exclusive counts, from callgrind_annotate); code a JIT
    wrote (callgrind names it by address) is named from the runtime's map of its methods."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", cg_file],
                         capture_output=True, text=True).stdout
    fns: dict = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(.+?)(?:\s+\[.*\])?$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        ir, name = int(m.group(1).replace(",", "")), m.group(2)
        addr = re.fullmatch(r"\?\?\?:0x([0-9a-f]+)", name)
        if addr:
            a = int(addr.group(1), 16)
            # the narrowest entry holding it (the map's trampolines may span the methods compiled after them)
            hits = sorted((hi - lo, n) for lo, hi, n in jit_map.get("ranges", []) if lo <= a < hi)
            name = hits[0][1] if hits else name
        else:
            name = name.split(":", 1)[-1] if ":" in name else name
        fns[name] = fns.get(name, 0) + ir
    return fns


def _jit_map(pid: int) -> dict:
    """Mono's map of the methods it compiled (MONO_ENV_OPTIONS=--jitmap: /tmp/perf-PID.map)."""
    path = Path(f"/tmp/perf-{pid}.map")
    ranges = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3:
                lo, size = int(parts[0], 16), int(parts[1], 16)
                ranges.append((lo, lo + size, parts[2].strip()))
        path.unlink()
    return {"ranges": ranges}


def count_instructions(prog, case, n, top=8):
    """Ir per frame from two callgrind runs (N and 2N iterations, one sample each): the difference of
    the instruction totals over the difference of executed iterations (warm-up + samples x N), / F; and
    the same difference per function, the ``top`` largest (where the instructions of a frame go).
    A managed runtime (Mono) is counted the same way: its JIT compiles each method once, in both runs
    alike, and the loop allocates nothing (allocs/frame 0), so the difference is the steady state's code;
    valgrind is told the program writes code (--smc-check=all-non-file), and Mono writes a map of the
    methods it compiled (--jitmap) that names them."""
    tmp = tempfile.mkdtemp(prefix="fp-micro-cg-")
    got = []
    mono = managed(prog["argv"])
    try:
        for k in (n, 2 * n):
            out = os.path.join(tmp, f"cg.{k}")
            wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--log-file={out}.log"]
            if mono:
                wrap.insert(2, "--smc-check=all-non-file")
            st, doc, msg = run_case(prog, case, k, 1, wrap=wrap, timeout=1200,
                                    env={"MONO_ENV_OPTIONS": "--jitmap"} if mono else None)
            if st != "ok" or microcases.check(doc, case):
                return None, f"callgrind run: {st} {msg}", None
            ir = next((int(line.split()[1]) for line in open(out) if line.startswith("summary:")), None)
            pid = next((int(m.group(1)) for m in (re.match(r"==(\d+)==", x) for x in open(f"{out}.log")) if m), 0)
            got.append((ir, doc["warmup_iterations"] + doc["samples"] * doc["iterations"],
                        _functions(out, _jit_map(pid) if mono else {})))
        (a, ea, fa), (b, eb, fb) = got
        if None in (a, b) or eb <= ea:
            return None, "no instruction total", None
        per = (eb - ea) * case["frames_per_read"]
        by_fn = sorted(((round((fb.get(f, 0) - fa.get(f, 0)) / per, 1), f) for f in set(fa) | set(fb)), reverse=True)
        return round((b - a) / per, 2), "", [{"function": f, "ir_per_frame": v} for v, f in by_fn[:top] if v >= 1]
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)


def memcpy_for(cal: dict, nbytes: int):
    """The memcpy bandwidth (GB/s) for a working set of ``nbytes`` (fp-calib's
    ``memcpy_by_size_gb_per_s``: the smallest measured size that holds it, in the caches as the case's
    reused buffers are), and that size; the out-of-cache figure when the calibration has no sizes."""
    by = {int(k): v for k, v in (cal.get("memcpy_by_size_gb_per_s") or {}).items()}
    fits = [k for k in sorted(by) if k >= nbytes] or sorted(by)[-1:]
    if not fits:
        return cal.get("memcpy_gb_per_s"), None
    return by[fits[0]], fits[0]


def _size(n) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10} KiB" if n >= 1024 and not n % 1024 else f"{n} B"


def render(doc) -> str:
    m = doc["machine"]
    cal = m.get("calibration") or {}
    memcpy = cal.get("memcpy_gb_per_s")
    by_size = cal.get("memcpy_by_size_gb_per_s") or {}
    L = [f"# Codec micro-benchmarks {doc['date']}", "",
         f"Command: `{doc['command']}`  ",
         f"Machine: {m.get('cpu_model')}, {m.get('cpus')} CPUs, Linux {m.get('kernel')}; memcpy {memcpy or '?'} GB/s "
         "out of the caches (fp-calib, 64 MiB buffers)" +
         (("; by copy size (the same buffer copied again and again, in the caches): " +
           ", ".join(f"{_size(int(k))} {v} GB/s" for k, v in by_size.items())) if by_size else "") + "  ",
         f"Load average: start {', '.join(f'{x:.2f}' for x in m['loadavg_start'])}; end "
         f"{', '.join(f'{x:.2f}' for x in m.get('loadavg_end', []))}  "]
    L += quiet.banner(doc.get("quiet") or {})
    L += ["", "Every column does the same work: the cases are defined once in tools/bench/microbench.md (decode = one "
              "read copied into the decoder's buffer and split into frames; encode = frames into a reused buffer). "
              "GB/s counts wire bytes (header + payload); 'of memcpy' is that over memcpy's bandwidth for the same "
              "working set (one read: bytes per frame × frames per read), the physical limit of a case that copies "
              "its bytes once; the size it was measured at is in brackets.", "",
          "| case | implementation | ns/frame median (min–max, n) | GB/s | of memcpy | allocs/frame | bytes alloc/frame | Ir/frame | seed (as found) |",
          "|---|---|---|---:|---:|---:|---:|---:|---|"]
    seeds = {}
    for s in doc.get("seeds", []):
        seeds.setdefault(s["case"], []).append(s)

    def num(x, f="{:g}"):
        return "–" if x is None else f.format(x)
    for c in doc["cases"]:
        rows = [(name, r) for name, impl in doc["implementations"].items() for r in impl.get("results", [])
                if r["case"] == c["case"]]
        sd = "; ".join(f"{s['ns_per_op']:,} ns ({s['source'].split(' (')[0]}: {s['note']})" for s in seeds.get(c["case"], []))
        for name, r in rows:
            t = r["ns_per_frame"]
            gbs = r["bytes_per_frame"] / t["median"]
            limit, at = memcpy_for(cal, r["bytes_per_frame"] * c.get("frames_per_read", 1))
            of = "–" if not limit else f"{gbs / limit:.0%}" + (f" ({_size(at)})" if at else "")
            L.append(f"| {c['case']} | {name} | {t['median']:,.1f} ({t['min']:,.1f}–{t['max']:,.1f}, {t['n']}) | {gbs:.2f} | "
                     f"{of} | {num(r['allocs_per_frame'])} | "
                     f"{num(r['bytes_alloc_per_frame'])} | {num(r.get('instructions_per_frame'), '{:,.1f}')} | {sd} |")
        if not rows and sd:
            L.append(f"| {c['case']} | – | | | | | | | {sd} |")
    L += ["", "## Implementations", ""]
    for name, impl in doc["implementations"].items():
        if impl.get("missing"):
            L.append(f"- **{name}**: not measured: {impl['missing']}.")
            continue
        L.append(f"- **{name}** (`{' '.join(impl['argv'])}`): {len(impl.get('results', []))} cases measured"
                 + (f"; not implemented: {len(impl['not_implemented'])}" if impl.get("not_implemented") else "")
                 + (f"; **rejected** (JSON not as tools/bench/microbench.schema.json): "
                    + "; ".join(f"{x['case']}: {x['problems'][0]}" for x in impl["rejected"]) if impl.get("rejected") else "")
                 + (f"; failed: " + "; ".join(f"{x['case']}: {x['message'][:100]}" for x in impl["failed"]) if impl.get("failed") else "")
                 + (f"; instructions: {impl['instructions_note']}" if impl.get("instructions_note") else ""))
    fn_rows = [(c["case"], name, r) for c in doc["cases"] for name, impl in doc["implementations"].items()
               for r in impl.get("results", []) if r["case"] == c["case"] and r.get("instructions_by_function")]
    if fn_rows:
        L += ["", "## Where a frame's instructions go", "",
              "Per function, exclusive (callgrind), per frame: the same difference of two runs as the Ir/frame column. "
              "The largest functions of each case and implementation.", "",
              "| case | implementation | Ir/frame | functions (Ir per frame) |", "|---|---|---:|---|"]
        for case, name, r in fn_rows:
            fns = "; ".join(f"`{x['function'][:90]}` {x['ir_per_frame']:,.1f}" for x in r["instructions_by_function"])
            L.append(f"| {case} | {name} | {num(r.get('instructions_per_frame'), '{:,.1f}')} | {fns} |")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10x fewer iterations, 5 samples")
    ap.add_argument("--cases", help="comma-separated globs over case names (default: all)")
    ap.add_argument("--iterations", type=int, help="iterations per sample for every case (default by payload)")
    ap.add_argument("--samples", type=int, help="samples per case (default 11; quick 5)")
    ap.add_argument("--program", action="append", default=[], metavar="NAME=CMD",
                    help="an extra program following tools/bench/microbench.md")
    ap.add_argument("--only", help="comma-separated implementation names")
    ap.add_argument("--instructions", action="store_true", help="also count instructions per frame (callgrind, native programs)")
    ap.add_argument("--list-cases", action="store_true", help="print the case catalog (JSON lines) and exit")
    ap.add_argument("--out", help="directory (default results/)")
    ap.add_argument("--name", help="file stem (default microbench-<date>)")
    ap.add_argument("--noisy-out", help="where a run on a busy machine writes (default reports/bench)")
    ap.add_argument("--allow-noisy", action="store_true")
    ap.add_argument("--quiet-seconds", type=float, default=3.0)
    args = ap.parse_args(argv)
    cases = microcases.catalog()
    if args.cases:
        pats = args.cases.split(",")
        cases = [c for c in cases if any(fnmatch.fnmatch(c["case"], p) for p in pats)]
    if args.list_cases:
        for c in cases:
            print(json.dumps(c, ensure_ascii=False))
        return 0
    progs = programs(args.program)
    if args.only:
        progs = {k: v for k, v in progs.items() if k in args.only.split(",")}
    t0 = time.monotonic()
    before = quiet.sample(args.quiet_seconds)
    machine = core.machine(0.25)
    samples = args.samples or (5 if args.quick else 11)
    doc = {"schema": "frameproof-microbench-results/1", "date": datetime.date.today().isoformat(),
           "command": "tools/microbench.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
           "machine": machine, "cases": cases, "seeds": microcases.seeds(), "implementations": {}}
    rejected = 0
    for name, prog in progs.items():
        if prog.get("missing"):
            doc["implementations"][name] = {"missing": prog["missing"]}
            print(f"{name}: {prog['missing']}")
            continue
        impl = {"argv": prog["argv"], "results": [], "rejected": [], "not_implemented": [], "failed": []}
        for c in cases:
            if prog["protocols"] is not None and c["protocol"] not in prog["protocols"]:
                impl["not_implemented"].append(c["case"])
                continue
            n = args.iterations or max(1, ITERATIONS.get(c["payload"], 10000) // (c["frames_per_read"] * (10 if args.quick else 1)))
            st, res, msg = run_case(prog, c, n, samples)
            if st == "ok":
                problems = microcases.check(res, c)
                if problems:
                    st, msg = "rejected", "; ".join(problems[:5])
                    impl["rejected"].append({"case": c["case"], "problems": problems[:10]})
                else:
                    if args.instructions:
                        res["instructions_per_frame"], note, by_fn = count_instructions(prog, c, max(1, n // 10))
                        if note:
                            res["instructions_note"] = note
                        if by_fn:
                            res["instructions_by_function"] = by_fn
                    impl["results"].append(res)
            elif st == "not-implemented":
                impl["not_implemented"].append(c["case"])
            else:
                impl[{"rejected": "rejected", "failed": "failed"}[st]].append(
                    {"case": c["case"], "message": msg, "problems": [msg]})
            rejected += st == "rejected"
            print(f"{name:8} {c['case']:28} {st}" + (f": {res['ns_per_frame']['median']:,.1f} ns/frame" if st == "ok" else f": {msg[:160]}"))
        if args.instructions and managed(prog["argv"]):
            impl["instructions_note"] = ("managed runtime: counted as the native ones (the difference of two runs: "
                                         "JIT compilation and start-up cancel out; no allocation in the loop), "
                                         "its compiled methods named from the runtime's JIT map")
        doc["implementations"][name] = impl
    q = quiet.judge(before, quiet.sample(args.quiet_seconds))
    q["allowed"] = not q["ok"] and args.allow_noisy
    doc["quiet"] = q
    machine["loadavg_end"] = list(os.getloadavg())
    doc["elapsed_s"] = round(time.monotonic() - t0, 1)
    stem = args.name or f"microbench-{doc['date']}"
    if q["ok"] or args.allow_noisy:
        out = Path(args.out or ROOT / "results")
    else:
        out = Path(args.noisy_out or ROOT / "reports" / "bench")
        stem = "NOISY-" + stem
        print("microbench: the machine is busy (" + "; ".join(q["reasons"]) + f"): writing to {out} instead of results/")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(render(doc), encoding="utf-8")
    measured = sum(len(i.get("results", [])) for i in doc["implementations"].values())
    print(f"wrote {out / (stem + '.json')} and {out / (stem + '.md')}: {measured} figures, {rejected} rejected")
    return 1 if rejected or not measured else 0


if __name__ == "__main__":
    sys.exit(main())
