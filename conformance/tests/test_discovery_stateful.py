"""State that survives a change (issue 26): the registry's stateful test interleaves every operation
that changes state with every observation (spec/discovery.md; frameproof.protocols.rpc.discovery_stateful),
draws every (change, then observation) pair under the ci profile, reports them, and catches the planted
bugs that only show when the list changes between picks."""
import pytest
from hypothesis import settings

from frameproof import properties  # noqa: F401  (registers the profiles)
from frameproof.protocols.rpc import discovery_model as M, discovery_stateful as S
from frameproof.protocols.rpc.discovery_scripts import A, DEREG, REG, SEL, ep

from conftest import PYTESTEE

STATEFUL = "*/discovery_registry_stateful"


class _Offline:
    """No testee: the rules run against the model only (what Hypothesis draws does not depend on
    the testee's answers)."""


def _draw_only(profile, monkeypatch):
    monkeypatch.setattr(S, "probe", lambda t: None)
    monkeypatch.setattr(S.RegistryMachine, "teardown", lambda self: None)
    settings.load_profile(profile)
    try:
        S.stateful()(_Offline())
    finally:
        settings.load_profile("ci")
    return set(S.DRAWN_PAIRS)


@pytest.mark.parametrize("profile", ["ci"])
def test_every_change_then_observation_pair_is_drawn(profile, monkeypatch):
    drawn = _draw_only(profile, monkeypatch)
    missing = sorted(set(S.PAIRS) - drawn)
    assert not missing, f"{len(missing)} of {len(S.PAIRS)} (change, observation) pairs never drawn: {missing}"


def test_the_pairs_name_every_change_and_every_selector():
    assert set(S.CHANGES) >= {"register", "update-weight", "drain", "deregister", "watch", "unwatch"}
    assert set(S.OBSERVATIONS) == {"discover"} | {f"pick {k}" for k in M.SELECTORS}


def test_model_round_robin_keeps_its_counter_across_changes():
    """DISC-SEL-2: pick c mod n of the current eligible list; the counter survives list changes and
    does not move on a NOT_FOUND pick (DISC-SEL-1)."""
    ops = ([REG(ep(A, x)) for x in "abc"] + [SEL(0, A, "round-robin", 2),  # a b, c = 2
                                             REG(ep(A, "d")), SEL(0, A, "round-robin", 1),  # 2 mod 4: c
                                             DEREG(A, "a"), SEL(0, A, "round-robin", 1),  # 3 mod 3: b
                                             REG(ep(A, "b", weight=0)), SEL(0, A, "round-robin", 1),  # 4 mod 2: c
                                             REG(ep(A, "c", weight=0)), REG(ep(A, "d", weight=0)),
                                             SEL(0, A, "round-robin", 1),  # NOT_FOUND, c stays 5
                                             REG(ep(A, "b", weight=1)), REG(ep(A, "c", weight=1)),
                                             SEL(0, A, "round-robin", 1)])  # 5 mod 2 over [b, c]: c
    results, _ = M.run(ops)
    picks = [(r.code, r.picks) for op, r in zip(ops, results) if "select" in op]
    assert picks == [(M.OK, ["a", "b"]), (M.OK, ["c"]), (M.OK, ["b"]), (M.OK, ["c"]), (M.NOT_FOUND, []),
                     (M.OK, ["c"])]


def test_model_weighted_round_robin_across_changes():
    """DISC-SEL-3: 5 1 1 gives a a b a c a a; a weight change keeps the current weight, an instance
    not eligible at a pick loses it."""
    ops = [REG(ep(A, "a", weight=5)), REG(ep(A, "b", weight=1)), REG(ep(A, "c", weight=1)),
           SEL(0, A, "weighted-round-robin", 7)]
    assert M.run(ops)[0][-1].picks == list("aabacaa")
    # a=1 b=3: b (a 1, b -1); b drained: a (a 1); b back at 3 from 0: b a b b
    ops = [REG(ep(A, "a", weight=1)), REG(ep(A, "b", weight=3)), SEL(0, A, "weighted-round-robin", 1),
           REG(ep(A, "b", weight=0)), SEL(0, A, "weighted-round-robin", 1), REG(ep(A, "b", weight=3)),
           SEL(0, A, "weighted-round-robin", 4)]
    assert [r.picks for r in M.run(ops)[0] if r.picks] == [["b"], ["a"], list("babb")]


def test_stateful_reports_the_pairs_it_drew(frameproof):
    rc, out, doc = frameproof("run", "--testee", PYTESTEE, "--protocol", "rpc", "--select", STATEFUL)
    assert rc == 0, out[-3000:]
    (t,) = doc["tests"]
    want = {f"{c} -> {o}" for c, o in S.PAIRS}
    assert want <= set(t["discovery_pairs_covered"]), sorted(want - set(t["discovery_pairs_covered"]))


# The planted bugs that need a change between two picks; the stateful test alone must catch each,
# under the ci profile, naming the requirement it breaks.
LIST_CHANGE_MUTANTS = [("disc-rr-resets-on-change", "DISC-SEL-2"), ("disc-rr-counts-not-found", "DISC-SEL-1"),
                       ("disc-wrr-resets-on-change", "DISC-SEL-3"), ("disc-wrr-keeps-ineligible", "DISC-SEL-3")]


@pytest.mark.parametrize("mutant,broken", LIST_CHANGE_MUTANTS)
def test_stateful_catches_a_selector_that_forgets_across_changes(frameproof, mutant, broken):
    # --no-shrink: the search finds each in about a second; shrinking the 60-op script takes 80 s
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --mutant {mutant}", "--protocol", "rpc",
                              "--select", STATEFUL, "--no-shrink")
    assert rc == 1, out[-2000:]
    failed = {rid for rid, v in doc["requirements"].items() if v["failed"]}
    assert broken in failed, (broken, sorted(failed))
    msg = doc["tests"][0]["message"]
    assert "expected" in msg and "actual" in msg and "select #" in msg, msg
