"""`frameproof matrix`: the main job. Builds every bundled implementation
(reference-impls/*/impl.json), runs the codec suite against each testee, the network
suite against each echo server, the harness checks against each load client, and
every load client against every server (interop); prints a results matrix and writes
reports/matrix.json and reports/matrix.md.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Dict, List, Optional

from . import protocols as registry
from . import report
from .paths import IMPL_DIR, ROOT
from .servers import start_server
from .stress import SMALL_LIMITS, SMALL_SCALE

# How large the matrix runs. "full" is the main job: the stress group at the spec's default limits and
# full scale, every Autobahn category, 4 x 20000 requests per interop pair. "small" takes every path of
# "full" at small bounds, so that CI (tools/test.sh) sees what the main job does: the stress group at
# SMALL_LIMITS (servers that take the limit flags; others at their own limits) and SMALL_SCALE, a few
# Autobahn cases of every category, shorter load runs.
SCALES = {
    "full": {"stress": [], "stress_own_limits": [], "interop": (4, 20000), "load_requests": 4000,
             "stress_third_party": None,
             # the long-stream test past 4 GiB in every codec cell (small: the ci profile's 64 MiB)
             "run": ["--long-stream", "4.5G"],
             # cells that keep a core busy for minutes (the long stream, the whole Autobahn testsuite) run
             # in a lane of their own (_Queue); the stress group's healthy-request p99 (2 s) is measured
             # with nothing else running: beside the other cells and a CI run it read 2.1-2.5 s (rust,
             # maximal_unfinished_frames, 2026-11-28), a figure of the machine's load, not of the server
             "heavy": True, "stress_alone": True},
    "small": {"stress": ["--stress-scale", SMALL_SCALE, "--stress-grace-s", "3", "--stress-p99-ms", "5000"]
                        + SMALL_LIMITS,
              "stress_own_limits": ["--stress-scale", SMALL_SCALE, "--stress-grace-s", "3", "--stress-p99-ms", "5000"],
              "interop": (2, 2000), "load_requests": 1000,
              # a third-party server runs the group at its own limits, whose timeouts (10-30 s, or none:
              # a scenario it fails waits out the spec's default) make it about 2 minutes: in CI, the first
              # third-party column with a server stands for all, with the scenarios that wait on no timeout
              # (it passes some and fails others: both paths of its expected-failures file). Not
              # maximal_unfinished_frames: a library without a memory budget ends it holding about 1 GiB,
              # and the RSS check of the next scenario run (connect_close_10000) then depends on when its
              # runtime gives that back (gorilla: +482 MiB once, under load)
              "stress_third_party": 1, "stress_alone": False, "heavy": False,
              "stress_third_party_select": ["connect_close_10000", "resets_mid_frame", "connection_limit",
                                            "descriptor_exhaustion"]},
}



def codec_args(codec) -> str:
    """The ``--codec JSON`` argument every reference program takes (reference-impls/README.md)."""
    return "--codec " + shlex.quote(json.dumps(codec.to_json(), separators=(",", ":")))


THIRD_PARTY_DIR = ROOT / "tools" / "third-party"


def load_impls(names=None) -> List[dict]:
    """The bundled implementations: reference-impls/*/impl.json, then the third-party wrappers
    (tools/third-party/*/impl.json, ``"third_party": true``, run with their expected-failure files:
    ``"xfail"`` by protocol for the codec suite, ``"xfail_net"`` by network profile label for the
    network suite, ``"xfail_stress"`` by protocol for the stress group). A wrapper may have a server
    and no testee (a library with no frame layer). `names` picks some of them by name; an entry that
    is a path to an impl.json (an implementation outside this repository) adds that one."""
    out = []
    paths = [n for n in names or () if n.endswith(".json")]
    names = [n for n in names or () if not n.endswith(".json")]
    bundled = sorted(IMPL_DIR.glob("*/impl.json")) + sorted(THIRD_PARTY_DIR.glob("*/impl.json"))
    for f in ([f for f in bundled if names or not paths]) + [Path(p).resolve() for p in paths]:
        try:
            d = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"{f}: {e}")
        d["dir"] = str(f.parent)
        if names and f not in [Path(p).resolve() for p in paths] and d["name"] not in names:
            continue
        out.append(d)
    missing = set(names) - {d["name"] for d in out}
    if missing:
        raise SystemExit(f"unknown implementation(s): {', '.join(sorted(missing))}")
    return out


def _cmd(impl, key) -> str:
    argv = list(impl[key])
    if not argv[0].startswith("/") and (Path(impl["dir"]) / argv[0]).exists():
        argv[0] = str(Path(impl["dir"]) / argv[0])
    elif len(argv) > 1 and (Path(impl["dir"]) / argv[1]).exists():
        argv[1] = str(Path(impl["dir"]) / argv[1])
    return " ".join(shlex.quote(a) for a in argv)


def _fp(args, log, keep: Optional[Path] = None) -> (int, dict):
    """Runs the frameproof CLI in a subprocess; returns (exit status, JSON report). ``keep``: where the
    report stays (the matrix keeps every cell's, for `frameproof report`), else it is a temporary file."""
    if keep is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.unlink(missing_ok=True)
        path = str(keep)
    else:
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
    cmd = [sys.executable, "-m", "frameproof.cli"] + args + ["--json", path]
    with open(log, "a") as lf:
        lf.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        lf.flush()
        rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        doc = None
    if keep is None:
        os.unlink(path)
    return rc, doc


def _cell(rc, doc) -> dict:
    """A matrix cell from a CLI run's exit status and report (frameproof.report: one model for every
    kind). A cell is ✓ when the command exited 0, nothing failed unexpectedly and something ran."""
    if not doc:
        why = {report.EXIT_USAGE: "usage error or the program did not start", report.EXIT_DID_NOT_START:
               "the program under test did not start", report.EXIT_NOTHING_RAN: "nothing ran"}.get(rc, "no report")
        return {"ok": False, "text": f"✗ {why} (exit {rc})", "totals": None}
    bad = report.problems(doc)
    if bad:
        return {"ok": False, "text": f"✗ unreadable report: {bad[0]} (exit {rc})", "totals": None}
    t = doc["totals"]
    ran = report.ran(doc)
    ok = rc == 0 and t["failed"] == 0 and t["xpassed"] == 0 and ran > 0
    text = f"{t['passed']}/{ran}"
    if t["skipped"]:
        text += f" ({t['skipped']} skip)"
    if t["xfailed"]:
        text += f" ({t['xfailed']} xfail)"
    if not ran:
        text += " nothing ran"
    elif rc != 0 and t["failed"] == 0 and t["xpassed"] == 0:
        text += f" (exit {rc})"
    cell = {"ok": ok, "text": ("✓ " if ok else "✗ ") + text, "totals": t,
            "failed": sorted(r for r, v in doc["requirements"].items() if v["failed"] or v["xpassed"]),
            "requirements": doc["requirements"]}
    # both views of the run (spec/harness.md, "Requirement sources"): the requirements broken, expected
    # failures included, counting every requirement (spec) or only RFC MUSTs and upstream's (rfc)
    levels = doc.get("levels") or report.level_views(doc["tests"])
    cell["levels"] = levels
    cell["views"] = report.views_text(levels)
    # what a reader of the matrix (a CI log) needs to act on a ✗ without the report: the first
    # unexpected result, its test and message (expected, actual, input)
    bad_tests = [x for x in doc["tests"] if x["status"] in ("failed", "xpassed")]
    if bad_tests:
        cell["first_failure"] = {"test": bad_tests[0]["name"], "status": bad_tests[0]["status"],
                                 "message": (bad_tests[0].get("message") or "")[:600]}
    return cell


class _Queue:
    """The matrix's cells, run in the order they were added. ``jobs`` > 1 runs that many at once (most
    cells wait on the network, on timeouts or on a program starting: at small scale the matrix uses a
    quarter of a core), each writing to a log of its own that joins matrix.log whole when it ends. A cell
    added ``heavy`` (busy on a core for minutes) runs in a lane of its own, two or half the cores at
    once, beside the others; one added ``alone`` runs after all the others, with nothing beside it."""

    def __init__(self, log: Path, jobs: int = 1):
        self.log, self.jobs, self.tasks = log, max(1, int(jobs or 1)), []
        self._lock = threading.Lock()
        self._done = 0

    def add(self, title: str, run, alone: bool = False, heavy: bool = False):
        """``run(log) -> cell``: one cell's work, its result already stored by it."""
        self.tasks.append((title, run, "alone" if alone else "heavy" if heavy else "light"))

    def _one(self, title, run, own_log: bool):
        if own_log:
            fd, path = tempfile.mkstemp(prefix="fp-cell-", suffix=".log")
            os.close(fd)
            cell_log = Path(path)
        else:
            print(f"{title} …", flush=True)
            cell_log = self.log
        try:
            c = run(cell_log)
        finally:
            if own_log:
                with self._lock, open(self.log, "a") as lf:
                    lf.write(cell_log.read_text(errors="replace"))
                cell_log.unlink()
        with self._lock:
            self._done += 1
            n = f"[{self._done}/{len(self.tasks)}] " if own_log else ""
            print(f"{n}{title}: " if own_log else "", end="")
            print(f"  {c['text']} ({c.get('seconds') or 0:.0f} s)" if not own_log else
                  f"{c['text']} ({c.get('seconds') or 0:.0f} s)", flush=True)

    def run(self):
        if self.jobs == 1:
            for title, run, _ in self.tasks:
                self._one(title, run, False)
            return
        from concurrent.futures import ThreadPoolExecutor
        # two at least: a heavy cell keeps about one core busy (wstest and the server under test), so a
        # single lane leaves a two-core machine half idle once the light cells are done
        lanes = max(2, (os.cpu_count() or 2) // 2)
        n = {k: sum(1 for t in self.tasks if t[2] == k) for k in ("light", "heavy", "alone")}
        print(f"matrix: {len(self.tasks)} cells, {self.jobs} at a time; {n['heavy']} heavy ones {lanes} at a time "
              f"beside them; {n['alone']} alone at the end", flush=True)
        with ThreadPoolExecutor(self.jobs) as pool, ThreadPoolExecutor(lanes) as heavy:
            futures = [heavy.submit(self._one, title, run, True) for title, run, k in self.tasks if k == "heavy"]
            futures += [pool.submit(self._one, title, run, True) for title, run, k in self.tasks if k == "light"]
            for f in futures:
                f.result()
        for title, run, k in self.tasks:
            if k == "alone":
                self._one(title, run, True)


def _phase(label: str, log, fn) -> dict:
    """Runs one cell's work; an exception in it (a missing program, a bug of the matrix's own) makes
    the cell ✗ with its reason, written to the log, and the job goes on."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - any failure of one cell is that cell's result
        with open(log, "a") as lf:
            lf.write(f"[{label}] {type(e).__name__}: {e}\n{traceback.format_exc()}\n")
        print(f"  ✗ {label}: {type(e).__name__}: {e}", flush=True)
        return {"ok": False, "text": f"✗ error: {type(e).__name__}: {str(e)[:120]}", "totals": None,
                "error": traceback.format_exc()}


#: the client cases a receive-mode cell runs (clientsuite.all_cases)
RECEIVE_CASES = ("well_formed_requests", "json_report", "counts_agree", "detects_unasked_replies")


def interop(client_impl, server_impl, protocol, log, connections=4, requests=20000) -> dict:
    """One verified load run of client_impl against server_impl."""
    try:
        srv = start_server(f"{_cmd(server_impl, 'server')} --protocol {protocol} --listen 127.0.0.1:0")
    except (RuntimeError, OSError) as e:  # OSError: the program is missing or not executable
        return {"ok": False, "text": f"✗ server did not start: {type(e).__name__}", "detail": str(e)}
    fd, jpath = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = (f"{_cmd(client_impl, 'load')} --protocol {protocol} --connect {srv.addr} --connections {connections} "
           f"--requests {requests} --payload 32 --mode pipelined --window 32 --json {jpath}")
    try:
        with open(log, "a") as lf:
            lf.write(f"$ {cmd}\n")
            lf.flush()
            rc = subprocess.call(shlex.split(cmd), stdout=lf, stderr=subprocess.STDOUT, timeout=120)
    except subprocess.TimeoutExpired:
        rc = -1
    except OSError as e:  # the client program is missing or not executable
        with open(log, "a") as lf:
            lf.write(f"load client did not start: {e}\n")
        rc = 127
    finally:
        code, counters, _ = srv.stop()
    try:
        rep = json.loads(Path(jpath).read_text())
    except (OSError, ValueError):
        rep = None
    os.unlink(jpath)
    # the server counted the requests, plus the frames each connection ends with if it counts every frame
    sent = (rep or {}).get("requests_sent")
    counted = (sent, (sent or 0) + registry.get(protocol).load_goodbye_frames * connections)
    ok = rc == 0 and rep is not None and rep.get("errors") == 0 and rep.get("replies_verified") == requests \
        and counters is not None and counters.get("frames") in counted
    text = ("✓ " if ok else "✗ ") + (f"{rep['msgs_per_s'] / 1000:.0f}k msg/s" if rep else f"exit {rc}")
    return {"ok": ok, "text": text, "client_report": rep, "server_counters": counters, "client_exit": rc}


def update_readme(md: str, marker: str = "matrix"):
    """Replaces the README section between <!-- {marker}:begin --> and <!-- {marker}:end -->."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    b, e = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if b not in text or e not in text:
        raise SystemExit(f"README.md has no {b} … {e} section")
    head, rest = text.split(b, 1)
    _, tail = rest.split(e, 1)
    readme.write_text(head + b + "\n" + md.rstrip() + "\n" + e + tail, encoding="utf-8")


GROUP_TITLES = {"codec": "codec", "net": "server", "client": "load client"}


def machine() -> str:
    """The machine a matrix ran on, in one line (cores, memory, kernel, Python)."""
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError):
        mem = 0
    return (f"{os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}, "
            f"{platform.machine()}, Python {platform.python_version()}")


def run_matrix(names=None, build=True, profile="ci", out_dir=None, readme=False, scale="full", jobs=1,
               merge=None) -> int:
    impls = load_impls(names)
    earlier, others = None, []
    if merge:
        # --merge: this run's columns join an earlier matrix.json (the main job's), so that a column added
        # later (a new third-party wrapper) does not need the whole 100-minute job again; the README says
        # which columns came from which run (readme_section)
        try:
            earlier = json.loads(Path(merge).read_text())
        except (OSError, ValueError) as e:
            print(f"matrix --merge {merge}: {e}")
            return 2
        if (earlier.get("profile"), earlier.get("scale")) != (profile, scale):
            print(f"matrix --merge: {merge} was run with profile {earlier.get('profile')}, scale "
                  f"{earlier.get('scale')}; this run is profile {profile}, scale {scale}: columns of different "
                  f"runs would not compare")
            return 2
        here = {i["name"] for i in impls}
        known = {d["name"] for d in load_impls()}
        # the earlier run's programs take part in the interop pairs with this run's (their builds are used as
        # they are: a missing one fails its pairs)
        others = [i for i in load_impls([n for n in earlier["implementations"] if n in known and n not in here])]
    sc = SCALES[scale]
    out_dir = Path(out_dir or ROOT / "reports")
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "matrix.log"
    log.write_text("")
    results: Dict[str, dict] = {}
    t0 = time.time()
    stressed_third_party = [i["name"] for i in impls if i.get("third_party") and "server" in i][:sc["stress_third_party"]]
    queue = _Queue(log, jobs)

    def cell(name, group, label, argv, alone=False, heavy=False):
        results[name][group][label] = None  # its place in the report, kept whatever order the cells end in
        # every cell's full report stays in <out>/cells/ (frameproof report makes the HTML pages from them)
        kept = out_dir / "cells" / (re.sub(r"[^A-Za-z0-9_-]+", "-", f"{name}--{group}--{label}").strip("-") + ".json")

        def run(cell_log):
            start = time.monotonic()
            c = _phase(f"{name} {label}", cell_log, lambda: _cell(*_fp(argv, cell_log, kept)))
            c["seconds"] = round(time.monotonic() - start, 1)  # where a run's time goes (matrix.json)
            results[name][group][label] = c
            return c
        queue.add(f"[{name}] {GROUP_TITLES[group]}: {label}", run, alone, heavy and sc["heavy"])

    for impl in impls:
        name = impl["name"]
        r = results[name] = {"build": None, "codec": {}, "net": {}, "client": {}}
        if build:
            print(f"[{name}] building …", flush=True)
            with open(log, "a") as lf:
                try:
                    rc = subprocess.call(impl["build"], cwd=impl["dir"], stdout=lf, stderr=subprocess.STDOUT)
                except OSError as e:
                    lf.write(f"[{name}] build could not start: {e}\n")
                    rc = 127
            r["build"] = rc
            if rc != 0:
                print(f"[{name}] build FAILED (exit {rc}); see {log}", flush=True)
                continue
        protos = [p for p in registry.names() if p in impl.get("protocols", registry.names())]
        for proto in protos if "testee" in impl else ():
            xfail = (impl.get("xfail") or {}).get(proto)
            # an expected-failures file listing property tests holds for the profile it was measured with
            # (impl.json "profile"): a smaller example budget may miss the counterexample (an xpass)
            # impl.json "no_skip": the implementation supports every configuration the suite draws (the bundled
            # references), so a `skipped` answer is a failure (frameproof run --no-skip), not a quiet pass
            cell(name, "codec", proto, ["run", "--testee", _cmd(impl, "testee"), "--protocol", proto, "--name", name,
                                     "--profile", impl.get("profile", profile)] + sc.get("run", []) +
                 (["--no-skip"] if impl.get("no_skip") else []) +
                 (["--xfail", str(Path(impl["dir"]) / xfail)] if xfail else []), heavy=True)
        for proto in protos if "server" in impl else ():
            for label, codec in registry.get(proto).net_profiles():
                why = (impl.get("skipped_net") or {}).get(label) if impl.get("third_party") else None
                if why:  # a profile the library cannot express (impl.json "skipped_net", with its reason)
                    r["net"][label] = {"ok": True, "text": f"— not run: {why}", "skipped": why}
                    continue
                server = f"{_cmd(impl, 'server')} {codec_args(codec)} --listen 127.0.0.1:0"
                xfail = (impl.get("xfail_net") or {}).get(label)
                # a bundled program follows the contract (reference-impls/README.md): its codec JSON is checked too
                cell(name, "net", label, ["net", "--codec", json.dumps(codec.to_json()), "--server-cmd", server,
                                       "--name", name] + ([] if impl.get("third_party") else ["--contract"]) +
                     (["--xfail", str(Path(impl["dir"]) / xfail)] if xfail else []))
        for proto in protos if "server" in impl and (not impl.get("third_party") or name in stressed_third_party) \
                else ():
            # hostile peers at scale (*-RES-*): the whole group; at full scale about 100 s a protocol, most of
            # it the timeouts' 10-30 s. A server without the limit flags (a third-party library) runs at its
            # own limits, with its expected failures (impl.json "xfail_stress")
            codec = registry.get(proto).stress_codec()
            server = f"{_cmd(impl, 'server')} {codec_args(codec)} --listen 127.0.0.1:0"
            own = not impl.get("limit_flags", not impl.get("third_party"))
            xfail = (impl.get("xfail_stress") or {}).get(proto)
            pick = [a for g in sc.get("stress_third_party_select") or () for a in ("--select", g)] \
                if impl.get("third_party") else []
            cell(name, "net", f"{proto} stress", ["net", "--codec", json.dumps(codec.to_json()), "--stress", "--name", name,
                                               "--server-cmd", server] +
                 (sc["stress_own_limits"] if own else sc["stress"]) + pick +
                 (["--xfail", str(Path(impl["dir"]) / xfail)] if xfail else []), alone=sc["stress_alone"])
        for proto in protos if "load" in impl else ():
            # the default run, the protocol's own (call variants, streams): Protocol.load_client_profiles, and
            # receive mode against a sink (the benchmark's pure-receive rows; HAR-VERIFY-3)
            n = sc["load_requests"]
            for label, args in (("", f"--mode pipelined --window 16 --requests {n}"),) + \
                    tuple(registry.get(proto).load_client_profiles) + (("receive", f"--mode receive --window 16 --requests {n}"),):
                key = f"{proto} {label}".strip()
                size = "" if "--payload" in args.split() else "--payload 32 "  # a profile may name its own
                client = (f"{_cmd(impl, 'load')} --protocol {proto} --connect {{host}}:{{port}} --connections 4 "
                          f"{size}{args} --timeout-ms 2000 --json {{json}}")
                # receive mode: the cases of what it changes (the counts, the replies nobody asked for); the rest
                # of the client's code (opening, codec JSON, ...) is the default cell's
                sink = ["--sink"] + [a for c in RECEIVE_CASES for a in ("--select", f"{proto}/*/client/{c}")] \
                    if label == "receive" else []
                cell(name, "client", f"{key}", ["net", "--protocol", proto] + sink + ["--client", client, "--name", name])
        for proto in protos:  # the protocol's own extra suites (websocket: the Autobahn testsuite)
            suites = _phase(f"{name} {proto} suites", log, lambda: {"list": registry.get(proto).matrix_suites(
                impl, lambda key: _cmd(impl, key) if key in impl else None, profile, scale)})
            if "list" not in suites:
                r["net"][f"{proto} suites"] = suites
                continue
            for group, label, argv in suites["list"]:
                cell(name, group, label, argv, heavy=True)
    ok_impls = [i for i in impls if results[i["name"]]["build"] in (None, 0)]
    inter = {}
    conns, reqs = sc["interop"]
    for proto in registry.names():
        clients = [i for i in ok_impls + others if "load" in i and proto in i.get("protocols", registry.names())]
        servers = [i for i in ok_impls + others if "server" in i and proto in i.get("protocols", registry.names())]
        for c in clients:
            for s in servers:
                if c in others and s in others:
                    continue  # a pair of the earlier run: its result is there
                key = f"{proto}:{c['name']}->{s['name']}"
                inter[key] = None

                def run(cell_log, c=c, s=s, key=key, proto=proto):
                    start = time.monotonic()
                    r = inter[key] = _phase(f"interop {key}", cell_log, lambda: interop(c, s, proto, cell_log, conns, reqs))
                    r["seconds"] = round(time.monotonic() - start, 1)
                    return r
                queue.add(f"[interop] {c['name']} load client → {s['name']} server, {proto}", run)
    queue.run()
    doc = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "duration_s": round(time.time() - t0, 1),
           "profile": profile, "scale": scale, "machine": machine(), "implementations": [i["name"] for i in impls],
           "protocols": list(registry.names()),
           "third_party": [i["name"] for i in impls if i.get("third_party")], "results": results, "interop": inter,
           "interop_size": {"connections": conns, "requests": reqs}}
    cells = list(_all_cells(doc))  # this run's: what its exit status says
    took = doc["duration_s"]
    if earlier is not None:
        doc = merged(earlier, doc)
    (out_dir / "matrix.json").write_text(json.dumps(doc, indent=1))
    md = render(doc)
    (out_dir / "matrix.md").write_text(md)
    print()
    print(md)
    print(f"reports: {out_dir / 'matrix.json'}, {out_dir / 'matrix.md'}, log {log}")
    # a page and badges an implementation, from every cell's report (frameproof report, report_html.py)
    from .report_html import write_site
    pages, _ = write_site([str(out_dir / "cells")], str(out_dir / "html"))
    print(f"pages: {out_dir / 'html' / 'index.html'} ({len(pages)} implementations, badges beside them)")
    if readme:
        update_readme(readme_section(doc, md))
        print("README.md matrix section updated")
    slow = sorted(((v.get("seconds") or 0, k) for k, v in cells), reverse=True)[:8]
    print("slowest cells: " + ", ".join(f"{k} {t:.0f} s" for t, k in slow))
    bad = [k for k, v in cells if not v["ok"]]
    print(f"matrix: {len(cells) - len(bad)} passed, {len(bad)} failed ({took:.0f} s)")
    off_schema = report.schema_problems(doc, "matrix")  # schemas/matrix.schema.json: a bug of ours, said plainly
    if off_schema:
        print("matrix.json does not follow schemas/matrix.schema.json:\n  " + "\n  ".join(off_schema[:20]))
        return 1
    if bad:
        print(f"FAILED: {', '.join(bad)}")
        return 1
    if not cells:
        print("matrix: no cell ran")
        return report.EXIT_NOTHING_RAN
    return 0


def _run_of(doc) -> dict:
    return {k: doc[k] for k in ("generated", "duration_s", "machine", "implementations")}


def merged(earlier: dict, doc: dict) -> dict:
    """The earlier matrix with this run's columns put in (replacing a column of the same name) and its
    interop pairs added; ``runs`` lists every run a column came from, the first being the whole job."""
    out = dict(earlier)
    out["results"] = {**earlier["results"], **doc["results"]}
    out["interop"] = {**earlier["interop"], **doc["interop"]}
    out["implementations"] = earlier["implementations"] + [n for n in doc["implementations"]
                                                           if n not in earlier["implementations"]]
    out["third_party"] = earlier["third_party"] + [n for n in doc["third_party"] if n not in earlier["third_party"]]
    runs = [r for r in earlier.get("runs") or [_run_of(earlier)]]
    for r in runs:  # a column run again belongs to the newest run only
        r["implementations"] = [n for n in r["implementations"] if n not in doc["implementations"]]
    out["runs"] = [r for r in runs if r["implementations"]] + [_run_of(doc)]
    return out


def readme_section(doc, md) -> str:
    runs = doc.get("runs") or [_run_of(doc)]
    first, later = runs[0], runs[1:]
    text = (f"_Generated by `bash tools/main.sh --update-readme` (`frameproof matrix`, profile {doc['profile']}, "
            f"scale {doc['scale']}) on {first['generated']}, in {first['duration_s'] / 60:.0f} min of wall time, "
            f"on {first['machine']}")
    for r in later:
        names = r["implementations"]
        text += (f"; the column{'s' if len(names) > 1 else ''} {', '.join(names)} (and {'their' if len(names) > 1 else 'its'} interop pairs) "
                 f"added by `frameproof matrix {' '.join('--impl ' + n for n in names)} --merge <that run's matrix.json>` "
                 f"on {r['generated']}, in {r['duration_s'] / 60:.0f} min")
    return text + "._\n\n" + md


def _all_cells(doc):
    for name, r in doc["results"].items():
        if r["build"] not in (None, 0):
            yield f"{name} build", {"ok": False}
        for group in ("codec", "net", "client"):
            for label, cell in r[group].items():
                yield f"{name} {group} {label}", cell
    for k, v in doc["interop"].items():
        yield f"interop {k}", v


def render(doc) -> str:
    third = set(doc.get("third_party", []))
    names = [n for n in doc["implementations"] if n not in third] + [n for n in doc["implementations"] if n in third]
    heads = [f"{n} (third-party)" if n in third else n for n in names]
    lines = [f"| suite | {' | '.join(heads)} |", "|---|" + "---|" * len(names)]
    rows = []
    for group, title in GROUP_TITLES.items():
        labels = []
        for n in names:
            for lab in doc["results"][n][group]:
                if lab not in labels:
                    labels.append(lab)
        for lab in labels:
            cells = []
            for n in names:
                r = doc["results"][n]
                if r["build"] not in (None, 0):
                    cells.append("✗ build failed")
                else:
                    c = r[group].get(lab)
                    text = c["text"] if c else "—"
                    if c and n in third and c.get("views"):
                        text += f" · {c['views']}"  # a library: the spec's view and the RFC's
                    cells.append(text)
            rows.append(f"| {title}: {lab} | {' | '.join(cells)} |")
    lines += rows
    out = "\n".join(lines) + "\n"
    built = [n for n in names if doc["results"][n]["build"] in (None, 0)
             and any(k.endswith(f"->{n}") or f":{n}->" in k for k in doc["interop"])]
    for proto in registry.names() if built else ():
        if not any(k.startswith(f"{proto}:") for k in doc["interop"]):
            continue  # no implementation has both a client and a server for it yet
        size = doc.get("interop_size") or {"connections": 4, "requests": 20000}
        out += (f"\nInterop, {proto} (rows: load client, columns: server; {size['connections']} connections × "
                f"{size['requests']} verified requests, window 32)\n\n")
        out += f"| client \\ server | {' | '.join(built)} |\n|---|" + "---|" * len(built) + "\n"
        for c in [c for c in built if any(k.startswith(f"{proto}:{c}->") for k in doc["interop"])]:  # clients only
            out += f"| {c} | " + " | ".join(doc["interop"].get(f"{proto}:{c}->{s}", {"text": "—"})["text"] for s in built) + " |\n"
    fails = []
    for name, r in doc["results"].items():
        for group in ("codec", "net", "client"):
            for lab, cell in r[group].items():
                if cell.get("failed"):
                    fails.append(f"- {name} {group} {lab}: failing requirements {', '.join(cell['failed'])}")
                    first = cell.get("first_failure")
                    if first:
                        msg = " ".join(first["message"].split())
                        fails.append(f"  first: {first['test']} ({first['status']}): {msg}")
    if fails:
        out += "\nFailures:\n" + "\n".join(fails) + "\n"
    if third:
        out += ("\nThird-party columns wrap established libraries nobody here wrote (tools/third-party/); "
                "their cells count expected failures (xfail) listed, with a reason each, in their expected-failure "
                "files: the real differences between those libraries and the spec. Their cells also show both views "
                "of those differences, e.g. \"spec ✗ 3 / rfc ✓ (3 stricter)\": the requirements broken (expected "
                "failures included) counting every requirement of the spec, and counting only the RFC's MUSTs and "
                "upstream's behaviour, with the spec's own decisions (\"stricter\") and RFC SHOULDs apart "
                "(spec/harness.md, \"Requirement sources\"; `frameproof run/net --level rfc`).\n")
    return out
