"""The fixed registry scripts (spec/discovery.md): the ops' vocabulary (also the other checks'),
the registry, watch and selector scripts, and the check that runs a table of them."""
from __future__ import annotations

from ...checks import CheckFailure
from .discovery_compare import check_script
from .discovery_model import Endpoint
from .discovery_pb import probe

SERVICES = ("svc.a", "svc.b")
INSTANCES = ("i0", "i1", "i2", "i3")
WEIGHTS = (0, 1, 2, 3, 5, 100)
BAD_NAMES = ("", "a/b", "x" * 256)


def ep(service, iid, host="10.0.0.1", port=7000, weight=100):
    return Endpoint(service, iid, host, port, weight)


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
    ("round-robin's counter survives a NOT_FOUND pick unchanged",
     [REG(ep(A, x)) for x in ("a", "b", "c")] + [SEL(0, A, "round-robin", 1)] +
     [REG(ep(A, x, weight=0)) for x in ("a", "b", "c")] + [SEL(0, A, "round-robin", 1)] +
     [REG(ep(A, x, weight=1)) for x in ("a", "b", "c")] + [SEL(0, A, "round-robin", 3)]),
    ("smooth weighted round-robin: an instance drained or deregistered between picks starts again from 0",
     [REG(ep(A, "a", weight=1)), REG(ep(A, "b", weight=3)), SEL(0, A, "weighted-round-robin", 1), REG(ep(A, "b", weight=0)),
      SEL(0, A, "weighted-round-robin", 1), REG(ep(A, "b", weight=3)), SEL(0, A, "weighted-round-robin", 4),
      DEREG(A, "b"), SEL(0, A, "weighted-round-robin", 1), REG(ep(A, "b", weight=3)), SEL(0, A, "weighted-round-robin", 4)]),
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
