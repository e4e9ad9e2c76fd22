"""`frameproof report`: the JSON reports of a run made into pages a person reads (issue 31).

Input: report files, or directories searched for them (a `frameproof matrix` output directory keeps
every cell's report in ``cells/``); anything that is not a report of the model (``report.problems``)
is left out and counted. Output, in ``--out``: ``index.html``; one ``<implementation>.html`` a page
with its suites, every requirement reached with its result, each unexpected result with its message
(requirement, expected, actual, minimal input: the suites write them so) and each expected failure
with the reason its expected-failures file gives; and one SVG badge per implementation and protocol
(``<implementation>-<protocol>.svg``: passed / ran, green when nothing failed unexpectedly) for a
README. The pages are rendered with Jinja2 (autoescaped) from ``templates/``.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

from . import report, spec

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Suite:
    doc: dict
    file: str

    @property
    def impl(self) -> str:
        return self.doc["implementation"]["name"]

    @property
    def protocols(self) -> List[str]:
        """The protocols its tests belong to (a test's ``protocol``, else its requirements' spec)."""
        reqs = spec.requirements()
        found = {t.get("protocol") or next((reqs[r].protocol for r in t["requirements"] if r in reqs), None)
                 for t in self.doc["tests"]}
        return sorted(p for p in found if p)

    @property
    def title(self) -> str:
        d, protos = self.doc, ", ".join(self.protocols) or "?"
        return {"run": f"codec suite, {protos}", "net": f"network suite, {protos}",
                "client": f"load client, {protos}", "stress": f"stress group, {protos}",
                "autobahn": f"Autobahn testsuite (as {d.get('side', '?')})",
                "fuzz": f"differential fuzzing, {protos}"}.get(d["kind"], d["kind"])


@dataclass
class Collected:
    suites: List[Suite] = field(default_factory=list)
    ignored: List[str] = field(default_factory=list)  # JSON files that are not reports of the model


def collect(inputs: Iterable[str]) -> Collected:
    out = Collected()
    files: List[Path] = []
    for i in inputs:
        p = Path(i)
        files += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            out.ignored.append(str(f))
            continue
        if isinstance(doc, dict) and "report_version" in doc and not report.problems(doc):
            out.suites.append(Suite(doc, str(f)))
        else:
            out.ignored.append(str(f))
    return out


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def _env():
    import jinja2  # a dependency of the package (templates/)
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              trim_blocks=False, keep_trailing_newline=True)


def badge_svg(env, label: str, value: str, ok: bool) -> str:
    # text widths at Verdana 11 px: about 6.5 px a character, plus 10 px of padding each side
    w1, w2 = int(6.5 * len(label)) + 10, int(6.5 * len(value)) + 10
    return env.get_template("badge.svg.j2").render(label=label, value=value, w1=w1, w2=w2,
                                                  color="#2ea043" if ok else "#cf222e")


def _requirement_rows(suites: List[Suite]) -> List[dict]:
    reqs = spec.requirements()
    agg: Dict[str, dict] = {}
    for s in suites:
        for rid, c in s.doc["requirements"].items():
            a = agg.setdefault(rid, {**report.zero(), "suites": []})
            for k in report.STATUSES:
                a[k] += c.get(k, 0)
            a["suites"].append(s.title)
    rows = []
    for rid in sorted(agg, key=report._req_sort):
        a, q = agg[rid], reqs.get(rid)
        ran = a["passed"] + a["failed"] + a["xfailed"] + a["xpassed"]
        if a["failed"] or a["xpassed"]:
            cell, css = f"✗ {a['failed'] + a['xpassed']} of {ran}", "bad"
        elif a["xfailed"]:
            cell, css = f"~ {a['xfailed']} of {ran}", "xf"
        elif ran:
            cell, css = f"✓ {ran}", "ok"
        else:
            cell, css = "·", "dim"
        rows.append({"id": rid, "level": q.level if q else "?", "source": q.source if q else "?", "cell": cell,
                     "css": css, "suites": "; ".join(sorted(set(a["suites"])))})
    return rows


def _protocol_badges(env, impl: str, suites: List[Suite], out: Path) -> List[dict]:
    by_proto: Dict[str, dict] = {}
    for s in suites:
        for t in s.doc["tests"]:
            p = t.get("protocol") or (s.protocols[0] if len(s.protocols) == 1 else None)
            if p:
                c = by_proto.setdefault(p, report.zero())
                c[t["status"]] += 1
    badges = []
    for p, c in sorted(by_proto.items()):
        ran = c["passed"] + c["failed"] + c["xfailed"] + c["xpassed"]
        ok = not c["failed"] and not c["xpassed"]
        value = f"{c['passed']}/{ran} passed" + (f", {c['xfailed']} xfail" if c["xfailed"] else "")
        name = f"{slug(impl)}-{slug(p)}.svg"
        (out / name).write_text(badge_svg(env, f"frameproof {p}", value, ok), encoding="utf-8")
        badges.append({"file": name, "alt": f"frameproof {p}: {value}", "protocol": p, "ok": ok})
    return badges


def render_page(env, impl: str, suites: List[Suite], out: Path, generated: str) -> dict:
    badges = _protocol_badges(env, impl, suites, out)
    failures, expected = [], []
    for s in suites:
        for t in s.doc["tests"]:
            if t["status"] in ("failed", "xpassed"):
                failures.append({"name": t["name"], "status": t["status"], "suite": s.title,
                                 "requirements": t.get("broken") or t["requirements"],
                                 "message": (t.get("message") or "(no message)")[:6000]})
            elif t["status"] == "xfailed":
                expected.append({"name": t["name"], "requirements": t.get("broken") or t["requirements"],
                                 "reason": t.get("xfail_reason") or t.get("level_verdict") or "listed as expected",
                                 "message": (t.get("message") or "")[:4000]})
    suites_rows = [{"title": s.title, "totals": s.doc["totals"], "file": Path(s.file).name,
                    "views": report.views_text(s.doc.get("levels") or report.level_views(s.doc["tests"]))}
                   for s in sorted(suites, key=lambda s: s.title)]
    html = env.get_template("report_page.html.j2").render(
        impl=impl, suites=suites_rows, badges=badges, requirements=_requirement_rows(suites), failures=failures,
        expected=expected, unexpected=len(failures), generated=generated)
    name = f"{slug(impl)}.html"
    (out / name).write_text(html, encoding="utf-8")
    return {"impl": impl, "file": name, "badges": badges, "suites": len(suites), "unexpected": len(failures)}


def write_site(inputs: Iterable[str], out_dir: str) -> Tuple[List[dict], Collected]:
    got = collect(inputs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = _env()
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    by_impl: Dict[str, List[Suite]] = {}
    for s in got.suites:
        by_impl.setdefault(s.impl, []).append(s)
    pages = [render_page(env, impl, suites, out, generated) for impl, suites in sorted(by_impl.items())]
    (out / "index.html").write_text(env.get_template("report_index.html.j2").render(
        pages=pages, n_reports=len(got.suites), generated=generated), encoding="utf-8")
    return pages, got
