"""The main job's reading of reports (frameproof.matrix): every kind of report the CLI writes follows
one model (frameproof.report) and makes a cell; an exception in a phase or a program that is missing
makes a ✗ cell with its reason, never the end of the job; commands that ran nothing say so with exit
status 5; the README shows a matrix of every protocol and bundled implementation."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from frameproof import matrix, report
from frameproof import protocols as registry
from frameproof.stress import SMALL_LIMITS, SMALL_SCALE

from conftest import PY, PYTESTEE, ROOT

PYSERVER = f"{PY} -m frameproof.pyserver"


def cli(tmp_path, *args, timeout=600):
    """Runs the CLI with --json (and --junit where it takes one); (exit status, output, report, junit path)."""
    rep, junit = tmp_path / "r.json", tmp_path / "r.xml"
    for f in (rep, junit):
        if f.exists():
            f.unlink()
    extra = ["--json", str(rep)] + (["--junit", str(junit)] if args[0] in ("run", "net", "autobahn") else [])
    p = subprocess.run([PY, "-m", "frameproof.cli", *args, *extra], cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr, (json.loads(rep.read_text()) if rep.exists() else None), junit


def stress_args(protocol, *extra):
    codec = json.dumps(registry.get(protocol).stress_codec().to_json())
    return ("net", "--codec", codec, "--stress", "--stress-scale", SMALL_SCALE, *SMALL_LIMITS, "--stress-grace-s", "3",
            "--server-cmd", f"{PYSERVER} --codec '{codec}' --listen 127.0.0.1:0", *extra)


KINDS = {
    "run": ("run", "--testee", PYTESTEE, "--protocol", "standard", "--select", "standard/STD-HDR-1/*"),
    "net": ("net", "--protocol", "standard", "--server-cmd", f"{PYSERVER} --protocol standard --listen 127.0.0.1:0",
            "--select", "*/net/pipelin*"),
    "client": ("net", "--protocol", "standard", "--client",
               f"{PY} -m frameproof.pyload --protocol standard --connect {{host}}:{{port}} --connections 2 "
               f"--payload 16 --mode pipelined --window 8 --requests 500 --timeout-ms 1000 --json {{json}}"),
    "stress": stress_args("standard", "--select", "connect_close_10000"),
    "fuzz": ("fuzz", "--testee", PYTESTEE, "--protocol", "standard", "--examples", "30", "--seconds", "0"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_report_kind_makes_a_cell(tmp_path, kind):
    rc, out, doc, junit = cli(tmp_path, *KINDS[kind])
    assert rc == 0, out[-3000:]
    assert report.problems(doc) == [], report.problems(doc)
    assert doc["kind"] == kind and doc["implementation"]["name"]
    cell = matrix._cell(rc, doc)
    assert cell["ok"], cell
    ran = report.ran(doc)
    assert ran > 0 and cell["text"].startswith(f"✓ {doc['totals']['passed']}/{ran}"), cell["text"]
    if junit.exists():
        assert_junit_readable(junit, ran + doc["totals"]["skipped"])


def test_autobahn_report_makes_a_cell(tmp_path):
    p = subprocess.run(["bash", str(ROOT / "tools" / "autobahn" / "install.sh")], capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    codec = json.dumps({"protocol": "websocket", "limits": {"max_payload": 16 << 20},
                        "websocket": {"max_message": 64 << 20}})
    rc, out, doc, junit = cli(tmp_path, "autobahn", "--server-cmd", f"{PYSERVER} --codec '{codec}' --listen 127.0.0.1:0",
                              "--cases", "1.1.1,2.1", "--agent", "fp-python")
    assert rc == 0, out[-3000:]
    assert report.problems(doc) == [] and doc["kind"] == "autobahn"
    assert matrix._cell(rc, doc)["text"] == "✓ 2/2"
    assert_junit_readable(junit, 2)
    rc, out, doc, _ = cli(tmp_path, "autobahn", "--server-cmd", f"{PYSERVER} --codec '{codec}' --listen 127.0.0.1:0",
                          "--cases", "99.*")
    assert rc == report.EXIT_NOTHING_RAN and not matrix._cell(rc, doc)["ok"], out[-2000:]


def assert_junit_readable(path, tests):
    """What the common CI report readers need: every testsuite and testcase has name, classname, time."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    assert suites
    cases = [tc for s in suites for tc in s.iter("testcase")]
    assert len(cases) == tests
    for el in suites + cases:
        for attr in ("name", "classname", "time"):
            assert el.get(attr) not in (None, ""), (el.tag, attr, el.attrib)
        float(el.get("time"))


def test_a_failing_run_is_a_failing_cell(tmp_path):
    rc, out, doc, _ = cli(tmp_path, "run", "--testee", f"{PYTESTEE} --mutant accepts-oversize", "--protocol", "standard",
                          "--requirement", "STD-LIM-1")
    assert rc == 1, out[-2000:]
    cell = matrix._cell(rc, doc)
    assert not cell["ok"] and cell["text"].startswith("✗") and "STD-LIM-1" in cell["failed"], cell
    # the matrix's own output says which test failed and why, for a CI log read without the report
    first = cell["first_failure"]
    assert "STD-LIM-1" in first["test"] and first["status"] == "failed" and first["message"], first
    doc = {"implementations": ["mutant"], "results": {"mutant": {"build": None, "codec": {"standard": cell},
                                                                 "net": {}, "client": {}}}, "interop": {}}
    text = matrix.render(doc)
    assert f"first: {first['test']} (failed): " in text and "failing requirements STD-LIM-1" in text, text


@pytest.mark.parametrize("args", [("run", "--testee", PYTESTEE, "--select", "nothing-matches"),
                                  ("net", "--protocol", "standard", "--server-cmd",
                                   f"{PYSERVER} --protocol standard --listen 127.0.0.1:0", "--select", "nothing-matches"),
                                  stress_args("standard", "--select", "nothing-matches"),
                                  ("fuzz", "--testee", PYTESTEE, "--protocol", "standard", "--examples", "0",
                                   "--seconds", "0")],
                         ids=["run", "net", "stress", "fuzz"])
def test_nothing_ran_is_exit_5_and_a_failing_cell(tmp_path, args):
    rc, out, doc, junit = cli(tmp_path, *args)
    assert rc == report.EXIT_NOTHING_RAN, (rc, out[-2000:])
    cell = matrix._cell(rc, doc)
    assert not cell["ok"] and "nothing ran" in cell["text"], cell
    if doc:
        assert report.problems(doc) == [] and doc["implementation"]["name"] != "?", doc["implementation"]


def test_name_in_the_report(tmp_path):
    rc, out, doc, _ = cli(tmp_path, "run", "--testee", PYTESTEE, "--select", "nothing-matches", "--name", "mine")
    assert doc["implementation"]["name"] == "mine" and "implementation: mine" in out


def test_help_documents_every_exit_status():
    for cmd in ([], ["run"], ["net"], ["matrix"], ["fuzz"], ["autobahn"]):
        p = subprocess.run([PY, "-m", "frameproof.cli", *cmd, "--help"], cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        text = " ".join(p.stdout.split())
        for status in ("0", "1", "2", "3", "5"):
            assert re.search(rf"(^|\s|;\s){status}\s", text), (cmd, status, text[-1500:])
    readme = (ROOT / "README.md").read_text()
    for status in ("0", "1", "2", "3", "5"):
        assert re.search(rf"^\| `?{status}`? \|", readme, re.M), f"README lists no exit status {status}"


def test_a_phase_that_raises_is_a_failing_cell(tmp_path):
    log = tmp_path / "log"
    cell = matrix._phase("x", log, lambda: {}["totals"])
    assert not cell["ok"] and "KeyError" in cell["text"] and "KeyError" in log.read_text()


def test_missing_programs_make_failing_cells_not_a_crash(tmp_path):
    """An implementation whose programs do not exist (a build that did not happen): every cell ✗
    with its reason, the job goes on to the end (interop included) and exits 1."""
    impl = tmp_path / "impl.json"
    impl.write_text(json.dumps({"name": "ghost", "build": ["true"], "testee": ["bin/none"], "server": ["bin/none"],
                                "load": ["bin/none"], "protocols": ["standard"]}))
    p = subprocess.run([PY, "-m", "frameproof.cli", "matrix", "--impl", str(impl), "--no-build", "--profile", "smoke",
                        "--scale", "small", "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads((tmp_path / "out" / "matrix.json").read_text())
    cells = list(matrix._all_cells(doc))
    kinds = {k.split()[1] for k, _ in cells}
    assert {"codec", "net", "client", "interop"} <= kinds | {k.split()[0] for k, _ in cells}, cells
    assert "standard stress" in doc["results"]["ghost"]["net"]
    # the pages step ran too: the ghost's page from the reports its cells left, its badge red
    html = tmp_path / "out" / "html"
    assert 'href="ghost.html"' in (html / "index.html").read_text() and (html / "ghost.html").exists()
    assert "#cf222e" in (html / "ghost-standard.svg").read_text()
    assert cells and all(not c["ok"] and c["text"].startswith("✗") for _, c in cells), cells


def test_readme_matrix_shows_every_protocol_and_implementation():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("<!-- matrix:begin -->", 1)[1].split("<!-- matrix:end -->", 1)[0]
    header = next(line for line in section.splitlines() if line.startswith("| suite |"))
    for impl in matrix.load_impls():
        assert f" {impl['name']} " in header or f" {impl['name']} (third-party)" in header, impl["name"]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| ")]
    for proto in registry.names():
        assert any(proto in r for r in rows), f"the README's matrix has no row for {proto}"
    assert re.search(r"on \d{4}-\d\d-\d\dT", section) and "cores" in section and "min of wall time" in section


def test_cells_run_side_by_side_keep_their_logs_whole_and_alone_runs_alone(tmp_path):
    """matrix --jobs: cells at once, each cell's log joins matrix.log in one piece, and a cell added
    ``alone`` (the stress group at full scale) starts only after every other cell ended."""
    import threading
    import time as _time
    log = tmp_path / "matrix.log"
    log.write_text("")
    q = matrix._Queue(log, jobs=3)
    running, peak, events = [], [0], []
    lock = threading.Lock()

    def task(i, alone=False):
        def run(cell_log):
            with lock:
                running.append(i)
                peak[0] = max(peak[0], len(running))
                events.append(("start", i, tuple(running)))
            for k in range(3):
                with open(cell_log, "a") as lf:
                    lf.write(f"cell {i} line {k}\n")
                _time.sleep(0.05)
            with lock:
                running.remove(i)
            return {"text": f"✓ {i}", "seconds": 0.1, "ok": True}
        q.add(f"cell {i}", run, alone)
    for i in range(6):
        task(i)
    task(99, alone=True)
    task(6)
    q.run()
    assert peak[0] == 3, peak  # three at once, never more
    start99 = next(e for e in events if e[1] == 99)
    assert start99[2] == (99,) and events[-1][1] == 99, events  # alone, and after the others
    lines = log.read_text().splitlines()
    assert len(lines) == 8 * 3
    for j in range(0, len(lines), 3):  # each cell's three lines together
        assert len({ln.split(" line")[0] for ln in lines[j:j + 3]}) == 1, lines


def test_one_job_runs_cells_in_order_on_the_shared_log(tmp_path):
    log = tmp_path / "matrix.log"
    log.write_text("")
    q = matrix._Queue(log, jobs=1)
    order = []
    for i in range(4):
        q.add(f"cell {i}", lambda cl, i=i: (order.append((i, cl)), {"text": "✓", "seconds": 0})[1], alone=i == 1)
    q.run()
    assert order == [(i, log) for i in range(4)]  # the order they were added, alone or not


def test_merge_adds_a_later_column_and_says_which_run_made_it():
    """matrix --merge: a column run later joins the whole job's matrix (replacing one of the same name), its
    interop pairs are added, the result still follows the schema, and the README line names both runs."""
    from frameproof import report as rep
    cell = {"ok": True, "text": "✓ 1/1"}

    def doc(names, third, when, secs, interop):
        return {"generated": when, "duration_s": secs, "profile": "ci", "scale": "full", "machine": "2 cores",
                "implementations": names, "protocols": ["websocket"], "third_party": third,
                "results": {n: {"build": 0, "codec": {}, "net": {"websocket": dict(cell, text=f"{n} {when}")},
                                "client": {}} for n in names},
                "interop": {k: cell for k in interop}, "interop_size": {"connections": 1, "requests": 1}}
    earlier = doc(["rust", "gorilla"], ["gorilla"], "2026-11-28T12:00:00Z", 6000, ["websocket:rust->gorilla"])
    later = doc(["gorilla", "newlib"], ["gorilla", "newlib"], "2026-11-28T18:00:00Z", 600, ["websocket:rust->newlib"])
    m = matrix.merged(earlier, later)
    assert m["implementations"] == ["rust", "gorilla", "newlib"] and m["third_party"] == ["gorilla", "newlib"]
    assert m["results"]["gorilla"]["net"]["websocket"]["text"].endswith("18:00:00Z")  # replaced, not kept
    assert set(m["interop"]) == {"websocket:rust->gorilla", "websocket:rust->newlib"}
    assert [r["implementations"] for r in m["runs"]] == [["rust"], ["gorilla", "newlib"]]
    assert rep.schema_problems(m, "matrix") == []
    line = matrix.readme_section(m, matrix.render(m)).splitlines()[0]
    assert "on 2026-11-28T12:00:00Z, in 100 min of wall time" in line and "cores" in line
    assert "the columns gorilla, newlib" in line and "--impl gorilla --impl newlib --merge" in line and "in 10 min" in line
    # merged again: the runs stay one entry a run, each column under the run that made it last
    m2 = matrix.merged(m, doc(["rust"], [], "2026-11-29T09:00:00Z", 60, []))
    assert [r["implementations"] for r in m2["runs"]] == [["gorilla", "newlib"], ["rust"]]
    # and a run with no --merge reads as before
    assert "added by" not in matrix.readme_section(earlier, "")


@pytest.mark.parametrize("no_skip", [False, True])
def test_no_skip_in_impl_json_fails_a_codec_cell_that_skips(tmp_path, no_skip):
    """impl.json "no_skip": true (the bundled references) runs the codec cells with --no-skip: a testee that
    answers `skipped` (pytestee --partial, every non-default parameter) fails its cell, and passes without it."""
    impl = tmp_path / "impl.json"
    d = {"name": "partial", "build": ["true"], "testee": [PY, "-m", "frameproof.pytestee", "--partial"],
         "protocols": ["length-field"]}
    if no_skip:
        d["no_skip"] = True
    impl.write_text(json.dumps(d))
    p = subprocess.run([PY, "-m", "frameproof.cli", "matrix", "--impl", str(impl), "--no-build", "--profile", "smoke",
                        "--scale", "small", "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    doc = json.loads((tmp_path / "out" / "matrix.json").read_text())
    cell = doc["results"]["partial"]["codec"]["length-field"]
    assert cell["ok"] is (not no_skip), (cell, p.stdout[-2000:])
    if no_skip:
        assert "--no-skip" in cell["first_failure"]["message"], cell["first_failure"]
    else:
        assert cell["totals"]["skipped"] > 0 and cell["totals"]["failed"] == 0, cell["totals"]
