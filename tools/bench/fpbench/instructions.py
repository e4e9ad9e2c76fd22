"""User-space instructions per echoed message, counted exactly by callgrind.

Timing on a shared 2-core machine moves with whatever else runs; an instruction count does not.
Each native server runs under ``valgrind --tool=callgrind`` (ours with one worker thread, ``--threads 1``);
the Rust load client (native, not under valgrind) warms it up, then for each scenario and each of
two message counts N and 2N: ``callgrind_control -z`` (zero the counters), N verified echoes with
``fp-load --requests N``, ``callgrind_control -d`` (dump), and the dump's ``summary:`` line is the
server's instructions (Ir) for those N messages, including what it costs to accept the client's
connections. Ir / N at N and at 2N must agree within 1 % (the figure is per message, not a fixed
cost); ``marginal`` = (Ir(2N) - Ir(N)) / N removes any fixed cost entirely. ``ratio_to_raw`` is the
server's Ir/msg over the raw echo's in the same protocol and scenario.

What is counted: every user-space instruction of the server process (its code, libc, the async
runtime), not the kernel's (the syscalls themselves are not counted, only their user-side wrappers).
Managed runtimes (Mono) are not measured: under valgrind Mono's JIT compiles and runs translated
code and its GC and JIT threads are serialized with the workers, so the count says little about
the program as it runs; their rows carry nanoseconds only (``ns_per_msg`` from native timed runs).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import List, Optional

from frameproof import protocols as registry
from frameproof.paths import ROOT
from frameproof.servers import start_server

from .core import PIN, RUST_BIN, Program, Scenario, codec_argv, log, run_client_once, _median_spread

AGREE_PCT = 1.0
# Pipelined echoes cost ~10-30x fewer instructions than per-packet ones while a connection's
# set-up and tear-down cost the same (~0.1-0.6 M Ir): pipelined windows are this many times longer,
# so that the fixed cost stays well below 1 % of the window.
PIPELINED_FACTOR = 20
MANAGED = ("mono", "dotnet", "java")


def one_worker(p: Program) -> List[str]:
    """``--threads 1`` for a server that has the flag (ours); a third-party server runs as it comes
    (gorilla: one goroutine per connection; ws, websockets: one event loop)."""
    return ["--threads", "1"] if p.threads else []


def managed(p: Program) -> bool:
    return Path(p.argv[0]).name in MANAGED or (len(p.argv) > 1 and p.argv[1] == "-m")


def scenarios(proto: str, srv: Optional[Program] = None) -> List[Scenario]:
    """Per-packet C=1 and pipelined C=4 with the protocol's seed window, 32 B; then the protocol's
    own rows of the matrix that need a codec of their own (``Protocol.bench_scenarios`` with a
    ``codec`` overlay, quick set: websocket's permessage-deflate beside the same text uncompressed),
    pipelined C=4, where ``srv`` has what they need."""
    w = registry.get(proto).pipeline_window
    out = [Scenario(proto, "per-packet", 32, 1, 1, "instructions"),
           Scenario(proto, "pipelined", 32, 4, w, "instructions")]
    own = registry.get(proto).bench_scenarios(True)
    if any(d.get("codec") for d in own):
        for d in own:
            if srv is None or all(n in srv.extensions for n in d.get("needs", ())):
                # window at most 16 (both codecs alike): a compressed echo costs ~5 ms under callgrind,
                # and 4 x 256 requests in flight left one of the Rust server's connections unanswered for
                # over a minute (the load client's timeout); the cost per message does not depend on it
                out.append(Scenario(proto, "pipelined", d["payload"], 4, min(d["window"], 16), "instructions",
                                    tuple(d["args"]), None, d.get("codec"), d.get("tag", ""), tuple(d.get("needs", ()))))
    return out


def by_codec(scs: List[Scenario]):
    """The scenarios in groups of one codec (one server process each), in order."""
    from .core import codec_key
    groups: dict = {}
    for s in scs:
        groups.setdefault(codec_key(s.codec), []).append(s)
    return list(groups.values())


def _requests_args(s: Scenario, n: int, addr: str, jpath: str) -> List[str]:
    a = codec_argv(s.codec) + ["--connect", addr, "--connections", str(s.connections), "--requests", str(n),
                               "--payload", str(s.payload), "--mode", s.mode, "--timeout-ms", "60000",
                               "--json", jpath]
    if s.mode != "per-packet":
        a += ["--window", str(s.window)]
    return a + list(s.args)


def _load(client: Program, s: Scenario, n: int, addr: str) -> dict:
    import json
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fpbench-ir-")
    os.close(fd)
    try:
        p = subprocess.run(client.argv + _requests_args(s, n, addr, jpath), capture_output=True, text=True,
                           timeout=600, cwd=str(ROOT / "conformance"))
        rep = json.loads(Path(jpath).read_text()) if Path(jpath).stat().st_size else {}
        ok = p.returncode == 0 and rep.get("replies_verified") == n and rep.get("errors") == 0
        return {"ok": ok, "verified": rep.get("replies_verified"), "rc": p.returncode,
                "output": "" if ok else (p.stdout + p.stderr)[-400:]}
    except (subprocess.TimeoutExpired, OSError, ValueError) as e:
        return {"ok": False, "output": str(e)[:400]}
    finally:
        if os.path.exists(jpath):
            os.unlink(jpath)


def _control(cmd: str, pid: int) -> bool:
    r = subprocess.run(["callgrind_control", cmd, str(pid)], capture_output=True, text=True, timeout=120)
    return r.returncode == 0


def _newest_dump(base: str, seen: set) -> Optional[str]:
    for _ in range(200):
        new = [f for f in glob.glob(base + ".*") if f not in seen]
        if new:
            f = max(new, key=lambda x: int(x.rsplit(".", 1)[1]) if x.rsplit(".", 1)[1].isdigit() else -1)
            seen.add(f)
            return f
        time.sleep(0.05)
    return None


def read_summary(path: str) -> Optional[int]:
    """The ``summary:`` (instructions, Ir) of a callgrind dump."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    return None


def measure_server(srv: Program, proto: str, client: Program, n: int, warmup: int = 2000) -> List[dict]:
    """Rows for one server and protocol: every scenario at N and 2N messages, one server process
    for each codec the scenarios need."""
    return [row for sc in by_codec(scenarios(proto, srv)) for row in _measure(srv, proto, client, n, warmup, sc)]


def _measure(srv: Program, proto: str, client: Program, n: int, warmup: int, sc: List[Scenario]) -> List[dict]:
    rows = []
    tmp = tempfile.mkdtemp(prefix="fpbench-cg-")
    base = os.path.join(tmp, "cg.out")
    codec = sc[0].codec
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={base}", f"--log-file={tmp}/vg.log"]
    cmdline = " ".join(cmd) + " " + srv.cmd(codec_argv(codec) + ["--listen", "127.0.0.1:0"] + one_worker(srv))
    try:
        rs = start_server(cmdline, cwd=str(ROOT), timeout=120)
    except RuntimeError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        return [{"server": srv.name, "protocol": proto, "key": s.key, "ok": False, "error": str(e)[:300]}
                for s in sc]
    seen: set = set()
    try:
        pid = rs.proc.pid
        w = _load(client, sc[-1], warmup, rs.addr)
        if not w["ok"]:
            return [{"server": srv.name, "protocol": proto, "key": s.key, "ok": False,
                     "error": "warm-up failed: " + w["output"]} for s in sc]
        for s in sc:
            row = {"server": srv.name, "protocol": proto, "scenario": s.to_json(), "key": s.key, "ok": True,
                   "counts": []}
            # a row with a codec of its own (permessage-deflate: ~10^5 Ir a message, ~50x slower under
            # valgrind) runs N messages: the connection's fixed cost is far below 1 % of it already
            base_n = n if s.mode == "per-packet" or s.overlay else n * PIPELINED_FACTOR
            for k in (base_n, 2 * base_n):
                if not _control("-z", pid):
                    row.update(ok=False, error="callgrind_control -z failed")
                    break
                r = _load(client, s, k, rs.addr)
                if not _control("-d", pid):
                    row.update(ok=False, error="callgrind_control -d failed")
                    break
                dump = _newest_dump(base, seen)
                ir = read_summary(dump) if dump else None
                if not r["ok"] or ir is None:
                    row.update(ok=False, error=f"load run failed or no dump: {r.get('output', '')}")
                    break
                row["counts"].append({"messages": k, "instructions": ir, "per_msg": round(ir / k, 2)})
            if row["ok"] and len(row["counts"]) == 2:
                a, b = row["counts"]
                row["ir_per_msg"] = b["per_msg"]
                row["agreement_pct"] = round(100 * abs(a["per_msg"] - b["per_msg"]) / b["per_msg"], 3)
                row["agree"] = row["agreement_pct"] <= AGREE_PCT
                row["marginal_ir_per_msg"] = round((b["instructions"] - a["instructions"]) / (b["messages"] - a["messages"]), 2)
            rows.append(row)
            log(f"  {srv.name:9} {s.key:38} " + (f"{row['ir_per_msg']:>10,.1f} Ir/msg (N vs 2N: "
                                                   f"{row['agreement_pct']:.2f} %)" if row.get("ir_per_msg") else
                                                   f"FAILED {row.get('error', '')[:120]}"))
    finally:
        rs.stop(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def timed_ns(srv: Program, proto: str, client: Program, runs: int, duration: float) -> List[dict]:
    """Native (no valgrind) ns per message in the same scenarios: 1e9 / verified msg/s, the
    median of ``runs`` runs of ``duration`` s (noisy on a shared machine; the counts are not)."""
    out = []
    for sc in by_codec(scenarios(proto, srv)):
        try:
            pre = " ".join(PIN["server"] or [])  # pinned as the matrix is (run_client_once pins the client alike)
            rs = start_server((pre + " " + srv.cmd(codec_argv(sc[0].codec) + ["--listen", "127.0.0.1:0"]
                                                   + one_worker(srv))).strip(), cwd=str(ROOT))
        except RuntimeError as e:
            out.append({"server": srv.name, "protocol": proto, "error": str(e)[:300]})
            continue
        try:
            for s in sc:
                vals = [r["msgs_per_s"] for r in (run_client_once(client, s, rs.addr, duration) for _ in range(runs))
                        if r.get("ok") and r.get("msgs_per_s")]
                st = _median_spread([1e9 / v for v in vals])
                out.append({"server": srv.name, "protocol": proto, "key": s.key, "ns_per_msg": st})
        finally:
            rs.stop()
    return out


def run(servers: List[Program], client: Program, n: int = 20000, timing_runs: int = 3,
        timing_duration: float = 0.3, protocols: Optional[List[str]] = None) -> dict:
    """The instructions section of the results: rows per native server, protocol and scenario."""
    out = {"method": __doc__.strip().split("\n\n")[1].replace("\n", " "),
           "tool": _valgrind_version(), "messages": [n, 2 * n], "agree_within_pct": AGREE_PCT,
           "pipelined_factor": PIPELINED_FACTOR, "threads": 1, "client": client.name, "rows": [], "not_measured": [], "timing": []}
    if not out["tool"]:
        out["error"] = "valgrind is not installed (apt-get install valgrind)"
        return out
    for srv in servers:
        protos = [p for p in srv.protocols if not protocols or p in protocols]
        if managed(srv):
            out["not_measured"].append({"server": srv.name, "reason": "managed runtime (" + Path(srv.argv[0]).name +
                                        "): under valgrind the JIT, GC and runtime threads dominate and are "
                                        "serialized, so instruction counts are not meaningful; nanoseconds only"})
        elif srv.kind == "third-party":
            out["not_measured"].append({"server": srv.name, "reason": "third-party server: under valgrind none "
                                        "served the load client (gorilla's Go runtime; websockets through bash and "
                                        "Python; 2026-11-24), so instruction counts are ours and the baselines' only; "
                                        "nanoseconds only"})
        else:
            for p in protos:
                out["rows"] += measure_server(srv, p, client, n)
        if timing_runs:
            for p in protos:
                out["timing"] += timed_ns(srv, p, client, timing_runs, timing_duration)
    raw = {(r["protocol"], r.get("key")): r.get("ir_per_msg") for r in out["rows"] if r["server"] == "raw"}
    for r in out["rows"]:
        b = raw.get((r["protocol"], r.get("key")))
        r["ratio_to_raw"] = round(r["ir_per_msg"] / b, 3) if b and r.get("ir_per_msg") else None
    return out


def _valgrind_version() -> Optional[str]:
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        return None
    return subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()


def default_client() -> Program:
    return Program("rust", [str(RUST_BIN / "fp-load")])


def _short(err: str) -> str:
    """One table cell from an error: one line, no '|', the part that says why."""
    if "did not print" in err:
        err = "did not start" + (err[err.index(" (exit status"):] if " (exit status" in err else "")
    err = " ".join(err.split()).replace("|", "/")
    return err[:120]


def markdown(ins: dict) -> List[str]:
    if not ins:
        return []
    L = ["## Instructions per echoed message (callgrind)", "", ins["method"], ""]
    if ins.get("error"):
        return L + [f"Not measured: {ins['error']}.", ""]
    f = ins.get("pipelined_factor", 1)
    L += [f"{ins.get('tool')}; our servers with `--threads 1`, third-party ones as they come; load client `{ins['client']}` (native); N = "
          f"{ins['messages'][0]:,} and 2N = {ins['messages'][1]:,} verified echoes of 32 B per-packet, "
          f"{f}x as many pipelined. Per-packet counts repeat between runs within about 1 %; pipelined ones within a "
          "few % (how many frames each read holds depends on how far ahead the client gets).", "",
          "| protocol | scenario | server | Ir/msg (2N) | Ir/msg (N) | N vs 2N | marginal Ir/msg | ratio to raw | ns/msg native (median, min–max) |",
          "|---|---|---|---:|---:|---:|---:|---:|---|"]
    tm = {(t["server"], t["protocol"], t.get("key")): t for t in ins.get("timing", [])}
    keys = []
    for r in ins["rows"]:
        if (r["protocol"], r.get("key")) not in keys:
            keys.append((r["protocol"], r.get("key")))
    for r in ins["rows"]:
        t = (tm.get((r["server"], r["protocol"], r.get("key"))) or {}).get("ns_per_msg") or {}
        ns = f"{t['median']:,.0f} ({t['min']:,.0f}–{t['max']:,.0f})" if t.get("median") else "–"
        if not r.get("ir_per_msg"):
            L.append(f"| {r['protocol']} | {r.get('key', '')} | {r['server']} | failed: {_short(r.get('error', ''))} | | | | | {ns} |")
            continue
        sc = r["scenario"]
        lab = f"{sc['mode']} C={sc['connections']}" + (f", W={sc['window']}" if sc["mode"] != "per-packet" else "")
        if sc.get("tag"):  # a protocol's own row: its payload, variant and codec (websocket: prose, deflate)
            lab += f", {sc['payload']} B{''.join(' ' + a for a in sc.get('args', []))} [{sc['tag']}]"
        L.append(f"| {r['protocol']} | {lab} | {r['server']} | {r['ir_per_msg']:,.1f} | {r['counts'][0]['per_msg']:,.1f} | "
                 f"{r['agreement_pct']:.2f} %{'' if r['agree'] else ' ✗'} | {r['marginal_ir_per_msg']:,.1f} | "
                 f"{'–' if r.get('ratio_to_raw') is None else format(r['ratio_to_raw'], '.2f')} | {ns} |")
    measured = {t["server"] for t in ins.get("rows", [])}
    for t in ins.get("timing", []):
        if t["server"] in measured:
            continue
        s = t.get("ns_per_msg") or {}
        L.append(f"| {t['protocol']} | {t.get('key', '')} | {t['server']} | not counted | | | | | "
                 + (f"{s['median']:,.0f} ({s['min']:,.0f}–{s['max']:,.0f})" if s.get("median") else "–") + " |")
    L.append("")
    for m in ins.get("not_measured", []):
        L.append(f"- {m['server']}: {m['reason']}.")
    bad = [r for r in ins["rows"] if r.get("ir_per_msg") and not r["agree"]]
    L += ["", f"Per-message check: {sum(1 for r in ins['rows'] if r.get('agree'))} of "
              f"{sum(1 for r in ins['rows'] if r.get('ir_per_msg'))} rows agree within {ins['agree_within_pct']} % between N and 2N"
          + (": " + ", ".join(f"{r['server']} {r['key']}" for r in bad) + " do not" if bad else "") + ".",
          "ns/msg comes from native runs on the same (shared) machine and moves with its load; Ir/msg does not.", ""]
    return L
