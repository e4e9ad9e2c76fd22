"""Autobahn results in frameproof's report model (JSON, JUnit) and the summary printed after a run."""
from __future__ import annotations

from dataclasses import asdict
from typing import Dict, List

from ... import report
from .autobahn_install import DRIVERS
from .autobahn_results import VERDICTS, CaseResult, case_key


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
