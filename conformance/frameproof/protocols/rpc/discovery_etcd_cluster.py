"""A registry on a 3-member etcd cluster loses the member it talks to (spec/discovery.md DISC-ETCD-8),
checked for every implementation: the runner starts the cluster (etcd_cluster.py), gives the registry
every member's endpoint, and while the testee's script waits it kills (SIGKILL) the member the
registry holds the most connections to, then registers an instance of its own under the watched
service. The registry must go on through another member: its instance kept (the lease kept alive),
the watcher's events complete and in order, the operations after the kill answered OK."""
from __future__ import annotations

import time

from ..._generated import testee_pb2 as pb
from ...checks import CheckFailure
from . import discovery_model as M
from .discovery_etcd_faults import _codes, _Runner, _wait_for
from .discovery_model import EVENT_NAMES
from .discovery_pb import run_script
from .discovery_scripts import A, DISC, REG, WATCH, ep

TTL = 5  # longer than a leader election after the kill (etcd's default election timeout is 1 s)
REQUEST_TIMEOUT_MS = 2000


def member_killed(testee, cluster, E):
    prefix = "fp-test/cluster"
    gw = E.Gateway(cluster.direct)
    key = M.etcd_key(prefix, A, "i0")

    def act(notes):
        if not _wait_for(lambda: gw.range_prefix(key).get("kvs"), 10):
            raise RuntimeError("the script's first instance never appeared in etcd")
        time.sleep(0.5)  # the watch stream and the keep-alive are open
        victim = cluster.busiest()
        notes["victim"] = cluster.members[victim].endpoint
        notes["connections"] = [p.live() for p in cluster.proxies]
        t0 = time.monotonic()
        cluster.members[victim].crash()
        cluster.proxies[victim].close()  # its address refuses connections, as the member's own would
        notes["killed"] = t0
        # a request a follower forwards to the dead leader before the election (about 1 s) hangs for 7 s
        # ("request timed out"); a new one after it is answered at once: short attempts, again and again
        gw_alive = E.Gateway(",".join(m.endpoint for i, m in enumerate(cluster.members) if i != victim), timeout=1)
        time.sleep(0.5)
        e = ep(A, "x1", host="10.0.0.9")
        body = {"key": E._b64(M.etcd_key(prefix, A, "x1")), "value": E._b64(M.etcd_value(e))}
        end = time.monotonic() + 15
        while True:  # during the election that follows a leader's death etcd answers "request timed out"
            try:
                notes["x1_revision"] = int(gw_alive.post("/v3/kv/put", body)["header"]["revision"])
                break
            except E.Unreachable:
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)
        notes["x1_written_s"] = time.monotonic() - t0
        # the registry's first new connection through a surviving member, from the kill: how fast it moved
        # on (none, for a client that already holds a connection to every member, as etcd-client does)
        def first_new():
            return min((t for i, p in enumerate(cluster.proxies) if i != victim for t in p.accepted_at if t > t0),
                       default=None)
        _wait_for(first_new, 8)
        at = first_new()
        notes["moved_s"] = None if at is None else at - t0

    runner = _Runner(act)
    # 7 s from i0 to i1: a leader election after the kill takes about 1 s, several on a loaded machine
    ops = [WATCH(A), REG(ep(A, "i0")), {"wait_ms": 7000}, REG(ep(A, "i1")), {"wait_ms": 2000}, DISC(A)]
    runner.start()
    results, events = run_script(testee, ops, etcd=pb.DiscoveryEtcd(
        endpoint=cluster.endpoints, prefix=prefix, lease_ttl_s=TTL, request_timeout_ms=REQUEST_TIMEOUT_MS,
        abandon=True), timeout=40)  # abandon: the keys stay for a TTL, for the revisions read below
    runner.join(30)
    if runner.error:
        raise runner.error
    n = runner.notes
    script = (f"a 3-member cluster; watch {A!r}; register i0; the member the registry used most "
              f"({n.get('victim')}, connections per member {n.get('connections')}) killed; x1 registered "
              f"from outside {n.get('x1_written_s', 0):.1f} s later; register i1 7 s after i0; discover")
    listed = sorted(e.instance_id for e in results[5].endpoints)
    if _codes(results) != ["OK"] * 6 or listed != ["i0", "i1", "x1"]:
        if "x1_written_s" in n and n["x1_written_s"] > 8.5:
            raise RuntimeError(f"the cluster accepted the runner's write only {n['x1_written_s']:.1f} s after the "
                               f"kill, after the script's discover: the machine is too loaded for this check")
        raise CheckFailure(f"{script}:\n  expected OK for every op, discover = i0, i1, x1\n  actual   "
                           f"{_codes(results)}, discover = {listed}", ["DISC-ETCD-8"])
    # x1 and i1 in the order etcd committed them: was i1 there at x1's revision? (a read of that
    # revision, not of now: by now the registry may have written i1 again, or its lease be gone)
    then = E.Gateway(cluster.direct).post("/v3/kv/range", {"key": E._b64(M.etcd_key(prefix, A, "i1")),
                                                           "revision": str(n["x1_revision"])})
    order = ["i1", "x1"] if then.get("kvs") else ["x1", "i1"]
    want = [("ADDED", "i0")] + [("ADDED", i) for i in order]
    seen = [(EVENT_NAMES.get(e.type, e.type), e.endpoint.instance_id) for e in events if e.watch == 0]
    if seen != want:
        raise CheckFailure(f"{script}: the watcher\n  expected {', '.join(' '.join(w) for w in want)} (the watch "
                           f"resumed on another member: none lost, none repeated, in etcd's order)\n  actual   {seen}",
                           ["DISC-ETCD-8"])
    return n.get("moved_s"), n.get("connections")


def etcd_cluster():
    measured = {}

    def run(testee):
        from . import discovery_etcd as E
        from .etcd_cluster import started_cluster
        cluster = started_cluster()
        try:
            measured.clear()
            moved, connections = member_killed(testee, cluster, E)
            measured["cluster_failover_s"] = None if moved is None else round(moved, 3)
            measured["cluster_connections_at_kill"] = connections  # per member; the most-used one killed
        finally:
            cluster.cleanup()
    run.coverage = lambda: dict(measured)  # into the test's JSON report: how fast the registry moved on
    return run
