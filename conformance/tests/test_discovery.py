"""The Python reference registry on etcd (frameproof.protocols.rpc.discovery_etcd) where the suite's
scripts cannot reach: a lease etcd lost, a watch whose history was compacted, etcd restarting
(spec/discovery.md DISC-ETCD-5..7). Each test starts its own etcd on 127.0.0.1."""
import shutil
import time

import pytest

from frameproof.protocols.rpc import discovery_etcd as E
from frameproof.protocols.rpc.discovery_model import ADDED, REMOVED, UPDATED, Endpoint

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd not installed (Debian: etcd-server)")


@pytest.fixture
def etcd():
    e = E.LocalEtcd()
    e.start()
    yield e
    e.cleanup()


def within(seconds, pred):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if pred():
            return True
        time.sleep(0.05)
    return False


def ep(i, port=1):
    return Endpoint("svc.a", i, "10.0.0.1", port, 1)


def test_a_lost_lease_is_replaced_and_the_instances_written_again(etcd):
    r = E.EtcdRegistry(etcd.endpoint, "fp-test/lease", 2, 2.0)
    try:
        assert r.register(ep("i0")) == 0
        gw = E.Gateway(etcd.endpoint)
        gw.post("/v3/lease/revoke", {"ID": str(r._lease)})  # etcd forgets the lease: the key goes
        assert r.discover("svc.a") == (0, [])
        # the next keep-alive finds the lease gone: a new one, and i0 written again under it
        assert within(4, lambda: r.discover("svc.a")[1] == [ep("i0")])
    finally:
        r.close()


def test_a_compacted_watch_gets_the_difference(etcd):
    r = E.EtcdRegistry(etcd.endpoint, "fp-test/compact", 10, 2.0)
    got = []
    try:
        r.register(ep("i0"))
        r.register(ep("i1"))
        code, h = r.watch("svc.a", lambda kind, e: got.append((kind, e.instance_id, e.port)))
        assert code == 0
        w = r._watchers[h]
        assert within(3, lambda: w["conn"] is not None and w["conn"].sock is not None)
        w["active"] = False  # the watch loses its stream ...
        w["conn"].sock.shutdown(2)
        time.sleep(0.3)
        r.deregister("svc.a", "i0")  # ... while the service changes and etcd compacts its history
        r.register(ep("i1", 2))
        r.register(ep("i2"))
        gw = E.Gateway(etcd.endpoint)
        rev = int(gw.range_prefix(b"/")["header"]["revision"])
        gw.post("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        w["active"] = True  # the watch comes back at its old revision: compacted
        import threading
        threading.Thread(target=r._watch_stream, args=(h, w), daemon=True).start()
        assert within(5, lambda: len(got) >= 3), got
        assert sorted(got) == sorted([(REMOVED, "i0", 1), (UPDATED, "i1", 2), (ADDED, "i2", 1)])
        r.register(ep("i3"))  # and it goes on from the current revision
        assert within(5, lambda: (ADDED, "i3", 1) in got), got
        assert len(got) == 4
    finally:
        r.close()


def test_operations_fail_while_etcd_is_down_and_work_after_it_restarts(etcd):
    r = E.EtcdRegistry(etcd.endpoint, "fp-test/restart", 2, 1.0)
    got = []
    try:
        r.register(ep("i0"))
        r.watch("svc.a", lambda kind, e: got.append((kind, e.instance_id)))
        etcd.stop()
        t0 = time.monotonic()
        assert r.register(ep("i1")) == 2  # CONNECTION_ERROR
        assert r.discover("svc.a")[0] == 2
        assert time.monotonic() - t0 < 5, time.monotonic() - t0
        etcd.start()
        assert within(10, lambda: r.register(ep("i2")) == 0)
        assert within(10, lambda: {e.instance_id for e in r.discover("svc.a")[1]} >= {"i0", "i2"}), r.discover("svc.a")
        assert within(10, lambda: (ADDED, "i2") in got), got  # the watch resumed
        # no event delivered twice: a lease that expired during the outage may add a REMOVED and an
        # ADDED (the instance written again), never the same event twice in a row
        assert all(a != b for a, b in zip(got, got[1:])), got
    finally:
        r.close()


def test_an_etcd_that_exits_at_once_is_started_again_with_new_ports(monkeypatch):
    """discovery_etcd.started: a member that exits at once (a port taken between its choice and etcd's bind)
    is tried again, up to three times; another failure, or the third exit, is raised with the logs' end."""
    import shutil
    from frameproof.protocols.rpc import discovery_etcd as E
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/etcd")
    made = []

    class Fake:
        def __init__(self, fails):
            self.fails, self.cleaned, self.members = fails, False, []

        def start(self):
            if self.fails:
                raise RuntimeError(self.fails)

        def cleanup(self):
            self.cleaned = True

    plan = ["etcd exited with status 1", "etcd exited with status 1", None]
    got = E.started(lambda: made.append(Fake(plan[len(made)])) or made[-1])
    assert got is made[2] and [m.cleaned for m in made] == [True, True, False]
    made.clear()
    plan = ["etcd did not answer within 30 s"] * 3
    with pytest.raises(RuntimeError, match="attempt 1 of 3"):
        E.started(lambda: made.append(Fake(plan[len(made)])) or made[-1])
    made.clear()
    plan = ["etcd exited with status 1"] * 3
    with pytest.raises(RuntimeError, match="attempt 3 of 3; the log ended"):
        E.started(lambda: made.append(Fake(plan[len(made)])) or made[-1])
