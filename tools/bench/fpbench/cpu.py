"""CPU time per message: the benchmark's headline figure (issue 28).

Throughput alone does not repeat on a shared machine, and with server and client on one core it is
bounded by their sum; the CPU each side spends per verified message does repeat. For every load run:

* the server's user and system time from ``/proc/<pid>/stat`` (fields 14 and 15, every thread of the
  process, exited ones included) read just before the client starts and just after it exits;
* the client's from ``getrusage(RUSAGE_CHILDREN)`` around the run (the client is the only child reaped
  in that window; its threads and its own children included), microsecond resolution.

The window is the client's whole life (connect, the measured seconds, the goodbye); the load clients
connect before they start their clock, so connection setup is in the CPU figure and not in msg/s. At
the benchmark's run lengths (seconds, millions of messages) that is well under a percent.
``/proc/<pid>/stat`` counts in clock ticks (``SC_CLK_TCK``, 10 ms here): a run shorter than a second
has a coarse server figure, and the row says how many ticks it rests on.
"""
from __future__ import annotations

import os
import resource
import statistics
from typing import List, Optional

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: Optional[int]) -> Optional[tuple]:
    """(user s, system s) of a running process and all its threads; None when it cannot be read."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after "pid (comm)": state is field 3, utime 14, stime 15 (proc(5)): indexes 11 and 12 here
    return int(fields[11]) * TICK, int(fields[12]) * TICK


def children_cpu() -> tuple:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime, ru.ru_stime


class Window:
    """Opened before a client starts, closed after it exited: the server's and the client's CPU."""

    def __init__(self, server_pid: Optional[int]):
        self.pid = server_pid
        self.srv0 = proc_cpu(server_pid)
        self.cli0 = children_cpu()

    def close(self) -> dict:
        srv1, cli1 = proc_cpu(self.pid), children_cpu()
        out = {"client_user_s": round(cli1[0] - self.cli0[0], 6), "client_sys_s": round(cli1[1] - self.cli0[1], 6)}
        if self.srv0 and srv1:
            out.update(server_user_s=round(srv1[0] - self.srv0[0], 3), server_sys_s=round(srv1[1] - self.srv0[1], 3))
        return out


def per_message(run: dict) -> Optional[dict]:
    """One run's CPU in nanoseconds per message (the verified replies; in receive mode, where
    nothing is replied, the requests sent), user and system apart and summed, both sides."""
    cpu = run.get("cpu") or {}
    n = run.get("replies_verified") or run.get("requests_sent")
    if not n or not cpu:
        return None
    out = {}
    for side in ("server", "client"):
        if f"{side}_user_s" in cpu:
            u, s = cpu[f"{side}_user_s"], cpu[f"{side}_sys_s"]
            out[side] = {"user": u * 1e9 / n, "sys": s * 1e9 / n, "total": (u + s) * 1e9 / n}
    return out


def row_summary(runs: List[dict]) -> Optional[dict]:
    """The median over a row's good runs of each per-message figure (ns), the server's tick count
    (how coarse its figure is) and which side spent more CPU per message (the one that limited a
    run where both share a core or each has one)."""
    per = [p for p in (per_message(r) for r in runs if r.get("ok")) if p]
    if not per:
        return None
    out = {}
    for side in ("server", "client"):
        vals = [p[side] for p in per if side in p]
        if vals:
            out[side] = {k: round(statistics.median(v[k] for v in vals), 1) for k in ("user", "sys", "total")}
    ticks = [round((r["cpu"].get("server_user_s", 0) + r["cpu"].get("server_sys_s", 0)) / TICK)
             for r in runs if r.get("ok") and r.get("cpu")]
    if ticks:
        out["server_ticks_min"] = min(ticks)
    if "server" in out and "client" in out:
        out["heavier"] = "server" if out["server"]["total"] >= out["client"]["total"] else "client"
    return out
