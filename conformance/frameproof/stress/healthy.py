"""Healthy traffic measured alongside every scenario: long-lived connections doing one verified
request at a time, and a fresh connection now and then."""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import List

from ..checks import CheckFailure
from ..netsuite import NetTarget, payload_for
from .peers import Peer


# ------------------------------------------------------------------ healthy traffic

@dataclass
class HealthyStats:
    served: int = 0
    errors: int = 0
    latencies_us: List[int] = field(default_factory=list)
    details: List[str] = field(default_factory=list)

    def error(self, msg):
        self.errors += 1
        if len(self.details) < 5:
            self.details.append(msg)

    def p99_ms(self) -> float:
        if not self.latencies_us:
            return 0.0
        xs = sorted(self.latencies_us)
        return xs[min(len(xs) - 1, int(math.ceil(0.99 * len(xs))) - 1)] / 1000


class Healthy:
    """Healthy traffic beside the attack: ``conns`` long-lived connections, one verified request
    at a time every ``interval`` seconds each, and (``fresh``) a new connection with one request
    every 0.5 s. A failed request is an error; its connection is opened again."""

    def __init__(self, t: NetTarget, conns=4, interval=0.01, fresh=True, timeout=5.0):
        self.t, self.conns, self.interval, self.fresh, self.timeout = t, conns, interval, fresh, timeout
        self.st = HealthyStats()
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.threads = [threading.Thread(target=self._conn_loop, args=(k,), daemon=True) for k in range(conns)]
        if fresh:
            self.threads.append(threading.Thread(target=self._fresh_loop, daemon=True))

    def start(self):
        for th in self.threads:
            th.start()
        return self

    def _one(self, p: Peer, k: int, i: int):
        req = self.t.spec.net_request(1 + i % 250, payload_for(k * 1_000_000 + i, 24))
        exp = self.t.spec.echo_reply(req)
        t0 = time.monotonic()
        p.s.sendall(p.encode(req))
        got = p.recv_frames(1, self.timeout)[0]
        dt = int((time.monotonic() - t0) * 1e6)
        if got != exp:
            raise CheckFailure(f"wrong reply: expected {exp.short()}, actual {got.short()}")
        with self.lock:
            self.st.served += 1
            self.st.latencies_us.append(dt)

    def _conn_loop(self, k):
        p = None
        i = 0
        while not self._stop.is_set():
            try:
                if p is None:
                    p = Peer(self.t, self.timeout)
                self._one(p, k, i)
                i += 1
            except (CheckFailure, OSError) as e:
                with self.lock:
                    self.st.error(f"healthy connection {k}, request {i}: {e}")
                if p:
                    p.close()
                p = None
                self._stop.wait(0.05)
            self._stop.wait(self.interval)
        if p:
            p.close()

    def _fresh_loop(self):
        i = 0
        while not self._stop.wait(0.5):
            p = None
            try:
                p = Peer(self.t, self.timeout)
                self._one(p, 999, i)
            except (CheckFailure, OSError) as e:
                with self.lock:
                    self.st.error(f"fresh healthy connection {i}: {e}")
            finally:
                if p:
                    p.close()
            i += 1

    def stop(self) -> HealthyStats:
        self._stop.set()
        for th in self.threads:
            th.join(self.timeout + 2)
        return self.st
