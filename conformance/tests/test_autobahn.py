"""`frameproof autobahn` (conformance/frameproof/protocols/websocket/autobahn.py): the real Autobahn
testsuite (wstest 25.10.1 on CPython 2.7) and kosoku, turned into frameproof results.

Fast, offline: the report parser on recorded wstest reports (autobahn-fixture/, a real run against
the `websockets` echo server with OK, NON-STRICT, INFORMATIONAL and FAILED cases), the verdict
rules, expected failures, the JUnit/JSON writers, the case-group -> WS-* table against the spec.
Real runs (wstest installed by tools/autobahn/install.sh; skipped, with its reason, only when that
script fails): Autobahn 1-7 and 10 (--quick: 9.* left out, it is tools/autobahn/peers.py's) against
the Python reference server and the Python reference client, both drivers on one selection, and a planted server fault that must come out
FAILED with exit status 1.
"""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from frameproof.protocols.websocket import autobahn as AB
from frameproof.protocols.websocket import autobahn_map as MAP

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "autobahn-fixture"
PY = sys.executable
# Autobahn 9.1.6/9.2.6 send 16 MiB frames; the spec's default limit (10 MiB) answers them 1009 by
# design (WS-LIM-1), so the reference server runs with a 64 MiB limit for Autobahn.
SERVER = (f"{PY} -m frameproof.pyserver --codec "
          "'{\"protocol\": \"websocket\", \"limits\": {\"max_payload\": 67108864}}' --listen 127.0.0.1:0")
CLIENT = f"{PY} -m frameproof.protocols.websocket.autobahn_client"
# CI runs every default category but the long 9.* (--quick: 247 of the 301 cases, a few seconds per
# side); the full 1-7, 9, 10 run is tools/autobahn/peers.py
CI_CASES = "1.*,2.*,3.*,4.*,5.*,6.*,7.*,10.*"


def default_cases():
    return list(MAP.known_cases())


def selected(patterns):
    import fnmatch
    return [c for c in default_cases() if any(fnmatch.fnmatchcase(c, p) for p in patterns.split(","))]


# ------------------------------------------------------------------ the parser, offline

@pytest.fixture(scope="module")
def recorded():
    return AB.parse_reports(FIXTURE, "server", "wstest", "websockets-17.4")


def test_parser_reads_every_recorded_case_with_its_verdict(recorded):
    assert sorted(recorded, key=AB.case_key) == ["1.1.1", "2.5", "3.2", "6.4.1", "7.1.5", "7.1.6", "7.13.1", "9.3.1"]
    got = {c: (r.behavior, r.behavior_close, r.verdict, r.status) for c, r in recorded.items()}
    assert got == {
        "1.1.1": ("OK", "OK", "OK", "passed"),
        "2.5": ("OK", "OK", "OK", "passed"),
        "3.2": ("NON-STRICT", "OK", "NON-STRICT", "passed"),
        "6.4.1": ("NON-STRICT", "OK", "NON-STRICT", "passed"),
        "7.1.5": ("FAILED", "WRONG CODE", "FAILED", "failed"),
        "7.1.6": ("INFORMATIONAL", "INFORMATIONAL", "INFORMATIONAL", "passed"),
        "7.13.1": ("INFORMATIONAL", "INFORMATIONAL", "INFORMATIONAL", "passed"),
        "9.3.1": ("FAILED", "FAILED", "FAILED", "failed"),
    }


def test_parser_states_expected_and_actual_as_autobahn_does(recorded):
    r = recorded["9.3.1"]
    assert r.name == "websocket/autobahn/server/9.3.1"
    assert r.description.startswith("Send fragmented text message message with message payload of length 4 * 2**20")
    assert "Receive echo'ed text message" in r.expected
    assert "Did not receive message within 100 seconds." in r.actual
    assert "close code in [1000], closed by Autobahn, clean" == r.expected_close
    assert "The connection was failed by the wrong endpoint" in r.actual_close and "remote close code 1009" in r.actual_close
    assert r.remote_close_code == 1009 and r.duration_ms > 0
    assert r.requirements == ["WS-FRAG-1", "WS-LIM-2", "WS-UTF8-2", "WS-ECHO-1"]
    assert Path(r.report).name == "websockets_17_4_case_9_3_1.json"
    w = recorded["7.1.5"]
    assert "The close code should have been 1000 or empty" in w.actual_close and "remote close code 1002" in w.actual_close
    assert w.requirements == ["WS-CLOSE-4", "WS-CLOSE-5"]
    # Autobahn's HTML in descriptions is turned into plain text
    assert "<b>" not in recorded["3.2"].description and "RSV = 2" in recorded["3.2"].description
    # the client side names the client's masking rule
    c = AB.parse_reports(FIXTURE, "client", "wstest")["1.1.1"]
    assert "WS-MASK-2" in c.requirements and "WS-MASK-1" not in c.requirements
    assert c.name == "websocket/autobahn/client/1.1.1"


def test_parser_without_index_is_a_tool_error(tmp_path):
    with pytest.raises(AB.ToolError, match="index.json"):
        AB.parse_reports(tmp_path, "server", "wstest")


@pytest.mark.parametrize("behavior,close,verdict", [
    ("OK", "OK", "OK"), ("OK", "NON-STRICT", "NON-STRICT"), ("NON-STRICT", "OK", "NON-STRICT"),
    ("INFORMATIONAL", "INFORMATIONAL", "INFORMATIONAL"), ("UNIMPLEMENTED", "UNIMPLEMENTED", "UNIMPLEMENTED"),
    ("FAILED", "OK", "FAILED"), ("OK", "WRONG CODE", "FAILED"), ("OK", "UNCLEAN", "FAILED"),
    ("OK", "FAILED BY CLIENT", "FAILED"), ("OK", "FAILED", "FAILED"), ("???", "OK", "FAILED"),
])
def test_verdict_rules(behavior, close, verdict):
    assert AB.verdict_of(behavior, close) == verdict


def test_expected_failures(recorded):
    import copy
    rs = copy.deepcopy(list(recorded.values()))
    unmatched = AB.apply_xfail(rs, ["7.1.5", "websocket/autobahn/server/9.3.*", "1.1.1", "12.*",
                                    "websocket/kosoku/server/*"])
    st = {r.case: r.status for r in rs}
    assert st["7.1.5"] == "xfailed" and st["9.3.1"] == "xfailed"  # bare case glob and name glob
    assert st["1.1.1"] == "xpassed"  # an expected failure that passes is reported
    assert st["2.5"] == "passed"
    assert unmatched == ["12.*", "websocket/kosoku/server/*"]


@pytest.mark.parametrize("entry,applies", [
    ("7.1.5", True), ("9.3.1", False), ("9.*", False), ("7.1.*", True), ("6.*", False), ("12.*", True),
    ("websocket/autobahn/server/7.1.5", True),
    ("websocket/autobahn/client/7.1.5", False), ("websocket/kosoku/server/7.1.5", False),
    ("websocket/*/*/7.1.5", True), ("websocket/autobahn/*/9.3.3", False), ("3.2", False),
])
def test_expected_failures_outside_the_run_are_not_checked(entry, applies):
    # one file serves runs of any selection: wstest only, server side, 7.* and 3.* except 3.2 and 9.*;
    # a glob applies where it names a selected case (12.*: no recorded IDs, judged by the run)
    assert AB.xfail_applies(entry, ["wstest"], "server", ["7.*", "3.*"], ["3.2", "9.*"]) is applies


def test_drivers_compared_per_case(recorded):
    import copy
    other = copy.deepcopy(recorded)
    other["3.2"].behavior = "OK"
    other["9.3.1"].behavior, other["9.3.1"].behavior_close, other["9.3.1"].verdict = "OK", "OK", "OK"
    del other["7.13.1"]
    d = {x["case"]: x for x in AB.compare(recorded, other)}
    assert sorted(d, key=AB.case_key) == ["3.2", "7.13.1", "9.3.1"]
    assert d["9.3.1"] == {"case": "9.3.1", "wstest": "FAILED/FAILED", "kosoku": "OK/OK", "verdict_differs": True,
                          "requirements": MAP.requirements("9.3.1")}
    assert d["7.13.1"]["kosoku"] == "not run"
    assert AB.compare(recorded, recorded) == []


def test_junit_report(recorded, tmp_path):
    import copy
    rs = copy.deepcopy(list(recorded.values()))
    AB.apply_xfail(rs, ["7.1.5"])
    out = tmp_path / "r.xml"
    AB.write_junit(str(out), AB.report_tests(rs), 1.5)
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite.get("name") == "frameproof-autobahn" and suite.get("time") == "1.500"
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("8", "1", "1")
    cases = {tc.get("name").rsplit("/", 1)[-1]: tc for tc in suite.iter("testcase")}
    assert {tc.get("classname") for tc in suite.iter("testcase")} == {"websocket.autobahn.wstest.server"}
    assert all(tc.get("time") for tc in suite.iter("testcase"))
    f = cases["9.3.1"].find("failure")
    assert f.get("message") == "Autobahn FAILED/FAILED" and "Did not receive message within 100 seconds." in f.text
    assert cases["7.1.5"].find("skipped") is not None
    assert cases["1.1.1"].find("failure") is None
    props = {p.get("name"): p.get("value") for p in cases["9.3.1"].iter("property")}
    assert props["requirements"] == "WS-FRAG-1 WS-LIM-2 WS-UTF8-2 WS-ECHO-1"


# ------------------------------------------------------------------ the mapping table

def test_every_mapped_requirement_exists_in_the_spec():
    from frameproof.spec import requirements
    reqs = requirements()
    unknown = [(pat, rid) for pat, ids, _ in MAP.TABLE for rid in ids
               if rid not in reqs or reqs[rid].protocol != ("websocket-deflate" if pat[:3] in ("12.", "13.") else "websocket")]
    assert not unknown, f"autobahn_map.py names requirements spec/websocket(-deflate).md does not define: {unknown}"
    assert all(ids and what for _, ids, what in MAP.TABLE)
    # a client's run: the server's rules swapped for the client's (WS-MASK-2; WSD-NEG-5 for the negotiation)
    assert MAP.requirements("13.3.1", "client")[:2] == ["WSD-NEG-5", "WSD-FRM-1"]
    assert MAP.requirements("1.1.1", "client")[2] == "WS-MASK-2"


def test_every_default_case_is_mapped_and_no_row_is_dead():
    cases = default_cases()
    assert len(cases) == 301
    assert not [c for c in cases if MAP.row(c) is None]
    import fnmatch
    dead = [pat for pat, _, _ in MAP.TABLE if not pat.startswith(("12.", "13."))
            and not any(fnmatch.fnmatchcase(c, pat) for c in cases)]
    assert not dead, f"rows that match no Autobahn case: {dead}"
    # a specific row is not shadowed by a wider one above it
    for i, (pat, _, _) in enumerate(MAP.TABLE):
        for wider, _, _ in MAP.TABLE[:i]:
            hits = [c for c in cases if fnmatch.fnmatchcase(c, pat)]
            assert not hits or not all(fnmatch.fnmatchcase(c, wider) for c in hits), f"{pat} is shadowed by {wider}"


def test_command_comes_through_the_protocol_hook():
    from frameproof import protocols
    assert [p.name for p in protocols.all_protocols() if p.commands()] == ["websocket"]
    src = (ROOT / "conformance" / "frameproof" / "cli.py").read_text()
    assert "autobahn" not in src and "websocket" not in src
    p = subprocess.run([PY, "-m", "frameproof.cli", "autobahn", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and "--client-cmd" in p.stdout and "--driver" in p.stdout
    p = subprocess.run([PY, "-m", "frameproof.cli", "autobahn"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2


# ------------------------------------------------------------------ real runs

@pytest.fixture(scope="module")
def wstest():
    p = subprocess.run(["bash", str(ROOT / "tools" / "autobahn" / "install.sh")], capture_output=True, text=True,
                       timeout=900)
    if p.returncode != 0:
        pytest.skip(f"tools/autobahn/install.sh failed (exit {p.returncode}), Autobahn NOT run: {p.stderr[-500:]}")
    return p.stdout


def autobahn(tmp_path, *args, timeout=600):
    rep = tmp_path / "report.json"
    junit = tmp_path / "report.xml"
    p = subprocess.run([PY, "-m", "frameproof.cli", "autobahn", *args, "--json", str(rep), "--junit", str(junit),
                        "--outdir", str(tmp_path / "reports")], cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout)
    doc = json.loads(rep.read_text()) if rep.exists() else None
    if doc is not None:  # the autobahn kind of the published report schema (schemas/report.schema.json)
        from frameproof.report import schema_problems
        assert schema_problems(doc) == [], schema_problems(doc)[:5]
    return p.returncode, p.stdout + p.stderr, doc, junit


def test_python_reference_server_passes_autobahn(wstest, tmp_path):
    rc, out, doc, junit = autobahn(tmp_path, "--server-cmd", SERVER, "--quick", "--agent", "fp-python")
    assert rc == 0, out
    assert "--quick: the long cases 9.* were left out" in out
    want = selected(CI_CASES)
    assert len(want) == 247
    assert sorted(t["case"] for t in doc["tests"]) == sorted(want), out
    assert doc["totals"] == {"passed": len(want), "failed": 0, "skipped": 0, "xfailed": 0, "xpassed": 0}
    assert doc["verdicts"]["FAILED"] == 0 and doc["unexpected"] == []
    assert doc["side"] == "server" and doc["drivers"]["wstest"]["version"] == "25.10.1"
    # Autobahn's INFORMATIONAL cases: listed, not failed; nothing NON-STRICT
    info = [t["case"] for t in doc["tests"] if t["verdict"] == "INFORMATIONAL"]
    assert info == ["7.1.6", "7.13.1", "7.13.2"] and "7.1.6    INFORMATIONAL/INFORMATIONAL" in out
    assert doc["verdicts"] == {"OK": 244, "NON-STRICT": 0, "INFORMATIONAL": 3, "UNIMPLEMENTED": 0, "FAILED": 0}
    assert all(t["requirements"] for t in doc["tests"])
    assert {"WS-PING-1", "WS-FRAG-1", "WS-CTL-3", "WS-CLOSE-5"} <= set(doc["requirements"])
    assert ET.parse(junit).getroot().find("testsuite").get("tests") == str(len(want))


def test_python_reference_client_passes_autobahn(wstest, tmp_path):
    rc, out, doc, _ = autobahn(tmp_path, "--client-cmd", CLIENT, "--quick", "--agent", "fp-python-client")
    assert rc == 0, out
    want = selected(CI_CASES)
    assert sorted(t["case"] for t in doc["tests"]) == sorted(want), out
    assert doc["totals"]["failed"] == 0 and doc["unexpected"] == []
    assert doc["verdicts"] == {"OK": 244, "NON-STRICT": 0, "INFORMATIONAL": 3, "UNIMPLEMENTED": 0, "FAILED": 0}
    assert doc["drivers"]["wstest"]["client_exit"] == 0
    assert all(t["side"] == "client" and t["name"].startswith("websocket/autobahn/client/") for t in doc["tests"])
    assert "WS-MASK-2" in doc["requirements"] and "WS-MASK-1" not in doc["requirements"]


def test_planted_fault_is_failed_and_exits_1(wstest, tmp_path):
    # the server masks its replies (WS-MASK-4): Autobahn, the client, fails the connection
    srv = f"{PY} -m frameproof.pyserver --protocol websocket --fault ws-masks-replies --listen 127.0.0.1:0"
    rc, out, doc, junit = autobahn(tmp_path, "--server-cmd", srv, "--cases", "1.1.1,2.2,7.3.2")
    assert rc == 1, out
    st = {t["case"]: t for t in doc["tests"]}
    assert st["1.1.1"]["verdict"] == "FAILED" and st["2.2"]["verdict"] == "FAILED"
    assert st["7.3.2"]["verdict"] == "OK"  # an error close carries no masked reply
    assert "FAILED: 1.1.1" in out and "expected:" in out and "actual:" in out
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "2"
    # the same run with those two listed as expected failures passes; a stale entry fails it
    xf = tmp_path / "xfail.txt"
    xf.write_text("# the fault masks every reply\n1.1.1\nwebsocket/autobahn/server/2.*\n")
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", srv, "--cases", "1.1.1,2.2,7.3.2", "--xfail", str(xf))
    assert rc == 0, out
    assert doc["totals"] == {"passed": 1, "failed": 0, "skipped": 0, "xfailed": 2, "xpassed": 0}
    xf.write_text("1.1.1\n2.2\n7.3.2\n8.*\n9.1.1\n")  # 7.3.2 passes; no case matches 8.*; 9.1.1 is not selected
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", srv, "--cases", "1.1.1,2.2,7.3.2", "--xfail", str(xf))
    assert rc == 1 and doc["totals"]["xpassed"] == 1 and doc["xfail_unmatched"] == ["8.*"], out
    assert any("9.1.1" in n for n in doc["notes"])


def test_client_with_a_planted_bug_is_failed(wstest, tmp_path):
    # the reference codec's mutant ws-no-pong (WS-PING-1): the client never answers a ping
    rc, out, doc, _ = autobahn(tmp_path, "--client-cmd", f"{CLIENT} --mutant ws-no-pong", "--cases", "1.1.1,2.2,2.3")
    assert rc == 1, out
    st = {t["case"]: t for t in doc["tests"]}
    assert st["1.1.1"]["verdict"] == "OK"
    assert st["2.2"]["verdict"] == st["2.3"]["verdict"] == "FAILED"
    assert "WS-PING-1" in st["2.2"]["requirements"] and doc["requirements"]["WS-PING-1"]["failed"] == 2
    assert doc["drivers"]["wstest"]["client_exit"] == 0  # every case ran; Autobahn's verdict fails it


def test_kosoku_drives_the_same_cases_and_agrees(wstest, tmp_path):
    if "KOSOKU none" in wstest:
        pytest.skip(f"kosoku could not be installed: {wstest}")
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", SERVER, "--cases", "1.1.*,2.*,5.*", "--driver", "both")
    assert rc == 0, out
    n = len(selected("1.1.*,2.*,5.*"))
    assert sum(t["driver"] == "wstest" for t in doc["tests"]) == n
    assert sum(t["driver"] == "kosoku" for t in doc["tests"]) == n
    assert doc["disagreements"] == [], out
    assert "wstest vs kosoku: 0 case(s) where the drivers disagree" in out
    assert any("kosoku takes no spec file" in n for n in doc["notes"])


def test_ipv6_server_runs_wstest_and_says_kosoku_cannot(wstest, tmp_path):
    srv = f"{PY} -m frameproof.pyserver --protocol websocket --listen [::1]:0"
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", srv, "--cases", "1.1.1,2.2", "--driver", "both")
    assert rc == 0, out
    assert doc["target"].startswith("ws://[::1]:") and {t["driver"] for t in doc["tests"]} == {"wstest"}
    assert [t["verdict"] for t in doc["tests"]] == ["OK", "OK"]
    assert any("kosoku left out" in n for n in doc["notes"])
    rc, out, _, _ = autobahn(tmp_path, "--server-cmd", srv, "--cases", "1.1.1", "--driver", "kosoku")
    assert rc == 2 and "kosoku cannot drive an IPv6 server" in out


def test_server_that_never_listens_is_exit_3(wstest, tmp_path):
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", f"{PY} -c 'import sys; sys.exit(4)'", "--cases", "1.1.1")
    assert rc == 3 and "LISTENING" in out
    rc, out, doc, _ = autobahn(tmp_path, "--client-cmd", "/nonexistent/fp-autobahn-client", "--cases", "1.1.1")
    assert rc == 3 and "the client could not start" in out
    # a client that starts but runs nothing: no report, exit 1 with its output
    rc, out, doc, _ = autobahn(tmp_path, "--client-cmd", f"{PY} -c 'print(\"no cases here\")'", "--cases", "1.1.1")
    assert rc == 1 and "no cases here" in out and doc["unexpected"], out


def test_declined_deflate_is_allowed_unless_the_peer_claims_it(wstest, tmp_path):
    # the Python server declines permessage-deflate: UNIMPLEMENTED passes by default (WS-HS-5), and fails
    # the case under --require-implemented, what a matrix cell of a server that claims the extension uses
    rc, out, doc, _ = autobahn(tmp_path / "a", "--server-cmd", SERVER, "--cases", "12.1.1,13.1.1")
    assert rc == 0, out
    assert doc["verdicts"]["UNIMPLEMENTED"] == 2 and doc["totals"]["passed"] == 2, out
    rc, out, doc, _ = autobahn(tmp_path / "b", "--server-cmd", SERVER, "--cases", "12.1.1,13.1.1",
                               "--require-implemented")
    assert rc == 1, out
    assert doc["totals"]["failed"] == 2, out
    assert all("declined (--require-implemented)" in t["actual"] for t in doc["tests"]), doc["tests"]


def test_deflate_cells_only_for_implementations_that_claim_it():
    from frameproof import protocols
    ws = protocols.get("websocket")
    impl = {"name": "x", "dir": "/tmp/x", "server": "srv", "autobahn_client": "cli"}
    cmd = lambda key: impl.get(key)  # noqa: E731
    labels = [label for _, label, _ in ws.matrix_suites(impl, cmd, "smoke", "small")]
    assert not any("deflate" in label for label in labels), labels
    impl["websocket_extensions"] = {"server": ["permessage-deflate"]}
    cells = {label: argv for _, label, argv in ws.matrix_suites(impl, cmd, "smoke", "small")}
    argv = cells["websocket autobahn permessage-deflate (as server)"]
    assert "--require-implemented" in argv and '"permessage_deflate": true' in argv[2], argv
    assert argv[argv.index("--cases") + 1] == ",".join(MAP.DEFLATE_SAMPLE_CASES)
    full = {label: argv for _, label, argv in ws.matrix_suites(impl, cmd, "smoke", "full")}
    argv = full["websocket autobahn permessage-deflate (as server)"]
    assert argv[argv.index("--cases") + 1] == "12.*,13.*"
    assert "websocket autobahn permessage-deflate (as client)" not in full


DEFLATE_SERVER = (f"{PY} -m frameproof.pyserver --codec '{{\"protocol\": \"websocket\", \"limits\": {{\"max_payload\": "
                  f"67108864}}, \"websocket\": {{\"max_message\": 67108864, \"permessage_deflate\": true}}}}' "
                  "--listen 127.0.0.1:0")


def test_python_reference_server_with_deflate_passes_the_deflate_sample(wstest, tmp_path):
    # the Python reference accepts permessage-deflate when its codec says so (spec/websocket-deflate.md):
    # Autobahn 12.* and 13.*, one short case of each group, each negotiated (not UNIMPLEMENTED) and OK
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", DEFLATE_SERVER, "--cases", ",".join(MAP.DEFLATE_SAMPLE_CASES),
                               "--require-implemented", "--agent", "fp-python-deflate")
    assert rc == 0, out
    assert sorted(t["case"] for t in doc["tests"]) == sorted(MAP.DEFLATE_SAMPLE_CASES), out
    assert doc["verdicts"]["OK"] == len(MAP.DEFLATE_SAMPLE_CASES), doc["verdicts"]


def test_deflate_sample_catches_a_compressor_that_keeps_its_context(wstest, tmp_path):
    # planted: the server agrees to server_no_context_takeover and compresses with its window kept
    # anyway (WSD-CTX-1): a client that resets its inflater per message, as agreed, cannot read the echo.
    # The CI sample catches it in the groups that ask for server_no_context_takeover (13.2, 13.5-13.7)
    srv = DEFLATE_SERVER + " --fault ws-deflate-keeps-context"
    rc, out, doc, _ = autobahn(tmp_path, "--server-cmd", srv, "--cases", ",".join(MAP.DEFLATE_SAMPLE_CASES),
                               "--require-implemented")
    assert rc == 1, out
    failed = {t["case"] for t in doc["tests"] if t["status"] == "failed"}
    assert {"13.2.2", "13.5.2"} <= failed, (failed, out)
    assert not failed & {"12.1.1", "13.1.1"}, (failed, out)  # with context takeover agreed, nothing is wrong
