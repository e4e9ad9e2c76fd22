"""The suite accepts a correct implementation and catches each planted bug,
naming the requirement it breaks (issue: 'proof that the suite bites')."""
import re

import pytest

from frameproof import protocols as registry

from conftest import PYTESTEE


def failed_requirements(doc):
    return {rid for rid, v in doc["requirements"].items() if v["failed"]}


def test_correct_testee_passes_everything(frameproof):
    rc, out, doc = frameproof("run", "--testee", PYTESTEE)
    assert rc == 0, out[-3000:]
    t = doc["totals"]
    assert t["failed"] == 0 and t["skipped"] == 0 and t["passed"] > 400, t
    # every protocol and every kind of case ran
    names = [x["name"] for x in doc["tests"]]
    for frag in ("standard/", "length-field/", "/chunked-1", "/encode", "/match", "/prop_"):
        assert any(frag in n for n in names), frag
    assert "frameproof: " in out and "required (MUST)" in out


@pytest.mark.parametrize("protocol,mutant,broken", [(p.name, m, r) for p in registry.all_protocols()
                                                  for m, r in sorted(p.mutants.items())])
def test_mutant_is_caught_by_its_requirement(frameproof, protocol, mutant, broken):
    # only the tests of the requirement the mutant breaks (frameproof run --requirement): they must fail
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --mutant {mutant}", "--protocol", protocol,
                              "--profile", "smoke", "--requirement", broken)
    assert rc == 1, out[-2000:]
    assert broken in failed_requirements(doc), (broken, sorted(failed_requirements(doc)))
    # the text report names the requirement and shows expected vs actual
    assert re.search(rf"FAIL\s+{re.escape(broken)}\s", out), out[-3000:]
    assert "expected" in out and "actual" in out


def test_requirement_selects_only_its_tests(frameproof):
    rc, out, doc = frameproof("run", "--testee", PYTESTEE, "--protocol", "standard", "--profile", "smoke",
                              "--requirement", "STD-LIM-1")
    assert rc == 0, out[-2000:]
    assert doc["tests"] and all("STD-LIM-1" in t["requirements"] for t in doc["tests"]), doc["tests"][:3]
