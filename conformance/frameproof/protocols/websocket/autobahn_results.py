"""The Autobahn drivers' reports (index.json and one JSON report a case) as frameproof results: one
``CaseResult`` a case, with Autobahn's verdicts, expected vs actual as Autobahn states them and the
WS-* requirements the case checks (autobahn_map.py)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from . import autobahn_map as MAP
from .autobahn_install import ToolError

#: behaviorClose values that fail a case (autobahntestsuite case/case.py)
CLOSE_FAILS = ("FAILED", "WRONG CODE", "UNCLEAN", "FAILED BY CLIENT")
VERDICTS = ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED")


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
