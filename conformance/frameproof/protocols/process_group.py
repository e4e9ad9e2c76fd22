"""Stopping a child that runs in a session of its own (``start_new_session=True``): its whole
process group, so that what it started stops with it."""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Optional


def stop_group(p: subprocess.Popen, grace: float, reap: Optional[float] = None) -> None:
    """SIGTERM to ``p``'s process group and ``grace`` seconds for ``p`` to exit; then SIGKILL and
    a wait of ``reap`` seconds (``None``: as long as it takes)."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(grace)
    except (OSError, subprocess.TimeoutExpired):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait(reap)
