"""`frameproof bench --scaling`: how each server's cost and throughput change with its worker threads
and where its load client runs (issue 28, "Scaling on this machine"), written to
results/scaling-<date>.{json,md}.

Every server that has ``--threads`` (ours; the raw echo) runs the echo scenario the issue names
(pipelined, 16 connections, the protocol's seed window, 32 B) in four placements:

- ``split``: the server on one CPU, the load client on the other; ``--threads 1`` and ``--threads 2``
  (two workers then share the server's CPU: what a second thread costs when it brings no core);
- ``same-core``: server and client on one CPU, ``--threads 1`` and ``2``.

Each row: msg/s (median of the runs), the server's and the client's CPU per verified message (user +
system, all threads, /proc over the client's run: fpbench/cpu.py), and how many cores' worth the server
used (msg/s x server CPU per message). Runs are interleaved over the servers as the matrix does, so that
background load falls on all of them alike. The projection to a larger machine is written by hand in
tools/bench/README.md ("Scaling"), from these figures and the servers' code.
"""
from __future__ import annotations

import shlex
from typing import List

from frameproof import protocols as registry
from frameproof.servers import start_server

from . import core, cpu
from .core import Program, Scenario, log

PLACEMENTS = ("split", "same-core")
THREADS = (1, 2)
SINGLE = ("floor", "floor-uring")  # single-threaded by design: --threads 1 only


def _pins(placement: str, cpu_id: int):
    other = next((c for c in sorted(core.os.sched_getaffinity(0)) if c != cpu_id), cpu_id)
    srv = ["taskset", "-c", str(cpu_id)]
    cli = ["taskset", "-c", str(other if placement == "split" else cpu_id)]
    return srv, cli


def run(servers: List[Program], client: Program, protocols: List[str], runs: int, duration: float,
        cpu_id: int = 0) -> dict:
    rows = []
    # ours and the tokio raw echo at 1 and 2 workers; the floors (one thread of C by design) at 1
    servers = [s for s in servers if s.kind == "reference" or s.name in ("raw",) + SINGLE]
    for proto in protocols:
        w = registry.get(proto).pipeline_window
        s = Scenario(proto, "pipelined", 32, 16, w, "scaling")
        for placement in PLACEMENTS:
            srv_pin, cli_pin = _pins(placement, cpu_id)
            for threads in THREADS:
                up = {}
                for srv in servers:
                    if proto not in srv.protocols or (srv.name in SINGLE and threads != 1):
                        continue
                    cmd = " ".join(shlex.quote(a) for a in srv_pin) + " " + srv.cmd(
                        core.codec_argv(s.codec) + ["--listen", "127.0.0.1:0", "--threads", str(threads)])
                    try:
                        up[srv.name] = start_server(cmd, cwd=str(core.ROOT))
                    except RuntimeError as e:
                        rows.append({"server": srv.name, "protocol": proto, "placement": placement,
                                     "threads": threads, "ok": False, "error": str(e)[:300]})
                        continue
                    core.run_client_once(client, s, up[srv.name].addr, min(0.2, duration), wrap=cli_pin)  # warm-up
                res = {name: [] for name in up}
                names = list(up)
                for k in range(runs):
                    for name in names[k % len(names):] + names[:k % len(names)]:
                        rs = up[name]
                        res[name].append(core.run_client_once(client, s, rs.addr, duration, wrap=cli_pin,
                                                              server_pid=rs.proc.pid) if rs.alive() else
                                         {"ok": False, "output": "server exited"})
                for name, rs in up.items():
                    rs.stop()
                    rr = res[name]
                    good = [r for r in rr if r.get("ok")]
                    st = core._median_spread([r["msgs_per_s"] for r in good if r.get("msgs_per_s")])
                    c = cpu.row_summary(rr) or {}
                    srv_ns = (c.get("server") or {}).get("total")
                    row = {"server": name, "protocol": proto, "placement": placement, "threads": threads,
                           "server_cpu": int(srv_pin[-1]), "client_cpu": int(cli_pin[-1]),
                           "scenario": s.to_json(), "ok": len(good) == runs, "msgs_per_s": st,
                           "cpu_ns_per_msg": c, "runs": rr,
                           "server_cores_busy": round(st["median"] * srv_ns / 1e9, 2) if st["median"] and srv_ns else None}
                    rows.append(row)
                    log(f"  scaling {proto:12} {placement:9} --threads {threads} {name:7} "
                        + (f"{st['median']:>12,.0f} msg/s, server {srv_ns:,.0f} ns/msg" if st["median"] and srv_ns
                           else "FAILED"))
    return {"client": client.name, "runs": runs, "duration_s": duration, "cpu": cpu_id,
            "placements": list(PLACEMENTS), "threads": list(THREADS), "rows": rows,
            "ok": bool(rows) and all(r["ok"] for r in rows)}


def markdown(sc: dict) -> List[str]:
    L = ["## Scaling: worker threads and where the load client runs", "",
         f"Pipelined, 16 connections, the protocol's seed window, 32 B; load client `{sc['client']}`; "
         f"{sc['runs']} runs of {sc['duration_s']:g} s per figure, interleaved over the servers. `split`: server on "
         f"CPU {sc['cpu']}, client on the other; `same-core`: both on CPU {sc['cpu']}. Cells: msg/s (median) · "
         "server CPU per message · client CPU per message (ns, user + system, all threads) · cores' worth the server "
         "used (msg/s × its CPU per message).", ""]
    protos = list(dict.fromkeys(r["protocol"] for r in sc["rows"]))
    servers = list(dict.fromkeys(r["server"] for r in sc["rows"]))
    cols = [(p, t) for p in sc["placements"] for t in sc["threads"]]
    for proto in protos:
        L += [f"### {proto}", "", "| server | " + " | ".join(f"{p}, --threads {t}" for p, t in cols) + " |",
              "|---|" + "---|" * len(cols)]
        for name in servers:
            cells = []
            for p, t in cols:
                r = next((r for r in sc["rows"] if r["protocol"] == proto and r["server"] == name
                          and r["placement"] == p and r["threads"] == t), None)
                if r is None:
                    cells.append("–")
                elif not r.get("msgs_per_s", {}).get("median"):
                    cells.append("failed")
                else:
                    c = r["cpu_ns_per_msg"]
                    s_ns = (c.get("server") or {}).get("total")
                    c_ns = (c.get("client") or {}).get("total")
                    cells.append(f"{r['msgs_per_s']['median'] / 1e3:,.0f}k · {s_ns or 0:,.0f} · {c_ns or 0:,.0f} · "
                                 f"{r['server_cores_busy'] if r['server_cores_busy'] is not None else '–'}"
                                 + ("" if r["ok"] else " (some runs failed)"))
            if any(c != "–" for c in cells):
                L.append(f"| {name} | " + " | ".join(cells) + " |")
        L.append("")
    return L
