"""frameproof for strangers: the wheel needs only Python. Built from this checkout, installed
into a fresh venv, run from a directory outside the repository against a reference testee and a
reference server (the Rust ones when built, else the Python ones)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    b = subprocess.run(["bash", str(ROOT / "tools/build_wheel.sh"), str(tmp / "dist")], capture_output=True,
                       text=True, timeout=600)
    assert b.returncode == 0, b.stderr[-3000:]
    wheel = Path(b.stdout.split()[-1])
    assert wheel.name.startswith("frameproof-") and wheel.suffix == ".whl"
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("FRAMEPROOF_ROOT", "PYTHONPATH", "VIRTUAL_ENV")}
    i = subprocess.run([str(venv / "bin/pip"), "install", "-q", str(wheel)], capture_output=True, text=True,
                       timeout=900, env=env)
    assert i.returncode == 0, i.stderr[-3000:]
    away = tmp / "elsewhere"
    away.mkdir()
    return venv, away, env


def fp(installed, *args, timeout=600):
    venv, away, env = installed
    env = dict(env, PATH=f"{venv / 'bin'}:{env.get('PATH', '')}")
    p = subprocess.run([str(venv / "bin/frameproof"), *args], cwd=away, capture_output=True, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def test_no_repository_on_the_path(installed):
    venv, away, env = installed
    p = subprocess.run([str(venv / "bin/python"), "-c", "import frameproof.paths as p; print(p.ROOT)"],
                       cwd=away, capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and "site-packages" in p.stdout and str(ROOT) not in p.stdout, p.stdout + p.stderr


def test_version_list_requirements(installed):
    rc, out, err = fp(installed, "--version")
    assert rc == 0 and out.startswith("frameproof "), out + err
    rc, out, err = fp(installed, "list", "--names")
    assert rc == 0 and len(out.splitlines()) > 400 and all("/" in line for line in out.splitlines()), err
    rc, out, err = fp(installed, "requirements", "--protocol", "standard")
    assert rc == 0 and "STD-HDR-1" in out, err


def _reference(name, fallback):
    p = ROOT / "reference-impls/rust/target/release" / name
    return str(p) if p.exists() else fallback


def test_run_against_a_reference_testee(installed):
    venv = installed[0]
    testee = _reference("fp-testee", f"{venv / 'bin/python'} -m frameproof.pytestee")
    rc, out, err = fp(installed, "run", "--testee", testee, "--protocol", "standard")
    assert rc == 0, (out + err)[-3000:]
    assert "frameproof: " in out and " 0 failed" in out


def test_net_against_a_reference_server(installed):
    venv = installed[0]
    server = _reference("fp-server", f"{venv / 'bin/python'} -m frameproof.pyserver") + \
        " --protocol standard --listen 127.0.0.1:0"
    rc, out, err = fp(installed, "net", "--protocol", "standard", "--server-cmd", server)
    assert rc == 0, (out + err)[-3000:]
