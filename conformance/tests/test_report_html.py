"""`frameproof report` (issue 31): HTML pages and SVG badges from the JSON reports of real runs. A correct
testee and one with a planted bug (the Python testee's mutant off-by-one-length, STD-LEN-*) run the
standard codec suite; one test of the correct one is listed as an expected failure with a reason.
The pages must show each failure with its message, the expected failure with its reason, every
requirement reached, and badges that are green for the correct testee and red for the broken one."""
import json
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import PY, PYTESTEE, ROOT


def _fp(*args, timeout=600):
    p = subprocess.run([PY, "-m", "frameproof.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    runs = d / "runs"
    runs.mkdir()
    sel = ["--protocol", "standard", "--select", "*STD-HDR-*", "--select", "*STD-LEN-*"]
    xf = d / "xfail.txt"
    xf.write_text("# why this one is expected to fail: a reason the page must show\nstandard/STD-HDR-1/*\n")
    # the correct testee, with its HDR-1 tests listed as expected failures: they pass, so they are
    # xpassed (an unexpected result); the broken testee's failures are real
    rc1, out1 = _fp("run", "--testee", PYTESTEE, "--name", "good", *sel, "--json", str(runs / "good.json"))
    rc2, out2 = _fp("run", "--testee", f"{PYTESTEE} --mutant off-by-one-length", "--name", "broken", *sel,
                    "--json", str(runs / "broken.json"), "--xfail", str(xf))
    assert rc1 == 0, out1[-2000:]
    assert rc2 == 1, out2[-2000:]
    (runs / "not-a-report.json").write_text('{"hello": 1}')
    rc, out = _fp("report", str(runs), "--out", str(d / "out"))
    assert rc == 0, out
    return d / "out", json.loads((runs / "broken.json").read_text()), out


def test_pages_and_index(site):
    out, broken, log = site
    assert {p.name for p in out.glob("*.html")} == {"index.html", "good.html", "broken.html"}
    assert "1 JSON file(s) are not frameproof reports" in log
    index = (out / "index.html").read_text()
    assert 'href="good.html"' in index and 'href="broken.html"' in index
    good = (out / "good.html").read_text()
    assert "✓ no unexpected result." in good and "STD-HDR-1" in good and "STD-LEN-" in good


def test_failures_read_as_expected_and_actual(site):
    out, broken, _ = site
    page = (out / "broken.html").read_text()
    failed = [t for t in broken["tests"] if t["status"] in ("failed", "xpassed")]
    assert failed, "the planted bug made no test fail"
    assert f"✗ {len(failed)} unexpected result" in page
    for t in failed:
        assert t["name"] in page
    # the message of a failure is on the page (escaped), as the suite wrote it
    first = next(t for t in failed if t["status"] == "failed")
    line = next(x for x in first["message"].splitlines() if x.strip().startswith(("E ", "expected", "actual")) or "expected" in x)
    import html
    assert html.escape(line.strip()[:60]) in page


def test_expected_failures_show_their_reason(site):
    out, broken, _ = site
    page = (out / "broken.html").read_text()
    # the broken testee fails some HDR-1 tests too (the length is in the header): expected, with the reason
    xfailed = [t for t in broken["tests"] if t["status"] == "xfailed"]
    assert xfailed, [t["status"] for t in broken["tests"] if "HDR-1" in t["name"]]
    assert all(t.get("xfail_reason") == "why this one is expected to fail: a reason the page must show" for t in xfailed)
    assert "a reason the page must show" in page
    # and what happened is kept with it: the failure that was expected, not an empty message
    assert all(t["message"] for t in xfailed)


def test_badges_are_svg_green_and_red(site):
    out, _, _ = site
    good = ET.fromstring((out / "good-standard.svg").read_text())
    bad = ET.fromstring((out / "broken-standard.svg").read_text())
    ns = "{http://www.w3.org/2000/svg}"
    assert good.tag == ns + "svg" and bad.tag == ns + "svg"
    fills = lambda e: {r.get("fill") for r in e.iter(ns + "rect")}  # noqa: E731
    assert "#2ea043" in fills(good) and "#cf222e" in fills(bad)
    assert "passed" in "".join(good.itertext())


def test_no_report_is_exit_5(tmp_path):
    (tmp_path / "x.json").write_text("[]")
    rc, out = _fp("report", str(tmp_path), "--out", str(tmp_path / "o"))
    assert rc == 5 and "no frameproof report" in out


def test_page_renders_in_headless_chromium(site):
    """The page as a reader sees it: Chromium loads it and its DOM has the headings and tables."""
    import sys
    sys.path.insert(0, str(ROOT / "tools" / "docs"))
    from browser import find_chromium
    binary = find_chromium()
    if not binary:
        pytest.skip("no chromium (the docs build installs it: tools/docs/build.sh)")
    out, _, _ = site
    p = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                        f"file://{out / 'broken.html'}"], capture_output=True, text=True, timeout=120)
    dom = p.stdout
    assert "<h2>Failures</h2>" in dom and "<h2>Requirements</h2>" in dom and "broken-standard.svg" in dom
