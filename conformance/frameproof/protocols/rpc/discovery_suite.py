"""The conformance checks of rpc's service registry (spec/discovery.md): registry scripts sent to
any testee (spec/testee.md, ``discovery``) and compared with the model (``discovery_model``):
Hypothesis stateful testing, fixed scripts, selector distributions, a threads phase and the etcd
mapping. Each check names the requirements a difference breaks."""
from __future__ import annotations

from typing import List, Optional

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from ... import properties as P
from ..._generated import testee_pb2 as pb
from ...checks import CheckFailure
from . import discovery_model as M
from .discovery_model import CODE_NAMES, EVENT_NAMES, Endpoint

FEATURE = "discovery"


# ------------------------------------------------------------------ protobuf <-> script

def _ep_pb(e: Endpoint, msg) -> None:
    msg.service, msg.instance_id, msg.host, msg.port, msg.weight = e.service, e.instance_id, e.host, e.port, e.weight


def _ep_py(m) -> Endpoint:
    return Endpoint(m.service, m.instance_id, m.host, m.port, m.weight)


def op_to_pb(op: dict, msg=None):
    msg = pb.DiscoveryOp() if msg is None else msg
    (kind, a), = op.items()
    if kind in ("register", "deregister"):
        _ep_pb(Endpoint(*a), getattr(msg, kind))
    elif kind == "discover":
        msg.discover = a
    elif kind == "unwatch":
        msg.unwatch = a
    elif kind == "watch":
        msg.watch.service = a["service"]
        if a.get("on_first_event") is not None:
            op_to_pb(a["on_first_event"], msg.watch.on_first_event)
    elif kind == "select":
        s = msg.select
        s.selector_id, s.service, s.selector, s.seed, s.count = (a["selector_id"], a["service"], a["selector"],
                                                                 a["seed"], a["count"])
    elif kind == "etcd_encode":
        msg.etcd_encode.prefix = a["prefix"]
        _ep_pb(Endpoint(*a["endpoint"]), msg.etcd_encode.endpoint)
    elif kind == "etcd_decode":
        msg.etcd_decode.prefix, msg.etcd_decode.key, msg.etcd_decode.value = a["prefix"], a["key"], a["value"]
    elif kind == "concurrent":
        c = msg.concurrent
        c.service, c.threads, c.rounds, c.picks = a["service"], a["threads"], a["rounds"], a["picks"]
    else:
        raise ValueError(kind)
    return msg


def op_from_pb(m) -> dict:
    kind = m.WhichOneof("op")
    if kind in ("register", "deregister"):
        return {kind: _ep_py(getattr(m, kind))}
    if kind in ("discover", "unwatch"):
        return {kind: getattr(m, kind)}
    if kind == "watch":
        return {"watch": {"service": m.watch.service,
                          "on_first_event": op_from_pb(m.watch.on_first_event) if m.watch.HasField("on_first_event") else None}}
    if kind == "select":
        s = m.select
        return {"select": {"selector_id": s.selector_id, "service": s.service, "selector": s.selector, "seed": s.seed,
                           "count": s.count}}
    if kind == "etcd_encode":
        return {"etcd_encode": {"prefix": m.etcd_encode.prefix, "endpoint": _ep_py(m.etcd_encode.endpoint)}}
    if kind == "etcd_decode":
        d = m.etcd_decode
        return {"etcd_decode": {"prefix": d.prefix, "key": bytes(d.key), "value": bytes(d.value)}}
    if kind == "concurrent":
        c = m.concurrent
        return {"concurrent": {"service": c.service, "threads": c.threads, "rounds": c.rounds, "picks": c.picks}}
    raise ValueError(f"unknown discovery op {kind!r}")


def result_to_pb(r: dict, msg) -> None:
    """A result dict of the Python reference (discovery.ScriptRunner) into a DiscoveryResult."""
    msg.code = r.get("code", 0)
    for e in r.get("endpoints", []):
        _ep_pb(e, msg.endpoints.add())
    msg.watch = r.get("watch", 0)
    msg.picks.extend(r.get("picks", []))
    msg.etcd_key, msg.etcd_value = r.get("etcd_key", b""), r.get("etcd_value", b"")
    c = r.get("concurrent")
    if c is not None:
        m = msg.concurrent
        m.failures, m.added, m.removed, m.updated = c["failures"], c["added"], c["removed"], c["updated"]
        for k, v in sorted(c["picks"].items()):
            m.picks.add(instance_id=k, count=v)


def response_to_pb(results, events) -> pb.DiscoveryResponse:
    out = pb.DiscoveryResponse()
    for r in results:
        result_to_pb(r, out.results.add())
    for ev in events:
        m = out.events.add(watch=ev["watch"], type=ev["type"], op=ev["op"])
        _ep_pb(ev["endpoint"], m.endpoint)
        if ev["nested"] is not None:
            result_to_pb(ev["nested"], m.nested)
    return out


def _result_py(m) -> M.Result:
    conc = None
    if m.HasField("concurrent"):
        c = m.concurrent
        conc = {"failures": c.failures, "added": c.added, "removed": c.removed, "updated": c.updated,
                "picks": {p.instance_id: p.count for p in c.picks}}
    return M.Result(m.code, [_ep_py(e) for e in m.endpoints], m.watch, list(m.picks), bytes(m.etcd_key),
                    bytes(m.etcd_value), conc)


def run_script(testee, ops: List[dict], codec=None, etcd: Optional[pb.DiscoveryEtcd] = None):
    """(results, events) the testee answers for the script (raises Skipped, TesteeFailure); with
    ``etcd``, on the testee's etcd-backed registry."""
    from .oracle import RpcCodec
    from ...testee import codec_pb
    req = pb.DiscoveryRequest(codec=codec_pb(codec or RpcCodec("rpc")))
    if etcd is not None:
        req.etcd.CopyFrom(etcd)
    for op in ops:
        op_to_pb(op, req.ops.add())
    resp = testee.discovery(req)
    events = [M.Event(e.watch, e.type, _ep_py(e.endpoint), e.op, _result_py(e.nested) if e.HasField("nested") else None)
              for e in resp.events]
    return [_result_py(r) for r in resp.results], events


# ------------------------------------------------------------------ comparison

def describe_op(op: dict) -> str:
    (kind, a), = op.items()
    if kind == "register":
        return f"register {Endpoint(*a).short()}"
    if kind == "deregister":
        return f"deregister {a[0]}/{a[1]}"
    if kind == "watch":
        nested = a.get("on_first_event")
        return f"watch {a['service']!r}" + (f" (callback: {describe_op(nested)})" if nested else "")
    if kind == "select":
        return f"select #{a['selector_id']} {a['selector']} {a['service']!r} seed {a['seed']} x{a['count']}"
    if kind == "etcd_decode":
        return f"etcd_decode prefix {a['prefix']!r} key {a['key']!r} value {a['value'][:80]!r}"
    if kind == "etcd_encode":
        return f"etcd_encode prefix {a['prefix']!r} {Endpoint(*a['endpoint']).short()}"
    return f"{kind} {a!r}"


def _res_text(r: M.Result, kind: str) -> str:
    s = CODE_NAMES[r.code] if r.code < len(CODE_NAMES) else f"code {r.code}"
    if kind == "discover" or (kind == "etcd_decode" and r.endpoints):
        s += " [" + ", ".join(e.short() for e in r.endpoints) + "]"
    if kind == "watch" and r.code == M.OK:
        s += f" watcher {r.watch}"
    if kind == "select":
        if r.pick_from is not None:
            s += f" {len(r.picks)} picks from {r.pick_from}"
        else:
            s += f" picks {r.picks[:40]}{' …' if len(r.picks) > 40 else ''}"
    if kind == "etcd_encode" and r.code == M.OK:
        s += f" key {r.etcd_key!r} value {r.etcd_value!r}"
    if kind == "concurrent" and r.concurrent is not None:
        c = dict(r.concurrent)
        picks = c.pop("picks")
        c.pop("total_picks", None)
        s += f" {c}, {len(r.endpoints)} instances after it"
        if picks is not None:
            counts = sorted(set(picks.values()))
            s += f", pick counts per instance {counts[:6]}{' …' if len(counts) > 6 else ''} " \
                 f"({sum(picks.values())} picks over {len(picks)} instances)"
    return s


def _list_diff(e: List[Endpoint], a: List[Endpoint]) -> str:
    missing = [x.instance_id for x in e if x not in a]
    extra = [x.instance_id for x in a if x not in e]
    return (f"\n  missing  {missing[:12]}{' …' if len(missing) > 12 else ''} ({len(missing)})" if missing else "") + \
        (f"\n  extra    {extra[:12]}{' …' if len(extra) > 12 else ''} ({len(extra)})" if extra else "")


def result_diff(kind: str, e: M.Result, a: M.Result) -> Optional[List[str]]:
    """None if ``a`` is what ``e`` allows, else the requirements the difference breaks."""
    if e.code != a.code:
        return e.reqs
    if kind == "discover" and e.endpoints != a.endpoints:
        return e.reqs
    if kind == "watch" and e.code == M.OK and e.watch != a.watch:
        return e.reqs
    if kind == "select":
        if len(a.picks) != len(e.picks):
            return e.reqs
        if e.pick_from is not None:
            if any(p not in e.pick_from for p in a.picks):
                return e.reqs
        elif a.picks != e.picks:
            return e.reqs
    if kind == "etcd_encode":
        if e.etcd_key != a.etcd_key:
            return ["DISC-ETCD-1"]
        if e.etcd_value != a.etcd_value:
            return ["DISC-ETCD-2"]
    if kind == "etcd_decode" and e.endpoints != a.endpoints:
        return e.reqs
    if kind == "concurrent":
        return _concurrent_diff(e, a)
    return None


def _concurrent_diff(e: M.Result, a: M.Result) -> Optional[List[str]]:
    x, y = e.concurrent, a.concurrent
    if y is None:
        return ["DISC-THREAD-1"]
    for k in ("failures", "added", "removed", "updated"):
        if x[k] != y[k]:
            return ["DISC-THREAD-1", "DISC-WATCH-1"] if k != "failures" else ["DISC-THREAD-1"]
    if sorted(a.endpoints) != sorted(e.endpoints):
        return ["DISC-THREAD-1"]
    # each thread's instances in the order of its rounds (linearizability + program order)
    for t in {x.instance_id.split("-")[0] for x in e.endpoints}:
        want = [ep for ep in e.endpoints if ep.instance_id.startswith(t + "-")]
        got = [ep for ep in a.endpoints if ep.instance_id.startswith(t + "-")]
        if want != got:
            return ["DISC-THREAD-1", "DISC-REG-1"]
    if x["picks"] is not None and y["picks"] != x["picks"]:
        return ["DISC-THREAD-2"]
    if x["picks"] is None and sum(y["picks"].values()) != x["total_picks"]:
        return ["DISC-THREAD-2"]
    return None


def _ev_key(ev: M.Event):
    return (ev.watch, ev.type, ev.endpoint)


def event_diff(e_events: List[M.Event], a_events: List[M.Event], unwatched_at: dict):
    """(index, requirements) of the first difference, or None."""
    n = min(len(e_events), len(a_events))
    for i in range(n):
        x, y = e_events[i], a_events[i]
        if _ev_key(x) == _ev_key(y):
            if x.op != y.op:
                return i, ["DISC-WATCH-4"]
            if (x.nested is None) != (y.nested is None) or (x.nested is not None and x.nested.code != y.nested.code):
                return i, ["DISC-WATCH-3"]
            continue
        rest_e = sorted(map(_ev_key, e_events[i:]), key=repr)
        rest_a = sorted(map(_ev_key, a_events[i:]), key=repr)
        if rest_e == rest_a:  # the same events, another order
            nested = any(ev.nested is not None or "DISC-WATCH-3" in ev.reqs for ev in e_events)
            return i, ["DISC-WATCH-2"] + (["DISC-WATCH-3"] if nested else [])
        if (x.watch, x.endpoint[:2]) == (y.watch, y.endpoint[:2]):
            return i, x.reqs  # same watcher and instance: the event's type or content differ
        if y.watch in unwatched_at and unwatched_at[y.watch] <= y.op:
            return i, ["DISC-WATCH-5"]
        return i, x.reqs + ["DISC-WATCH-5"]
    if len(a_events) > n:
        y = a_events[n]
        return n, ["DISC-WATCH-5"] if y.watch in unwatched_at else ["DISC-WATCH-1"]
    if len(e_events) > n:
        return n, e_events[n].reqs + ["DISC-WATCH-5"]
    return None


def _unwatched(ops) -> dict:
    """watcher number -> the op index of its (top-level) unwatch (for attribution only)."""
    return {a: i for i, op in enumerate(ops) for k, a in op.items() if k == "unwatch"}


def check_script(testee, ops: List[dict], context: str = ""):
    """Runs ``ops`` on the testee and on the model; raises CheckFailure at the first difference."""
    exp_results, exp_events = M.run(ops)
    act_results, act_events = run_script(testee, ops)
    script = "\n".join(f"    {i}: {describe_op(op)}" for i, op in enumerate(ops[:30]))
    if len(ops) > 30:
        script += f"\n    … {len(ops) - 30} more"
    head = f"{context}registry script of {len(ops)} ops:\n{script}\n"
    if len(act_results) != len(exp_results):
        raise CheckFailure(f"{head}  expected {len(exp_results)} results\n  actual   {len(act_results)} results",
                           ["DISC-ERR-1"])
    first = None
    for i, (op, e, a) in enumerate(zip(ops, exp_results, act_results)):
        kind = next(iter(op))
        reqs = result_diff(kind, e, a)
        if reqs:
            more = _list_diff(e.endpoints, a.endpoints) if kind in ("concurrent", "discover") else ""
            first = (i, f"op {i} ({describe_op(op)}):\n  expected {_res_text(e, kind)}\n  actual   {_res_text(a, kind)}"
                        f"{more}", reqs)
            break
    ed = event_diff(exp_events, act_events, _unwatched(ops))
    if ed is not None:
        j, reqs = ed
        x = exp_events[j].short() if j < len(exp_events) else "no more events"
        y = act_events[j].short() if j < len(act_events) else "no more events"
        op_at = min(exp_events[j].op if j < len(exp_events) else len(ops), act_events[j].op if j < len(act_events) else len(ops))
        if first is None or op_at <= first[0]:
            first = (op_at, f"callback call {j} (events in the order the callbacks ran):\n  expected {x}\n  actual   {y}", reqs)
    if first is not None:
        raise CheckFailure(head + first[1], first[2])


# ------------------------------------------------------------------ strategies

SERVICES = ("svc.a", "svc.b")
INSTANCES = ("i0", "i1", "i2", "i3")
WEIGHTS = (0, 1, 2, 3, 5, 100)
BAD_NAMES = ("", "a/b", "x" * 256)


def ep(service, iid, host="10.0.0.1", port=7000, weight=100):
    return Endpoint(service, iid, host, port, weight)


class RegistryMachine(RuleBasedStateMachine):
    """Random registry scripts: after every step the whole script so far runs on the testee and on
    the model, and every result and callback call must agree."""
    testee = None

    def __init__(self):
        super().__init__()
        self.ops: List[dict] = []
        self.watches = 0
        self.selectors = 0

    def _step(self, op):
        self.ops.append(op)
        check_script(self.testee, self.ops, "stateful: ")

    @rule(s=st.sampled_from(SERVICES), i=st.sampled_from(INSTANCES), port=st.sampled_from([0, 7000, 65535]),
          w=st.sampled_from(WEIGHTS), host=st.sampled_from(["10.0.0.1", "h", "ü.example"]))
    def register(self, s, i, port, w, host):
        self._step({"register": ep(s, i, host, port, w)})

    @rule(bad=st.sampled_from(["service", "instance", "host", "port"]), v=st.sampled_from(BAD_NAMES))
    def register_invalid(self, bad, v):
        e = ep("svc.a", "i0")
        e = {"service": e._replace(service=v), "instance": e._replace(instance_id=v),
             "host": e._replace(host="" if v != "x" * 256 else v), "port": e._replace(port=65536)}[bad]
        self._step({"register": e})

    @rule(s=st.sampled_from(SERVICES + ("svc.none",)), i=st.sampled_from(INSTANCES))
    def deregister(self, s, i):
        self._step({"deregister": Endpoint(s, i, "", 0, 0)})

    @rule(s=st.sampled_from(SERVICES + ("svc.none",)))
    def discover(self, s):
        self._step({"discover": s})

    @rule(s=st.sampled_from(SERVICES), nested=st.one_of(
        st.none(),
        st.builds(lambda s, i, w: {"register": ep(s, i, "10.9.9.9", 9, w)}, st.sampled_from(SERVICES),
                  st.sampled_from(INSTANCES), st.sampled_from(WEIGHTS)),
        st.builds(lambda s, i: {"deregister": Endpoint(s, i, "", 0, 0)}, st.sampled_from(SERVICES),
                  st.sampled_from(INSTANCES)),
        st.builds(lambda n: {"unwatch": n}, st.integers(0, 4)),
        st.builds(lambda s: {"watch": {"service": s, "on_first_event": None}}, st.sampled_from(SERVICES)),
        st.builds(lambda s: {"discover": s}, st.sampled_from(SERVICES))))
    def watch(self, s, nested):
        self.watches += 1
        self._step({"watch": {"service": s, "on_first_event": nested}})

    @precondition(lambda self: self.watches > 0)
    @rule(n=st.integers(0, 5))
    def unwatch(self, n):
        self._step({"unwatch": n})

    @rule(sid=st.integers(0, 3), s=st.sampled_from(SERVICES + ("svc.none",)), kind=st.sampled_from(M.SELECTORS),
          seed=st.integers(0, 2 ** 64 - 1), count=st.integers(0, 9))
    def select(self, sid, s, kind, seed, count):
        self._step({"select": {"selector_id": sid, "service": s, "selector": kind, "seed": seed, "count": count}})


def stateful(steps: int = 20):
    def run(testee):
        probe(testee)
        RegistryMachine.testee = testee
        try:
            run_state_machine_as_test(RegistryMachine, settings=settings(settings.default, stateful_step_count=steps))
        finally:
            RegistryMachine.testee = None
    return run


def probe(testee):
    """An empty script first: a testee that answers `skipped` skips the check before Hypothesis starts."""
    run_script(testee, [])


# ------------------------------------------------------------------ fixed scripts

A, B = "svc.a", "svc.b"
REG = lambda e: {"register": e}  # noqa: E731
DEREG = lambda s, i: {"deregister": Endpoint(s, i, "", 0, 0)}  # noqa: E731
DISC = lambda s: {"discover": s}  # noqa: E731
WATCH = lambda s, then=None: {"watch": {"service": s, "on_first_event": then}}  # noqa: E731
SEL = lambda sid, s, kind, count, seed=0: {"select": {"selector_id": sid, "service": s, "selector": kind,  # noqa: E731
                                                     "seed": seed, "count": count}}

REGISTRY_SCRIPTS = [
    ("new instances are appended in order", [REG(ep(A, "i1")), REG(ep(A, "i0")), REG(ep(A, "i2", weight=0)), DISC(A)]),
    ("a second registration replaces in place", [WATCH(A), REG(ep(A, "i0")), REG(ep(A, "i1")),
                                                 REG(ep(A, "i0", "10.0.0.2", 8000, 7)), DISC(A), REG(ep(A, "i0", "10.0.0.2", 8000, 7)),
                                                 DISC(A), DEREG(A, "i0"), DISC(A), DEREG(A, "i0")]),
    ("deregister keeps the others' order", [REG(ep(A, x)) for x in INSTANCES] + [DEREG(A, "i1"), DISC(A), REG(ep(A, "i1")), DISC(A)]),
    ("deregister of a missing instance", [DEREG(A, "i0"), REG(ep(A, "i0")), DEREG(A, "i9"), DEREG(B, "i0"), DEREG(A, "i0"),
                                          DEREG(A, "i0"), DISC(A)]),
    ("unknown and emptied services discover empty", [DISC("nowhere"), REG(ep(A, "i0")), DEREG(A, "i0"), DISC(A)]),
    ("services are independent", [WATCH(B), REG(ep(A, "i0")), REG(ep(B, "i0", port=1)), DISC(A), DISC(B), DISC("svc.A"),
                                  DEREG(A, "i0"), DISC(B)]),
    ("invalid names and ports are refused", [REG(ep("", "i0")), REG(ep(A, "")), REG(ep("a/b", "i0")), REG(ep(A, "i/0")),
                                             REG(ep(A, "i0", host="")), REG(ep(A, "i0", port=65536)),
                                             REG(ep("s" * 256, "i0")), REG(ep("s" * 255, "i0")), DISC(""), DISC("a/b"),
                                             DISC(A), DEREG("", "i0"), WATCH("a/b"), DISC("s" * 255)]),
]

WATCH_SCRIPTS = [
    ("events reach watchers in watch order, each event before the next",
     [WATCH(A), WATCH(A), WATCH(B), REG(ep(A, "i0")), REG(ep(B, "i0")), REG(ep(A, "i0", port=2)), DEREG(A, "i0")]),
    ("REMOVED carries the registered endpoint", [REG(ep(A, "i0", "10.1.1.1", 1234, 42)), WATCH(A), DEREG(A, "i0")]),
    ("a callback that registers: its event comes after the current one, to every watcher",
     [WATCH(A, REG(ep(A, "n0", port=5))), WATCH(A), REG(ep(A, "i0")), REG(ep(A, "i1")), DISC(A)]),
    ("a callback that deregisters and discovers",
     [REG(ep(A, "i0")), WATCH(A, DEREG(A, "i0")), WATCH(A, DISC(A)), REG(ep(A, "i1")), DISC(A)]),
    ("a callback that watches: the new watcher gets only later events",
     [WATCH(A, WATCH(A)), WATCH(A), REG(ep(A, "i0")), REG(ep(A, "i1"))]),
    ("a callback that unwatches itself is not called again", [WATCH(A, {"unwatch": 0}), WATCH(A), REG(ep(A, "i0")),
                                                             REG(ep(A, "i1")), {"unwatch": 0}]),
    ("a callback that unwatches a later watcher before the event reaches it",
     [WATCH(A, {"unwatch": 1}), WATCH(A), WATCH(A), REG(ep(A, "i0")), REG(ep(A, "i1"))]),
    ("unwatch stops one watcher; unknown handles are NOT_FOUND",
     [WATCH(A), WATCH(A), REG(ep(A, "i0")), {"unwatch": 0}, REG(ep(A, "i1")), {"unwatch": 0}, {"unwatch": 7},
      {"unwatch": 1}, REG(ep(A, "i2"))]),
    ("no replay of earlier registrations; failed operations cause no event",
     [REG(ep(A, "i0")), WATCH(A), DEREG(A, "i9"), REG(ep(A, "")), DISC(A), REG(ep(A, "i1"))]),
]

SELECTOR_SCRIPTS = [
    ("round-robin walks the list in order", [REG(ep(A, x)) for x in ("a", "b", "c")] + [SEL(0, A, "round-robin", 7)]),
    ("round-robin skips drained instances and keeps its counter across changes",
     [REG(ep(A, "a")), REG(ep(A, "b", weight=0)), REG(ep(A, "c")), SEL(0, A, "round-robin", 3), REG(ep(A, "d")),
      SEL(0, A, "round-robin", 4), DEREG(A, "a"), REG(ep(A, "b", weight=1)), SEL(0, A, "round-robin", 5)]),
    ("two selectors keep separate counters", [REG(ep(A, x)) for x in ("a", "b", "c")] +
     [SEL(0, A, "round-robin", 2), SEL(1, A, "round-robin", 2), SEL(0, A, "round-robin", 2)]),
    ("smooth weighted round-robin, weights 5 1 1: a a b a c a a",
     [REG(ep(A, "a", weight=5)), REG(ep(A, "b", weight=1)), REG(ep(A, "c", weight=1)), SEL(0, A, "weighted-round-robin", 14)]),
    ("smooth weighted round-robin: ties go to the first, weight 0 never, weight changes keep the current weight",
     [REG(ep(A, "a", weight=2)), REG(ep(A, "b", weight=2)), REG(ep(A, "z", weight=0)), REG(ep(A, "c", weight=3)),
      SEL(0, A, "weighted-round-robin", 9), REG(ep(A, "b", weight=7)), SEL(0, A, "weighted-round-robin", 6),
      DEREG(A, "a"), REG(ep(A, "d", weight=1)), SEL(0, A, "weighted-round-robin", 10)]),
    ("large weights are summed exactly",
     [REG(ep(A, "a", weight=0xFFFFFFFF)), REG(ep(A, "b", weight=0xFFFFFFFE)), REG(ep(A, "c", weight=3)),
      SEL(0, A, "weighted-round-robin", 12)]),
    ("nothing eligible: NOT_FOUND, state unchanged",
     [SEL(0, A, "round-robin", 1), SEL(1, A, "weighted-round-robin", 1), SEL(2, A, "random", 1, 7),
      SEL(3, A, "weighted-random", 1, 7), REG(ep(A, "a", weight=0)), SEL(0, A, "round-robin", 2), SEL(3, A, "weighted-random", 1),
      REG(ep(A, "b")), REG(ep(A, "c")), SEL(0, A, "round-robin", 3), SEL(2, A, "random", 20), SEL(3, A, "weighted-random", 20)]),
    ("unknown selector names are INVALID_ARGUMENT", [REG(ep(A, "a")), SEL(0, A, "least-connections", 1),
                                                     SEL(0, A, "Round-Robin", 1), SEL(0, A, "round-robin", 2)]),
]


def scripted(cases, label: str):
    def run(testee):
        probe(testee)
        failures, broken = [], []
        for name, ops in cases:
            try:
                check_script(testee, ops, f"{name}: ")
            except CheckFailure as e:
                failures.append(str(e))
                broken += [r for r in e.requirements if r not in broken]
        if failures:
            raise CheckFailure(f"{len(failures)} of {len(cases)} {label} scripts differ; first: " + failures[0], broken)
    return run


# ------------------------------------------------------------------ selector distributions (DISC-SEL-4/5)

DIST_SEEDS = (1, 2, 3, 4, 5)
DIST_LISTS = [  # (weights of the instances): n = 2, 3, 4 (one drained instance among them) and 8 eligible
    (1, 1), (5, 1, 1), (100, 0, 100, 100, 100), (1, 2, 3, 4, 5, 6, 7, 8),
]


def chi_square(counts: dict, expected: dict) -> float:
    return sum((counts.get(k, 0) - v) ** 2 / v for k, v in expected.items())


def distribution():
    def run(testee):
        probe(testee)
        failures = []
        broken = set()
        for weights in DIST_LISTS:
            ops = [REG(ep(A, f"i{k}", weight=w)) for k, w in enumerate(weights)]
            el = [(f"i{k}", w) for k, w in enumerate(weights) if w > 0]
            n = len(el)
            picks = 2000 * n
            for kind in M.RANDOM_SELECTORS:
                total_w = sum(w for _, w in el)
                expected = {i: picks * (w / total_w if kind == "weighted-random" else 1 / n) for i, w in el}
                script = ops + [SEL(s, A, kind, picks, seed=s) for s in DIST_SEEDS]
                results, _ = run_script(testee, script)
                # the first seed once more, in a fresh script: the same picks (DISC-SEL-5)
                again, _ = run_script(testee, script[:len(ops) + 1])
                bad_seeds = []
                for s, r, r2 in zip(DIST_SEEDS, results[len(ops):], again[len(ops):] + [None] * len(DIST_SEEDS)):
                    where = f"{kind} over weights {weights}, seed {s}, {picks} picks"
                    if r.code != M.OK or len(r.picks) != picks:
                        failures.append(f"{where}:\n  expected OK and {picks} picks\n  actual   "
                                        f"{CODE_NAMES[r.code] if r.code < 6 else r.code} and {len(r.picks)} picks")
                        broken.add("DISC-SEL-4")
                        continue
                    if r2 is not None and r.picks != r2.picks:
                        first = next(i for i, (x, y) in enumerate(zip(r.picks, r2.picks)) if x != y) \
                            if len(r.picks) == len(r2.picks) else 0
                        failures.append(f"{where}, run twice:\n  expected the same picks (DISC-SEL-5)\n  actual   "
                                        f"pick {first} differs: {r.picks[first]!r} then {r2.picks[first]!r}")
                        broken.add("DISC-SEL-5")
                    counts = {}
                    for p in r.picks:
                        counts[p] = counts.get(p, 0) + 1
                    drained = [p for p in counts if p not in expected]
                    if drained:
                        failures.append(f"{where}:\n  expected picks among the eligible {sorted(expected)}\n  actual   "
                                        f"also {drained} (weight 0 or unknown)")
                        broken.add("DISC-SEL-1")
                        continue
                    x2 = chi_square(counts, expected)
                    if x2 >= M.chi_square_limit(n - 1):
                        bad_seeds.append((s, x2, counts))
                if len(bad_seeds) > 1:
                    s, x2, counts = bad_seeds[0]
                    failures.append(
                        f"{kind} over weights {weights}, {picks} picks per seed: chi-square at or above "
                        f"{M.chi_square_limit(n - 1)} (p = 0.001, {n - 1} degrees of freedom) for seeds "
                        f"{[b[0] for b in bad_seeds]} (at most 1 of 5 allowed)\n"
                        f"  expected counts {{{', '.join(f'{k}: {v:.0f}' for k, v in expected.items())}}}\n"
                        f"  actual   counts {dict(sorted(counts.items()))} (seed {s}, chi-square {x2:.1f})")
                    broken.add("DISC-SEL-4")
        if failures:
            raise CheckFailure(f"{len(failures)} selector distribution checks failed; first: " + failures[0],
                               sorted(broken))
    return run


# ------------------------------------------------------------------ threads (DISC-THREAD-1/2)

def threads():
    def run(testee):
        probe(testee)
        pre = [REG(ep("svc.t0", "p0")), WATCH("svc.t0")]
        for threads_, rounds, picks in ((4, 200, 150), (8, 50, 25)):
            # 4 threads x 100 even rounds = 400 instances; 4 x 150 = 600 picks is not a multiple: the
            # total is checked; 8 x 25 even rounds = 200 instances, 8 x 25 picks = 1 each
            check_script(testee, pre + [{"concurrent": {"service": f"svc.c{threads_}", "threads": threads_,
                                                        "rounds": rounds, "picks": picks}}, DISC("svc.t0")],
                         f"{threads_} threads x {rounds} rounds, then {picks} round-robin picks each: ")
    return run


# ------------------------------------------------------------------ the etcd mapping (DISC-ETCD-1..3)

ETCD_DECODE_CASES = [  # (prefix, key, value): the model says what each decodes to
    ("frameproof/services", b"/frameproof/services/svc.a/i0",
     b'{"service":"svc.a","instance_id":"i0","host":"10.0.0.1","port":7000,"weight":5}'),
    ("p", b"/p/s/i", b'{"instance_id":"i","zone":"eu-1","service":"s","host":"h","port":1,"meta":{"a":[1,2]}}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"/p/s/i", b'  {"service" : "s", "instance_id" : "i", "host" : "h", "port" : 65535, "weight" : 0}\n'),
    ("a/b", b"/a/b/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1,"weight":4294967295}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1,"weight":4294967296}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":65536}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":"1"}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1.5}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":true}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","port":1}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"j","host":"h","port":1}'),
    ("p", b"/p/s/i", b'{"service":"t","instance_id":"i","host":"h","port":1}'),
    ("p", b"/p/s/i/x", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"/q/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
    ("p", b"/p/s/i", b'["s","i","h",1]'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1'),
    ("p", b"/p/s/i", b'\xff{"service":"s"}'),
    ("p", b"/p/s/i", b'{"service":"s","instance_id":"i","host":"","port":1}'),
    ("/p", b"//p/s/i", b'{"service":"s","instance_id":"i","host":"h","port":1}'),
]

_names = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)), min_size=1, max_size=12)


def etcd_mapping():
    def run(testee):
        probe(testee)
        check_script(testee, [{"etcd_decode": {"prefix": p, "key": k, "value": v}} for p, k, v in ETCD_DECODE_CASES],
                     "fixed etcd entries: ")

        from hypothesis import given

        @given(st.lists(st.tuples(st.sampled_from(["frameproof/services", "p", "a/b/c", "/p", "p/", ""]),
                                  st.builds(Endpoint, _names, _names, _names, st.integers(0, 65536),
                                            st.integers(0, 2 ** 32 - 1))), min_size=1, max_size=6))
        def prop(items):
            ops = []
            for prefix, e in items:
                ops.append({"etcd_encode": {"prefix": prefix, "endpoint": e}})
                ops.append({"etcd_decode": {"prefix": prefix, "key": M.etcd_key(prefix, e.service, e.instance_id),
                                            "value": M.etcd_value(e)}})
            check_script(testee, ops, "etcd round trip: ")
        prop()
    return run


# ------------------------------------------------------------------ on a real etcd (DISC-ETCD-4..7)

ETCD_SCRIPT = [
    WATCH(A), WATCH(B), REG(ep(A, "i1", "10.0.0.1", 7001, 5)), REG(ep(A, "i0", "10.0.0.2", 7002, 1)),
    REG(ep(B, "i0", "10.0.0.3", 7003, 1)), REG(ep(A, "i2", "10.0.0.4", 7004, 0)), DISC(A),
    REG(ep(A, "i1", "10.0.0.9", 7009, 2)), DISC(A), DEREG(A, "i0"), DEREG(A, "i0"), DEREG("svc.none", "i0"),
    DISC(A), DISC(B), DISC("svc.none"), REG(ep(A, "i0", "10.0.0.2", 7002, 1)), DISC(A),
    SEL(0, A, "round-robin", 5), SEL(1, A, "weighted-round-robin", 6), {"unwatch": 1}, REG(ep(B, "i1")),
    REG(ep(A, "i3", "10.0.0.5", 7005, 3)), REG(ep(A, "bad/id")),
]


def _per_watcher(events):
    out = {}
    for ev in events:
        out.setdefault(ev.watch, []).append((ev.type, ev.endpoint))
    return out


def check_remote(testee, ops, etcd_msg, context):
    """Results as the model says; events per watcher in the model's order (a remote registry
    delivers them on its own thread, after the operations returned: DISC-ETCD-6)."""
    exp_results, exp_events = M.run(ops)
    act_results, act_events = run_script(testee, ops, etcd=etcd_msg)
    head = f"{context}registry script of {len(ops)} ops on etcd (prefix {etcd_msg.prefix!r}):\n" + \
        "\n".join(f"    {i}: {describe_op(op)}" for i, op in enumerate(ops)) + "\n"
    for i, (op, e, a) in enumerate(zip(ops, exp_results, act_results)):
        kind = next(iter(op))
        reqs = result_diff(kind, e, a)
        if reqs:
            raise CheckFailure(f"{head}op {i} ({describe_op(op)}):\n  expected {_res_text(e, kind)}\n  actual   "
                               f"{_res_text(a, kind)}", ["DISC-ETCD-4"] + reqs)
    want, got = _per_watcher(exp_events), _per_watcher(act_events)
    for w in sorted(set(want) | set(got)):
        x, y = want.get(w, []), got.get(w, [])
        if x != y:
            j = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            fmt = lambda t: f"{EVENT_NAMES.get(t[0], t[0])} {t[1].short()}" if t else "no more events"  # noqa: E731
            raise CheckFailure(f"{head}watcher {w}, event {j} (of {len(x)} expected, {len(y)} delivered):\n"
                               f"  expected {fmt(x[j] if j < len(x) else None)}\n  actual   "
                               f"{fmt(y[j] if j < len(y) else None)}", ["DISC-ETCD-6"])
    return exp_results


def etcd_live():
    def run(testee):
        import shutil
        import time
        from ...testee import Skipped
        from . import discovery_etcd as E
        if shutil.which("etcd") is None:
            raise Skipped("etcd is not installed (Debian: apt-get install etcd-server)")
        etcd = E.LocalEtcd()
        try:
            etcd.start()
            gw = E.Gateway(etcd.endpoint)
            ttl = 2
            msg = pb.DiscoveryEtcd(endpoint=etcd.endpoint, prefix="fp-test/one", lease_ttl_s=ttl, abandon=True)
            check_remote(testee, ETCD_SCRIPT, msg, "")
            # what the registry left in etcd: the keys and values of §8, in registration order, leased
            model = M.Model()
            model.run([op for op in ETCD_SCRIPT if "register" in op or "deregister" in op])
            want = [(M.etcd_key(msg.prefix, e.service, e.instance_id), M.etcd_value(e))
                    for s in sorted(model.services) for e in model.services[s]]
            kvs = gw.range_prefix(f"/{msg.prefix}/".encode()).get("kvs", [])
            got = sorted(((E._unb64(kv["key"]), E._unb64(kv.get("value", ""))) for kv in kvs),
                         key=lambda kv: [k for k, _v in want].index(kv[0]) if kv[0] in [k for k, _v in want] else -1)
            if got != want:
                raise CheckFailure(f"the keys under /{msg.prefix}/ after the script:\n  expected {want}\n  actual   {got}",
                                   ["DISC-ETCD-1", "DISC-ETCD-2", "DISC-ETCD-4"])
            leases = {kv.get("lease", "0") for kv in kvs}
            if "0" in leases or not leases:
                raise CheckFailure(f"the keys under /{msg.prefix}/:\n  expected every key written with a lease\n"
                                   f"  actual   leases {sorted(leases)}", ["DISC-ETCD-5"])
            for lease in leases:
                granted = int(gw.post("/v3/lease/timetolive", {"ID": lease}).get("grantedTTL", 0))
                if granted != ttl:
                    raise CheckFailure(f"lease {lease}:\n  expected a TTL of {ttl} s (lease_ttl_s)\n  actual   {granted} s",
                                       ["DISC-ETCD-5"])
            # the testee abandoned its registry (a crash): the keys go within TTL + TTL/3 (+1 s slack)
            t0 = time.monotonic()
            while gw.range_prefix(f"/{msg.prefix}/".encode()).get("kvs") and time.monotonic() - t0 < ttl * 4 / 3 + 1.5:
                time.sleep(0.1)
            left = gw.range_prefix(f"/{msg.prefix}/".encode()).get("kvs", [])
            if left:
                raise CheckFailure(f"{len(left)} keys under /{msg.prefix}/ {time.monotonic() - t0:.1f} s after the "
                                   f"registry stopped its keep-alives:\n  expected none (lease TTL {ttl} s)\n"
                                   f"  actual   {[E._unb64(kv['key']) for kv in left]}", ["DISC-ETCD-5"])
            check_remote(testee, [DISC(A), DISC(B)], pb.DiscoveryEtcd(endpoint=etcd.endpoint, prefix=msg.prefix,
                                                                      lease_ttl_s=ttl), "after the lease expired: ")
            # etcd unreachable: CONNECTION_ERROR within the request timeout, not a hang
            timeout_ms = 1000
            down = pb.DiscoveryEtcd(endpoint=f"127.0.0.1:{E.free_port()}", prefix="fp-test/two", lease_ttl_s=ttl,
                                    request_timeout_ms=timeout_ms)
            t0 = time.monotonic()
            results, _ = run_script(testee, [REG(ep(A, "i0")), DISC(A)], etcd=down)
            took = time.monotonic() - t0
            limit = 2 * timeout_ms / 1000 + 1.5
            if [r.code for r in results] != [M.CONNECTION_ERROR] * 2 or took > limit:
                raise CheckFailure(f"register and discover with no etcd at {down.endpoint}:\n  expected CONNECTION_ERROR "
                                   f"twice within {limit:g} s (request timeout {timeout_ms} ms)\n  actual   "
                                   f"{[CODE_NAMES[r.code] if r.code < 6 else r.code for r in results]} after {took:.1f} s",
                                   ["DISC-ETCD-7"])
        finally:
            etcd.cleanup()
    return run


# ------------------------------------------------------------------ the property table

def properties(protocol: str) -> list:
    return [
        P.Property("discovery_registry_scripted", protocol,
                   ["DISC-REG-1", "DISC-REG-2", "DISC-REG-3", "DISC-REG-4", "DISC-REG-5", "DISC-REG-6", "DISC-EP-1",
                    "DISC-EP-2", "DISC-ERR-1"], FEATURE,
                   "Fixed registry scripts: append, replace in place, deregister, missing instances, unknown "
                   "services, independent services, invalid names", scripted(REGISTRY_SCRIPTS, "registry")),
        P.Property("discovery_watch_scripted", protocol,
                   ["DISC-WATCH-3", "DISC-WATCH-1", "DISC-WATCH-2", "DISC-WATCH-4", "DISC-WATCH-5", "DISC-REG-3"], FEATURE,
                   "Fixed watch scripts: order across watchers, callbacks that call the registry (register, "
                   "deregister, watch, unwatch themselves), unwatch, no replay", scripted(WATCH_SCRIPTS, "watch")),
        P.Property("discovery_selectors_scripted", protocol,
                   ["DISC-SEL-2", "DISC-SEL-3", "DISC-SEL-1", "DISC-SEL-6"], FEATURE,
                   "Round-robin and smooth weighted round-robin pick exactly the spec's sequences (weight 0, "
                   "list changes, ties, large weights, nothing eligible, unknown names)",
                   scripted(SELECTOR_SCRIPTS, "selector")),
        P.Property("discovery_registry_stateful", protocol,
                   ["DISC-REG-1", "DISC-REG-2", "DISC-REG-3", "DISC-REG-4", "DISC-REG-5", "DISC-REG-6", "DISC-EP-1",
                    "DISC-EP-2", "DISC-ERR-1", "DISC-WATCH-1", "DISC-WATCH-2", "DISC-WATCH-3", "DISC-WATCH-5",
                    "DISC-SEL-1", "DISC-SEL-2", "DISC-SEL-3", "DISC-SEL-6"], FEATURE,
                   "Hypothesis stateful testing (RuleBasedStateMachine): random registry scripts with watchers, "
                   "callbacks that call the registry and all four selectors, against the model after every step",
                   stateful()),
        P.Property("discovery_selector_distribution", protocol, ["DISC-SEL-4", "DISC-SEL-5", "DISC-SEL-1"], FEATURE,
                   "random and weighted-random: chi-square against the expected counts below the 0.999 quantile "
                   "for at least 4 of the seeds 1..5 (2000 picks per instance); same seed, same picks",
                   distribution()),
        P.Property("discovery_threads", protocol, ["DISC-THREAD-1", "DISC-THREAD-2"], FEATURE,
                   "Threads register, discover and deregister on one registry, then share one round-robin "
                   "selector: no lost update, one event per operation, equal pick counts", threads()),
        P.Property("discovery_etcd_mapping", protocol, ["DISC-ETCD-1", "DISC-ETCD-2", "DISC-ETCD-3"], FEATURE,
                   "The etcd key and JSON value of random endpoints, and how fixed etcd entries (unknown "
                   "members, missing weight, wrong types, mismatched keys) decode", etcd_mapping()),
        P.Property("discovery_etcd_live", protocol, ["DISC-ETCD-4", "DISC-ETCD-5", "DISC-ETCD-6", "DISC-ETCD-7",
                                                     "DISC-ETCD-1", "DISC-ETCD-2"], "discovery-etcd",
                   "On a private etcd (127.0.0.1, temporary data dir): a script against the model, the keys and "
                   "leases it leaves, keys gone within the lease TTL after a crash, CONNECTION_ERROR within the "
                   "request timeout when etcd cannot be reached", etcd_live()),
    ]
