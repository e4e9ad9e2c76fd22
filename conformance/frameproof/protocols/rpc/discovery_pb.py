"""Registry scripts on the wire (spec/testee.md, ``discovery``): script ops, results and callback
events to and from the testee protocol's messages, and one script run on a testee."""
from __future__ import annotations

from typing import List, Optional

from ..._generated import testee_pb2 as pb
from . import discovery_model as M
from .discovery_model import Endpoint


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
    elif kind == "wait_ms":
        msg.wait_ms = a
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
    if kind in ("discover", "unwatch", "wait_ms"):
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


def run_script(testee, ops: List[dict], codec=None, etcd: Optional[pb.DiscoveryEtcd] = None,
               timeout: Optional[float] = None):
    """(results, events) the testee answers for the script (raises Skipped, TesteeFailure); with
    ``etcd``, on the testee's etcd-backed registry; ``timeout``: seconds for the answer, when the
    script waits longer than the run's per-answer deadline."""
    from .oracle import RpcCodec
    from ...testee import codec_pb
    req = pb.DiscoveryRequest(codec=codec_pb(codec or RpcCodec("rpc")))
    if etcd is not None:
        req.etcd.CopyFrom(etcd)
    for op in ops:
        op_to_pb(op, req.ops.add())
    resp = testee.discovery(req, timeout) if timeout else testee.discovery(req)
    events = [M.Event(e.watch, e.type, _ep_py(e.endpoint), e.op, _result_py(e.nested) if e.HasField("nested") else None)
              for e in resp.events]
    return [_result_py(r) for r in resp.results], events


def probe(testee):
    """An empty script first: a testee that answers `skipped` skips the check before Hypothesis starts."""
    run_script(testee, [])
