"""A testee's answers to a registry script against the model's (``discovery_model``): the script
and the results in words, the first difference in the results and in the callback calls, and the
requirements each difference breaks."""
from __future__ import annotations

from typing import List, Optional

from ...checks import CheckFailure
from . import discovery_model as M
from .discovery_model import CODE_NAMES, Endpoint
from .discovery_pb import run_script


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
