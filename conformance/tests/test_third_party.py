"""Third-party implementations (tools/third-party/*): testees around codecs nobody here wrote.

tools/third-party/tokio-util wraps tokio-util's LengthDelimitedCodec (crates.io). It builds with its
own build.sh and, run with its expected-failures file, passes the length-field codec suite: every
genuine difference from the spec is listed there with a reason, and no entry is stale (the runner
fails an entry that passes or matches nothing). Skipped, loudly, only when cargo is missing."""
import json
import os
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
    # skipped only for what LengthDelimitedCodec cannot be configured for, or what a v1
    # decode/encode testee leaves out
    allowed = ("size 0", "is not a length-field profile", "writes no header bytes", "'match'", "harness v1")
    for t in doc["tests"]:
        if t["status"] == "skipped":
            assert any(a in t["message"] for a in allowed), t
