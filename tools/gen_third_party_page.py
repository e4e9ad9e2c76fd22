"""Writes docs/third-party.md: the third-party implementations (tools/third-party/*) compared
requirement by requirement, from the suites' JSON reports, so the page says what the suites said.

    .venv/bin/python tools/gen_third_party_page.py --run     # build the wrappers, run their suites, write the page
    .venv/bin/python tools/gen_third_party_page.py           # write the page from the reports already there
    .venv/bin/python tools/gen_third_party_page.py --check   # exit 1 if the page differs from what the reports give

``--run`` writes the reports to reports/third-party/ (``--reports``) with an index.json naming, for each,
the wrapper, protocol, suite and expected-failures file: for every tools/third-party/*/impl.json and each
protocol it lists, ``frameproof run`` on its testee (``"xfail"`` file, profile ``ci`` or its ``"profile"``),
``frameproof net`` on its server for each of the protocol's network profiles (``"xfail_net"``), and the
protocol's own matrix suites (``Protocol.matrix_suites``, profile ``ci``: for websocket the Autobahn
testsuite, with ``"xfail_autobahn"``). Every difference the page lists comes with
its reason, read from the expected-failures file (the comment block above each entry); a failure no file
expects is shown as such, with the suite's own message.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "conformance"))
from frameproof import protocols as registry  # noqa: E402
from frameproof import spec as fspec  # noqa: E402

THIRD = ROOT / "tools" / "third-party"
PAGE = ROOT / "docs" / "third-party.md"


def wrappers():
    out = []
    for f in sorted(THIRD.glob("*/impl.json")):
        d = json.loads(f.read_text())
        d["dir"] = f.parent
        out.append(d)
    return out


def argv_of(impl, key):
    return [str(impl["dir"] / a) if (impl["dir"] / a).exists() else a for a in impl[key]]


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def xfail_entries(path: Path):
    """[(pattern, reason)]: each entry with the comment block above it (a block starts after a blank
    line, after entries, or after a bare '#' line)."""
    out, comment, after_entry = [], [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if s.startswith("#"):
            if after_entry or not s.lstrip("#").strip():
                comment = []
            if s.lstrip("#").strip():
                comment.append(s.lstrip("#").strip())
            after_entry = False
        elif s:
            out.append((s.lstrip("~").strip(), " ".join(comment).strip()))
            after_entry = True
        else:
            comment, after_entry = [], False
    return out


def _may_pass(path: Path) -> set:
    """The entries written '~ name' (frameproof.report.read_xfail_flaky)."""
    from frameproof.report import read_xfail_flaky
    return read_xfail_flaky(path)


# ------------------------------------------------------------------ running the suites

def _fp(args, log):
    cmd = [sys.executable, "-m", "frameproof.cli"] + args
    print("$ " + " ".join(shlex.quote(c) for c in cmd[2:]), flush=True)
    with open(log, "a") as lf:
        lf.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        lf.flush()
        return subprocess.call(cmd, cwd=ROOT, stdout=lf, stderr=subprocess.STDOUT)


def run_all(reports: Path, extra: bool, only=()):
    """Every wrapper's suites (or, with `only`, those wrappers' alone: the other reports and their index
    entries are kept as they are)."""
    reports.mkdir(parents=True, exist_ok=True)
    idx = reports / "index.json"
    index = [e for e in json.loads(idx.read_text()) if e["name"] not in only] if only and idx.exists() else []
    for f in reports.glob("*--*.json"):
        if not only or f.name.split("--", 1)[0] in only:
            f.unlink()
    log = reports / "run.log"
    log.write_text("")

    def run(name, proto, suite, title, args, xfail=None):
        if "--xfail" in args:
            xfail = args[args.index("--xfail") + 1]
        elif xfail:
            args = args + ["--xfail", str(xfail)]
        f = reports / f"{name}--{proto}--{suite}.json"
        _fp(args + ["--json", str(f)], log)
        if f.exists():
            index.append({"file": f.name, "name": name, "protocol": proto, "suite": suite, "title": title,
                          "xfail": str(xfail) if xfail else None})

    for impl in wrappers():
        name = impl["name"]
        if only and name not in only:
            continue
        print(f"[{name}] build", flush=True)
        if subprocess.call(impl["build"], cwd=impl["dir"], stdout=subprocess.DEVNULL) != 0:
            print(f"[{name}] build FAILED: no results", flush=True)
            continue
        for proto in impl["protocols"]:
            if "testee" in impl:
                xf = (impl.get("xfail") or {}).get(proto)
                run(name, proto, "codec", f"codec suite, {proto}",
                    ["run", "--testee", " ".join(map(shlex.quote, argv_of(impl, "testee"))), "--protocol", proto,
                     "--profile", impl.get("profile", "ci")], impl["dir"] / xf if xf else None)
            if "server" in impl:
                server = " ".join(map(shlex.quote, argv_of(impl, "server")))
                for label, codec in registry.get(proto).net_profiles():
                    if label in (impl.get("skipped_net") or {}):
                        continue  # a profile the library cannot express: said on the page (skipped_net)
                    xf = (impl.get("xfail_net") or {}).get(label)
                    c = json.dumps(codec.to_json())
                    run(name, proto, f"net-{slug(label)}", f"network suite, {label}",
                        ["net", "--codec", c, "--name", name,
                         "--server-cmd", f"{server} --codec {shlex.quote(c)} --listen 127.0.0.1:0"],
                        impl["dir"] / xf if xf else None)
            if extra:
                d = dict(impl, dir=str(impl["dir"]))
                for _, label, argv in registry.get(proto).matrix_suites(
                        d, lambda key: " ".join(map(shlex.quote, argv_of(impl, key))) if key in impl else None, "ci"):
                    run(name, proto, slug(label), label, list(argv))

    (reports / "index.json").write_text(json.dumps(index, indent=1) + "\n")


# ------------------------------------------------------------------ the page

def load_reports(reports: Path):
    """{name: {(protocol, suite): (index entry, report)}} from reports/third-party/index.json."""
    out = {}
    idx = reports / "index.json"
    for e in json.loads(idx.read_text()) if idx.exists() else []:
        f = reports / e["file"]
        if f.exists():
            out.setdefault(e["name"], {})[(e["protocol"], e["suite"])] = (e, json.loads(f.read_text()))
    return out


def _reason_for(test, entries):
    for pat, why in entries:
        if fnmatch.fnmatchcase(test["name"], pat) or test.get("case") and fnmatch.fnmatchcase(test["case"], pat):
            return why
    return None


def _suite_order(key):
    proto, suite = key
    return (registry.names().index(proto) if proto in registry.names() else 99,
            0 if suite == "codec" else 1 if suite.startswith("net-") else 2, suite)


def _totals_cell(doc):
    t = doc["totals"]
    ok = t["failed"] == 0 and t["xpassed"] == 0
    n = t["passed"] + t["failed"] + t["xfailed"] + t["xpassed"]
    s = f"{'✓' if ok else '✗'} {t['passed']}/{n}"
    if t.get("skipped"):
        s += f" ({t['skipped']} skip)"
    if t["xfailed"]:
        s += f" ({t['xfailed']} xfail)"
    if t["failed"]:
        s += f" ({t['failed']} unexpected)"
    return s


def _req_cell(counts):
    """One implementation's results on one requirement, over all its suites."""
    p = sum(c["passed"] for c in counts)
    x = sum(c["xfailed"] + c["failed"] for c in counts)
    if not p and not x:
        return "·" if any(c.get("skipped") for c in counts) else ""
    if not x:
        return f"✓ {p}"
    return f"✗ {x} of {p + x}"


INTRO = """\
# Third-party implementations

frameproof run on code nobody in this project wrote: thin wrappers (a testee or an echo server) around
established libraries, under `tools/third-party/`, each with expected-failure files that list every
difference between the library and the spec with its reason. The wrappers add no checks of their own:
what the suites see is the library's behaviour.

_Generated by `tools/gen_third_party_page.py` from the suites' JSON reports (`reports/third-party/`, runs of
{date}); do not edit by hand: `.venv/bin/python tools/gen_third_party_page.py --run` runs every suite again
and rewrites this page._

How the suites ran: the codec suite (`frameproof run`) on each testee with the wrapper's expected-failures
file (profile `ci`, or the wrapper's impl.json `"profile"`); the network suite (`frameproof net`) on each
echo server with the spec's default limits; each protocol's own suites as `frameproof matrix` runs them
(websocket: Autobahn, `frameproof autobahn`, wstest 25.10.1, categories 1-7, 9, 10, as server with a 64 MiB
limit, as tools/autobahn/peers.py runs every server, and as client where the wrapper has one). Where a
wrapper's server offers permessage-deflate (impl.json `"websocket_extensions"`: websockets, ws), the network
suite runs again with the extension on (spec/websocket-deflate.md, the `WSD-*` cases) and so does Autobahn, on a
sample of 12.* and 13.* (one case of each of their 12 groups; the reference implementations run all 216 in the
main job). gorilla's compression is left off: it has no context takeover (its README here). A library
without a frame layer (gorilla) or whose parser reports messages, not frames (ws) has no `decode` results:
those tests are skipped, never counted as passed. The websocket testees name each error's offset from a
length-only walk over the input (the libraries do not report where the offending frame starts); everything
else the suites judge is the library's own output.
"""


def _two_views(res, names) -> list:
    """Every library judged twice over all its reports (report.py ``levels``): by this spec, and by the
    RFC alone (``--level rfc``), the spec's own decisions and the RFC's SHOULDs listed apart."""
    out = ["", "## Two views: this spec, and the RFC alone", "",
           "The requirements each library breaks in any suite (expected failures included), judged by this "
           "spec (`--level spec`, the default) and by the RFC's and upstream's MUSTs alone (`--level rfc`), "
           "where the spec's own decisions (\"stricter than the RFC\") and the RFC's SHOULDs are listed apart "
           "and fail nothing (spec/harness.md, \"Requirement sources\").", "",
           "| implementation | breaks, this spec | breaks, RFC alone | stricter than the RFC | RFC SHOULDs |",
           "|---|---|---|---|---|"]
    for n in names:
        lv = [d["levels"] for _, d in res.get(n, {}).values() if isinstance(d, dict) and isinstance(d.get("levels"), dict)]
        if not lv:
            continue

        def union(view, key):
            got = sorted({r for x in lv for r in x.get(view, {}).get(key, [])}, key=_id_order)
            return ", ".join(got) or "none"
        out.append(f"| {n} | {union('spec', 'deviations')} | {union('rfc', 'deviations')} | "
                   f"{union('rfc', 'stricter_requirements')} | {union('rfc', 'should_requirements')} |")
    return out


def _id_order(rid: str):
    head, _, num = rid.rpartition("-")
    return (head, int(num) if num.isdigit() else 0)


def render(reports: Path) -> str:
    impls = {i["name"]: i for i in wrappers()}
    res = load_reports(reports)
    names = sorted(set(impls) | set(res))
    reqs = fspec.requirements()
    stamps = sorted(time.strftime("%Y-%m-%d", time.gmtime(d["started"])) if isinstance(d.get("started"), (int, float))
                    else str(d.get("started", ""))[:10] for r in res.values() for _, d in r.values() if d.get("started"))
    lines = INTRO.format(date=stamps[0] if stamps else "no date").splitlines() + [
        "", "## The wrappers", "",
        "| implementation | library | protocols | testee | echo server | expected-failure files |",
        "|---|---|---|---|---|---|"]
    for n in names:
        i = impls.get(n)
        files = sorted({Path(e["xfail"]).name for e, _ in res.get(n, {}).values() if e.get("xfail")})
        xf = ", ".join(f"`{f}`" for f in files) or "—"
        lines.append(f"| {n} | {i.get('upstream', '')} | {', '.join(i['protocols'])} | "
                     f"{'`' + ' '.join(i['testee']) + '`' if 'testee' in i else '—'} | "
                     f"{'`' + ' '.join(i['server']) + '`' if 'server' in i else '—'} | {xf} |")
    not_run = [(n, label, why) for n in names for label, why in (impls[n].get("skipped_net") or {}).items()]
    if not_run:
        lines += ["", "Network profiles a library cannot express, not run (`skipped_net` in its impl.json):", ""]
        lines += [f"- {n}, {label}: {why}" for n, label, why in not_run]
    racy = [(n, e, why) for n in names for key in ("xfail", "xfail_net", "xfail_autobahn")
            for xf in (impls[n].get(key) or {}).values()
            for e, why in xfail_entries(THIRD / n / xf) if e in _may_pass(THIRD / n / xf)]
    if racy:
        lines += ["", "Expected failures that may also pass (`~` in the file: a race inside the library, so a run "
                      "may show them passed):", ""]
        lines += [f"- {n}: `{e}`: {why}" for n, e, why in racy]
    lines += ["", "## Totals", "",
              "Each cell: tests passed / run, skipped and expected failures (xfail) counted apart; ✓ when the run "
              "had no unexpected result (exit 0).", ""]
    suites = sorted({k for r in res.values() for k in r}, key=_suite_order)
    titles = {k: e["title"] for r in res.values() for k, (e, _) in r.items()}
    lines += [f"| suite | {' | '.join(names)} |", "|---|" + "---|" * len(names)]
    for k in suites:
        lines.append(f"| {titles[k]} | " + " | ".join(_totals_cell(res[n][k][1]) if k in res.get(n, {}) else "—"
                                                       for n in names) + " |")
    lines += _two_views(res, names)
    for proto in registry.names():
        ids = [r for r, v in reqs.items() if v.protocol == proto]
        cols = [n for n in names if any(p == proto for p, _ in res.get(n, {}))]
        if not cols:
            continue
        ran = sorted({titles[k] for k in suites if k[0] == proto})
        lines += ["", f"## {proto}, requirement by requirement", "",
                  f"All suites together ({'; '.join(ran)}): ✓ N: N tests passed, none failed; ✗ K of N: K of the N "
                  "tests that ran failed (expected or not, listed below); · only skipped; empty: no test reaches it.", "",
                  f"| requirement | level | {' | '.join(cols)} |", "|---|---|" + "---|" * len(cols)]
        for rid in ids:
            cells = [_req_cell([d["requirements"][rid] for (p, _), (e, d) in res.get(n, {}).items()
                                if p == proto and rid in d.get("requirements", {})]) for n in cols]
            if any(cells):
                lines.append(f"| {rid} | {reqs[rid].level} | " + " | ".join(cells) + " |")
        lines += ["", f"### Where they differ from spec/{proto}.md", ""]
        for n in cols:
            groups = {}  # (suite title, reason, expected?) -> (requirements, tests): one row per cause
            soft = {}
            for k in sorted(res[n], key=_suite_order):
                if k[0] != proto:
                    continue
                e, d = res[n][k]
                entries = xfail_entries(Path(e["xfail"])) if e.get("xfail") and Path(e["xfail"]).exists() else []
                for t in d["tests"]:
                    if t.get("verdict") in ("NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED"):
                        soft.setdefault(e["title"], []).append(f"{t.get('case', t['name'])} {t['verdict']}")
                    if t["status"] not in ("xfailed", "failed"):
                        continue
                    first = [ln.strip() for ln in (t.get("message") or "").strip().splitlines() if ln.strip()][:3]
                    why = _reason_for(t, entries) or " / ".join(first)
                    rq, tests = groups.setdefault((e["title"], why, t["status"] == "xfailed"), ([], []))
                    rq += [r for r in (t.get("broken") or t["requirements"]) if r not in rq]
                    tests.append(f"`{t['case']}`" if t.get("case") else f"`{t['name']}`")
            rows = [f"| {', '.join(sorted(rq, key=lambda r: ids.index(r) if r in ids else 999))} | {title}: "
                    f"{', '.join(tests)} | {'expected' if expected else '**not expected**'} | "
                    f"{why[:900].replace('|', '/')} |" for (title, why, expected), (rq, tests) in groups.items()]
            lines += [f"**{n}**" + ("" if rows else ": no difference found by the suites that ran."), ""]
            if rows:
                lines += ["| requirements | tests | | why (from the expected-failures file) |", "|---|---|---|---|"] + rows + [""]
            for title, cases in soft.items():
                lines += [f"Verdicts that are not failures (allowed), {title}: {', '.join(cases)}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="store_true", help="build every wrapper and run its suites first")
    ap.add_argument("--no-extra", action="store_true",
                    help="with --run: leave out the protocols' own suites (Autobahn)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="with --run: run only this wrapper's suites (repeatable), keeping the others' reports")
    ap.add_argument("--reports", default=str(ROOT / "reports" / "third-party"))
    ap.add_argument("--out", default=str(PAGE))
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if the page is stale")
    args = ap.parse_args()
    reports = Path(args.reports)
    if args.run:
        t0 = time.monotonic()
        unknown = set(args.only) - {w["name"] for w in wrappers()}
        if unknown:
            ap.error(f"--only: no wrapper named {', '.join(sorted(unknown))}")
        run_all(reports, not args.no_extra, tuple(args.only))
        print(f"suites run in {time.monotonic() - t0:.0f} s; reports in {reports}")
    text = render(reports)
    out = Path(args.out)
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is stale: run {Path(__file__).name}")
            return 1
        print(f"{out} is up to date")
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
