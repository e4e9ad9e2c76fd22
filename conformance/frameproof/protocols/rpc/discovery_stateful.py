"""Hypothesis stateful testing of the registry (RuleBasedStateMachine): random scripts that interleave
every operation that changes the registry's state with every observation of it, against the model
after every step.

State changes (``CHANGES``): registering a new instance, updating a registered one's weight (a
re-registration, DISC-REG-2), draining one (weight 0, DISC-SEL-1), deregistering one, a refused
operation (invalid endpoint, missing instance, unknown watcher: changes nothing), watch (with a
callback that may itself call the registry, DISC-WATCH-3) and unwatch. Observations
(``OBSERVATIONS``): ``discover`` and a pick with each of the four selectors. Each selector of the
script is one long-lived selector per (service, kind) (now and then a fresh one), so that the list
changes *between its picks*: DISC-SEL-2's counter and DISC-SEL-3's current weights must survive them.

``DRAWN_PAIRS`` collects the (change, observation) pairs the examples drew: a change made to a
service (or to its watchers) after an observer of it had observed it, and then that observer's next
observation. The property reports them (``discovery_pairs_covered``), and the suite's own tests
require every pair of ``PAIRS`` under the ``ci`` profile."""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from ...coverage import declare, note
from . import discovery_model as M
from .discovery_compare import check_script
from .discovery_model import Endpoint
from .discovery_pb import probe
from .discovery_scripts import BAD_NAMES, INSTANCES, SERVICES, WEIGHTS, ep

CHANGES = ("register", "update-weight", "drain", "deregister", "refused", "watch", "unwatch")
OBSERVATIONS = ("discover",) + tuple(f"pick {k}" for k in M.SELECTORS)
PAIRS = tuple((c, o) for c in CHANGES for o in OBSERVATIONS)
DRAWN_PAIRS: Set[Tuple[str, str]] = set()  # since the last reset (reported per property run)
#: the same pairs as a dimension of the input space (frameproof/coverage.py), "change -> observation"
PAIRS_DIMENSION = declare("rpc.discovery.pairs", [f"{c} -> {o}" for c, o in PAIRS],
                          ["DISC-SEL-2", "DISC-SEL-3", "DISC-REG-2", "DISC-WATCH-3"])

NO_SERVICE = "svc.none"  # never registered
HOSTS = ("10.0.0.1", "h", "ü.example")
PORTS = (0, 7000, 65535)
NONZERO = tuple(w for w in WEIGHTS if w)


def base_selector(service: str, kind: str) -> int:
    """The selector number of the long-lived selector of (service, kind)."""
    return (SERVICES + (NO_SERVICE,)).index(service) * len(M.SELECTORS) + M.SELECTORS.index(kind)


FRESH = 100  # fresh selectors are numbered from here (one per fresh draw)

#: the observation that ends a change rule: discover, or a pick with a selector (and how many picks),
#: of the changed service (``other``: of this one, after a change to no service in particular)
THEN = st.tuples(st.sampled_from(OBSERVATIONS[:1] + M.SELECTORS), st.integers(1, 4), st.sampled_from(SERVICES))


def _nested_ops():
    """What a watcher's callback does the first time it is called (DISC-WATCH-3): any operation."""
    svc, inst = st.sampled_from(SERVICES), st.sampled_from(INSTANCES)
    return st.one_of(
        st.none(),
        st.builds(lambda s, i, w: {"register": ep(s, i, "10.9.9.9", 9, w)}, svc, inst, st.sampled_from(WEIGHTS)),
        st.builds(lambda s, i: {"deregister": Endpoint(s, i, "", 0, 0)}, svc, inst),
        st.builds(lambda n: {"unwatch": n}, st.integers(0, 4)),
        st.builds(lambda s: {"watch": {"service": s, "on_first_event": None}}, svc),
        st.builds(lambda s: {"discover": s}, svc),
        st.builds(lambda s, k, c: {"select": {"selector_id": base_selector(s, k), "service": s, "selector": k,
                                              "seed": 7, "count": c}},
                  svc, st.sampled_from(M.SELECTORS), st.integers(1, 3)))


class RegistryMachine(RuleBasedStateMachine):
    """Random registry scripts: at the end of each example the whole script runs on the testee and on
    the model, and every result and callback call must agree. A shadow of the model (``self.model``)
    tells the rules what is registered, so that they can update, drain and deregister instances
    that exist, and name the kind of change each step is."""
    testee = None

    def __init__(self):
        super().__init__()
        self.ops: List[dict] = []
        self.model = M.Model()
        self.sel_ids: Dict[Tuple[str, str], int] = {}
        self.next_fresh = FRESH
        # observer -> the changes to its service since it last observed (None: not observed yet)
        self.pending: Dict[tuple, Optional[Set[str]]] = {("discover", s): set() for s in SERVICES + (NO_SERVICE,)}

    # -- bookkeeping
    def _step(self, *ops):
        for op in ops:
            self.model.execute(op)
            self.model._drain(len(self.ops))
            self.ops.append(op)

    def teardown(self):
        """The whole script on the testee and on the model: every result and every callback call
        must agree (one testee call per example, so that many examples and shrinking stay cheap; the
        failure names the first op that differs)."""
        if self.ops and self.testee is not None:
            check_script(self.testee, self.ops, "stateful: ")

    def _then(self, then, service: Optional[str]):
        """The observation a change rule ends with: of the changed service (any, for a change to none)."""
        kind, count, other = then
        s = other if service is None else service
        if kind == "discover":
            self._observed(("discover", s), "discover")
            return {"discover": s}
        return self._select_op(s, kind, False, 7, count)

    def _select_op(self, s, kind, fresh, seed, count):
        if fresh:
            self.sel_ids[(s, kind)] = self.next_fresh
            self.next_fresh += 1
        sid = self.sel_ids.setdefault((s, kind), base_selector(s, kind))
        key = ("select", sid, s)
        if sid in self.model.selectors:
            self._observed(key, f"pick {kind}")
        else:
            self.pending[key] = set()  # created by this op: changes count from here
        return {"select": {"selector_id": sid, "service": s, "selector": kind, "seed": seed, "count": count}}

    def _changed(self, kind: str, service: Optional[str]):
        """A change to ``service`` (None: to no service in particular) for every observer of it."""
        for (what, *rest), seen in self.pending.items():
            svc = rest[0] if what == "discover" else rest[1]
            if seen is not None and (service is None or svc == service):
                seen.add(kind)

    def _observed(self, key: tuple, observation: str):
        seen = self.pending.get(key)
        if seen:
            for c in seen:
                DRAWN_PAIRS.add((c, observation))
                note(PAIRS_DIMENSION, f"{c} -> {observation}")
        self.pending[key] = set()

    def _registered(self, service=None) -> List[Endpoint]:
        return [e for s, lst in sorted(self.model.services.items()) if service in (None, s) for e in lst]

    def _watcher_service(self, n: int) -> Optional[str]:
        w = self.model.watchers.get(n)
        return w.service if w is not None and w.active else None

    # -- the start: instances on both services and every long-lived selector created
    @initialize(instances=st.lists(st.tuples(st.sampled_from(SERVICES), st.sampled_from(INSTANCES),
                                             st.sampled_from(WEIGHTS)), max_size=5),
                counts=st.lists(st.integers(0, 3), min_size=len(SERVICES) * len(M.SELECTORS),
                                max_size=len(SERVICES) * len(M.SELECTORS)))
    def start(self, instances, counts):
        ops = [{"register": ep(s, i, weight=w)} for s, i, w in instances]
        kinds = [(s, k) for s in SERVICES for k in M.SELECTORS]
        ops += [self._select_op(s, k, False, 1 + n, c) for n, ((s, k), c) in enumerate(zip(kinds, counts))]
        self._step(*ops)

    # -- state changes, each followed by an observation of the service it changed
    @rule(s=st.sampled_from(SERVICES), i=st.sampled_from(INSTANCES), port=st.sampled_from(PORTS),
          w=st.sampled_from(WEIGHTS), host=st.sampled_from(HOSTS), then=THEN)
    def register(self, s, i, port, w, host, then):
        """Any instance: new (DISC-REG-1) or a re-registration (DISC-REG-2) with any fields."""
        old = next((e for e in self._registered(s) if e.instance_id == i), None)
        self._changed("register" if old is None else "drain" if w == 0 else "update-weight", s)
        self._step({"register": ep(s, i, host, port, w)}, self._then(then, s))

    @precondition(lambda self: bool(self._registered()))
    @rule(data=st.data(), w=st.sampled_from(NONZERO), then=THEN)
    def update_weight(self, data, w, then):
        """A registered instance again, only its weight changed (also from 0: back in the rotation)."""
        e = data.draw(st.sampled_from(self._registered()), label="instance")
        self._changed("update-weight", e.service)
        self._step({"register": e._replace(weight=w)}, self._then(then, e.service))

    @precondition(lambda self: bool(self._registered()))
    @rule(data=st.data(), then=THEN)
    def drain(self, data, then):
        e = data.draw(st.sampled_from(self._registered()), label="instance")
        self._changed("drain", e.service)
        self._step({"register": e._replace(weight=0)}, self._then(then, e.service))

    @precondition(lambda self: bool(self._registered()))
    @rule(data=st.data(), then=THEN)
    def deregister(self, data, then):
        e = data.draw(st.sampled_from(self._registered()), label="instance")
        self._changed("deregister", e.service)
        self._step({"deregister": Endpoint(e.service, e.instance_id, "", 0, 0)}, self._then(then, e.service))

    @precondition(lambda self: bool(self._registered()))
    @rule(data=st.data(), gone=st.sampled_from(["drain", "deregister"]), w=st.sampled_from(NONZERO),
          then=THEN, then2=THEN)
    def leave_and_return(self, data, gone, w, then, then2):
        """An instance drained or deregistered, observed without it, then back (DISC-SEL-3: it lost
        its current weight while it was not eligible)."""
        e = data.draw(st.sampled_from(self._registered()), label="instance")
        self._changed(gone, e.service)
        self._step({"register": e._replace(weight=0)} if gone == "drain" else
                   {"deregister": Endpoint(e.service, e.instance_id, "", 0, 0)}, self._then(then, e.service))
        self._changed("update-weight" if gone == "drain" else "register", e.service)
        self._step({"register": e._replace(weight=w)}, self._then(then2, e.service))

    @rule(s=st.sampled_from(SERVICES + (NO_SERVICE,)), i=st.sampled_from(INSTANCES), then=THEN)
    def deregister_any(self, s, i, then):
        """Any pair, registered or not (DISC-REG-4)."""
        found = any(e.instance_id == i for e in self._registered(s))
        self._changed("deregister" if found else "refused", s if found else None)
        self._step({"deregister": Endpoint(s, i, "", 0, 0)}, self._then(then, s if found else None))

    @rule(bad=st.sampled_from(["service", "instance", "host", "port"]), v=st.sampled_from(BAD_NAMES),
          s=st.sampled_from(SERVICES), i=st.sampled_from(INSTANCES), then=THEN)
    def register_invalid(self, bad, v, s, i, then):
        """Refused (DISC-EP-2): changes nothing, no event, no selector state."""
        e = ep(s, i)
        e = {"service": e._replace(service=v), "instance": e._replace(instance_id=v),
             "host": e._replace(host="" if v != "x" * 256 else v), "port": e._replace(port=65536)}[bad]
        self._changed("refused", None)
        self._step({"register": e}, self._then(then, None))

    @rule(s=st.sampled_from(SERVICES), nested=_nested_ops(), then=THEN)
    def watch(self, s, nested, then):
        self._changed("watch", s)
        self._step({"watch": {"service": s, "on_first_event": nested}}, self._then(then, s))

    @precondition(lambda self: self.model.next_watch > 0)
    @rule(n=st.integers(0, 5), then=THEN)
    def unwatch(self, n, then):
        s = self._watcher_service(n)
        self._changed("refused" if s is None else "unwatch", s)
        self._step({"unwatch": n}, self._then(then, s))

    # -- observations on their own (several in a row: a fixed list)
    @rule(s=st.sampled_from(SERVICES + (NO_SERVICE,)))
    def discover(self, s):
        self._observed(("discover", s), "discover")
        self._step({"discover": s})

    @rule(s=st.sampled_from(SERVICES + (NO_SERVICE,)), kind=st.sampled_from(M.SELECTORS),
          fresh=st.sampled_from([False] * 5 + [True]), seed=st.integers(0, 2 ** 64 - 1), count=st.integers(0, 6))
    def select(self, s, kind, fresh, seed, count):
        """A pick with the selector of (service, kind); now and then with a fresh one."""
        self._step(self._select_op(s, kind, fresh, seed, count))

    @rule(name=st.sampled_from(["least-connections", "Round-Robin", "", "round_robin"]),
          s=st.sampled_from(SERVICES))
    def select_invalid(self, name, s):
        """An unknown selector name (DISC-SEL-6): INVALID_ARGUMENT, creates nothing."""
        sid = self.next_fresh
        self.next_fresh += 1
        self._step({"select": {"selector_id": sid, "service": s, "selector": name, "seed": 0, "count": 1}})


def stateful(steps: int = 25, examples_factor: int = 4):
    """The property: ``examples_factor`` times the profile's examples (one testee call each)."""
    def run(testee):
        probe(testee)
        DRAWN_PAIRS.clear()
        RegistryMachine.testee = testee
        try:
            run_state_machine_as_test(RegistryMachine, settings=settings(
                settings.default, stateful_step_count=steps,
                max_examples=settings.default.max_examples * examples_factor))
        finally:
            RegistryMachine.testee = None

    def coverage():
        """The (change, then observation) pairs the last run drew, for the report."""
        return {"discovery_pairs_covered": [f"{c} -> {o}" for c, o in sorted(DRAWN_PAIRS)]}
    run.coverage = coverage
    return run
