"""The Python reference service registry of rpc (spec/discovery.md): thread-safe, callbacks
outside the lock and in order, the four selectors, the etcd mapping; and the script runner the
Python testee answers ``discovery`` requests with (spec/testee.md). Independent of the model
(``discovery_model.py``) except for the shared constants and the Endpoint record.

Deliberate bugs for the suite's own tests sit behind ``frameproof.reference.MUTANT`` (``MUTANTS``:
name -> the requirement each breaks)."""
from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import deque
from typing import Callable, Dict, List, Optional, Tuple

from ... import reference as R
from .discovery_model import (ADDED, INTERNAL_ERROR, INVALID_ARGUMENT, NOT_FOUND, OK, REMOVED, SELECTORS, UPDATED, Endpoint)

MUTANTS = {
    "disc-register-appends": "DISC-REG-2",           # upstream: a second registration is a duplicate
    "disc-removed-event-argument": "DISC-REG-3",     # REMOVED carries the caller's endpoint, not the stored one
    "disc-deregister-missing-ok": "DISC-REG-4",
    "disc-unknown-service-not-found": "DISC-REG-5",
    "disc-no-validation": "DISC-EP-2",               # names with '/' and empty ones accepted
    "disc-watchers-reverse": "DISC-WATCH-2",         # one event reaches the watchers newest first
    "disc-callbacks-under-lock": "DISC-WATCH-3",     # upstream: callbacks run under the (recursive) lock
    "disc-events-deferred": "DISC-WATCH-4",          # events delivered at the start of the next operation
    "disc-unwatch-all": "DISC-WATCH-5",              # upstream: unwatch silences every watcher of the service
    "disc-weight-zero-picked": "DISC-SEL-1",         # round-robin picks drained instances
    "disc-round-robin-skips": "DISC-SEL-2",          # skips the first instance after each wrap
    "disc-rr-resets-on-change": "DISC-SEL-2",        # round-robin's counter restarts at 0 when the list changes
    "disc-rr-counts-not-found": "DISC-SEL-1",        # a NOT_FOUND pick still advances round-robin's counter
    "disc-weight-ignored": "DISC-SEL-3",             # weighted round-robin with every weight 1
    "disc-wrr-resets-on-change": "DISC-SEL-3",       # weighted round-robin forgets every current weight when the list changes
    "disc-wrr-keeps-ineligible": "DISC-SEL-3",       # a drained or deregistered instance keeps its current weight
    "disc-random-skips-last": "DISC-SEL-4",          # random never picks the last instance
    "disc-seed-ignored": "DISC-SEL-5",               # random selectors seeded from the OS
    "disc-unlocked": "DISC-THREAD-1",                # no lock: read-modify-write races lose updates
    "disc-etcd-key-relative": "DISC-ETCD-1",         # key without its leading '/'
    "disc-etcd-value-spaced": "DISC-ETCD-2",         # JSON with spaces after ':' and ','
    "disc-etcd-strict": "DISC-ETCD-3",               # rejects values with members it does not know
    "disc-etcd-no-lease": "DISC-ETCD-5",             # etcd registry: keys written without a lease
    "disc-etcd-updated-as-added": "DISC-ETCD-6",     # etcd registry: every PUT reported as ADDED
    "disc-etcd-no-rewrite": "DISC-ETCD-7",           # etcd registry: a new lease, its instances not written again
    "disc-etcd-first-endpoint-only": "DISC-ETCD-8",  # etcd registry: given a cluster, talks to the first member only
    "disc-etcd-compact-skips": "DISC-ETCD-7",        # etcd registry: a watch whose history was compacted resumes at
                                                     # the current revision, the difference never delivered
}


def _m(name: str) -> bool:
    return R.MUTANT == name


def _name_ok(s: str) -> bool:
    if _m("disc-no-validation"):
        return isinstance(s, str)
    return bool(s) and len(s.encode("utf-8", "surrogatepass")) <= 255 and "/" not in s


def _valid(e: Endpoint) -> bool:
    if _m("disc-no-validation"):
        return True
    return (_name_ok(e.service) and _name_ok(e.instance_id)
            and 0 < len(e.host.encode("utf-8", "surrogatepass")) <= 255 and 0 <= e.port <= 65535
            and 0 <= e.weight <= 0xFFFFFFFF)


Callback = Callable[[int, Endpoint], None]


class Registry:
    """An in-process registry safe to share between threads (DISC-THREAD-1). One lock guards the
    map and the watcher table for the bookkeeping of one operation; events are queued under it
    and delivered outside it, in queue order, by one thread at a time (DISC-WATCH-2..4)."""

    def __init__(self):
        self._lock = threading.RLock() if _m("disc-callbacks-under-lock") else threading.Lock()
        self._services: Dict[str, List[Endpoint]] = {}
        self._watchers: Dict[int, Tuple[str, Callback]] = {}
        self._next_handle = 1
        self._queue = deque()  # (service, type, endpoint, recipient handles)
        self._dispatching = threading.Lock()  # held by the thread that delivers
        self._calling = None  # (thread id, handle) of the callback being called
        self._idle = threading.Condition(self._lock)
        self._local = threading.local()

    # -- events
    def _emit(self, service: str, kind: int, ep: Endpoint):
        """Under the lock: queue one event for the service's current watchers."""
        handles = [h for h, (s, _cb) in sorted(self._watchers.items()) if s == service]
        if _m("disc-watchers-reverse"):
            handles.reverse()
        if _m("disc-callbacks-under-lock"):  # upstream: call them right here, lock held
            for h in handles:
                w = self._watchers.get(h)
                if w is not None:
                    w[1](kind, ep)
            return
        self._queue.append((service, kind, ep, handles))

    def deliver(self):
        """Delivers the queued events (called after every operation). A call from inside a
        callback returns at once: the delivering loop further up this thread's stack goes on
        with the queue after the callback returns (DISC-WATCH-3)."""
        if getattr(self._local, "delivering", False):
            return
        while True:
            if not self._dispatching.acquire(blocking=False):
                return  # another thread is delivering; it re-checks the queue before it stops
            try:
                self._local.delivering = True
                while True:
                    with self._lock:
                        if not self._queue:
                            break
                        _service, kind, ep, handles = self._queue.popleft()
                    for h in handles:
                        with self._lock:
                            w = self._watchers.get(h)
                            if w is None:
                                continue  # unwatched meanwhile
                            self._calling = (threading.get_ident(), h)
                        try:
                            w[1](kind, ep)
                        finally:
                            with self._lock:
                                self._calling = None
                                self._idle.notify_all()
            finally:
                self._local.delivering = False
                self._dispatching.release()
            with self._lock:
                if not self._queue:
                    return

    def _after(self):
        if not _m("disc-events-deferred"):
            self.deliver()

    def _before(self):
        if _m("disc-events-deferred"):
            self.deliver()

    # -- operations
    def register(self, e: Endpoint) -> int:
        self._before()
        if not _valid(e):
            return INVALID_ARGUMENT
        if _m("disc-unlocked"):
            return self._register_unlocked(e)
        with self._lock:
            lst = self._services.setdefault(e.service, [])
            for i, old in enumerate(lst):
                if old.instance_id == e.instance_id and not _m("disc-register-appends"):
                    lst[i] = e
                    self._emit(e.service, UPDATED, e)
                    break
            else:
                lst.append(e)
                self._emit(e.service, ADDED, e)
        self._after()
        return OK

    def _register_unlocked(self, e: Endpoint) -> int:
        lst = list(self._services.get(e.service, []))
        time.sleep(0)  # a read-modify-write without a lock: another thread's update is lost here
        for i, old in enumerate(lst):
            if old.instance_id == e.instance_id:
                lst[i] = e
                kind = UPDATED
                break
        else:
            lst.append(e)
            kind = ADDED
        self._services[e.service] = lst
        self._emit(e.service, kind, e)
        self._after()
        return OK

    def deregister(self, service: str, instance_id: str, given: Optional[Endpoint] = None) -> int:
        self._before()
        if not (_name_ok(service) and _name_ok(instance_id)):
            return INVALID_ARGUMENT
        if _m("disc-unlocked"):
            lst = list(self._services.get(service, []))
            time.sleep(0)
            keep = [x for x in lst if x.instance_id != instance_id]
            if len(keep) == len(lst):
                return NOT_FOUND
            self._services[service] = keep
            self._emit(service, REMOVED, next(x for x in lst if x.instance_id == instance_id))
            self._after()
            return OK
        with self._lock:
            lst = self._services.get(service, [])
            for i, old in enumerate(lst):
                if old.instance_id == instance_id:
                    del lst[i]
                    self._emit(service, REMOVED, given if _m("disc-removed-event-argument") and given else old)
                    break
            else:
                return OK if _m("disc-deregister-missing-ok") else NOT_FOUND
        self._after()
        return OK

    def discover(self, service: str) -> Tuple[int, List[Endpoint]]:
        self._before()
        if not _name_ok(service):
            return INVALID_ARGUMENT, []
        with self._lock:
            if service not in self._services and _m("disc-unknown-service-not-found"):
                return NOT_FOUND, []
            return OK, list(self._services.get(service, []))

    def watch(self, service: str, callback: Callback) -> Tuple[int, int]:
        self._before()
        if not _name_ok(service):
            return INVALID_ARGUMENT, 0
        with self._lock:
            h = self._next_handle
            self._next_handle += 1
            self._watchers[h] = (service, callback)
        return OK, h

    def unwatch(self, handle: int) -> int:
        self._before()
        with self._lock:
            w = self._watchers.pop(handle, None)
            if w is None:
                return NOT_FOUND
            if _m("disc-unwatch-all"):
                for h in [h for h, (s, _cb) in self._watchers.items() if s == w[0]]:
                    del self._watchers[h]
            # once unwatch returns the callback is not called again: wait for a call in progress on
            # another thread (a callback that unwatches itself is the call in progress: no wait)
            me = threading.get_ident()
            while self._calling is not None and self._calling[1] == handle and self._calling[0] != me:
                self._idle.wait(1.0)
        return OK


class Selector:
    """One selector of one service (DISC-SEL-*); shareable between threads (DISC-THREAD-2)."""

    def __init__(self, registry: Registry, service: str, kind: str, seed: Optional[int]):
        self.registry, self.service, self.kind = registry, service, kind
        if seed is None or _m("disc-seed-ignored"):
            seed = int.from_bytes(os.urandom(8), "little")
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._counter = 0
        self._current: Dict[str, int] = {}
        self._last = None  # the eligible list of the last pick (for the mutants that notice a change)

    def select(self) -> Tuple[int, Optional[Endpoint]]:
        code, lst = self.registry.discover(self.service)
        if code != OK:
            return code, None
        eligible = lst if _m("disc-weight-zero-picked") and self.kind == "round-robin" else [e for e in lst if e.weight > 0]
        if not eligible:
            if _m("disc-rr-counts-not-found"):
                with self._lock:
                    self._counter += 1
            return NOT_FOUND, None
        with self._lock:
            if self._last is not None and eligible != self._last:
                if _m("disc-rr-resets-on-change"):
                    self._counter = 0
                if _m("disc-wrr-resets-on-change"):
                    self._current.clear()
            self._last = eligible
            return OK, getattr(self, "_" + self.kind.replace("-", "_"))(eligible)

    def _round_robin(self, el):
        n = len(el)
        i = self._counter % n
        self._counter += 1
        if _m("disc-round-robin-skips") and i == 0 and self._counter > 1 and n > 1:
            i = 1
            self._counter += 1
        return el[i]

    def _weighted_round_robin(self, el):
        weight = (lambda e: 1) if _m("disc-weight-ignored") else (lambda e: e.weight)
        ids = {e.instance_id for e in el}
        for k in [k for k in self._current if k not in ids and not _m("disc-wrr-keeps-ineligible")]:
            del self._current[k]
        total, best = 0, None
        for e in el:
            total += weight(e)
            cw = self._current[e.instance_id] = self._current.get(e.instance_id, 0) + weight(e)
            if best is None or cw > self._current[best.instance_id]:
                best = e
        self._current[best.instance_id] -= total
        return best

    def _random(self, el):
        n = len(el) - 1 if _m("disc-random-skips-last") and len(el) > 1 else len(el)
        return el[self._rng.randrange(n)]

    def _weighted_random(self, el):
        x = self._rng.randrange(sum(e.weight for e in el))
        for e in el:
            if x < e.weight:
                return e
            x -= e.weight
        return el[-1]  # not reached


# ------------------------------------------------------------------ the etcd mapping (DISC-ETCD-1..3)

def prefix_ok(p: str) -> bool:
    return bool(p) and not p.startswith("/") and not p.endswith("/")


def etcd_encode(prefix: str, e: Endpoint) -> Tuple[int, bytes, bytes]:
    if not prefix_ok(prefix) or not _valid(e):
        return INVALID_ARGUMENT, b"", b""
    key = f"{'' if _m('disc-etcd-key-relative') else '/'}{prefix}/{e.service}/{e.instance_id}"
    seps = (", ", ": ") if _m("disc-etcd-value-spaced") else (",", ":")
    value = json.dumps({"service": e.service, "instance_id": e.instance_id, "host": e.host, "port": e.port,
                        "weight": e.weight}, separators=seps, ensure_ascii=False)
    return OK, key.encode(), value.encode()


def etcd_decode(prefix: str, key: bytes, value: bytes) -> Tuple[int, Optional[Endpoint]]:
    bad = (INVALID_ARGUMENT, None)
    try:
        k, d = key.decode(), json.loads(value)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return bad
    head = "/" + prefix + "/"
    if not prefix_ok(prefix) or not k.startswith(head) or not isinstance(d, dict):
        return bad
    seg = k[len(head):].split("/")
    if _m("disc-etcd-strict") and set(d) - {"service", "instance_id", "host", "port", "weight"}:
        return bad
    d.setdefault("weight", 100)
    types = {"service": str, "instance_id": str, "host": str, "port": int, "weight": int}
    if any(type(d.get(f)) is not t for f, t in types.items()):  # bool is not int here
        return bad
    e = Endpoint(d["service"], d["instance_id"], d["host"], d["port"], d["weight"])
    if len(seg) != 2 or seg != [e.service, e.instance_id] or not _valid(e):
        return bad
    return OK, e


# ------------------------------------------------------------------ the script (spec/testee.md)

class ScriptRunner:
    """Runs one registry script; results and events as plain dicts (the testee converts them)."""

    def __init__(self, registry=None):
        self.reg = Registry() if registry is None else registry
        self.events: List[dict] = []
        self.op_index = 0
        self.watch_numbers: Dict[int, int] = {}  # watcher number -> registry handle
        self.selectors: Dict[int, Selector] = {}

    def _callback(self, number: int, on_first: Optional[dict]):
        state = {"fired": False}

        def cb(kind, ep):
            rec = {"watch": number, "type": kind, "endpoint": ep, "op": self.op_index, "nested": None}
            self.events.append(rec)
            if on_first is not None and not state["fired"]:
                state["fired"] = True
                rec["nested"] = self.execute(on_first)
        return cb

    def execute(self, op: dict) -> dict:
        (kind, a), = op.items()
        res = {"code": OK}
        if kind == "register":
            res["code"] = self.reg.register(Endpoint(*a))
        elif kind == "deregister":
            e = Endpoint(*a)
            res["code"] = self.reg.deregister(e.service, e.instance_id, e)
        elif kind == "discover":
            res["code"], res["endpoints"] = self.reg.discover(a)
        elif kind == "watch":
            number = len(self.watch_numbers)
            code, h = self.reg.watch(a["service"], self._callback(number, a.get("on_first_event")))
            res["code"] = code
            if code == OK:
                self.watch_numbers[number] = h
                res["watch"] = number
        elif kind == "unwatch":
            h = self.watch_numbers.get(a)
            res["code"] = NOT_FOUND if h is None else self.reg.unwatch(h)
        elif kind == "select":
            s = self.selectors.get(a["selector_id"])
            if s is None:
                if a["selector"] not in SELECTORS or not _name_ok(a["service"]):
                    return {"code": INVALID_ARGUMENT}
                s = self.selectors[a["selector_id"]] = Selector(self.reg, a["service"], a["selector"], a["seed"])
            res["picks"] = []
            for _ in range(a["count"]):
                code, e = s.select()
                if code != OK:
                    res["code"] = code
                    break
                res["picks"].append(e.instance_id)
        elif kind == "etcd_encode":
            res["code"], res["etcd_key"], res["etcd_value"] = etcd_encode(a["prefix"], Endpoint(*a["endpoint"]))
        elif kind == "etcd_decode":
            res["code"], e = etcd_decode(a["prefix"], a["key"], a["value"])
            res["endpoints"] = [e] if e else []
        elif kind == "concurrent":
            res.update(concurrent(self.reg, a))
        elif kind == "wait_ms":
            time.sleep(a / 1000)
        else:
            raise ValueError(f"unknown op {kind!r}")
        return res

    def run(self, ops: List[dict]):
        results = []
        for i, op in enumerate(ops):
            self.op_index = i
            results.append(self.execute(op))
        self.op_index = len(ops)
        self.reg.deliver()  # (disc-events-deferred: the last op's events, late)
        return results, self.events


def concurrent(reg: Registry, a: dict) -> dict:
    """The threads phase of spec/testee.md (DISC-THREAD-1/2)."""
    svc, threads, rounds, picks = a["service"], a["threads"], a["rounds"], a["picks"]
    counts = {"failures": 0, ADDED: 0, REMOVED: 0, UPDATED: 0}
    clock = threading.Lock()

    def count(kind, _ep):
        with clock:
            counts[kind] += 1
    code, handle = reg.watch(svc, count)
    barrier = threading.Barrier(threads)
    box = {}
    picked: Dict[str, int] = {}

    def fail():
        with clock:
            counts["failures"] += 1

    def worker(t):
        for r in range(rounds):
            iid = f"c{t}-{r}"
            if reg.register(Endpoint(svc, iid, "127.0.0.1", r % 65536, 1)) != OK:
                fail()
            code_, lst = reg.discover(svc)
            if code_ != OK or not any(e.instance_id == iid for e in lst):
                fail()
            if r % 2 == 1 and reg.deregister(svc, iid) != OK:
                fail()
        if barrier.wait() == 0:
            box["sel"] = Selector(reg, svc, "round-robin", 0)
        barrier.wait()
        mine: Dict[str, int] = {}
        for _ in range(picks):
            c, e = box["sel"].select()
            if c != OK:
                fail()
            else:
                mine[e.instance_id] = mine.get(e.instance_id, 0) + 1
        with clock:
            for k, v in mine.items():
                picked[k] = picked.get(k, 0) + v

    ts = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    reg.deliver()
    if code == OK:
        reg.unwatch(handle)
    _c, final = reg.discover(svc)
    return {"code": OK if all(not t.is_alive() for t in ts) else INTERNAL_ERROR, "endpoints": final,
            "concurrent": {"failures": counts["failures"], "added": counts[ADDED], "removed": counts[REMOVED],
                           "updated": counts[UPDATED], "picks": picked}}
