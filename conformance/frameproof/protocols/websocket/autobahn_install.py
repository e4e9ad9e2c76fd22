"""The Autobahn drivers (``frameproof autobahn``): wstest (autobahntestsuite, Python 2.7) and kosoku
(Python 3), their versions and limits, the errors of installing and running them, and their
installation into ``~/.cache/frameproof`` (``FP_AUTOBAHN_HOME``), cached, one install at a time."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

WSTEST_VERSION = "25.10.1"
KOSOKU_VERSION = "0.1.0"
DRIVERS = ("wstest", "kosoku")

#: what kosoku 0.1.0 cannot do (printed in the report when it runs, and in docs/autobahn.md)
KOSOKU_LIMITS = [
    "kosoku takes no spec file (-s is 'not yet supported'): cases are selected with -i/-x globs",
    "kosoku names the agent after the server's Server: header (fuzzingclient); --agent does not reach it",
    "kosoku cannot reach an IPv6 server (fuzzingclient): '[::1]:PORT' fails with 'failed to lookup address "
    "information', '::1:PORT' with 'empty host'; frameproof runs only wstest against ::1",
]


class ToolError(Exception):
    """A driver could not be installed or run (the reason is the message)."""


class StartError(ToolError):
    """The client under test could not be started."""


def cache_dir() -> Path:
    return Path(os.environ.get("FP_AUTOBAHN_HOME") or Path.home() / ".cache" / "frameproof")


def find_python27() -> Optional[str]:
    if os.environ.get("FP_PYTHON27"):
        return os.environ["FP_PYTHON27"]
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    cands = [root / "versions" / "2.7.18" / "bin" / "python2.7"] + sorted((root / "versions").glob("2.7*/bin/python2.7"))
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("python2.7")


class _Lock:
    """One install at a time (tests running in parallel install once)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(path, "w")

    def __enter__(self):
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *a):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def _pip(cmd: List[str], what: str, log):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    if p.returncode:
        tail = p.stdout.decode("utf-8", "replace")[-1500:]
        raise ToolError(f"{what} failed (exit {p.returncode}):\n{tail}")


def _cached(venv_name: str, lock_name: str, version: str, exe_name: str, install) -> Path:
    """The program ``exe_name`` of the virtualenv ``venv_name`` in cache_dir(): as installed before
    (the stamp of ``version`` is there) or made now by ``install(home, venv)``, under the lock
    ``lock_name``; a new install must start (``--help``) before it is stamped."""
    home = cache_dir()
    venv = home / venv_name
    stamp = venv / f".fp-ok-{version}"
    exe = venv / "bin" / exe_name
    with _Lock(home / lock_name):
        if stamp.exists() and exe.exists():
            return exe
        install(home, venv)
        if subprocess.run([str(exe), "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            raise ToolError(f"{exe_name} was installed but does not start")
        stamp.touch()
        return exe


def install_wstest(log=lambda s: None) -> Path:
    """The ``wstest`` of autobahntestsuite 25.10.1 in its own virtualenv on CPython 2.7 (cached)."""
    return _cached("autobahn-venv", "autobahn-install.lock", WSTEST_VERSION, "wstest",
                   lambda home, venv: _install_wstest(home, venv, log))


def _install_wstest(home: Path, venv: Path, log) -> None:
    py27 = find_python27()
    if not py27:
        raise ToolError("no CPython 2.7 found (pyenv's 2.7.18, or FP_PYTHON27): wstest runs only on Python 2.7")
    chk = subprocess.run([py27, "-c", "import sys; assert sys.version_info[:2] == (2, 7)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if chk.returncode:
        raise ToolError(f"{py27} is not a working Python 2.7")
    log(f"installing autobahntestsuite {WSTEST_VERSION} into {venv} with {py27} (about a minute, from PyPI)")
    boot = home / "autobahn-bootstrap"
    shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(boot, ignore_errors=True)
    q = ["-q", "--disable-pip-version-check"]
    # virtualenv 16 is the last single-module virtualenv that runs on Python 2.7
    _pip([py27, "-m", "pip", "install", *q, "--target", str(boot), "virtualenv<20"], "pip install virtualenv<20 (Python 2.7)", log)
    env = dict(os.environ, PYTHONPATH=str(boot))
    p = subprocess.run([py27, "-m", "virtualenv", "-q", str(venv)], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    if p.returncode:
        raise ToolError(f"virtualenv on Python 2.7 failed: {p.stdout.decode('utf-8', 'replace')[-800:]}")
    _pip([str(venv / "bin" / "pip"), "install", *q, f"autobahntestsuite=={WSTEST_VERSION}"],
         f"pip install autobahntestsuite=={WSTEST_VERSION}", log)


def install_kosoku(log=lambda s: None) -> Path:
    """kosoku 0.1.0 (PyPI, Python 3) in its own venv (cached)."""
    return _cached("kosoku-venv", "kosoku-install.lock", KOSOKU_VERSION, "kosoku",
                   lambda home, venv: _install_kosoku(venv, log))


def _install_kosoku(venv: Path, log) -> None:
    log(f"installing kosoku {KOSOKU_VERSION} into {venv} (from PyPI)")
    shutil.rmtree(venv, ignore_errors=True)
    py3 = os.environ.get("FP_PYTHON3") or shutil.which("python3") or sys.executable
    p = subprocess.run([py3, "-m", "venv", str(venv)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        raise ToolError(f"python3 -m venv failed: {p.stdout.decode('utf-8', 'replace')[-800:]}")
    _pip([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", f"kosoku=={KOSOKU_VERSION}"],
         f"pip install kosoku=={KOSOKU_VERSION}", log)
