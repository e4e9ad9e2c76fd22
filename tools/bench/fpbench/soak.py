"""`frameproof bench --soak MINUTES` (issue 17, "load under faults"): for each server and protocol,
verified echo traffic (the primary load client, pipelined, every reply checked) runs for MINUTES
while frameproof's stress group (`frameproof net --stress`, small bounds) attacks the same server
again and again. The result per server: requests sent = replies verified, no error, nothing lost,
and each stress round's verdict. Off by default; never part of CI."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

from frameproof import protocols as registry
from frameproof.paths import ROOT
from frameproof.servers import start_server
from frameproof.stress import SMALL_LIMITS, SMALL_SCALE

from .core import Program, codec_argv, log


def _stress_round(codec, addr: str, pid: int, budget_s: float) -> dict:
    fd, path = tempfile.mkstemp(suffix=".json", prefix="fp-soak-")
    os.close(fd)
    cmd = [sys.executable, "-m", "frameproof.cli", "net", "--codec", json.dumps(codec.to_json()), "--stress",
           "--stress-scale", SMALL_SCALE] + SMALL_LIMITS + ["--server", addr, "--server-pid", str(pid), "--json", path]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=max(60.0, budget_s))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = -1
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        doc = {}
    os.unlink(path)
    bad = [s["name"] for s in doc.get("scenarios", []) if s.get("verdict") not in ("ok", "skipped")]
    return {"exit": rc, "seconds": round(time.monotonic() - t0, 1), "failed_scenarios": bad,
            "scenarios": len(doc.get("scenarios", []))}


def soak_one(srv: Program, client: Program, proto: str, minutes: float) -> dict:
    P = registry.get(proto)
    codec = P.stress_codec()
    row = {"server": srv.name, "protocol": proto, "client": client.name, "minutes": minutes}
    try:
        rs = start_server(srv.cmd(codec_argv(codec) + ["--listen", "127.0.0.1:0"] + SMALL_LIMITS))
    except RuntimeError as e:
        return dict(row, ok=False, error=f"server did not start: {e}")
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fp-soak-load-")
    os.close(fd)
    seconds = minutes * 60
    load = subprocess.Popen(shlex.split(client.cmd(codec_argv(codec) + [
        "--connect", rs.addr, "--connections", "8", "--duration", f"{seconds:g}", "--payload", "256",
        "--mode", "pipelined", "--window", "16", "--timeout-ms", "10000", "--json", jpath])),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rounds: List[dict] = []
    end = time.monotonic() + seconds
    try:
        while load.poll() is None and time.monotonic() < end - 5:
            rounds.append(_stress_round(codec, rs.addr, rs.proc.pid, end - time.monotonic() + 60))
        try:
            _out, err = load.communicate(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            load.kill()
            _out, err = load.communicate()
    finally:
        code, counters, _ = rs.stop()
    try:
        rep = json.loads(Path(jpath).read_text())
    except (OSError, ValueError):
        rep = None
    os.unlink(jpath)
    sent = rep.get("requests_sent") if rep else None
    verified = rep.get("replies_verified") if rep else None
    ok = bool(rep) and load.returncode == 0 and rep.get("errors") == 0 and sent == verified and bool(sent) \
        and all(not r["failed_scenarios"] and r["exit"] == 0 for r in rounds) and code == 0
    return dict(row, ok=ok, requests_sent=sent, replies_verified=verified, errors=rep.get("errors") if rep else None,
                error_details=(rep or {}).get("error_details", [])[:3], msgs_per_s=(rep or {}).get("msgs_per_s"),
                p99_us=((rep or {}).get("latency_us") or {}).get("p99"), load_exit=load.returncode,
                server_exit=code, server_counters=counters, stress_rounds=rounds,
                client_stderr=(err or "")[-500:] if load.returncode else "")


def run(servers: List[Program], client: Program, protocols: List[str], minutes: float) -> dict:
    rows = []
    for proto in protocols:
        for srv in servers:
            if srv.kind != "reference" or proto not in srv.protocols:
                continue
            log(f"== soak: {srv.name} {proto}, {minutes:g} min of verified echo under the stress group")
            r = soak_one(srv, client, proto, minutes)
            rounds = r.get("stress_rounds", [])
            log(f"   {'ok' if r['ok'] else 'FAILED'}: sent {r.get('requests_sent')}, verified {r.get('replies_verified')}, "
                f"errors {r.get('errors')}, {len(rounds)} stress rounds"
                + (f", failing scenarios {sorted({s for x in rounds for s in x['failed_scenarios']})}"
                   if any(x["failed_scenarios"] for x in rounds) else "") + (f"; {r['error']}" if r.get("error") else ""))
            rows.append(r)
    return {"minutes": minutes, "rows": rows, "ok": all(r["ok"] for r in rows) and bool(rows)}


def markdown(doc: dict) -> List[str]:
    L = [f"## Soak: {doc['minutes']:g} min of verified echo per server and protocol under the stress group", "",
         "Each row: the primary load client (8 connections, pipelined W=16, 256 B, every reply verified) "
         "against one server for the whole time, while `frameproof net --stress` (small bounds) runs "
         "round after round against the same server. OK means requests sent = replies verified, no "
         "error, and every stress round passed.", "",
         "| server | protocol | sent | verified | errors | p99 µs | stress rounds | verdict |",
         "|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        rounds = r.get("stress_rounds", [])
        bad = sorted({s for x in rounds for s in x["failed_scenarios"]})
        L.append(f"| {r['server']} | {r['protocol']} | {r.get('requests_sent')} | {r.get('replies_verified')} | "
                 f"{r.get('errors')} | {r.get('p99_us')} | {len(rounds)}" + (f" (failing: {', '.join(bad)})" if bad else "")
                 + f" | {'OK' if r['ok'] else 'FAILED' + (': ' + r['error'] if r.get('error') else '')} |")
    return L + [""]
