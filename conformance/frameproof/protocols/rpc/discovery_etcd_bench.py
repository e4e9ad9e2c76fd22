"""The discovery benchmark on etcd (spec/discovery.md §9, "On etcd") for the Python registry, with
the same flags, phases and JSON as the Rust, C++ and C# ``fp-discovery-bench --etcd``:

    python -m frameproof.protocols.rpc.discovery_etcd_bench --etcd HOST:PORT[,...]
        [--threads N] [--seconds S] [--samples N] [--json FILE]

``register``: W threads share one registry, each re-registering its own instance; ``discover``: W
threads discover the W instances; ``watch``: a second registry watches ``WatchBench`` while the first
registers ``w-<i>`` one at a time, timed from just before the call to the ADDED callback."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from typing import List, Optional

from .discovery_etcd import EtcdRegistry
from .discovery_model import ADDED, OK, Endpoint

LOST_AFTER = 5.0  # seconds: a watch sample with no callback by then is lost


def percentile(sorted_us: List[float], p: float) -> float:
    """Nearest rank: the ceil(p*n)-th smallest."""
    if not sorted_us:
        return 0.0
    return sorted_us[min(len(sorted_us), max(1, math.ceil(p * len(sorted_us)))) - 1]


class Phase:
    def __init__(self, op: str):
        self.op, self.ops, self.errors, self.lost, self.seconds = op, 0, 0, 0, 0.0
        self.latencies: List[float] = []

    def json(self) -> dict:
        lat = sorted(self.latencies)
        p50, p99 = round(percentile(lat, 0.5), 1), round(percentile(lat, 0.99), 1)
        if self.op == "watch":
            return {"op": "watch", "samples": self.ops + self.lost + self.errors, "lost": self.lost, "errors": self.errors,
                    "p50_us": p50, "p99_us": p99, "max_us": round(lat[-1] if lat else 0.0, 1)}
        return {"op": self.op, "ops": self.ops, "errors": self.errors, "duration_s": round(self.seconds, 6),
                "ops_per_s": round(self.ops / self.seconds, 1), "p50_us": p50, "p99_us": p99}

    def line(self, threads: int) -> str:
        j = self.json()
        if self.op == "watch":
            return (f"watch    {j['samples']} samples, {j['lost']} lost, {j['errors']} errors: PUT -> callback "
                    f"p50 {j['p50_us']} us, p99 {j['p99_us']} us, max {j['max_us']} us")
        return (f"{self.op:<8} {threads} threads, {self.seconds:.1f} s: {self.ops} ops, {self.errors} errors, "
                f"{j['ops_per_s']} ops/s, p50 {j['p50_us']} us, p99 {j['p99_us']} us")


def _endpoint(service: str, instance: str, w: int) -> Endpoint:
    return Endpoint(service, instance, "127.0.0.1", 9000 + w, 100)


def timed(op: str, threads: int, seconds: float, call) -> Phase:
    """``threads`` threads run ``call(w)`` (True when right) for ``seconds``; every call timed."""
    p = Phase(op)
    lock = threading.Lock()
    start = time.monotonic()
    until = start + seconds

    def worker(w: int):
        ok = bad = 0
        lat = []
        while time.monotonic() < until:
            t = time.perf_counter()
            if call(w):
                ok += 1
            else:
                bad += 1
            lat.append((time.perf_counter() - t) * 1e6)
        with lock:
            p.ops += ok
            p.errors += bad
            p.latencies.extend(lat)

    ts = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    p.seconds = time.monotonic() - start
    return p


def watch_phase(writer: EtcdRegistry, watcher: EtcdRegistry, samples: int) -> Phase:
    p = Phase("watch")
    seen: List[Optional[float]] = [None] * samples
    cv = threading.Condition()

    def on_event(kind, e):
        at = time.perf_counter()
        if kind != ADDED or not e.instance_id.startswith("w-"):
            return
        try:
            i = int(e.instance_id[2:])
        except ValueError:
            return
        with cv:
            if 0 <= i < samples and seen[i] is None:
                seen[i] = at
                cv.notify_all()

    code, handle = watcher.watch("WatchBench", on_event)
    if code != OK:
        print(f"watch WatchBench: code {code}", file=sys.stderr)
        p.errors = 1
        return p
    start = time.monotonic()
    failed_in_a_row = 0
    for i in range(samples):
        if failed_in_a_row == 3:  # etcd is gone: the run ends in seconds, not samples x 5 s
            break
        t = time.perf_counter()
        if writer.register(_endpoint("WatchBench", f"w-{i}", i % 100)) != OK:
            p.errors += 1
            failed_in_a_row += 1
            continue
        with cv:
            cv.wait_for(lambda: seen[i] is not None, LOST_AFTER)
            at = seen[i]
        if at is None:
            p.lost += 1
            failed_in_a_row += 1
        else:
            failed_in_a_row = 0
            p.ops += 1
            p.latencies.append((at - t) * 1e6)
    p.seconds = time.monotonic() - start
    watcher.unwatch(handle)
    return p


def run(endpoints: str, threads: int, seconds: float, samples: int) -> List[Phase]:
    prefix = f"fpbench/python-{os.getpid()}"
    reg = EtcdRegistry(endpoints, prefix)
    watcher = None
    try:
        code, _ = reg.discover("BenchService")  # an etcd that is not there fails once, within the timeout
        if code != OK:
            raise SystemExit(f"etcd at {endpoints} does not answer (code {code})")
        register = timed("register", threads, seconds,
                         lambda w: reg.register(_endpoint("BenchService", f"instance-{w}", w)) == OK)

        def discover(_w):
            code, lst = reg.discover("BenchService")
            return code == OK and len(lst) == threads
        disc = timed("discover", threads, seconds, discover)
        watcher = EtcdRegistry(endpoints, prefix)
        watch = watch_phase(reg, watcher, samples)
        for w in range(threads):
            reg.deregister("BenchService", f"instance-{w}")
        return [register, disc, watch]
    finally:
        if watcher is not None:
            watcher.close()
        reg.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="discovery_etcd_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--etcd", required=True, metavar="ENDPOINTS")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    if not 0 < a.threads <= 1024 or not 0 < a.seconds <= 600 or not 0 < a.samples <= 1_000_000:
        ap.error("--threads 1..1024, --seconds (0, 600], --samples 1..1000000")
    phases = run(a.etcd, a.threads, a.seconds, a.samples)
    for p in phases:
        print(p.line(a.threads))
    if a.json:
        doc = {"implementation": "python", "benchmark": "discovery-etcd",
               "endpoints": [e.strip() for e in a.etcd.split(",") if e.strip()], "threads": a.threads,
               "runs": [p.json() for p in phases]}
        with open(a.json, "w") as f:
            f.write(json.dumps(doc, indent=2) + "\n")
    return 1 if any(p.errors or p.lost for p in phases) else 0


if __name__ == "__main__":
    sys.exit(main())
