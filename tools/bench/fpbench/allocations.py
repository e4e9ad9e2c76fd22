"""Allocations per message: the Rust codec's own counter (fp-alloc), each implementation's benchmark
allocation figures, and the servers' allocations per frame under load (an LD_PRELOAD malloc counter,
tools/bench/malloc_count.c, snapshotted by SIGUSR2), beside the seeds' figures."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from frameproof import protocols as registry
from frameproof.paths import IMPL_DIR, ROOT
from frameproof.servers import start_server

from .core import RUST_BIN, Program, Scenario, codec_argv, log, run_client_once


def upstream_allocations() -> List[dict]:
    """NewLife X, BenchmarkDotNet "Allocated" per op, seed 000 (after the second optimisation
    round): each protocol's figures (Protocol.upstream_figures["allocations"]), then raw receive."""
    out = [{"protocol": p.name, "mode": m, "concurrency": c, "bytes_per_op": b}
           for p in registry.all_protocols() for m, c, b in p.upstream_figures.get("allocations", [])]
    return out + [{"protocol": "raw receive (no codec)", "mode": "per-packet", "concurrency": 64, "bytes_per_op": 0}]


def _build_malloc_counter() -> Optional[str]:
    src = ROOT / "tools" / "bench" / "malloc_count.c"
    out = Path(tempfile.gettempdir()) / f"fpbench-malloc-count-{os.getpid()}.so"
    r = subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(out), str(src)], capture_output=True, text=True)
    return str(out) if r.returncode == 0 else None


def server_allocations(servers: List[Program], quick: bool) -> dict:
    """Heap allocations per echoed frame inside each native server process under real load:
    LD_PRELOAD=malloc_count.so counts malloc-family calls (Rust's System allocator and C++'s
    operator new end there); a SIGUSR2 snapshot is taken after a warm-up run and after each
    measured run, so start-up is excluded; connection set-up is not (16 new connections per run),
    which is why allocations per connection are reported too."""
    so = _build_malloc_counter()
    out = {"method": "LD_PRELOAD malloc/calloc/realloc/memalign counter (tools/bench/malloc_count.c), snapshots on "
                     "SIGUSR2 around each measured run; per frame = allocations / frames echoed in the run; "
                     "each run opens 16 new connections", "rows": []}
    if not so:
        out["error"] = "gcc could not build malloc_count.so"
        return out
    load = Program("rust", [str(RUST_BIN / "fp-load")])
    dur = 0.3 if quick else 1.0
    try:
        for srv in servers:
            if srv.argv[0] == "mono" or srv.argv[0].endswith("mono"):
                continue  # managed heap: see fp-bench bytes/op instead
            for proto in srv.protocols:
                fd, snap = tempfile.mkstemp(suffix=".txt", prefix="fpbench-malloc-")
                os.close(fd)
                env = dict(os.environ, LD_PRELOAD=so, FPB_MALLOC_OUT=snap)
                try:
                    codec = registry.get(proto).bench_codec(32)
                    rs = start_server(srv.cmd(codec_argv(codec) + ["--listen", "127.0.0.1:0"]), cwd=str(ROOT), env=env)
                except RuntimeError as e:
                    out["rows"].append({"server": srv.name, "protocol": proto, "error": str(e)[:200]})
                    continue
                pid = rs.proc.pid

                def snapshot():
                    before = len(Path(snap).read_text().splitlines())
                    os.kill(pid, 12)  # SIGUSR2
                    for _ in range(100):
                        lines = Path(snap).read_text().splitlines()
                        if len(lines) > before:
                            a, b = lines[-1].split()
                            return int(a), int(b)
                        time.sleep(0.01)
                    return None
                try:
                    warm = Scenario(proto, "pipelined", 32, 16, registry.get(proto).pipeline_window, "alloc")
                    run_client_once(load, warm, rs.addr, 0.2)
                    prev = snapshot()
                    for s in (Scenario(proto, "per-packet", 32, 16, 1, "alloc"),
                              Scenario(proto, "pipelined", 32, 16, registry.get(proto).pipeline_window, "alloc")):
                        r = run_client_once(load, s, rs.addr, dur)
                        cur = snapshot()
                        frames = r.get("replies_verified") or 0
                        row = {"server": srv.name, "protocol": proto, "mode": s.mode, "connections": 16,
                               "window": s.window, "frames": frames, "ok": bool(r.get("ok")) and bool(prev and cur)}
                        if prev and cur and frames:
                            da, db = cur[0] - prev[0], cur[1] - prev[1]
                            row.update({"allocs": da, "bytes": db, "allocs_per_frame": round(da / frames, 5),
                                        "bytes_per_frame": round(db / frames, 2), "allocs_per_connection": round(da / 16, 1),
                                        "bytes_per_connection": round(db / 16)})
                        out["rows"].append(row)
                        log(f"  {srv.name:9} {proto:12} {s.mode:10} {row.get('allocs_per_frame')} allocs/frame, "
                            f"{row.get('allocs_per_connection')} allocs/connection")
                        prev = cur
                finally:
                    rs.stop()
                    os.unlink(snap)
    finally:
        os.unlink(so)
    return out


def allocations(benches: Dict[str, List[str]], quick: bool, servers: Optional[List[Program]] = None) -> dict:
    out = {"seeds_newlife": {"source": "seed 000, BenchmarkDotNet Allocated column (per echo round trip, client+server in one process)",
                             "results": upstream_allocations()}}
    exe = RUST_BIN / "fp-alloc"
    if exe.exists():
        fd, j = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            subprocess.run([str(exe), "--ops", "20000" if quick else "200000", "--json", j], capture_output=True,
                           timeout=120, check=True)
            out["rust"] = json.loads(Path(j).read_text())
        except (subprocess.SubprocessError, ValueError) as e:
            out["rust"] = {"error": str(e)}
        finally:
            os.unlink(j)
    for name, argv in benches.items():
        fd, j = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            subprocess.run(argv + (["--quick"] if quick else []) + ["--json", j], capture_output=True, timeout=300,
                           check=True, cwd=str(IMPL_DIR / name))
            out[name] = json.loads(Path(j).read_text())
        except (subprocess.SubprocessError, ValueError, OSError) as e:
            out[name] = {"error": str(e)[:300]}
        finally:
            os.unlink(j)
    if servers:
        out["servers_under_load"] = server_allocations(servers, quick)
    cpp = IMPL_DIR / "cpp"
    if not (cpp / "impl.json").exists():
        out["cpp"] = {"error": "the C++ implementation has not landed yet; no operator-new counts"}
    return out
