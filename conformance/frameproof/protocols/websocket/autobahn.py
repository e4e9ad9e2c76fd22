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
import fnmatch
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from ... import report
from . import autobahn_map as MAP
# the command's parts, one module a job (re-exported here: frameproof.protocols.websocket.autobahn
# is what the tests and tools/autobahn import)
from .autobahn_drive import _fmt_addr, _free_port, _run, _stop, _wait_port, drive_client, drive_server  # noqa: F401
from .autobahn_install import (DRIVERS, KOSOKU_LIMITS, KOSOKU_VERSION, WSTEST_VERSION, StartError,  # noqa: F401
                               ToolError, _Lock, _pip, cache_dir, find_python27, install_kosoku, install_wstest)
from .autobahn_report import _case_message, per_requirement, report_tests, summary, write_junit  # noqa: F401
from .autobahn_results import (CLOSE_FAILS, VERDICTS, CaseResult, _events, _short, _text, case_key,  # noqa: F401
                               case_result, parse_reports, test_name, verdict_of)
from .autobahn_xfail import _xfail_matches, apply_xfail, compare, xfail_applies  # noqa: F401


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
    a.add_argument("--require-implemented", action="store_true",
                   help="an UNIMPLEMENTED verdict fails its case (for a peer that claims the extension the cases "
                        "test, e.g. permessage-deflate in 12.*, 13.*)")
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
    if args.require_implemented:  # the peer claims what these cases test: declining it is a failure
        for r in flat:
            if r.verdict == "UNIMPLEMENTED":
                r.status = "failed"
                r.actual = "the extension was declined (--require-implemented) | " + r.actual
        notes.append("--require-implemented: an UNIMPLEMENTED verdict fails its case")
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
