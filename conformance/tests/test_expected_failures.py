"""The expected-failures file: known gaps pass the run, a fixed gap or an entry
that matches nothing fails it."""
from conftest import PYTESTEE

MUT = f"{PYTESTEE} --mutant reuses-pending-sequence"
FAILING = "standard/STD-SEQ-3/n_match_sequence_in_use_refused/match"


def test_listed_failure_is_expected(frameproof, tmp_path):
    xf = tmp_path / "xfail.txt"
    xf.write_text(f"# known gap\n{FAILING}\n")
    rc, out, doc = frameproof("run", "--testee", MUT, "--protocol", "standard", "--profile", "smoke", "--xfail", str(xf))
    assert rc == 0, out[-2000:]
    assert doc["totals"]["xfailed"] == 1 and doc["totals"]["failed"] == 0


def test_entry_that_now_passes_fails_the_run(frameproof, tmp_path):
    xf = tmp_path / "xfail.txt"
    xf.write_text(f"{FAILING}\n")
    rc, out, doc = frameproof("run", "--testee", PYTESTEE, "--select", "standard/STD-SEQ-3/*", "--xfail", str(xf))
    assert rc == 1
    assert doc["totals"]["xpassed"] == 1


def test_entry_marked_may_pass_allows_both_outcomes(frameproof, tmp_path):
    """'~ name' (a race of the implementation's own): a pass is a pass, a failure is expected; the same
    entry without '~' still fails the run when it passes (the test above)."""
    xf = tmp_path / "xfail.txt"
    xf.write_text(f"# a race inside the implementation\n~ {FAILING}\n")
    rc, out, doc = frameproof("run", "--testee", PYTESTEE, "--select", "standard/STD-SEQ-3/*", "--xfail", str(xf))
    assert rc == 0, out[-2000:]
    assert doc["totals"]["xpassed"] == 0 and doc["totals"]["passed"] >= 1 and not doc.get("xfail_unmatched")
    rc, out, doc = frameproof("run", "--testee", MUT, "--select", "standard/STD-SEQ-3/*", "--xfail", str(xf))
    assert rc == 0, out[-2000:]
    assert doc["totals"]["xfailed"] == 1 and doc["totals"]["failed"] == 0


def test_entry_matching_nothing_fails_the_run(frameproof, tmp_path):
    xf = tmp_path / "xfail.txt"
    xf.write_text("standard/NO-SUCH-1/*\n")
    rc, out, doc = frameproof("run", "--testee", PYTESTEE, "--select", "standard/STD-SEQ-3/*", "--xfail", str(xf))
    assert rc == 1
    assert doc["xfail_unmatched"] == ["standard/NO-SUCH-1/*"]
    assert "match no test" in out


def test_glob_entries(frameproof, tmp_path):
    xf = tmp_path / "xfail.txt"
    xf.write_text("standard/STD-SEQ-3/*\n")
    rc, out, doc = frameproof("run", "--testee", MUT, "--select", "standard/STD-SEQ-3/*", "--xfail", str(xf))
    assert rc == 0, out[-2000:]


def test_junit_report(frameproof, tmp_path):
    junit = tmp_path / "j.xml"
    rc, out, doc = frameproof("run", "--testee", MUT, "--select", "standard/STD-SEQ-*", "--junit", str(junit))
    assert rc == 1
    import xml.etree.ElementTree as ET
    root = ET.parse(junit).getroot()
    cases = root.iter("testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert FAILING in failed


def test_expected_failure_runs_without_shrinking():
    """An --xfail entry's test runs with the loaded Hypothesis profile minus its shrink phase (the report
    keeps only its outcome), and the profile is back once it has run; other tests keep shrinking."""
    import types
    from hypothesis import Phase, settings
    from frameproof import plugin, properties  # noqa: F401  (properties registers the profiles)
    before = settings.get_current_profile_name()
    settings.load_profile("ci")
    try:
        assert Phase.shrink in settings.default.phases
        for expected, shrinks in ((True, False), (False, True)):
            run = plugin.pytest_runtest_call(types.SimpleNamespace(fp_expected_failure=expected))
            next(run)
            assert (Phase.shrink in settings.default.phases) == shrinks, expected
            # made while the test runs, as the network cases make theirs
            assert (Phase.shrink in settings(max_examples=5).phases) == shrinks, expected
            for _ in run:
                pass
            assert settings.get_current_profile_name() == "ci" and Phase.shrink in settings.default.phases
    finally:
        settings.load_profile(before)
