"""Hypothesis stateful testing of the registry (RuleBasedStateMachine): random scripts with watchers,
callbacks that call the registry and all four selectors, against the model after every step."""
from __future__ import annotations

from typing import List

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from . import discovery_model as M
from .discovery_compare import check_script
from .discovery_model import Endpoint
from .discovery_pb import probe
from .discovery_scripts import BAD_NAMES, INSTANCES, SERVICES, WEIGHTS, ep


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
