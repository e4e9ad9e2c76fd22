"""The CI gate (issue 31): tools/ci/gate.sh, the logic of the GitHub Action (action.yml), run as a
stranger's CI runs it: from the stranger's folder, frameproof installed from the wheel into its own
venv. On the Go kit's testee (passes), on a bundled server and load client (pass), on a planted failing
testee (exit 1, then 0 once its failures are listed as expected), and its usage errors (exit 2) and a
testee that cannot start (exit 3): the exit statuses the README documents."""
import json
import os
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT

GATE = ROOT / "tools" / "ci" / "gate.sh"
RUST = ROOT / "reference-impls" / "rust" / "target" / "release"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    d = tmp_path_factory.mktemp("wheel")
    p = subprocess.run(["bash", str(ROOT / "tools" / "build_wheel.sh"), str(d)], capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    return tmp_path_factory.mktemp("gate-venv") / "v"


def gate(cwd, wheel, venv, out, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("FP_", "VIRTUAL_ENV"))}
    e.update({"FP_WHEEL": wheel, "FP_VENV": str(venv), "FP_OUT": str(out)}, **env)
    p = subprocess.run(["bash", str(GATE)], cwd=cwd, env=e, capture_output=True, text=True, timeout=1200)
    return p.returncode, p.stdout + p.stderr


def test_action_passes_every_input_to_the_gate():
    a = yaml.safe_load((ROOT / "action.yml").read_text())
    script = GATE.read_text()
    env = a["runs"]["steps"][-1]["env"]
    assert set(env) == {"FP_" + k.upper().replace("-", "_") for k in a["inputs"]}
    for k in env:
        assert k in script, k
    assert "tools/ci/gate.sh" in a["runs"]["steps"][-1]["run"]


def test_go_kit_testee_passes(wheel, venv, tmp_path):
    kit = ROOT / "tools" / "testee-kits" / "go"
    if not shutil.which("go"):
        pytest.skip("go is not installed (the testee-kit test builds it where it is)")
    b = subprocess.run(["bash", "build.sh"], cwd=kit, capture_output=True, text=True, timeout=900)
    assert b.returncode == 0, b.stderr[-2000:]
    rc, out = gate(kit, wheel, venv, tmp_path / "r", FP_TESTEE="./testee")
    assert rc == 0, out[-3000:]
    doc = json.loads((tmp_path / "r" / "codec-standard.json").read_text())
    assert doc["totals"]["passed"] > 100 and doc["totals"]["failed"] == 0
    assert (tmp_path / "r" / "codec-standard.xml").exists() and (tmp_path / "r" / "html" / "index.html").exists()
    assert "conformance gate passed" in out


def test_bundled_server_and_load_client_pass(wheel, venv, tmp_path):
    if not (RUST / "fp-server").exists():
        pytest.fail("the Rust programs are not built (bash reference-impls/rust/build.sh)")
    rc, out = gate(tmp_path, wheel, venv, tmp_path / "r", FP_PROTOCOLS="standard",
                   FP_SERVER=f"{RUST / 'fp-server'} --protocol {{protocol}} --listen 127.0.0.1:0",
                   FP_LOAD_CLIENT=f"{RUST / 'fp-load'} --protocol {{protocol}} --connect {{host}}:{{port}} --connections 2 "
                                  "--payload 32 --mode pipelined --window 16 --requests 1000 --timeout-ms 2000 --json {json}")
    assert rc == 0, out[-3000:]
    for name in ("net-standard", "client-standard"):
        doc = json.loads((tmp_path / "r" / f"{name}.json").read_text())
        assert doc["totals"]["failed"] == 0 and doc["totals"]["passed"] > 0, name
    assert list((tmp_path / "r" / "html").glob("*-standard.svg"))


def test_planted_failing_testee_fails_then_passes_with_its_gaps_listed(wheel, venv, tmp_path):
    testee = f"{venv}/bin/python -m frameproof.pytestee --mutant off-by-one-length"
    rc, out = gate(tmp_path, wheel, venv, tmp_path / "r", FP_TESTEE=testee, FP_PROFILE="smoke")
    assert rc == 1, out[-3000:]
    assert "conformance gate FAILED (exit 1)" in out
    doc = json.loads((tmp_path / "r" / "codec-standard.json").read_text())
    failed = [t["name"] for t in doc["tests"] if t["status"] == "failed"]
    assert failed
    # the expected-failures file for this suite, as a user would write it from the report
    (tmp_path / "gaps").mkdir()
    (tmp_path / "gaps" / "codec-standard.txt").write_text(
        "# off by one in the length: fixing it next release\n" + "\n".join(failed) + "\n")
    rc, out = gate(tmp_path, wheel, venv, tmp_path / "r2", FP_TESTEE=testee, FP_XFAIL_DIR=str(tmp_path / "gaps"),
                   FP_PROFILE="smoke")
    assert rc == 0, out[-3000:]
    page = (tmp_path / "r2" / "html").glob("*.html")
    assert any("fixing it next release" in p.read_text() for p in page)


@pytest.mark.parametrize("env,status", [({}, 2), ({"FP_TESTEE": "x", "FP_LEVEL": "loose"}, 2),
                                        ({"FP_AUTOBAHN": "sideways"}, 2), ({"FP_TESTEE": "x", "FP_PROFILE": "long"}, 2),
                                        ({"FP_TESTEE": "./no-such-testee"}, 3)])
def test_usage_errors_and_a_testee_that_cannot_start(wheel, venv, tmp_path, env, status):
    rc, out = gate(tmp_path, wheel, venv, tmp_path / "r", **env)
    assert rc == status, out[-3000:]
