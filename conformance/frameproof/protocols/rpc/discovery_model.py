"""The model of rpc's service registry (spec/discovery.md): what a registry script (spec/testee.md,
``discovery``) must answer, computed independently of the Python reference registry
(``discovery.py``). Single-threaded and deterministic: it is the specification executed.

A script is a list of ops, each a one-key dict (the ``DiscoveryOp`` oneof member and its value):
``{"register": Endpoint}``, ``{"deregister": Endpoint}``, ``{"discover": "svc"}``,
``{"watch": {"service": s, "on_first_event": op or None}}``, ``{"unwatch": n}``,
``{"select": {"selector_id", "service", "selector", "seed", "count"}}``,
``{"etcd_encode": {"prefix", "endpoint"}}``, ``{"etcd_decode": {"prefix", "key", "value"}}``,
``{"concurrent": {"service", "threads", "rounds", "picks"}}``.

Expected results carry ``reqs``: the requirements a difference in that result breaks.
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Dict, List, NamedTuple, Optional

OK, NOT_FOUND, CONNECTION_ERROR, LOCK_TIMEOUT, INTERNAL_ERROR, INVALID_ARGUMENT = range(6)
CODE_NAMES = ["OK", "NOT_FOUND", "CONNECTION_ERROR", "LOCK_TIMEOUT", "INTERNAL_ERROR", "INVALID_ARGUMENT"]
ADDED, REMOVED, UPDATED = 1, 2, 3
EVENT_NAMES = {0: "?", ADDED: "ADDED", REMOVED: "REMOVED", UPDATED: "UPDATED"}
SELECTORS = ("round-robin", "weighted-round-robin", "random", "weighted-random")
RANDOM_SELECTORS = ("random", "weighted-random")
DEFAULT_PREFIX = "frameproof/services"


class Endpoint(NamedTuple):
    service: str
    instance_id: str
    host: str = ""
    port: int = 0
    weight: int = 100

    def short(self) -> str:
        return f"{self.service}/{self.instance_id}@{self.host}:{self.port} w{self.weight}"


def name_ok(s: str) -> bool:
    """DISC-EP-2: a service name or instance id."""
    return isinstance(s, str) and 0 < len(s.encode("utf-8", "surrogatepass")) <= 255 and "/" not in s


def endpoint_ok(e: Endpoint) -> bool:
    return (name_ok(e.service) and name_ok(e.instance_id) and isinstance(e.host, str)
            and 0 < len(e.host.encode("utf-8", "surrogatepass")) <= 255
            and isinstance(e.port, int) and 0 <= e.port <= 65535
            and isinstance(e.weight, int) and 0 <= e.weight <= 0xFFFFFFFF)


def prefix_ok(p: str) -> bool:
    """DISC-ETCD-1: non-empty, no leading or trailing '/'."""
    return isinstance(p, str) and bool(p) and not p.startswith("/") and not p.endswith("/")


# ------------------------------------------------------------------ the etcd mapping (DISC-ETCD-1..3)

def etcd_key(prefix: str, service: str, instance_id: str) -> bytes:
    return f"/{prefix}/{service}/{instance_id}".encode("utf-8")


def etcd_value(e: Endpoint) -> bytes:
    return json.dumps({"service": e.service, "instance_id": e.instance_id, "host": e.host, "port": e.port,
                       "weight": e.weight}, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def etcd_decode(prefix: str, key: bytes, value: bytes) -> Optional[Endpoint]:
    """The endpoint an etcd entry holds, or None for an entry a reader skips."""
    if not prefix_ok(prefix):
        return None
    try:
        k = key.decode("utf-8")
        d = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    head = f"/{prefix}/"
    if not k.startswith(head):
        return None
    parts = k[len(head):].split("/")
    if len(parts) != 2 or not isinstance(d, dict):
        return None

    def is_int(x):
        return isinstance(x, int) and not isinstance(x, bool)

    if not all(isinstance(d.get(m), str) for m in ("service", "instance_id", "host")) or not is_int(d.get("port")):
        return None
    w = d.get("weight", 100)
    if not is_int(w):
        return None
    e = Endpoint(d["service"], d["instance_id"], d["host"], d["port"], w)
    if not endpoint_ok(e) or (e.service, e.instance_id) != (parts[0], parts[1]):
        return None
    return e


# ------------------------------------------------------------------ selectors (DISC-SEL-*)

def chi_square_limit(dof: int) -> float:
    """The 0.999 quantile of the chi-square distribution (DISC-SEL-4's table, dof 1..7)."""
    return {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32}[dof]


@dataclass
class SelectorState:
    service: str
    kind: str
    seed: int
    counter: int = 0
    current: Dict[str, int] = field(default_factory=dict)

    def pick(self, eligible: List[Endpoint]) -> Optional[str]:
        """The next pick's instance id (None: a random selector; the model cannot predict it)."""
        n = len(eligible)
        if self.kind == "round-robin":
            e = eligible[self.counter % n]
            self.counter += 1
            return e.instance_id
        if self.kind == "weighted-round-robin":
            ids = {e.instance_id for e in eligible}
            self.current = {k: v for k, v in self.current.items() if k in ids}
            total = sum(e.weight for e in eligible)
            best = None
            for e in eligible:
                self.current[e.instance_id] = self.current.get(e.instance_id, 0) + e.weight
                if best is None or self.current[e.instance_id] > self.current[best]:
                    best = e.instance_id
            self.current[best] -= total
            return best
        return None


# ------------------------------------------------------------------ expected results

@dataclass
class Result:
    code: int = OK
    endpoints: List[Endpoint] = field(default_factory=list)
    watch: int = 0
    picks: List[str] = field(default_factory=list)
    etcd_key: bytes = b""
    etcd_value: bytes = b""
    concurrent: Optional[dict] = None
    #: model only: random picks are checked for membership in this set instead of equality
    pick_from: Optional[List[str]] = None
    reqs: List[str] = field(default_factory=list)


@dataclass
class Event:
    watch: int
    type: int
    endpoint: Endpoint
    op: int
    nested: Optional[Result] = None
    reqs: List[str] = field(default_factory=list)

    def short(self) -> str:
        n = f", nested {CODE_NAMES[self.nested.code]}" if self.nested is not None else ""
        return f"watcher {self.watch} {EVENT_NAMES.get(self.type, self.type)} {self.endpoint.short()} during op {self.op}{n}"


@dataclass
class _Watcher:
    service: str
    on_first_event: Optional[dict]
    fired: bool = False
    active: bool = True


class Model:
    def __init__(self):
        self.services: Dict[str, List[Endpoint]] = {}
        self.watchers: Dict[int, _Watcher] = {}
        self.next_watch = 0
        self.selectors: Dict[int, SelectorState] = {}
        self.queue = deque()
        self.events: List[Event] = []
        self.replaced = set()  # services that saw a replacement (DISC-REG-2), for attribution

    # -- one op
    def _emit(self, service, kind, ep, reqs, nested_cause):
        recipients = [n for n, w in sorted(self.watchers.items()) if w.active and w.service == service]
        self.queue.append((kind, ep, recipients, reqs + (["DISC-WATCH-3"] if nested_cause else [])))

    def execute(self, op: dict, nested: bool = False) -> Result:
        (kind, arg), = op.items()
        if kind == "register":
            e = Endpoint(*arg)
            if not endpoint_ok(e):
                return Result(INVALID_ARGUMENT, reqs=["DISC-EP-2"])
            lst = self.services.setdefault(e.service, [])
            for i, old in enumerate(lst):
                if old.instance_id == e.instance_id:
                    lst[i] = e
                    self.replaced.add(e.service)
                    self._emit(e.service, UPDATED, e, ["DISC-REG-2", "DISC-WATCH-1"], nested)
                    return Result(OK, reqs=["DISC-REG-2"])
            lst.append(e)
            self._emit(e.service, ADDED, e, ["DISC-REG-1", "DISC-WATCH-1"], nested)
            return Result(OK, reqs=["DISC-REG-1"])
        if kind == "deregister":
            e = Endpoint(*arg)
            if not (name_ok(e.service) and name_ok(e.instance_id)):
                return Result(INVALID_ARGUMENT, reqs=["DISC-EP-2"])
            lst = self.services.get(e.service, [])
            for i, old in enumerate(lst):
                if old.instance_id == e.instance_id:
                    del lst[i]
                    self._emit(e.service, REMOVED, old, ["DISC-REG-3", "DISC-WATCH-1"], nested)
                    return Result(OK, reqs=["DISC-REG-3"])
            return Result(NOT_FOUND, reqs=["DISC-REG-4"])
        if kind == "discover":
            if not name_ok(arg):
                return Result(INVALID_ARGUMENT, reqs=["DISC-EP-2"])
            lst = list(self.services.get(arg, []))
            reqs = ["DISC-REG-5", "DISC-REG-1", "DISC-REG-3", "DISC-REG-6"]
            if arg in self.replaced:
                reqs.insert(0, "DISC-REG-2")
            return Result(OK, lst, reqs=reqs)
        if kind == "watch":
            if not name_ok(arg["service"]):
                return Result(INVALID_ARGUMENT, reqs=["DISC-EP-2"])
            n = self.next_watch
            self.next_watch += 1
            self.watchers[n] = _Watcher(arg["service"], arg.get("on_first_event"))
            return Result(OK, watch=n, reqs=["DISC-WATCH-5"])
        if kind == "unwatch":
            w = self.watchers.get(arg)
            if w is None or not w.active:
                return Result(NOT_FOUND, reqs=["DISC-WATCH-5"])
            w.active = False
            return Result(OK, reqs=["DISC-WATCH-5"])
        if kind == "select":
            return self._select(arg)
        if kind == "etcd_encode":
            e = Endpoint(*arg["endpoint"])
            if not prefix_ok(arg["prefix"]) or not endpoint_ok(e):
                return Result(INVALID_ARGUMENT, reqs=["DISC-ETCD-1", "DISC-EP-2"])
            return Result(OK, etcd_key=etcd_key(arg["prefix"], e.service, e.instance_id), etcd_value=etcd_value(e),
                          reqs=["DISC-ETCD-1", "DISC-ETCD-2"])
        if kind == "etcd_decode":
            e = etcd_decode(arg["prefix"], arg["key"], arg["value"])
            if e is None:
                return Result(INVALID_ARGUMENT, reqs=["DISC-ETCD-3"])
            return Result(OK, [e], reqs=["DISC-ETCD-3"])
        if kind == "concurrent":
            return self._concurrent(arg)
        if kind == "wait_ms":  # time passes; the registry's state does not change
            return Result(OK, reqs=["DISC-ETCD-7"])
        raise ValueError(f"unknown op {kind!r}")

    def _select(self, a) -> Result:
        sid = a["selector_id"]
        s = self.selectors.get(sid)
        if s is None:
            if a["selector"] not in SELECTORS or not name_ok(a["service"]):
                return Result(INVALID_ARGUMENT, reqs=["DISC-SEL-6", "DISC-EP-2"])
            s = self.selectors[sid] = SelectorState(a["service"], a["selector"], a["seed"])
        reqs = {"round-robin": ["DISC-SEL-2"], "weighted-round-robin": ["DISC-SEL-3"]}.get(s.kind, ["DISC-SEL-4"])
        eligible = [e for e in self.services.get(s.service, []) if e.weight > 0]
        reqs = reqs + ["DISC-SEL-1"]
        if not eligible:
            return Result(NOT_FOUND if a["count"] else OK, reqs=reqs)
        if s.kind in RANDOM_SELECTORS:
            return Result(OK, pick_from=[e.instance_id for e in eligible], picks=[None] * a["count"], reqs=reqs)
        return Result(OK, picks=[s.pick(eligible) for _ in range(a["count"])], reqs=reqs)

    def _concurrent(self, a) -> Result:
        svc, threads, rounds, picks = a["service"], a["threads"], a["rounds"], a["picks"]
        before = [e for e in self.services.get(svc, [])]
        mine = [Endpoint(svc, f"c{t}-{r}", "127.0.0.1", r % 65536, 1)
                for t in range(threads) for r in range(rounds) if r % 2 == 0]
        # the threads' final instances, in one order they may have been registered in: the list is
        # compared per thread (each thread's in the order of its rounds), see compare()
        self.services[svc] = before + mine
        final = before + mine
        n = len([e for e in final if e.weight > 0])
        total = threads * picks
        exp = {"failures": 0, "added": threads * rounds, "removed": threads * (rounds // 2), "updated": 0,
               "picks": ({e.instance_id: total // n for e in final if e.weight > 0} if n and total % n == 0 else None),
               "total_picks": total if n else 0}
        return Result(OK, final, concurrent=exp, reqs=["DISC-THREAD-1", "DISC-THREAD-2"])

    # -- delivery (DISC-WATCH-*)
    def _drain(self, op_index: int):
        while self.queue:
            kind, ep, recipients, reqs = self.queue.popleft()
            for n in recipients:
                w = self.watchers[n]
                if not w.active:
                    continue
                ev = Event(n, kind, ep, op_index, reqs=list(reqs) + ["DISC-WATCH-2"])
                self.events.append(ev)
                if w.on_first_event is not None and not w.fired:
                    w.fired = True
                    ev.nested = self.execute(w.on_first_event, nested=True)

    def run(self, ops: List[dict]):
        results = []
        for i, op in enumerate(ops):
            results.append(self.execute(op))
            self._drain(i)
        return results, self.events


def run(ops: List[dict]):
    """(expected results, expected events) of a script."""
    return Model().run(ops)
