"""The one report model every suite of the CLI writes (`run`, `net`, `net --client`, `net --stress`,
`autobahn`, `fuzz`): whatever reads one report reads them all (the matrix, the docs, a user's CI).

A report is a JSON object with at least:

- ``report_version`` (1) and ``kind``: ``run``, ``net``, ``client``, ``stress``, ``autobahn`` or ``fuzz``;
- ``implementation``: ``{"name": ...}`` (from ``--name``, else the testee's hello, else the command),
  with ``version``, ``protocols``, ``features`` where the testee said them;
- ``totals``: how many tests ended in each of STATUSES;
- ``requirements``: per requirement ID, the same counts (a failure counts under the requirements it
  breaks, which may be narrower than the ones the test names), and its ``level`` where the spec has it;
- ``tests``: one object a test with ``name``, ``requirements``, ``status`` and ``message`` (expected
  and actual, for a failure), ``duration`` in seconds; a failed test may name ``broken`` requirements.

Added fields (readers of the fields above need not know them):

- ``level``: ``spec`` or ``rfc``, the level the run's verdict was taken at (``--level``);
- ``levels``: both views of the run, whatever its level (see ``level_views``);
- a test that failed (or failed as expected) has ``rfc_verdict``: how its failure counts at
  ``--level rfc``: ``failed`` (it breaks an RFC MUST, upstream's behaviour or an unlabelled
  requirement), ``stricter`` (only the spec's own decisions, and perhaps SHOULDs) or ``should``
  (only RFC SHOULDs made MUSTs). At ``--level rfc`` a test whose failure is ``stricter`` or
  ``should`` is reported ``xfailed`` with ``level_verdict`` set to that, so that it is no failure
  for a reader of ``status`` and ``totals``.

A kind adds its own fields beside these (a stress run its scenarios, Autobahn its verdicts).

The JSON Schema of the model, kinds included, is ``schemas/report.schema.json`` (published on the docs
site); ``problems`` checks a report against it (jsonschema) and that its totals count its tests, and
``write`` refuses to write a report that has any.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, List, Optional

# Exit statuses of every frameproof command (`frameproof --help` and the README list them)
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DID_NOT_START, EXIT_NOTHING_RAN = 0, 1, 2, 3, 5
REPORT_VERSION = 1
STATUSES = ("passed", "failed", "skipped", "xfailed", "xpassed")
KINDS = ("run", "net", "client", "stress", "autobahn", "fuzz")


def zero() -> Dict[str, int]:
    return {k: 0 for k in STATUSES}


def totals(tests: Iterable[dict]) -> Dict[str, int]:
    out = zero()
    for t in tests:
        out[t["status"]] += 1
    return out


def _req_sort(rid: str):
    parts = rid.split("-")
    return (parts[0], "-".join(parts[1:-1]), int(parts[-1]) if parts[-1].isdigit() else 0)


def per_requirement(tests: Iterable[dict], levels: Optional[Dict[str, str]] = None) -> Dict[str, dict]:
    """Counts per requirement: a failure under the requirement(s) it breaks (``broken``, else the
    test's own), every other status under the test's requirements."""
    out: Dict[str, dict] = {}

    def entry(rid):
        return out.setdefault(rid, zero())

    for t in tests:
        if t["status"] == "failed":
            for rid in t.get("broken") or t["requirements"]:
                entry(rid)["failed"] += 1
            for rid in t["requirements"]:
                entry(rid)
        else:
            for rid in t["requirements"]:
                entry(rid)[t["status"]] += 1
    if levels is None:
        from . import spec
        levels = {rid: r.level for rid, r in spec.requirements().items()}
    return {rid: {"level": levels.get(rid, "?"), **out[rid]} for rid in sorted(out, key=_req_sort)}


LEVELS = ("spec", "rfc")


def _sources() -> Dict[str, str]:
    from . import spec
    return {rid: r.source for rid, r in spec.requirements().items()}


def rfc_verdict(t: dict, sources: Optional[Dict[str, str]] = None) -> str:
    """How a failed test counts at ``--level rfc`` (frameproof.spec.rfc_verdict of what it breaks)."""
    from . import spec
    return spec.rfc_verdict(t.get("broken") or t["requirements"], sources if sources is not None else _sources())


def level_views(tests: Iterable[dict], sources: Optional[Dict[str, str]] = None) -> dict:
    """Both views of a run. ``spec``: the tests that fail (``failed``) and the requirements that the
    implementation breaks (``deviations``: from failed and expected-to-fail tests alike, since an
    expected failure is a deviation all the same). ``rfc``: the same, counting only failures of RFC
    MUSTs, upstream's behaviour and unlabelled requirements, with the others apart (``stricter``:
    the spec's own decisions; ``should``: RFC SHOULDs), as test counts and requirement IDs."""
    sources = sources if sources is not None else _sources()
    spec_v = {"failed": 0, "deviations": []}
    rfc_v = {"failed": 0, "stricter": 0, "should": 0, "deviations": [], "stricter_requirements": [],
             "should_requirements": []}
    dev, by_kind = set(), {"failed": set(), "stricter": set(), "should": set()}
    for t in tests:
        st = t["status"]
        verdict = t.get("level_verdict")  # reclassified at --level rfc: a failure in the spec view
        if st not in ("failed", "xfailed") and not verdict:
            continue
        broken = t.get("broken") or t["requirements"]
        if st == "failed" or verdict:
            spec_v["failed"] += 1
        dev.update(broken)
        v = verdict or t.get("rfc_verdict") or rfc_verdict(t, sources)
        if st == "failed" or verdict:
            rfc_v[v] += 1
        for rid in broken:
            src = sources.get(rid, "")
            kind = "stricter" if src == "spec" else "should" if src == "rfc-should" else "failed"
            by_kind[kind].add(rid)
    spec_v["deviations"] = sorted(dev, key=_req_sort)
    rfc_v["deviations"] = sorted(by_kind["failed"], key=_req_sort)
    rfc_v["stricter_requirements"] = sorted(by_kind["stricter"], key=_req_sort)
    rfc_v["should_requirements"] = sorted(by_kind["should"], key=_req_sort)
    return {"spec": spec_v, "rfc": rfc_v}


def views_text(levels: dict) -> str:
    """One line for both views, e.g. ``spec ✗ 3 / rfc ✓ (2 stricter, 1 SHOULD)``: the number of
    requirements the implementation breaks in each view (expected failures included)."""
    s, r = levels["spec"], levels["rfc"]
    out = f"spec {'✗ ' + str(len(s['deviations'])) if s['deviations'] else '✓'} / " \
          f"rfc {'✗ ' + str(len(r['deviations'])) if r['deviations'] else '✓'}"
    apart = [f"{len(r['stricter_requirements'])} stricter"] if r["stricter_requirements"] else []
    apart += [f"{len(r['should_requirements'])} SHOULD"] if r["should_requirements"] else []
    return out + (f" ({', '.join(apart)})" if apart else "")


def test(name: str, requirements: List[str], status: str, message: str = "", duration: float = 0.0,
         **extra) -> dict:
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    return {"name": name, "requirements": list(requirements), "status": status, "message": message or "",
            "duration": round(float(duration or 0), 4), **extra}


def make(kind: str, implementation: dict, tests: List[dict], levels=None, **extra) -> dict:
    """A report of `kind` from its tests; `extra` fields are the kind's own."""
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r}")
    if not implementation.get("name"):
        raise ValueError("a report names its implementation")
    sources = _sources()
    for t in tests:
        if t["status"] in ("failed", "xfailed") and "rfc_verdict" not in t:
            t["rfc_verdict"] = rfc_verdict(t, sources)
    doc = {"report_version": REPORT_VERSION, "kind": kind, "implementation": implementation,
           "totals": totals(tests), "requirements": per_requirement(tests, levels),
           "level": extra.pop("level", None) or "spec", "levels": level_views(tests, sources)}
    doc.update(extra)
    doc["tests"] = tests
    return doc


SCHEMA_DIR = Path(__file__).parent / "schemas"
_validators: Dict[str, object] = {}


def schema_problems(doc, name: str = "report") -> List[str]:
    """Where `doc` breaks ``schemas/<name>.schema.json`` (JSON Schema 2020-12, checked by jsonschema):
    one line per error, its JSON path first ([] when it follows the schema)."""
    if name not in _validators:
        # dependencies of the package, imported on first use (the CLI starts faster)
        import jsonschema
        from referencing import Registry, Resource
        schemas = [json.loads(f.read_text(encoding="utf-8")) for f in sorted(SCHEMA_DIR.glob("*.schema.json"))]
        registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
        schema = next(s for s in schemas if s["$id"].endswith(f"/{name}.schema.json"))
        _validators[name] = jsonschema.Draft202012Validator(schema, registry=registry)
    errs = sorted(_validators[name].iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message[:300]}" for e in errs]


def problems(doc) -> List[str]:
    """What makes `doc` not a report of this model ([] when it is one): the schema's errors, then
    whether its totals count its tests (which a schema cannot say)."""
    out = schema_problems(doc)
    if not out and totals(doc["tests"]) != doc["totals"]:
        out.append("totals do not count the tests")
    return out


def ran(doc) -> int:
    """How many tests ran (anything but skipped)."""
    t = doc["totals"]
    return t["passed"] + t["failed"] + t["xfailed"] + t["xpassed"]


def read_xfail(path) -> List[str]:
    """An expected-failures file: one test name or glob a line; '#' starts a comment (the reason). A
    leading '~' marks an entry that may also pass (a race in the implementation, its reason saying so):
    see read_xfail_flaky; the names returned here are without it."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip().lstrip("~").strip()
        if line:
            out.append(line)
    return out


def read_xfail_flaky(path) -> set:
    """The entries marked '~': expected to fail, allowed to pass (the codec and network suites; a pass is
    reported as a pass). For a difference that depends on timing inside the implementation only, never
    for one the suite could make deterministic."""
    return {line.split("#", 1)[0].strip().lstrip("~").strip()
            for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip().startswith("~")}


def read_xfail_reasons(path) -> Dict[str, str]:
    """An expected-failures file's entries with their reasons: the comment on the entry's line, else
    the comment lines just above it (as the files write a long reason)."""
    out, above = {}, []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        entry, _, comment = line.partition("#")
        entry, comment = entry.strip().lstrip("~").strip(), comment.strip()
        if not entry:
            above = above + [comment] if comment else []
            continue
        out[entry] = comment or " ".join(above)
        above = []
    return out


def write(doc: dict, path) -> None:
    bad = problems(doc)
    if bad:
        raise ValueError("report does not follow the report model: " + "; ".join(bad))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1), encoding="utf-8")


def write_junit(path, suite: str, tests: List[dict], duration: float, classname=None) -> None:
    """JUnit XML that the common CI readers take: every testsuite and testcase has name, classname
    (suites: the suite name) and time; failures carry the message, expected failures are skipped."""
    import xml.etree.ElementTree as ET
    classname = classname or (lambda t: f"{suite}.{t['name'].split('/')[0]}")
    tot = totals(tests)
    root = ET.Element("testsuites", name=suite, tests=str(len(tests)), time=f"{duration:.3f}",
                      failures=str(tot["failed"] + tot["xpassed"]), errors="0",
                      skipped=str(tot["skipped"] + tot["xfailed"]))
    ts = ET.SubElement(root, "testsuite", name=suite, classname=suite, tests=str(len(tests)),
                       failures=str(tot["failed"] + tot["xpassed"]), errors="0",
                       skipped=str(tot["skipped"] + tot["xfailed"]), time=f"{duration:.3f}")
    for t in tests:
        tc = ET.SubElement(ts, "testcase", classname=classname(t), name=t["name"], time=f"{t['duration']:.3f}")
        props = ET.SubElement(tc, "properties")
        ET.SubElement(props, "property", name="requirements", value=" ".join(t["requirements"]))
        if t["status"] == "failed":
            ET.SubElement(tc, "failure", message=(t["message"].splitlines() or ["failed"])[0][:200]).text = t["message"]
        elif t["status"] == "xpassed":
            ET.SubElement(tc, "failure", message="expected failure passed").text = t["message"]
        elif t["status"] in ("skipped", "xfailed"):
            ET.SubElement(tc, "skipped", message=(t["message"].splitlines() or [t["status"]])[0][:200])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def tidy_junit(path, suite: str = "frameproof") -> None:
    """Makes pytest's JUnit file (behind `run` and `net`) read like write_junit's: the suite named
    `suite`, every testsuite and testcase with name, classname and time, a testcase's classname
    <protocol>.<requirement> from its test name instead of the suite file's."""
    import xml.etree.ElementTree as ET
    tree = ET.parse(path)
    root = tree.getroot()
    root.set("name", suite)
    for ts in root.iter("testsuite"):
        ts.set("name", suite)
        ts.set("classname", suite)
        ts.set("time", ts.get("time") or "0.000")
        for tc in ts.iter("testcase"):
            parts = tc.get("name", "").split("/")
            tc.set("classname", ".".join(parts[:2]) if len(parts) > 1 else suite)
            tc.set("time", tc.get("time") or "0.000")
    tree.write(path, encoding="utf-8", xml_declaration=True)
