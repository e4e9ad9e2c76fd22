"""`frameproof autobahn`: the real Autobahn testsuite (``wstest`` from autobahntestsuite 25.10.1,
Python 2.7) and kosoku (an independent Python 3 driver of Autobahn's case files) run against a
websocket server (``fuzzingclient``) or client (``fuzzingserver``), their reports turned into
frameproof results: one per case, with Autobahn's verdicts (behavior, behaviorClose), expected vs
actual as Autobahn states them, and the WS-* requirements the case checks (autobahn_map.py).

Verdicts. A case **fails** when Autobahn's ``behavior`` is FAILED or its ``behaviorClose`` is
FAILED, WRONG CODE, UNCLEAN or FAILED BY CLIENT. Otherwise its verdict is ``behavior`` (OK,
NON-STRICT, INFORMATIONAL, UNIMPLEMENTED; a NON-STRICT close makes an OK case NON-STRICT);
those pass and the non-OK ones are listed. Exit status 0 only when no case failed (an expected
failure from ``--xfail`` excepted) and nothing unexpected happened: an expected failure that
passed, an --xfail entry that matches no case, a selected pattern no case matched, a driver that
could not run, the server under test gone during the run.

The tools install themselves (:func:`install_wstest`, :func:`install_kosoku`) into
``~/.cache/frameproof`` (``FP_AUTOBAHN_HOME``): wstest into a virtualenv on pyenv's CPython
2.7.18 (``FP_PYTHON27`` names another 2.7), kosoku into a Python 3 venv; both from PyPI.
tools/autobahn/install.sh runs the same install from a checkout.
"""
from __future__ import annotations

import argparse
import fcntl
import fnmatch
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from ... import report
from . import autobahn_map as MAP

WSTEST_VERSION = "25.10.1"
KOSOKU_VERSION = "0.1.0"
DRIVERS = ("wstest", "kosoku")

#: behaviorClose values that fail a case (autobahntestsuite case/case.py)
CLOSE_FAILS = ("FAILED", "WRONG CODE", "UNCLEAN", "FAILED BY CLIENT")
VERDICTS = ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED")

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


# ------------------------------------------------------------------ installing the drivers

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


def install_wstest(log=lambda s: None) -> Path:
    """The ``wstest`` of autobahntestsuite 25.10.1 in its own virtualenv on CPython 2.7 (cached)."""
    home = cache_dir()
    venv = home / "autobahn-venv"
    stamp = venv / f".fp-ok-{WSTEST_VERSION}"
    wstest = venv / "bin" / "wstest"
    with _Lock(home / "autobahn-install.lock"):
        if stamp.exists() and wstest.exists():
            return wstest
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
        if subprocess.run([str(wstest), "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            raise ToolError("wstest was installed but does not start")
        stamp.touch()
        return wstest


def install_kosoku(log=lambda s: None) -> Path:
    """kosoku 0.1.0 (PyPI, Python 3) in its own venv (cached)."""
    home = cache_dir()
    venv = home / "kosoku-venv"
    stamp = venv / f".fp-ok-{KOSOKU_VERSION}"
    exe = venv / "bin" / "kosoku"
    with _Lock(home / "kosoku-install.lock"):
        if stamp.exists() and exe.exists():
            return exe
        log(f"installing kosoku {KOSOKU_VERSION} into {venv} (from PyPI)")
        shutil.rmtree(venv, ignore_errors=True)
        py3 = os.environ.get("FP_PYTHON3") or shutil.which("python3") or sys.executable
        p = subprocess.run([py3, "-m", "venv", str(venv)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode:
            raise ToolError(f"python3 -m venv failed: {p.stdout.decode('utf-8', 'replace')[-800:]}")
        _pip([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", f"kosoku=={KOSOKU_VERSION}"],
             f"pip install kosoku=={KOSOKU_VERSION}", log)
        if subprocess.run([str(exe), "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            raise ToolError("kosoku was installed but does not start")
        stamp.touch()
        return exe


# ------------------------------------------------------------------ results

@dataclass
class CaseResult:
    name: str
    case: str
    side: str  # "server" (fuzzingclient tested a server) or "client"
    driver: str
    description: str
    behavior: str
    behavior_close: str
    verdict: str  # OK, NON-STRICT, INFORMATIONAL, UNIMPLEMENTED or FAILED
    status: str  # passed, failed, xfailed, xpassed
    requirements: List[str]
    expected: str
    actual: str
    expected_close: str
    actual_close: str
    remote_close_code: Optional[int] = None
    duration_ms: Optional[int] = None
    report: str = ""


def case_key(case: str):
    return tuple(int(x) if x.isdigit() else 0 for x in case.split("."))


def _short(v, n=60) -> str:
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def _text(s: str) -> str:
    """Autobahn's descriptions carry HTML (<b>, <br>) and line breaks: plain text on one line."""
    import re
    return " ".join(re.sub(r"<br\s*/?>", " ", re.sub(r"</?b>", "", s or "")).split())


def _events(evs) -> str:
    """Autobahn's event lists (["message", payload, binary], ["ping", payload], ...) in short."""
    out = []
    for e in evs or []:
        if isinstance(e, list) and e:
            kind = e[0]
            if kind == "message" and len(e) >= 3:
                out.append(f"{'binary' if e[2] else 'text'} message {_short(e[1], 40)!s}")
            elif len(e) >= 2:
                out.append(f"{kind} {_short(e[1], 40)}")
            else:
                out.append(str(kind))
        else:
            out.append(_short(e, 40))
    return "[" + ", ".join(out) + "]"


def verdict_of(behavior: str, behavior_close: str) -> str:
    if behavior == "FAILED" or behavior_close in CLOSE_FAILS:
        return "FAILED"
    if behavior == "OK" and behavior_close == "NON-STRICT":
        return "NON-STRICT"
    return behavior if behavior in VERDICTS else "FAILED"


def test_name(driver: str, side: str, case: str) -> str:
    return f"websocket/{'autobahn' if driver == 'wstest' else driver}/{side}/{case}"


def case_result(rep: dict, entry: dict, side: str, driver: str, report_path: str = "") -> CaseResult:
    """One case from its index.json entry and its per-case report (either may lack fields)."""
    case = rep.get("id") or entry.get("id")
    behavior = rep.get("behavior", entry.get("behavior", "FAILED"))
    behavior_close = rep.get("behaviorClose", entry.get("behaviorClose", "FAILED"))
    exp = rep.get("expected") or {}
    expected = _text(rep.get("expectation"))
    if exp:
        expected += " | Autobahn accepts " + "; ".join(f"{k}: {_events(v)}" for k, v in exp.items())
    actual = _text(rep.get("result"))
    if "received" in rep:
        actual += f" | received {_events(rep['received'])}"
    ec = rep.get("expectedClose") or {}
    expected_close = ""
    if ec:
        expected_close = (f"close code in {ec.get('closeCode')}, closed by "
                          f"{'Autobahn' if ec.get('closedByMe') else 'the peer under test'}"
                          f"{', clean' if ec.get('requireClean') else ''}")
    remote = rep.get("remoteCloseCode", entry.get("remoteCloseCode"))
    actual_close = (rep.get("resultClose") or "").strip()
    if rep:
        actual_close += (f" | remote close code {remote}, {'clean' if rep.get('wasClean') else 'not clean'}"
                         f"{', dropped by Autobahn' if rep.get('droppedByMe') else ''}")
    v = verdict_of(behavior, behavior_close)
    return CaseResult(test_name(driver, side, case), case, side, driver, _text(rep.get("description")),
                      behavior, behavior_close, v, "failed" if v == "FAILED" else "passed",
                      MAP.requirements(case, side), expected, actual, expected_close, actual_close, remote,
                      entry.get("duration", rep.get("duration")), report_path)


def parse_reports(outdir: Path, side: str, driver: str, agent: Optional[str] = None) -> Dict[str, CaseResult]:
    """``outdir/index.json`` and its per-case JSON reports -> {case id: CaseResult}."""
    idx_file = Path(outdir) / "index.json"
    if not idx_file.exists():
        raise ToolError(f"{driver} wrote no {idx_file}")
    idx = json.loads(idx_file.read_text(encoding="utf-8"))
    if not idx:
        return {}
    if agent is None or agent not in idx:
        if len(idx) != 1:
            raise ToolError(f"{idx_file}: agents {sorted(idx)}; expected {agent!r}")
        agent = next(iter(idx))
    out = {}
    for case, entry in idx[agent].items():
        rf = entry.get("reportfile")
        rep = {}
        if rf and (Path(outdir) / rf).exists():
            try:
                rep = json.loads((Path(outdir) / rf).read_text(encoding="utf-8"))
            except ValueError:
                rep = {}
        rep.setdefault("id", case)
        out[case] = case_result(rep, dict(entry, id=case), side, driver, str(Path(outdir) / rf) if rf else "")
    return out


# ------------------------------------------------------------------ running the drivers

def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _wait_port(host: str, port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ToolError(f"the driver exited (status {proc.returncode}) before listening on {host}:{port}")
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise ToolError(f"the driver did not listen on {host}:{port} within {timeout:g} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()


def _run(cmd: List[str], log_file: Path, timeout: float, cwd: Path) -> int:
    with open(log_file, "wb") as lf:
        p = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=str(cwd), start_new_session=True)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop(p)
            raise ToolError(f"{Path(cmd[0]).name} did not finish within {timeout:g} s (log: {log_file})")


def _fmt_addr(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def drive_server(driver: str, exe: Path, host: str, port: int, agent: str, cases: List[str], exclude: List[str],
                 outdir: Path, timeout: float) -> Path:
    """Runs ``driver`` in fuzzingclient mode against ws://host:port; returns its report directory."""
    outdir.mkdir(parents=True, exist_ok=True)
    if driver == "wstest":
        spec = {"outdir": str(outdir), "servers": [{"agent": agent, "url": f"ws://{_fmt_addr(host, port)}"}],
                "cases": cases, "exclude-cases": exclude, "exclude-agent-cases": {}}
        sf = outdir / "fuzzingclient.json"
        sf.write_text(json.dumps(spec, indent=1))
        _run([str(exe), "-m", "fuzzingclient", "-s", str(sf)], outdir / "wstest.log", timeout, outdir)
    else:
        cmd = [str(exe), "-m", "fuzzingclient", "-o", str(outdir)]
        for c in cases:
            cmd += ["-i", c]
        for c in exclude:
            cmd += ["-x", c]
        _run(cmd + [_fmt_addr(host, port)], outdir / "kosoku.log", timeout, outdir)  # exit 1 on failures: read the index
    return outdir


def drive_client(driver: str, exe: Path, client_cmd: str, agent: str, cases: List[str], exclude: List[str],
                 outdir: Path, timeout: float, cwd: Optional[str]) -> (Path, int, str):
    """Runs ``driver`` in fuzzingserver mode and the client under test against it; returns the
    report directory, the client's exit status and the tail of its output."""
    outdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    if driver == "wstest":
        spec = {"url": f"ws://127.0.0.1:{port}", "outdir": str(outdir), "cases": cases, "exclude-cases": exclude,
                "exclude-agent-cases": {}}
        sf = outdir / "fuzzingserver.json"
        sf.write_text(json.dumps(spec, indent=1))
        cmd = [str(exe), "-m", "fuzzingserver", "-s", str(sf)]
    else:
        cmd = [str(exe), "-m", "fuzzingserver", "-o", str(outdir)]
        for c in cases:
            cmd += ["-i", c]
        for c in exclude:
            cmd += ["-x", c]
        cmd.append(f"127.0.0.1:{port}")
    lf = open(outdir / f"{driver}.log", "wb")
    srv = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=str(outdir), start_new_session=True)
    try:
        _wait_port("127.0.0.1", port, srv, 30)
        ccmd = shlex.split(client_cmd) + ["--connect", f"127.0.0.1:{port}", "--agent", agent]
        with open(outdir / "client.log", "wb") as cl:
            try:
                c = subprocess.Popen(ccmd, stdout=cl, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
            except OSError as e:
                raise StartError(f"the client could not start: {e}")
            try:
                rc = c.wait(timeout)
            except subprocess.TimeoutExpired:
                _stop(c)
                rc = None
        tail = (outdir / "client.log").read_bytes()[-2000:].decode("utf-8", "replace")
        if rc is None:
            tail += f"\n(the client did not finish within {timeout:g} s and was stopped)"
        # the reports are written on the client's /updateReports; give the driver a moment to finish writing
        deadline = time.monotonic() + 3
        while not (outdir / "index.json").exists() and time.monotonic() < deadline and srv.poll() is None:
            time.sleep(0.2)
        return outdir, rc, tail
    finally:
        _stop(srv)
        lf.close()


# ------------------------------------------------------------------ expected failures, comparison

def _xfail_matches(entry: str, r: CaseResult) -> bool:
    # a name glob (websocket/autobahn/server/9.1.*), or a bare case-ID glob (9.1.*) for every driver and side
    return fnmatch.fnmatchcase(r.name, entry) if "/" in entry else fnmatch.fnmatchcase(r.case, entry)


def apply_xfail(results: List[CaseResult], entries: List[str]) -> List[str]:
    """Marks expected failures (failed -> xfailed, passed -> xpassed); returns the unmatched entries."""
    used = set()
    for r in results:
        for e in entries:
            if _xfail_matches(e, r):
                used.add(e)
                r.status = "xfailed" if r.status == "failed" else "xpassed"
                break
    return [e for e in entries if e not in used]


def xfail_applies(entry: str, drivers: List[str], side: str, cases: List[str], exclude: List[str]) -> bool:
    """False for an entry that names, without wildcards, a driver or side that did not run, or cases
    all outside the selection (--cases, --exclude, --quick): one expected-failures file serves every run."""
    parts = entry.split("/")
    case = parts[-1]
    if len(parts) == 4:
        d, sd = parts[1], parts[2]
        if not any(ch in d for ch in "*?[") and {"autobahn": "wstest"}.get(d, d) not in drivers:
            return False
        if not any(ch in sd for ch in "*?[") and sd != side:
            return False
    def selected(c):
        return any(fnmatch.fnmatchcase(c, p) for p in cases) and not any(fnmatch.fnmatchcase(c, p) for p in exclude)

    if any(ch in case for ch in "*?["):
        # a glob applies where it names a selected case; one that names no recorded case (12.*, 13.*)
        # is judged by the run
        hits = [c for c in MAP.known_cases() if fnmatch.fnmatchcase(c, case)]
        return not hits or any(selected(c) for c in hits)
    return selected(case)


def compare(a: Dict[str, CaseResult], b: Dict[str, CaseResult]) -> List[dict]:
    """Per case, where two drivers' verdicts differ (or one ran a case the other did not)."""
    out = []
    for case in sorted(set(a) | set(b), key=case_key):
        x, y = a.get(case), b.get(case)
        vx = f"{x.behavior}/{x.behavior_close}" if x else "not run"
        vy = f"{y.behavior}/{y.behavior_close}" if y else "not run"
        if vx != vy:
            out.append({"case": case, "wstest": vx, "kosoku": vy,
                        "verdict_differs": (x.verdict if x else None) != (y.verdict if y else None),
                        "requirements": MAP.requirements(case)})
    return out


# ------------------------------------------------------------------ reports

def _case_message(r: CaseResult) -> str:
    return (f"Autobahn {r.behavior}/{r.behavior_close}\n{r.description}\nrequirements: {', '.join(r.requirements)}\n"
            f"expected: {r.expected}\nactual:   {r.actual}\n"
            f"expected close: {r.expected_close}\nactual close:   {r.actual_close}")


def report_tests(results: List[CaseResult]) -> List[dict]:
    """The cases as tests of the report model (frameproof.report), by driver, side and case."""
    return [report.test(r.name, r.requirements, r.status, _case_message(r), (r.duration_ms or 0) / 1000,
                        **{k: v for k, v in asdict(r).items() if k not in ("name", "requirements", "status")})
            for r in sorted(results, key=lambda r: (r.driver, r.side, case_key(r.case)))]


def write_junit(path: str, tests: List[dict], duration: float) -> None:
    report.write_junit(path, "frameproof-autobahn", tests, duration,
                       classname=lambda t: f"websocket.autobahn.{t['driver']}.{t['side']}")

def per_requirement(results: List[CaseResult]) -> Dict[str, Dict[str, int]]:
    out = {}
    for r in results:
        for rid in r.requirements:
            d = out.setdefault(rid, {"passed": 0, "failed": 0, "xfailed": 0, "xpassed": 0})
            d[r.status] += 1
    return dict(sorted(out.items(), key=lambda kv: (kv[0].split("-")[1], int(kv[0].split("-")[-1]))))


def summary(results: List[CaseResult], w=print, verbose=False) -> None:
    for driver in DRIVERS:
        rs = sorted((r for r in results if r.driver == driver), key=lambda r: (r.side, case_key(r.case)))
        if not rs:
            continue
        for side in ("server", "client"):
            srs = [r for r in rs if r.side == side]
            if not srs:
                continue
            counts = {v: sum(r.verdict == v for r in srs) for v in VERDICTS}
            w(f"{driver} / {side}: {len(srs)} cases: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
            notable = [r for r in srs if r.verdict in ("NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED")]
            if notable:
                w("  not OK but allowed (NON-STRICT / INFORMATIONAL / UNIMPLEMENTED):")
                for r in notable:
                    w(f"    {r.case:8} {r.behavior + '/' + r.behavior_close:27} {r.description[:80]}")
                    if verbose:
                        w(f"             expected: {r.expected}\n             actual:   {r.actual}")
            bad = [r for r in srs if r.status in ("failed", "xfailed", "xpassed")]
            for r in bad:
                tag = {"failed": "FAILED", "xfailed": "FAILED (expected)", "xpassed": "PASSED but expected to fail"}[r.status]
                w(f"  {tag}: {r.case}  Autobahn {r.behavior}/{r.behavior_close}  [{', '.join(r.requirements)}]")
                w(f"    {r.description}")
                if r.status != "xpassed":
                    w(f"    expected:       {r.expected}")
                    w(f"    actual:         {r.actual}")
                    w(f"    expected close: {r.expected_close}")
                    w(f"    actual close:   {r.actual_close}")
                    if r.report:
                        w(f"    report:         {r.report}")
    reqs = per_requirement(results)
    if reqs:
        w("per requirement (cases, all drivers and sides): " + "; ".join(
            f"{rid} {'FAIL' if d['failed'] or d['xpassed'] else 'ok'} ({d['passed']} passed"
            + "".join(f", {d[k]} {k}" for k in ("failed", "xfailed", "xpassed") if d[k]) + ")"
            for rid, d in reqs.items()))


# ------------------------------------------------------------------ the command

def _split(vals) -> List[str]:
    out = []
    for v in vals or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def add_parser(sub):
    a = sub.add_parser("autobahn", help="run the Autobahn testsuite (wstest, kosoku) against a websocket server or client",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=__doc__.split("\n\n")[0],
                       epilog="exit status: 0 no case FAILED and nothing unexpected; 1 a FAILED case, an expected "
                              "failure that passed, an unmatched --xfail entry or pattern, a driver or the peer gone; "
                              "2 usage error; 3 the server never listened, the client could not start, or a driver could not "
                              "be installed; 5 no case ran (--cases matched nothing)")
    g = a.add_mutually_exclusive_group(required=True)
    g.add_argument("--server", help="HOST:PORT of a running websocket echo server (127.0.0.1 or ::1)")
    g.add_argument("--server-cmd", help='start this server (it prints "LISTENING host:port"), test it, stop it')
    g.add_argument("--client-cmd", help="client command; frameproof appends --connect HOST:PORT --agent NAME "
                                        "(the contract's fp-autobahn-client)")
    a.add_argument("--cases", action="append", help="case globs, comma-separated (default: "
                                                    + ",".join(MAP.DEFAULT_CASES) + ")")
    a.add_argument("--exclude", action="append", help="case globs to leave out, comma-separated")
    a.add_argument("--quick", action="store_true", help="leave out the long 9.* cases (said so in the report)")
    a.add_argument("--driver", choices=["wstest", "kosoku", "both"], default="wstest",
                   help="wstest (the real Autobahn testsuite, default), kosoku, or both and compare them")
    a.add_argument("--agent", default="", help="agent name in Autobahn's reports (default: testee)")
    a.add_argument("--outdir", help="where the drivers write their reports (default: a new temporary directory)")
    a.add_argument("--cwd", help="working directory for --server-cmd / --client-cmd")
    a.add_argument("--timeout", type=float, default=1800.0, help="seconds per driver run (default 1800)")
    a.add_argument("--xfail", help="expected failures: test names or case-ID globs, one a line")
    a.add_argument("--json", help="write a JSON report to this file")
    a.add_argument("--junit", help="write a JUnit XML report to this file")
    a.add_argument("-v", "--verbose", action="store_true", help="expected vs actual for the allowed non-OK cases too")
    a.set_defaults(fn=cmd_autobahn)
    return a


def _host_port(s: str):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


def cmd_autobahn(args) -> int:
    w = lambda s="": print(s, flush=True)
    err = lambda s: print(f"frameproof autobahn: {s}", file=sys.stderr, flush=True)
    started = time.time()
    cases = _split(args.cases) or list(MAP.DEFAULT_CASES)
    exclude = _split(args.exclude)
    notes = []
    if args.quick:
        exclude += [c for c in MAP.LONG_CASES if c not in exclude]
        notes.append("--quick: the long cases " + ", ".join(MAP.LONG_CASES) + " were left out")
    if MAP.selects_nothing(cases, exclude):
        err(f"no Autobahn case matches --cases {','.join(cases)}" + (f" less {','.join(exclude)}" if exclude else ""))
        return report.EXIT_NOTHING_RAN
    agent = args.agent or "testee"
    drivers = list(DRIVERS) if args.driver == "both" else [args.driver]
    side = "client" if args.client_cmd else "server"
    xfail = []
    if args.xfail:
        try:
            xfail = report.read_xfail(args.xfail)
        except OSError as e:
            err(f"--xfail: {e}")
            return 2
    if args.server:
        try:
            host, port = _host_port(args.server)
        except ValueError:
            err(f"--server {args.server!r}: expected HOST:PORT")
            return 2
        if host not in ("127.0.0.1", "::1", "localhost"):
            err("--server: only 127.0.0.1 / ::1 are tested")
            return 2
    outdir = Path(args.outdir) if args.outdir else Path(tempfile.mkdtemp(prefix="fp-autobahn-"))
    outdir.mkdir(parents=True, exist_ok=True)

    exes, unexpected, driver_info = {}, [], {}
    for d in drivers:
        try:
            exes[d] = install_wstest(lambda s: err(s)) if d == "wstest" else install_kosoku(lambda s: err(s))
            driver_info[d] = {"version": WSTEST_VERSION if d == "wstest" else KOSOKU_VERSION, "path": str(exes[d])}
        except (ToolError, subprocess.TimeoutExpired, OSError) as e:
            err(f"{d} could not be installed: {e}")
            return 3
    if "kosoku" in drivers:
        notes += [f"kosoku: {s}" for s in KOSOKU_LIMITS[:2] if side == "server" or "fuzzingclient" not in s]

    results: Dict[str, Dict[str, CaseResult]] = {}
    srv = None
    if args.server_cmd:
        from ...servers import start_server
        try:
            srv = start_server(args.server_cmd, cwd=args.cwd)
        except (RuntimeError, OSError) as e:
            err(str(e))
            return 3
        host, port = srv.host, srv.port
    if side == "server" and ":" in host and "kosoku" in drivers:
        if drivers == ["kosoku"]:
            err(f"kosoku cannot drive an IPv6 server ({host}); use --driver wstest")
            if srv is not None:
                srv.stop()
            return 2
        drivers.remove("kosoku")
        notes.append(f"kosoku left out: it cannot reach the IPv6 address {host}")
    target = f"ws://{_fmt_addr(host, port)}" if side == "server" else args.client_cmd
    w(f"autobahn: {side} under test: {target}; cases {','.join(cases)}"
      + (f" except {','.join(exclude)}" if exclude else "") + f"; drivers {', '.join(drivers)}; reports in {outdir}")
    for n in notes:
        w(f"  note: {n}")
    try:
        for d in drivers:
            t0 = time.monotonic()
            dout = outdir / f"{d}-{side}"
            if dout.exists():
                shutil.rmtree(dout)
            try:
                if side == "server":
                    drive_server(d, exes[d], host, port, agent, cases, exclude, dout, args.timeout)
                    if srv is not None and not srv.alive():
                        unexpected.append(f"the server exited (status {srv.proc.returncode}) during the {d} run")
                else:
                    _, rc, tail = drive_client(d, exes[d], args.client_cmd, agent, cases, exclude, dout,
                                               args.timeout, args.cwd)
                    driver_info[d]["client_exit"] = rc
                    if rc != 0:
                        unexpected.append(f"the client exited with status {rc} under {d}; its output ends:\n{tail}")
                results[d] = parse_reports(dout, side, d, agent if d == "wstest" or side == "client" else None)
            except StartError as e:
                err(str(e))
                return 3
            except ToolError as e:
                unexpected.append(f"{d}: {e}")
                results[d] = {}
            driver_info[d].update(outdir=str(dout), duration_s=round(time.monotonic() - t0, 3), cases=len(results[d]))
            w(f"  {d}: {len(results[d])} cases in {time.monotonic() - t0:.1f} s")
    finally:
        if srv is not None:
            srv.stop()

    flat = [r for d in drivers for r in results.get(d, {}).values()]
    for d in drivers:
        got = results.get(d, {})
        for pat in cases:
            if pat not in exclude and got and not any(fnmatch.fnmatchcase(c, pat) for c in got):
                unexpected.append(f"{d}: the case pattern {pat!r} matched no case")
    ignored = [e for e in xfail if not xfail_applies(e, drivers, side, cases, exclude)]
    if ignored:
        notes.append(f"--xfail entries outside this run's drivers, side or cases (not checked): {', '.join(ignored)}")
    xfail_unmatched = apply_xfail(flat, [e for e in xfail if e not in ignored])
    for e in xfail_unmatched:
        unexpected.append(f"--xfail entry {e!r} matches no case")
    disagreements = compare(results["wstest"], results["kosoku"]) if len(drivers) == 2 else []

    w()
    summary(flat, w, args.verbose)
    if len(drivers) == 2:
        w(f"wstest vs kosoku: {len(disagreements)} case(s) where the drivers disagree"
          + (":" if disagreements else ""))
        for dd in disagreements:
            w(f"  {dd['case']:8} wstest {dd['wstest']:28} kosoku {dd['kosoku']:28} [{', '.join(dd['requirements'])}]")
    for n in notes:
        w(f"note: {n}")
    for u in unexpected:
        w(f"UNEXPECTED: {u}")
    tests = report_tests(flat)
    totals = report.totals(tests)
    verdicts = {v: sum(r.verdict == v for r in flat) for v in VERDICTS}
    rc = 1 if totals["failed"] or totals["xpassed"] or unexpected else (0 if flat else report.EXIT_NOTHING_RAN)
    w(f"autobahn: {len(flat)} results: " + ", ".join(f"{totals[k]} {k}" for k in ("passed", "failed", "xfailed", "xpassed"))
      + f" (verdicts: " + ", ".join(f"{k} {n}" for k, n in verdicts.items()) + f") in {time.time() - started:.1f} s"
      + f" -> exit {rc}")
    if not flat:
        w("autobahn: no case ran")
    if args.json:
        doc = report.make("autobahn", {"name": agent}, tests, side=side, target=target, agent=agent, cases=cases,
                          exclude=exclude, notes=notes, drivers=driver_info, started=started,
                          duration_s=round(time.time() - started, 3), verdicts=verdicts, unexpected=unexpected,
                          xfail_unmatched=xfail_unmatched, disagreements=disagreements)
        report.write(doc, args.json)
        w(f"JSON report: {args.json}")
    if args.junit:
        write_junit(args.junit, tests, time.time() - started)
        w(f"JUnit report: {args.junit}")
    return rc


def main(argv=None) -> int:
    """``python -m frameproof.protocols.websocket.autobahn install``: installs the drivers and prints
    their paths (tools/autobahn/install.sh); anything else is ``frameproof autobahn ...``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["install"]:
        log = lambda s: print(s, file=sys.stderr, flush=True)
        try:
            print(f"WSTEST {install_wstest(log)}")
        except (ToolError, subprocess.TimeoutExpired, OSError) as e:
            print(f"autobahn install: {e}", file=sys.stderr)
            return 3
        try:
            print(f"KOSOKU {install_kosoku(log)}")
        except (ToolError, subprocess.TimeoutExpired, OSError) as e:
            print(f"KOSOKU none: {e}")
        return 0
    ap = argparse.ArgumentParser(prog="python -m frameproof.protocols.websocket.autobahn")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add_parser(sub)
    args = ap.parse_args(["autobahn"] + argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
