"""Starting and stopping echo servers that follow the contract in reference-impls/README.md
(prints ``LISTENING host:port``; on SIGTERM prints one JSON line of counters and exits)."""
from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Optional


@dataclass
class RunningServer:
    proc: subprocess.Popen
    host: str
    port: int

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 10.0):
        """SIGTERM, wait; returns (exit status, counters dict or None, remaining output)."""
        p = self.proc
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        rest = p.stdout.read().decode("utf-8", "replace") if p.stdout else ""
        counters = None
        for line in rest.splitlines()[::-1]:
            line = line.strip()
            if line.startswith("{"):
                try:
                    counters = json.loads(line)
                    break
                except ValueError:
                    pass
        return p.returncode, counters, rest


def start_server(command: str, cwd: Optional[str] = None, timeout: float = 30.0, env=None) -> RunningServer:
    """Starts `command` and waits for its "LISTENING host:port" line; RuntimeError (never an OSError)
    when it cannot start (a missing program), exits or stays silent."""
    try:
        p = subprocess.Popen(shlex.split(command), cwd=cwd, stdout=subprocess.PIPE, stderr=None,
                             start_new_session=True, env=env)
    except (OSError, ValueError) as e:
        raise RuntimeError(f"server {command!r} could not start: {e}") from e
    deadline = time.monotonic() + timeout
    line = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        ch = os.read(p.stdout.fileno(), 1)
        if not ch:
            break
        line += ch
        if ch == b"\n":
            text = line.decode("utf-8", "replace").strip()
            if text.startswith("LISTENING "):
                addr = text.split(None, 1)[1]
                host, _, port = addr.rpartition(":")
                return RunningServer(p, host.strip("[]"), int(port))
            line = b""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.wait()
    raise RuntimeError(f"server {command!r} did not print 'LISTENING host:port' within {timeout:g} s "
                       f"(exit status {p.returncode}, last output {line[-200:]!r})")
