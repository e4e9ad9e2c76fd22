"""Measuring the server under test from outside: descriptors, CPU time, liveness, RSS."""
from __future__ import annotations

import os
import threading
from typing import Optional

from ..netsuite import rss_kib


# ------------------------------------------------------------------ measuring the server

def fd_count(pid) -> Optional[int]:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def cpu_seconds(pid) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def alive(pid) -> bool:
    if not pid:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class RssMonitor:
    """Samples the server's RSS every 20 ms in a thread; ``peak_kib`` since the last ``reset``."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_kib = 0
        self._stop = threading.Event()
        self._th = None
        if pid:
            self._th = threading.Thread(target=self._run, daemon=True)
            self._th.start()

    def _run(self):
        while not self._stop.wait(0.02):
            v = rss_kib(self.pid)
            if v and v > self.peak_kib:
                self.peak_kib = v

    def reset(self) -> Optional[int]:
        v = rss_kib(self.pid)
        self.peak_kib = v or 0
        return v

    def stop(self):
        self._stop.set()
        if self._th:
            self._th.join(1)
