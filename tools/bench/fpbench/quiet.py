"""The quiet-machine check: is anything else using the CPUs while we measure?

A sample watches the machine for a few seconds: the idle fraction of all CPUs (``/proc/stat``:
idle + iowait ticks over all ticks), the load average, and every other process that used CPU in
that time (``/proc/<pid>/stat`` utime + stime), with its share of one core. The benchmark takes
one sample before it measures and one after; the machine counts as quiet when

- before and after, at least ``MIN_IDLE`` of all CPU time was idle,
- before and after, no other process used more than ``MAX_OTHER_CORE`` of one core,
- before, the 1-minute load average was at most ``MAX_LOAD_PER_CPU`` x the CPU count (after a run
  the load average still carries our own run for a minute, so it is recorded but not judged).

A run on a machine that is not quiet writes nothing to results/: its files go to reports/ with
names starting ``NOISY-`` and a NOISY banner (``--allow-noisy`` writes where asked, still marked).
"""
from __future__ import annotations

import os
import time
from typing import Dict, List, Optional, Set

MIN_IDLE = 0.90
MAX_OTHER_CORE = 0.10
MAX_LOAD_PER_CPU = 0.5
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_ticks(cpu: str = "cpu"):
    """(idle + iowait, all) ticks of ``cpu`` ("cpu": all CPUs; "cpu0", "cpu1", ...)."""
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == cpu:
                v = [int(x) for x in parts[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                return idle, sum(v[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return 0, 0


def _cpus() -> List[str]:
    with open("/proc/stat") as f:
        return [line.split()[0] for line in f if line.startswith("cpu") and line[3].isdigit()]


def _proc_ticks() -> Dict[int, tuple]:
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: split after the last ')'
        comm = s[s.find("(") + 1:s.rfind(")")]
        rest = s[s.rfind(")") + 2:].split()
        try:
            out[int(d)] = (int(rest[11]) + int(rest[12]), comm, int(rest[1]))  # utime+stime, comm, ppid
        except (IndexError, ValueError):
            continue
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:160]
    except OSError:
        return ""


def _own_tree() -> Set[int]:
    """This process and its ancestors (the shell or pytest that started us is not 'other work'
    only when it is idle; ancestors are excluded because their CPU is ours, e.g. a wrapper)."""
    me = {os.getpid()}
    pid = os.getppid()
    for _ in range(8):
        if pid <= 1:
            break
        me.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            pid = int(s[s.rfind(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return me


def sample(seconds: float = 3.0, exclude: Optional[Set[int]] = None) -> dict:
    """Watches the machine for ``seconds``: idle fraction, load average, busy processes."""
    exclude = (exclude or set()) | _own_tree()
    cpus = _cpus()
    i0, t0 = _cpu_ticks()
    c0 = [_cpu_ticks(c) for c in cpus]
    p0 = _proc_ticks()
    w0 = time.monotonic()
    time.sleep(seconds)
    i1, t1 = _cpu_ticks()
    c1 = [_cpu_ticks(c) for c in cpus]
    p1 = _proc_ticks()
    wall = time.monotonic() - w0
    busy = []
    for pid, (ticks, comm, _) in p1.items():
        if pid in exclude or pid not in p0:
            continue
        share = (ticks - p0[pid][0]) / CLK_TCK / wall
        if share >= 0.02:
            busy.append({"pid": pid, "comm": comm, "core_share": round(share, 3), "cmdline": _cmdline(pid)})
    busy.sort(key=lambda b: -b["core_share"])
    dt = t1 - t0
    return {"seconds": round(wall, 2), "idle_fraction": round((i1 - i0) / dt, 3) if dt > 0 else None,
            "loadavg": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
            "per_cpu_idle": {c[3:]: round((b[0] - a[0]) / (b[1] - a[1]), 3) if b[1] > a[1] else None
                             for c, a, b in zip(cpus, c0, c1)},
            "busy_processes": busy[:15]}


def judge(before: dict, after: Optional[dict]) -> dict:
    """{"ok": bool, "reasons": [...], "before": ..., "after": ...} from two samples."""
    reasons: List[str] = []
    for name, s in (("before", before), ("after", after)):
        if not s:
            continue
        if s["idle_fraction"] is not None and s["idle_fraction"] < MIN_IDLE:
            reasons.append(f"{name}: only {s['idle_fraction']:.0%} of CPU time idle over {s['seconds']} s "
                           f"(needs >= {MIN_IDLE:.0%})")
        hogs = [b for b in s["busy_processes"] if b["core_share"] > MAX_OTHER_CORE]
        if hogs:
            reasons.append(f"{name}: other processes busy: " + ", ".join(
                f"{b['comm']} (pid {b['pid']}, {b['core_share']:.0%} of a core)" for b in hogs[:6]))
    cpus = before.get("cpus") or 1
    if before["loadavg"][0] > MAX_LOAD_PER_CPU * cpus:
        reasons.append(f"before: load average {before['loadavg'][0]:.2f} > {MAX_LOAD_PER_CPU} x {cpus} CPUs")
    return {"ok": not reasons, "reasons": reasons, "before": before, "after": after,
            "thresholds": {"min_idle_fraction": MIN_IDLE, "max_other_core_share": MAX_OTHER_CORE,
                           "max_loadavg_1m_per_cpu_before": MAX_LOAD_PER_CPU}}


def banner(q: dict) -> List[str]:
    """Markdown lines saying whether the machine was quiet, with the evidence."""
    if not q:
        return []
    b, a = q.get("before") or {}, q.get("after") or {}

    def one(s):
        if not s:
            return "not sampled"
        hog = ", ".join(f"{x['comm']} {x['core_share']:.0%}" for x in s.get("busy_processes", [])[:5]) or "none"
        return (f"idle {s['idle_fraction']:.0%} over {s['seconds']} s, load average "
                f"{', '.join(f'{x:.2f}' for x in s['loadavg'])}; other busy processes: {hog}")
    L = [f"Quiet-machine check: before: {one(b)}; after: {one(a)}.  "]
    if q.get("ok"):
        L.append("The machine was quiet by the check's rules (tools/bench/fpbench/quiet.py).")
    else:
        L += ["", "> **NOISY**: the machine was not quiet, so these figures are not publishable: "
                  + "; ".join(q.get("reasons", [])) + "."
              + (" Written anyway because of `--allow-noisy`." if q.get("allowed") else "")]
    return L


def idlest_cpu(s: dict) -> int:
    """The CPU with the largest idle fraction in sample ``s`` (0 when unknown)."""
    per = {int(k): v for k, v in (s.get("per_cpu_idle") or {}).items() if v is not None}
    return max(per, key=lambda k: (per[k], -k)) if per else 0
