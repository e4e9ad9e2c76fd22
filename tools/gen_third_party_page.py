"""Writes docs/third-party.md: the third-party implementations (tools/third-party/*) compared
requirement by requirement, from the suites' JSON reports, so the page says what the suites said.

    .venv/bin/python tools/gen_third_party_page.py --run     # build the wrappers, run their suites, write the page
    .venv/bin/python tools/gen_third_party_page.py           # write the page from the reports already there
    .venv/bin/python tools/gen_third_party_page.py --check   # exit 1 if the page differs from what the reports give

Reports live in reports/third-party/ (``--reports``): ``<name>-codec-<protocol>.json`` (``frameproof run``
on the wrapper's testee with its ``"xfail"`` file), ``<name>-net-<label>.json`` (``frameproof net`` on its
server with its ``"xfail_net"`` file) and ``<name>-autobahn-server.json`` (``frameproof autobahn`` on a
websocket server, wstest, categories 1-7, 9, 10, with the 64 MiB frame limit tools/autobahn/peers.py gives
every server). ``--run`` writes them for every tools/third-party/*/impl.json, and runs tools/autobahn/peers.py
for the third-party Autobahn peers that have no impl.json (websockets). Every difference the page lists comes
with its reason, read from the expected-failures files (the comment above each entry); a failure that no
file expects is shown as such.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
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
AUTOBAHN_CODEC = json.dumps({"protocol": "websocket", "limits": {"max_payload": 64 * 1024 * 1024}})
# the limits tools/autobahn/peers.py's third-party echo servers run with (websockets: max_size 64 MiB)
NET_CODEC_PEERS = json.dumps({"protocol": "websocket", "limits": {"max_payload": 64 << 20},
                              "websocket": {"max_message": 64 << 20}})


def wrappers():
    out = []
    for f in sorted(THIRD.glob("*/impl.json")):
        d = json.loads(f.read_text())
        d["dir"] = f.parent
        out.append(d)
    return out


def argv_of(impl, key):
    return [str(impl["dir"] / a) if (impl["dir"] / a).exists() else a for a in impl[key]]


def xfail_entries(path: Path):
    """[(pattern, reason)]: each entry with the comment block right above it."""
    out, comment, after_entry = [], [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if s.startswith("#"):
            if after_entry or not s.lstrip("#").strip():
                comment = []  # a new block: after entries, or after a bare '#' line
            if s.lstrip("#").strip():
                comment.append(s.lstrip("#").strip())
            after_entry = False
        elif s:
            out.append((s, " ".join(comment).strip()))
            after_entry = True
        else:
            comment, after_entry = [], False
    return out


# ------------------------------------------------------------------ running the suites

def _fp(args, log):
    cmd = [sys.executable, "-m", "frameproof.cli"] + args
    print("$ " + " ".join(shlex.quote(c) for c in cmd[2:]), flush=True)
    with open(log, "a") as lf:
        lf.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        lf.flush()
        return subprocess.call(cmd, cwd=ROOT, stdout=lf, stderr=subprocess.STDOUT)


def run_all(reports: Path, autobahn: bool):
    reports.mkdir(parents=True, exist_ok=True)
    log = reports / "run.log"
    log.write_text("")
    for impl in wrappers():
        name = impl["name"]
        print(f"[{name}] build", flush=True)
        if subprocess.call(impl["build"], cwd=impl["dir"], stdout=subprocess.DEVNULL) != 0:
            print(f"[{name}] build FAILED: no results", flush=True)
            continue
        for proto in impl["protocols"]:
            if "testee" in impl:
                xf = (impl.get("xfail") or {}).get(proto)
                _fp(["run", "--testee", " ".join(map(shlex.quote, argv_of(impl, "testee"))), "--protocol", proto,
                     "--profile", impl.get("profile", "ci"), "--json", str(reports / f"{name}-codec-{proto}.json")]
                    + (["--xfail", str(impl["dir"] / xf)] if xf else []), log)
            if "server" not in impl:
                continue
            server = " ".join(map(shlex.quote, argv_of(impl, "server")))
            for label, codec in registry.get(proto).net_profiles():
                xf = (impl.get("xfail_net") or {}).get(label)
                _fp(["net", "--codec", json.dumps(codec.to_json()), "--name", name,
                     "--server-cmd", f"{server} --codec {shlex.quote(json.dumps(codec.to_json()))} --listen 127.0.0.1:0",
                     "--json", str(reports / f"{name}-net-{label.replace(' ', '-')}.json")]
                    + (["--xfail", str(impl["dir"] / xf)] if xf else []), log)
            if autobahn and proto == "websocket":
                xf = (impl.get("xfail_autobahn") or {}).get("server")
                _fp(["autobahn", "--server-cmd", f"{server} --codec {shlex.quote(AUTOBAHN_CODEC)} --listen 127.0.0.1:0",
                     "--agent", name, "--driver", "wstest", "--json", str(reports / f"{name}-autobahn-server.json")]
                    + (["--xfail", str(impl["dir"] / xf)] if xf else []), log)
    # third-party websocket peers without an impl.json (tools/autobahn/peers.py knows how to start them):
    # the network suite on their echo server, told the 64 MiB limits peers.py runs them with
    sys.path.insert(0, str(ROOT / "tools" / "autobahn"))
    import peers as ab_peers
    known = {i["name"] for i in wrappers()}
    for peer in ab_peers.peers():
        if peer["kind"] != "third-party" or peer["name"] in known or not peer.get("server"):
            continue
        b = subprocess.run(peer["build"], cwd=peer.get("cwd"), capture_output=True, text=True)
        if b.returncode:
            print(f"[{peer['name']}] build FAILED: no network results", flush=True)
            continue
        server = peer["server"].replace("{py}", b.stdout.strip().splitlines()[-1])
        _fp(["net", "--codec", NET_CODEC_PEERS, "--name", peer["name"], "--server-cmd", server, "--cwd", peer["cwd"],
             "--json", str(reports / f"{peer['name']}-net-websocket.json")], log)
    if autobahn:
        for d in sorted(p for p in THIRD.iterdir() if p.is_dir() and p.name not in known):
            print(f"[{d.name}] Autobahn through tools/autobahn/peers.py", flush=True)
            out = reports / "autobahn-peers"
            with open(log, "a") as lf:
                subprocess.call([sys.executable, str(ROOT / "tools" / "autobahn" / "peers.py"), "--only", d.name,
                                 "--driver", "wstest", "--out", str(out)], cwd=ROOT, stdout=lf, stderr=subprocess.STDOUT)
            rep = out / f"{d.name}-server.json"
            if rep.exists():
                (reports / f"{d.name}-autobahn-server.json").write_text(rep.read_text())


# ------------------------------------------------------------------ the page

def load_reports(reports: Path):
    """{name: {suite: report}}; suite is 'codec-<protocol>', 'net-<label>' or 'autobahn-server'."""
    out = {}
    for f in sorted(reports.glob("*.json")):
        for suite in ("-codec-", "-net-", "-autobahn-"):
            if suite in f.name:
                name, rest = f.stem.split(suite, 1)
                out.setdefault(name, {})[suite.strip("-") + "-" + rest] = json.loads(f.read_text())
                break
    return out


def _reasons(impl, name):
    """{suite: [(pattern, reason)]} of a wrapper's expected-failures files (a peer without impl.json:
    its xfail-autobahn.txt, the file tools/autobahn/peers.py runs it with)."""
    out = {}
    if impl is None:
        f = THIRD / name / "xfail-autobahn.txt"
        if f.exists():
            out["autobahn-server"] = xfail_entries(f)
        return out
    for p, f in (impl.get("xfail") or {}).items():
        out[f"codec-{p}"] = xfail_entries(impl["dir"] / f)
    for lab, f in (impl.get("xfail_net") or {}).items():
        out[f"net-{lab.replace(' ', '-')}"] = xfail_entries(impl["dir"] / f)
    for side, f in (impl.get("xfail_autobahn") or {}).items():
        out[f"autobahn-{side}"] = xfail_entries(impl["dir"] / f)
    return out


def _reason_for(test, entries):
    for pat, why in entries:
        if fnmatch.fnmatchcase(test["name"], pat) or test.get("case") and fnmatch.fnmatchcase(test["case"], pat):
            return why
    return None


SUITE_TITLE = {"codec": "codec suite", "net": "network suite", "autobahn": "Autobahn (wstest, as server)"}


def _suite_title(suite):
    kind, _, rest = suite.partition("-")
    return f"{SUITE_TITLE[kind]}" + (f", {rest}" if kind != "autobahn" else "")


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


def render(reports: Path) -> str:
    impls = {i["name"]: i for i in wrappers()}
    res = load_reports(reports)
    names = sorted(set(impls) | set(res))
    reqs = fspec.requirements()
    stamps = sorted(time.strftime("%Y-%m-%d", time.gmtime(d["started"])) if isinstance(d["started"], (int, float))
                    else str(d["started"])[:10] for r in res.values() for d in r.values() if d.get("started"))
    lines = [
        "# Third-party implementations",
        "",
        "frameproof run on code nobody in this project wrote: thin wrappers (a testee or an echo server) around",
        "established libraries, under `tools/third-party/`, each with expected-failure files that list every",
        "difference between the library and the spec with its reason. The wrappers add no checks of their own:",
        "what the suites see is the library's behaviour.",
        "",
        "_Generated by `tools/gen_third_party_page.py` from the suites' JSON reports "
        f"(`reports/third-party/`, runs of {stamps[0] if stamps else 'no date'}); do not edit by hand: "
        "`.venv/bin/python tools/gen_third_party_page.py --run` runs every suite again and rewrites this page._",
        "",
        "How the suites ran: the codec suite (`frameproof run`) on each testee with the wrapper's expected-failures",
        "file (profile `ci`, or the wrapper's impl.json `\"profile\"`); the network suite (`frameproof net`) on each",
        "echo server with the spec's default limits; Autobahn (`frameproof autobahn`, wstest 25.10.1, categories 1-7, 9,",
        "10, as server) on each websocket echo server with a 64 MiB frame limit, as tools/autobahn/peers.py runs every",
        "server. No wrapper here has an Autobahn client. A library without a frame layer (gorilla) or whose parser",
        "reports messages, not frames (ws) has no `decode` results: those tests are skipped, never counted as passed.",
        "The websocket testees name each error's offset from a length-only walk over the input (the libraries do not",
        "report where the offending frame starts); everything else the suites judge is the library's own output.",
        "",
        "## The wrappers",
        "",
        "| implementation | library | protocols | testee | echo server | expected-failure files |",
        "|---|---|---|---|---|---|",
    ]
    for n in names:
        i = impls.get(n)
        if i is None:
            xf = "`xfail-autobahn.txt`" if (THIRD / n / "xfail-autobahn.txt").exists() else "—"
            lines.append(f"| {n} | (no impl.json yet: its Autobahn echo server, started as tools/autobahn/peers.py does, "
                         f"network suite with 64 MiB limits and no expected-failures file, so its network failures are "
                         f"listed as not expected and not yet explained) | websocket | — | "
                         f"`tools/third-party/{n}/` | {xf} |")
            continue
        files = sorted(set((i.get("xfail") or {}).values()) | set((i.get("xfail_net") or {}).values())
                       | set((i.get("xfail_autobahn") or {}).values()))
        lines.append(f"| {n} | {i.get('upstream', '')} | {', '.join(i['protocols'])} | "
                     f"{'`' + ' '.join(i['testee']) + '`' if 'testee' in i else '— (' + i.get('no_testee', 'none') + ')'} | "
                     f"{'`' + ' '.join(i['server']) + '`' if 'server' in i else '—'} | "
                     f"{', '.join(f'`{f}`' for f in files) or '—'} |")
    lines += ["", "## Totals", "",
              "Each cell: tests passed / run, skipped and expected failures (xfail) counted apart; ✓ when the run "
              "had no unexpected result (exit 0).", ""]
    suites = sorted({s for r in res.values() for s in r}, key=lambda s: (s.split("-")[0] != "codec",
                                                                            s.split("-")[0] == "autobahn", s))
    lines += [f"| suite | {' | '.join(names)} |", "|---|" + "---|" * len(names)]
    for s in suites:
        lines.append(f"| {_suite_title(s)} | " + " | ".join(_totals_cell(res[n][s]) if s in res.get(n, {}) else "—"
                                                             for n in names) + " |")
    for proto in registry.names():
        ids = [r for r, v in reqs.items() if v.protocol == proto]
        cols = [n for n in names if any(s.endswith(proto) or (proto == "websocket" and s.startswith("autobahn"))
                                        for s in res.get(n, {}))]
        if not cols:
            continue
        lines += ["", f"## {proto}, requirement by requirement", "",
                  f"All suites together (codec, network{', Autobahn' if proto == 'websocket' else ''}): "
                  "✓ N: N tests passed, none failed; ✗ K of N: K of the N tests that ran failed (expected or not, "
                  "listed below); · only skipped; empty: no test of that suite reaches it.", "",
                  f"| requirement | level | {' | '.join(cols)} |", "|---|---|" + "---|" * len(cols)]
        for rid in ids:
            cells = []
            for n in cols:
                counts = [d["requirements"][rid] for s, d in res.get(n, {}).items()
                          if rid in d.get("requirements", {}) and (s.endswith(proto) or s.startswith("autobahn"))]
                cells.append(_req_cell(counts))
            if any(cells):
                lines.append(f"| {rid} | {reqs[rid].level} | " + " | ".join(cells) + " |")
        lines += ["", f"### Where they differ from spec/{proto}.md", ""]
        for n in cols:
            reasons = _reasons(impls.get(n), n)
            groups = {}  # (suite, reason, expected?) -> (requirements, tests): one row per cause
            for s, d in sorted(res[n].items()):
                if not (s.endswith(proto) or s.startswith("autobahn")):
                    continue
                for t in d["tests"]:
                    if t["status"] not in ("xfailed", "failed"):
                        continue
                    first = [ln.strip() for ln in (t.get("message") or "").strip().splitlines() if ln.strip()][:3]
                    why = _reason_for(t, reasons.get(s, [])) or " / ".join(first)
                    reqs_, tests = groups.setdefault((s, why, t["status"] == "xfailed"), ([], []))
                    reqs_ += [r for r in (t.get("broken") or t["requirements"]) if r not in reqs_]
                    tests.append(f"`{t['case']}`" if t.get("case") else f"`{t['name']}`")
            rows = [f"| {', '.join(sorted(rq, key=lambda r: ids.index(r) if r in ids else 999))} | {_suite_title(s)}: "
                    f"{', '.join(tests)} | {'expected' if expected else '**not expected**'} | "
                    f"{why[:900].replace('|', '/')} |" for (s, why, expected), (rq, tests) in groups.items()]
            lines += [f"**{n}**" + ("" if rows else ": no difference found by the suites that ran."), ""]
            if rows:
                lines += ["| requirements | tests | | why (from the expected-failures file) |", "|---|---|---|---|"] + rows + [""]
            ab = res[n].get("autobahn-server")
            if ab:
                soft = [f"{t['case']} {t['verdict']}" for t in ab["tests"] if t["verdict"] in ("NON-STRICT", "INFORMATIONAL")]
                lines += [f"Autobahn verdicts that are not failures (allowed): {', '.join(soft) or 'none'}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="store_true", help="build every wrapper and run its suites first")
    ap.add_argument("--no-autobahn", action="store_true", help="with --run: leave the Autobahn runs out")
    ap.add_argument("--reports", default=str(ROOT / "reports" / "third-party"))
    ap.add_argument("--out", default=str(PAGE))
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if the page is stale")
    args = ap.parse_args()
    reports = Path(args.reports)
    if args.run:
        t0 = time.monotonic()
        run_all(reports, not args.no_autobahn)
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
