"""Whose rule is it (spec/harness.md, "Requirement sources"): every requirement of every spec names
its source, the parser reads it, and `--level rfc` counts only the RFC's MUSTs and upstream's
behaviour as failures, listing the spec's own decisions and the RFC's SHOULDs apart."""
import re

import pytest

from frameproof import matrix, report, spec

from conftest import PY

LABELLED = re.compile(r"^\*\*[A-Z]{2,6}(?:-[A-Z0-9]{1,8})+-\d+\*\* \((?:MUST|SHOULD|MAY); source: "
                      r"(?:rfc|rfc-should|upstream|spec)\): \S")
SERVER = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0 --protocol websocket"


def test_every_requirement_of_every_spec_has_a_source_label():
    reqs = spec.requirements()
    files = spec.spec_files()
    assert {"websocket", "standard", "length-field", "rpc", "discovery", "harness"} <= set(files)
    for name, path in files.items():
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if re.match(r"^\*\*[A-Z]+-[A-Z0-9-]+\*\* \(", ln)]
        assert lines, name
        bad = [ln[:80] for ln in lines if not LABELLED.match(ln)]
        assert not bad, f"spec/{path.name}: requirements without a (valid) source label: {bad}"
        assert len(lines) == sum(1 for r in reqs.values() if r.protocol == name), name
    unlabelled = sorted(r.id for r in reqs.values() if r.source not in spec.SOURCES)
    assert not unlabelled, unlabelled


def test_the_spec_gives_its_reason_for_each_decision():
    for r in spec.requirements().values():
        if r.source in ("spec", "rfc-should"):
            assert spec.REASON_MARK in r.text, f"{r.id} ({r.source}) gives no reason"
        if r.protocol == "websocket":
            assert r.source != "upstream", f"{r.id}: websocket's sources are the RFC or the spec"
        elif r.protocol in ("standard", "length-field", "discovery"):
            assert r.source in ("upstream", "spec"), f"{r.id}: {r.source}"


def test_known_decisions_are_not_labelled_rfc():
    src = {rid: r.source for rid, r in spec.requirements().items()}
    for rid in ("WS-LEN-3", "WS-UTF8-2", "WS-PING-1", "WS-CLOSE-2", "WS-HS-3"):
        assert src[rid] == "spec", rid
    assert src["WS-ERR-1"] == "rfc-should"
    assert src["WS-LEN-2"] == src["WS-MASK-1"] == src["WS-UTF8-1"] == "rfc"
    assert src["LF-MATCH-1"] == src["STD-LIM-1"] == src["DISC-REG-2"] == "spec"
    assert src["STD-HDR-1"] == src["LF-FMT-2"] == src["DISC-EP-1"] == "upstream"


def test_parser_reads_the_label_and_rejects_an_unknown_one(tmp_path, monkeypatch):
    m = spec._REQ.match("**WS-LEN-3** (MUST; source: spec): A receiver MUST fail")
    assert m and m.group("source") == "spec" and m.group("level") == "MUST" and m.group("text").startswith("A rec")
    m = spec._REQ.match("**WS-LEN-3** (MUST): old style")
    assert m and m.group("source") is None
    bad = tmp_path / "x.md"
    bad.write_text("## 1. x\n\n**XX-A-1** (MUST; source: folklore): text\n", encoding="utf-8")
    monkeypatch.setattr(spec, "spec_files", lambda: {"x": bad})
    spec.requirements.cache_clear()
    try:
        with pytest.raises(ValueError, match="unknown source 'folklore'"):
            spec.requirements()
    finally:
        monkeypatch.undo()
        spec.requirements.cache_clear()


def test_verdict_per_level():
    assert spec.rfc_verdict(["WS-MASK-4"]) == "failed"
    assert spec.rfc_verdict(["WS-LEN-3"]) == "stricter"
    assert spec.rfc_verdict(["WS-ERR-1"]) == "should"
    assert spec.rfc_verdict(["WS-ERR-1", "WS-LEN-3"]) == "stricter"
    assert spec.rfc_verdict(["WS-ERR-1", "WS-HDR-2"]) == "failed"  # any RFC MUST broken: a failure
    assert spec.rfc_verdict(["NOPE-X-1"]) == "failed"  # unknown / unlabelled: counted, never hidden
    tests = [report.test("a", ["WS-LEN-3"], "failed"), report.test("b", ["WS-MASK-4"], "xfailed"),
             report.test("c", ["WS-ERR-1"], "failed"), report.test("d", ["WS-HS-2"], "passed")]
    v = report.level_views(tests)
    assert v["spec"] == {"failed": 2, "deviations": ["WS-ERR-1", "WS-LEN-3", "WS-MASK-4"]}
    assert v["rfc"]["failed"] == 0 and v["rfc"]["stricter"] == 1 and v["rfc"]["should"] == 1
    assert v["rfc"]["deviations"] == ["WS-MASK-4"]
    assert report.views_text(v) == "spec ✗ 3 / rfc ✗ 1 (1 stricter, 1 SHOULD)"


def test_matrix_shows_both_views_for_third_party_columns():
    tests = [report.test("websocket/WS-HS-3/net/x", ["WS-HS-3"], "xfailed"),
             report.test("websocket/WS-HS-2/net/y", ["WS-HS-2"], "passed")]
    doc = report.make("net", {"name": "lib"}, tests)
    assert doc["level"] == "spec" and doc["tests"][0]["rfc_verdict"] == "stricter"
    cell = matrix._cell(0, doc)
    assert cell["ok"] and cell["views"] == "spec ✗ 1 / rfc ✓ (1 stricter)"
    mdoc = {"implementations": ["ref", "lib"], "third_party": ["lib"], "interop": {},
            "results": {"ref": {"build": 0, "codec": {}, "net": {"websocket": dict(cell, views="x")}, "client": {}},
                        "lib": {"build": 0, "codec": {}, "net": {"websocket": cell}, "client": {}}}}
    md = matrix.render(mdoc)
    row = next(ln for ln in md.splitlines() if ln.startswith("| server: websocket"))
    assert row.endswith("| ✓ 1/2 (1 xfail) | ✓ 1/2 (1 xfail) · spec ✗ 1 / rfc ✓ (1 stricter) |"), row


def _net(frameproof, fault, requirement, level):
    return frameproof("net", "--protocol", "websocket", "--server-cmd", f"{SERVER} --fault {fault}",
                      "--requirement", requirement, "--level", level, timeout=300)


def test_level_rfc_lists_a_spec_decision_apart_and_still_fails_an_rfc_must(frameproof, monkeypatch):
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    # a planted fault that breaks only the spec's own decision: 400 instead of 426 (WS-HS-3; the RFC
    # asks for "an appropriate error code (such as 426)" with the version header, which it sends)
    # (WS-HS-3's two cases: a wrong version, and none)
    rc, out, doc = _net(frameproof, "ws-version-400", "WS-HS-3", "spec")
    assert rc == 1 and doc["requirements"]["WS-HS-3"]["failed"] == 2, out[-2000:]
    assert doc["level"] == "spec" and doc["levels"]["rfc"]["stricter_requirements"] == ["WS-HS-3"]
    rc, out, doc = _net(frameproof, "ws-version-400", "WS-HS-3", "rfc")
    assert rc == 0, out[-2000:]
    assert doc["level"] == "rfc" and doc["totals"]["failed"] == 0 and doc["totals"]["xfailed"] == 2
    ran = [t for t in doc["tests"] if t["status"] != "skipped"]
    assert len(ran) == 2, ran
    for t in ran:
        assert t["level_verdict"] == "stricter" and t["rfc_verdict"] == "stricter" and "426" in t["message"], t
    assert "not failures at --level rfc" in out and "spec ✗ 1 / rfc ✓ (1 stricter)" in out
    # an RFC SHOULD made a MUST (WS-ERR-1: the close frame before closing): listed apart as SHOULD
    rc, out, doc = _net(frameproof, "ws-no-close-frame-on-error", "WS-ERR-1", "rfc")
    assert rc == 0, out[-2000:]
    assert doc["levels"]["rfc"]["should"] >= 1 and doc["levels"]["rfc"]["should_requirements"] == ["WS-ERR-1"]
    # an RFC MUST (a server never masks, WS-MASK-4) still fails at --level rfc
    rc, out, doc = _net(frameproof, "ws-masks-replies", "WS-MASK-4", "rfc")
    assert rc == 1, out[-2000:]
    assert doc["requirements"]["WS-MASK-4"]["failed"] >= 1 and "WS-MASK-4" in doc["levels"]["rfc"]["deviations"]
