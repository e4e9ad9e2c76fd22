"""Expected failures (``--xfail``) over Autobahn results, and the comparison of two drivers' verdicts."""
from __future__ import annotations

import fnmatch
from typing import Dict, List

from . import autobahn_map as MAP
from .autobahn_results import CaseResult, case_key


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
