"""What every scenario shares: its context (the target, limits, healthy traffic, failures), its
entry, and the waits and checks several scenarios use."""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from ..netsuite import NetTarget
from .healthy import Healthy
from .limits import Limits
from .probes import RssMonitor, fd_count


# ------------------------------------------------------------------ scenarios

@dataclass
class Ctx:
    t: NetTarget
    limits: Limits
    scale: float
    rss: RssMonitor
    p99_bound_ms: float
    notes: List[str] = field(default_factory=list)
    failures: List[str] = field(default_factory=list)
    failed_res: List[Optional[int]] = field(default_factory=list)
    hostile_conns: int = 0
    healthy: Optional[Healthy] = None
    p99_checked: bool = True

    def n(self, full: int, least: int = 4) -> int:
        return max(least, int(round(full * self.scale)))

    def fail(self, msg, res: Optional[int] = None):
        """A failure of RES-``res`` (None: of every requirement the scenario checks)."""
        self.failures.append(msg)
        self.failed_res.append(res)

    def note(self, msg):
        self.notes.append(msg)

    @property
    def pid(self):
        return self.t.pid

    def room(self) -> int:
        """Connections the scenario may open without reaching the server's connection limit."""
        return max(8, self.limits.max_connections - 32)


@dataclass
class Scenario:
    name: str
    res: Tuple[int, ...]  # the RES requirement numbers it checks (the prefix is the protocol's)
    description: str
    run: Callable  # run(ctx)
    needs_pid: bool = False
    fresh_healthy: bool = True


def _wait_closed(socks: List[Tuple[socket.socket, float]], deadline_of, what, ctx, limit_s, res=None):
    """Polls ``socks`` (socket, the moment the clock starts for it) until each is closed by the
    server or its deadline (start + ``limit_s``) has passed; returns the count left open."""
    if not socks:
        return 0
    open_ = list(socks)
    end = max(st for _, st in socks) + limit_s
    closed_at = []
    first = True
    while open_ and (first or time.monotonic() < end + 0.2):
        first = False
        keep = []
        for s, st in open_:
            if deadline_of(s):
                closed_at.append(time.monotonic() - st)
            else:
                keep.append((s, st))
        open_ = keep
        time.sleep(0.05)
    late = [1 for s, st in open_]
    if closed_at:
        ctx.note(f"{what}: {len(closed_at)} closed after {min(closed_at):.2f}..{max(closed_at):.2f} s")
    if late:
        ctx.fail(f"{what}: {len(late)} of {len(socks)} still open {limit_s:.1f} s after they went quiet "
                 f"(expected the server to close them)", res)
    return len(late)


def _fds_back(ctx, before, what, slack=8, wait=3.0, res=None):
    if before is None:
        return
    deadline = time.monotonic() + wait
    now = fd_count(ctx.pid)
    while now is not None and now > before + slack and time.monotonic() < deadline:
        time.sleep(0.1)
        now = fd_count(ctx.pid)
    if now is not None and now > before + slack:
        ctx.fail(f"{what}: the server holds {now} descriptors, {before} before (connections not released)", res)
    else:
        ctx.note(f"server descriptors: {before} before, {now} after")


class SkipScenario(Exception):
    pass


def scenario_requirements(protocol, sc: Scenario) -> List[str]:
    from ..protocols import get
    prefix = get(protocol).id_prefix
    return [f"{prefix}-RES-{n}" for n in sc.res]


def scenario_name(protocol, sc: Scenario) -> str:
    return f"{protocol}/{scenario_requirements(protocol, sc)[0]}/stress/{sc.name}"
