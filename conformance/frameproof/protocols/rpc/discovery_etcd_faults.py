"""What a registry does when etcd fails under it (spec/discovery.md DISC-ETCD-7), checked for every
implementation: the runner owns the private etcd, and while the testee's script waits (the
``wait_ms`` op) it revokes the registry's lease from outside, or stops etcd and starts it again.

  lease_revoked    the registry's lease is revoked while it runs: its keys go at once, and the
                   registry must write its instances again under a new lease within a keep-alive
                   interval (plus slack), by itself, and answer ``discover`` with them after.
  etcd_restarted   etcd is killed for a few seconds: a ``register`` meanwhile answers
                   CONNECTION_ERROR within the request timeout; once etcd is back, operations
                   succeed again, the instance registered before is still there, and the watcher
                   opened before the outage receives the later registration (the watch resumed:
                   no event lost, none repeated).
  watch_compacted  the registry is cut off from etcd (the runner's proxy) while the watched service
                   changes and etcd's history is compacted past the watch: once through again, the
                   watcher receives the difference (ADDED x2; x1, come and gone, unseen).
"""
from __future__ import annotations

import threading
import time

from ..._generated import testee_pb2 as pb
from ...checks import CheckFailure
from . import discovery_model as M
from .discovery_model import CODE_NAMES, EVENT_NAMES
from .discovery_pb import run_script
from .discovery_scripts import A, DISC, REG, WATCH, ep

TTL = 2
REQUEST_TIMEOUT_MS = 1000


def _codes(results) -> list:
    return [CODE_NAMES[r.code] if r.code < len(CODE_NAMES) else r.code for r in results]


class _Runner(threading.Thread):
    """The runner's side of a fault script, on its own thread while the testee runs the script."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.error, self.notes = fn, None, {}

    def run(self):
        try:
            self.fn(self.notes)
        except Exception as e:  # reported by the check, after the script
            self.error = e


def _wait_for(pred, seconds: float, step: float = 0.02):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def lease_revoked(testee, etcd, E):
    prefix = "fp-test/revoke"
    gw = E.Gateway(etcd.endpoint)
    keys = [M.etcd_key(prefix, A, i) for i in ("i0", "i1")]
    deadline = TTL / 3 + 1.5  # one keep-alive interval, and slack for a loaded machine

    def kvs():
        got = {E._unb64(kv["key"]): kv.get("lease", "0") for kv in gw.range_prefix(f"/{prefix}/".encode()).get("kvs", [])}
        return got if all(k in got for k in keys) else None

    def act(notes):
        first = _wait_for(kvs, 10)
        if not first:
            raise RuntimeError("the script's two instances never appeared in etcd")
        old = next(iter(first.values()))
        gw.post("/v3/lease/revoke", {"ID": old})
        t0 = time.monotonic()
        notes["old"] = old
        back = _wait_for(lambda: (lambda g: g if g and all(v not in ("0", old) for v in g.values()) else None)(kvs()),
                         deadline + 3)
        notes["recovered_s"] = time.monotonic() - t0 if back else None
        notes["after"] = kvs()

    runner = _Runner(act)
    ops = [REG(ep(A, "i0")), REG(ep(A, "i1")), {"wait_ms": int((deadline + 3) * 1000) + 1000}, DISC(A)]
    runner.start()
    results, _events = run_script(testee, ops, etcd=pb.DiscoveryEtcd(
        endpoint=etcd.endpoint, prefix=prefix, lease_ttl_s=TTL, request_timeout_ms=REQUEST_TIMEOUT_MS), timeout=30)
    runner.join(30)
    if runner.error:
        raise runner.error
    took = runner.notes.get("recovered_s")
    if took is None or took > deadline:
        raise CheckFailure(
            f"the registry's lease ({runner.notes.get('old')}) revoked from outside after it registered {A}/i0 and "
            f"{A}/i1 (lease TTL {TTL} s):\n  expected both written again under a new lease within {deadline:.1f} s\n"
            f"  actual   {'not within ' + format(deadline + 3, '.1f') + ' s' if took is None else format(took, '.1f') + ' s'}"
            f" (keys and their leases then: {runner.notes.get('after') or 'not both present'})",
            ["DISC-ETCD-7", "DISC-ETCD-5"])
    listed = sorted(e.instance_id for e in results[3].endpoints)
    if _codes(results) != ["OK"] * 4 or listed != ["i0", "i1"]:
        raise CheckFailure(f"after the lease was revoked and the registry recovered:\n  expected OK for every op and "
                           f"discover {A!r} = i0, i1\n  actual   {_codes(results)}, discover = {listed}", ["DISC-ETCD-7"])
    return took


def etcd_restarted(testee, etcd, E):
    prefix = "fp-test/restart"
    gw = E.Gateway(etcd.endpoint)
    key = M.etcd_key(prefix, A, "i0")
    # The timeline, from the moment the runner sees i0 in etcd (the testee's register i0 answered OK
    # just before): etcd is killed at once; the testee registers i1 after 1 s, answered within its 1 s
    # request timeout, so by 2 s; etcd starts again at 3.5 s and answers from about 4 s; the testee
    # registers i2 at 5.5 s. Each fault edge is 1.5 s from the nearest request, so a slow machine does
    # not move a request across it (with etcd back at 2.5 s, as this check once had, a register i1
    # that timed out on a slow machine could still be committed by the restarted etcd).
    down_s, before_i1_ms, before_i2_ms = 3.5, 1000, 4500

    def act(notes):
        if not _wait_for(lambda: gw.range_prefix(key).get("kvs"), 10):
            raise RuntimeError("the script's first instance never appeared in etcd")
        t0 = time.monotonic()
        etcd.crash()
        notes["killed_s"] = time.monotonic() - t0
        time.sleep(max(0.0, down_s - (time.monotonic() - t0)))
        notes["restarted_s"] = time.monotonic() - t0
        etcd.start()
        notes["answering_s"] = time.monotonic() - t0

    runner = _Runner(act)
    ops = [WATCH(A), REG(ep(A, "i0")), {"wait_ms": before_i1_ms}, REG(ep(A, "i1")), {"wait_ms": before_i2_ms},
           REG(ep(A, "i2")), DISC(A)]
    runner.start()
    t0 = time.monotonic()
    results, events = run_script(testee, ops, etcd=pb.DiscoveryEtcd(
        endpoint=etcd.endpoint, prefix=prefix, lease_ttl_s=TTL, request_timeout_ms=REQUEST_TIMEOUT_MS), timeout=30)
    runner.join(30)
    if runner.error:
        raise runner.error
    want = ["OK", "OK", "OK", "CONNECTION_ERROR", "OK", "OK", "OK"]
    listed = [e.instance_id for e in results[6].endpoints]
    n = runner.notes
    script = (f"watch {A!r}; register i0; etcd killed once i0 is in it (after {n.get('killed_s', 0):.2f} s), started "
              f"again at {n.get('restarted_s', 0):.1f} s, answering at {n.get('answering_s', 0):.1f} s; meanwhile the "
              f"testee: wait {before_i1_ms / 1000:g} s; register i1; wait {before_i2_ms / 1000:g} s; register i2; "
              f"discover")
    if _codes(results) != want or listed != ["i0", "i2"]:
        raise CheckFailure(f"{script}:\n  expected {want}, discover = i0, i2\n  actual   {_codes(results)}, "
                           f"discover = {listed} ({time.monotonic() - t0:.1f} s)", ["DISC-ETCD-7"])
    seen = [(EVENT_NAMES.get(e.type, e.type), e.endpoint.instance_id) for e in events if e.watch == 0]
    if seen != [("ADDED", "i0"), ("ADDED", "i2")]:
        raise CheckFailure(f"{script}: the watcher opened before the outage\n  expected ADDED i0, ADDED i2 (the watch "
                           f"resumed: none lost, none repeated)\n  actual   {seen}", ["DISC-ETCD-7", "DISC-ETCD-6"])


def watch_compacted(testee, etcd, E):
    """The registry reaches etcd through the runner's proxy; the runner cuts it off, changes the watched
    service behind its back (x1 registered and deregistered, x2 registered), compacts etcd's history
    past the watch's revision and lets it through again. The watch must resume, find its revision
    compacted, and deliver the difference: ADDED x2 alone (DISC-ETCD-7)."""
    from .etcd_proxy import CuttableProxy
    prefix = "fp-test/compact"
    gw = E.Gateway(etcd.endpoint)
    key = M.etcd_key(prefix, A, "i0")
    ttl, cut_s = 6, 1.5  # the lease outlives the cut (one keep-alive lost at most): only the watch is at stake

    def put(iid):
        e = ep(A, iid, host="10.0.0.9")
        return gw.post("/v3/kv/put", {"key": E._b64(M.etcd_key(prefix, A, iid)), "value": E._b64(M.etcd_value(e))})

    proxy = CuttableProxy(etcd.endpoint)

    def act(notes):
        if not _wait_for(lambda: gw.range_prefix(key).get("kvs"), 10):
            raise RuntimeError("the script's first instance never appeared in etcd")
        time.sleep(0.3)  # the watch has delivered ADDED i0 (its stream is open through the proxy)
        proxy.cut()
        t0 = time.monotonic()
        put("x1")
        gw.post("/v3/kv/deleterange", {"key": E._b64(M.etcd_key(prefix, A, "x1"))})
        rev = int(put("x2")["header"]["revision"])
        gw.post("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        notes["compacted_at"] = rev
        time.sleep(max(0.0, cut_s - (time.monotonic() - t0)))
        notes["accepted_before"] = proxy.accepted
        proxy.restore()

    runner = _Runner(act)
    ops = [WATCH(A), REG(ep(A, "i0")), {"wait_ms": 5000}, DISC(A)]
    runner.start()
    try:
        results, events = run_script(testee, ops, etcd=pb.DiscoveryEtcd(
            endpoint=proxy.endpoint, prefix=prefix, lease_ttl_s=ttl, request_timeout_ms=REQUEST_TIMEOUT_MS), timeout=30)
        runner.join(30)
    finally:
        proxy.close()
    if runner.error:
        raise runner.error
    script = (f"watch {A!r}; register i0; the registry cut off from etcd for {cut_s:g} s while x1 is registered and "
              f"deregistered, x2 registered and the history compacted (revision {runner.notes.get('compacted_at')}); "
              f"discover {A!r} after")
    listed = sorted(e.instance_id for e in results[3].endpoints)
    if _codes(results) != ["OK"] * 4 or listed != ["i0", "x2"]:
        raise CheckFailure(f"{script}:\n  expected OK for every op, discover = i0, x2\n  actual   {_codes(results)}, "
                           f"discover = {listed}", ["DISC-ETCD-7"])
    seen = [(EVENT_NAMES.get(e.type, e.type), e.endpoint.instance_id) for e in events if e.watch == 0]
    if seen != [("ADDED", "i0"), ("ADDED", "x2")]:
        raise CheckFailure(f"{script}: the watcher\n  expected ADDED i0, ADDED x2 (the watch resumed, found its "
                           f"revision compacted and delivered the difference: x1 came and went unseen)\n  actual   "
                           f"{seen}", ["DISC-ETCD-7", "DISC-ETCD-6"])


def etcd_faults():
    measured = {}

    def run(testee):
        from . import discovery_etcd as E
        etcd = E.started_etcd()
        try:
            measured.clear()
            measured["lease_recovered_s"] = round(lease_revoked(testee, etcd, E), 3)
            etcd_restarted(testee, etcd, E)
            watch_compacted(testee, etcd, E)
        finally:
            etcd.cleanup()
    run.coverage = lambda: dict(measured)  # into the test's JSON report: how fast the registry recovered
    return run
