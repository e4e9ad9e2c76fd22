"""Third-party implementations (tools/third-party/*): testees around codecs nobody here wrote.

tools/third-party/tokio-util wraps tokio-util's LengthDelimitedCodec (crates.io). It builds with its
own build.sh and, run with its expected-failures file, passes the length-field codec suite: every
genuine difference from the spec is listed there with a reason, and no entry is stale (the runner
fails an entry that passes or matches nothing). Skipped, loudly, only when cargo is missing.

The websocket wrappers (tools/third-party/{gorilla,ws}: gorilla/websocket from the Go module proxy, ws
from npm) are echo servers, and testees where the library lets one be written: each is built with its
build.sh and run through the network suite (and the codec suite where it has a testee) with its
expected-failures files (impl.json ``"xfail_net"``, ``"xfail"``): exit 0, no unexpected failure, every
entry still matching. Skipped, loudly, only when the tool impl.json ``"requires"`` is missing."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOKIO = ROOT / "tools" / "third-party" / "tokio-util"


def _cargo_available() -> bool:
    # build.sh also finds cargo through ~/.cargo/env (rustup's default install).
    return shutil.which("cargo") is not None or (Path.home() / ".cargo" / "bin" / "cargo").exists()


def test_tokio_util_manifest_and_xfail_file_are_consistent():
    impl = json.loads((TOKIO / "impl.json").read_text())
    assert impl["name"] == "tokio-util"
    assert impl["third_party"] is True
    assert impl["protocols"] == ["length-field"]
    assert impl["testee"] == ["target/release/fp-tokio-util-testee"]
    assert "LengthDelimitedCodec" in impl["upstream"]
    xfail = TOKIO / impl["xfail"]["length-field"]
    lines = xfail.read_text(encoding="utf-8").splitlines()
    entries = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    assert entries, "the expected-failures file lists nothing"
    for i in entries:
        # each entry is explained: a comment sentence right above it
        assert i > 0 and lines[i - 1].lstrip().startswith("#") and len(lines[i - 1].strip()) > 20, \
            f"{xfail.name}:{i + 1}: {lines[i]!r} has no '#' comment explaining it on the line above"
        assert lines[i].startswith("length-field/"), lines[i]


def test_tokio_util_builds_and_passes_length_field_with_its_xfail_file(tmp_path):
    if not _cargo_available():
        reason = "cargo not installed: the tokio-util third-party testee was NOT built or tested"
        warnings.warn(reason)
        pytest.skip(reason)
    b = subprocess.run(["bash", str(TOKIO / "build.sh")], capture_output=True, text=True, timeout=1800)
    assert b.returncode == 0, f"tokio-util/build.sh failed:\n{b.stdout[-3000:]}\n{b.stderr[-3000:]}"
    impl = json.loads((TOKIO / "impl.json").read_text())
    testee = TOKIO / impl["testee"][0]
    assert os.access(testee, os.X_OK), testee

    report = tmp_path / "report.json"
    p = subprocess.run([sys.executable, "-m", "frameproof.cli", "run", "--testee", str(testee),
                        "--protocol", "length-field", "--xfail", str(TOKIO / impl["xfail"]["length-field"]),
                        "--json", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = p.stdout[-4000:] + p.stderr[-2000:]
    assert p.returncode == 0, out
    doc = json.loads(report.read_text())
    assert doc["implementation"]["name"] == "tokio-util", doc["implementation"]
    assert doc["implementation"]["protocols"] == ["length-field"]
    totals = doc["totals"]
    assert totals["failed"] == 0 and totals["xpassed"] == 0, (totals, out)
    assert totals["passed"] > 100, (totals, out)
    assert totals["xfailed"] > 0, (totals, out)
    # skipped only for what LengthDelimitedCodec cannot be configured for, or what a decode/encode
    # testee leaves out (no client matching, no server session)
    allowed = ("size 0", "is not a length-field profile", "writes no header bytes", "'match'", "'serve'")
    for t in doc["tests"]:
        if t["status"] == "skipped":
            assert any(a in t["message"] for a in allowed), t
    # the long stream (harness v3) ran through tokio-util's decoder: 64 MiB under the ci profile
    by_name = {t["name"]: t for t in doc["tests"]}
    assert by_name["length-field/LF-STR-2/long_stream_past_4gib"]["status"] == "passed", \
        by_name["length-field/LF-STR-2/long_stream_past_4gib"]


THIRD_PARTY = ROOT / "tools" / "third-party"
WEBSOCKET_WRAPPERS = ("gorilla", "websockets", "ws")


def _manifest(name):
    return json.loads((THIRD_PARTY / name / "impl.json").read_text())


# the wrappers with a testee (websockets has a server and a client only: the library has no frame layer)
WITH_TESTEE = tuple(n for n in WEBSOCKET_WRAPPERS if "testee" in _manifest(n))


def _xfail_entries(path: Path):
    """(line index, entry) of an expected-failures file; each entry must have its reason above it: a
    '#' comment sentence at the head of its block (the lines since the last blank one)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out, explained = [], False
    for i, line in enumerate(lines):
        s = line.strip()
        if not s:
            explained = False
        elif s.startswith("#"):
            explained = explained or len(s) > 20
        else:
            assert explained, f"{path.name}:{i + 1}: {line!r} has no '#' comment explaining it above it"
            out.append((i, s.lstrip("~").strip()))  # '~': may also pass (report.read_xfail_flaky)
    return out


@pytest.mark.parametrize("name", sorted(p.parent.name for p in THIRD_PARTY.glob("*/impl.json")))
def test_third_party_manifest(name):
    """Every wrapper: third_party, each registered protocol either in "protocols" or "skipped" with a
    reason, every expected-failures file it names exists and explains each entry."""
    from frameproof import protocols as registry
    impl = _manifest(name)
    assert impl["name"] == name and impl["third_party"] is True and impl.get("upstream")
    assert "testee" in impl or "server" in impl, "a wrapper with neither a testee nor a server"
    for proto in registry.names():
        assert (proto in impl["protocols"]) != (proto in impl.get("skipped", {})), \
            f"{name}: {proto!r} must be in exactly one of 'protocols' and 'skipped'"
    labels = {lab for p in impl["protocols"] for lab, _ in registry.get(p).net_profiles()}
    # and the network cells a protocol makes for this implementation alone (websocket: the deflate
    # profile of a server whose "websocket_extensions" claims it), as the matrix makes them
    whole = {**impl, "dir": str(THIRD_PARTY / name)}
    for p in impl["protocols"]:
        suites = registry.get(p).matrix_suites(whole, lambda key: "true" if key in impl else None, "ci", "small")
        labels |= {label for group, label, argv in suites if group == "net" and argv[:1] == ["net"]}
    for label, why in (impl.get("skipped_net") or {}).items():
        # a network profile the library cannot express: named exactly, with its reason, and no expected
        # failures listed for it
        assert label in labels and len(why) > 20 and label not in (impl.get("xfail_net") or {}), (name, label)
    for key, keys in (("xfail", set(impl["protocols"])), ("xfail_net", labels), ("xfail_autobahn", {"server", "client"})):
        for k, f in (impl.get(key) or {}).items():
            assert k in keys, f"{name}: {key} names {k!r}, not one of {sorted(keys)}"
            entries = _xfail_entries(THIRD_PARTY / name / f)
            assert entries, f"{name}/{f} lists nothing"
            for _, e in entries:
                # a test name of one of its protocols, or (Autobahn) a case-ID glob such as 6.3.*
                assert e.split("/", 1)[0] in impl["protocols"] or (key == "xfail_autobahn" and e[0].isdigit()), (f, e)


def _build(name):
    impl = _manifest(name)
    missing = [t for t in impl.get("requires", []) if shutil.which(t) is None
               and not (t == "go" and Path("/usr/local/go/bin/go").exists())]
    if missing:
        reason = f"{', '.join(missing)} not installed: the {name} third-party wrapper was NOT built or tested"
        warnings.warn(reason)
        pytest.skip(reason)
    b = subprocess.run(impl["build"], cwd=THIRD_PARTY / name, capture_output=True, text=True, timeout=1800)
    assert b.returncode == 0, f"{name}/build.sh failed:\n{b.stdout[-3000:]}\n{b.stderr[-3000:]}"
    return impl


def _cmd(name, argv):
    d = THIRD_PARTY / name
    return [str(d / a) if (d / a).exists() else a for a in argv]


def _check_report(report: Path, xfail: Path, out: str):
    doc = json.loads(report.read_text())
    t = doc["totals"]
    assert t["failed"] == 0 and t["xpassed"] == 0, (t, out)
    # every entry matched at least one test that failed as expected (the runner also fails a stale one)
    assert t["xfailed"] >= len(_xfail_entries(xfail)), (t, out)
    return doc


# Each wrapper's network suite with its expected-failure file (every entry matched, none stale, nothing
# failing unexpectedly) is a cell of the matrix, which tools/test.sh runs in its step 4 at small scale:
# running it here too only cost CI a minute.


@pytest.mark.parametrize("name", WITH_TESTEE)
def test_websocket_wrapper_testee_with_its_xfail_file(name, tmp_path):
    impl = _build(name)
    xfail = THIRD_PARTY / name / impl["xfail"]["websocket"]
    report = tmp_path / "codec.json"
    p = subprocess.run([sys.executable, "-m", "frameproof.cli", "run", "--testee",
                        " ".join(shlex.quote(a) for a in _cmd(name, impl["testee"])), "--protocol", "websocket",
                        "--xfail", str(xfail), "--json", str(report)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    out = p.stdout[-4000:] + p.stderr[-2000:]
    assert p.returncode == 0, out
    doc = _check_report(report, xfail, out)
    serve = [t for t in doc["tests"] if t["name"].split("/")[2].startswith(("serve_", "prop_serve_"))]
    assert serve and all(t["status"] != "skipped" for t in serve), ("the testee did not answer serve", serve, out)


# the scripted serve sessions that hold no error: every wrapper with a testee must match the model on
# them (whole and byte by byte); the error sessions are where the libraries differ (their xfail files)
CLEAN_SESSIONS = ("text and binary echoed", "fragmented message echoed whole", "ping answered with pong",
                  "pong not answered", "ping between fragments",
                  "empty close echoed empty", "close code 1001 echoed")


@pytest.mark.parametrize("name", WITH_TESTEE)
def test_websocket_wrapper_testee_serves_clean_sessions_like_the_model(name):
    from frameproof.checks import check_serve, chunk_every
    from frameproof.protocols.websocket import SERVE_CASES, WsCodec, oracle
    from frameproof.testee import Testee
    impl = _build(name)
    codec = WsCodec("websocket")
    cases = [c for c in SERVE_CASES if c[0] in CLEAN_SESSIONS]
    assert len(cases) == len(CLEAN_SESSIONS), "SERVE_CASES renamed: update CLEAN_SESSIONS"
    t = Testee(" ".join(shlex.quote(a) for a in _cmd(name, impl["testee"])))
    try:
        for case, _, frames, half_close in cases:
            data = b"".join(f if isinstance(f, bytes) else oracle.encode(oracle.wide(codec), f) for f in frames)
            for chunks in ([data], chunk_every(data, 1)):
                check_serve(oracle.serve(codec, "", chunks, half_close), t.serve(codec, "", chunks, half_close),
                            f"{name}, {case}, {len(chunks)} chunk(s): ")
    finally:
        t.stop()


def test_third_party_page_lists_every_expected_failure():
    """docs/third-party.md is generated (tools/gen_third_party_page.py) from the suites' reports; it is
    stale when an expected-failures file gained an entry the page does not show. Every entry of every
    wrapper's files must match a test name or an Autobahn case the page lists."""
    import fnmatch
    import re
    page = (ROOT / "docs" / "third-party.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"`([^`\s]+)`", page))
    assert "gen_third_party_page.py" in page
    for f in sorted(THIRD_PARTY.glob("*/impl.json")):
        impl = json.loads(f.read_text())
        for key in ("xfail", "xfail_net", "xfail_autobahn"):
            for xf in (impl.get(key) or {}).values():
                for _, e in _xfail_entries(f.parent / xf):
                    # an Autobahn entry may name the driver (websocket/autobahn/wstest/9.3.3, or * for it);
                    # the page lists the case ID
                    pats = [e, e.rsplit("/", 1)[-1]] if key == "xfail_autobahn" else [e]
                    assert any(fnmatch.fnmatchcase(s, pat) for s in shown for pat in pats), \
                        f"{impl['name']}/{xf}: {e!r} is not on docs/third-party.md: run tools/gen_third_party_page.py --run"
