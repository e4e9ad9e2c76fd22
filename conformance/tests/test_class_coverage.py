"""The coverage of each requirement's input space, per class (issue 26): every dimension declared with
frameproof.coverage.declare (the rpc id's place in the u32 range, the spellings of the WebSocket opening
handshake and of the 101 response, fragment shapes, close-code classes, the discovery interleavings)
must have every one of its classes drawn by the tests that draw it, under the ci profile. The classes
come from the JSON reports (each test's ``classes_covered``), unioned over the tests; a class nothing
draws is named. And the check itself bites: a planted gap is reported."""
import pytest

from frameproof import coverage as C

from conftest import PY, PYTESTEE

PYSERVER = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0"
DEFLATE = '{"protocol": "websocket", "websocket": {"permessage_deflate": true}}'
LOAD = (f"{PY} -m frameproof.pyload --connect {{host}}:{{port}} --connections 3 --payload 24 --timeout-ms 1000 "
        f"--json {{json}} --protocol websocket --mode pipelined --window 16 --requests 300")

# the tests that note classes, each run as a user runs it (every report is schema-checked by conftest)
RUNS = {
    "codec properties": ("run", "--testee", PYTESTEE, "--profile", "ci", "--protocol", "rpc", "--protocol",
                         "websocket", "--select", "*/prop_*", "--select", "*/discovery_registry_stateful",
                         "--select", "websocket/*/serve_scripted"),
    "rpc server": ("net", "--protocol", "rpc", "--server-cmd", f"{PYSERVER} --protocol rpc",
                   "--select", "*/net/ids_whole_range", "--select", "*/net/stream_ids_whole_range"),
    "websocket server": ("net", "--protocol", "websocket", "--server-cmd", f"{PYSERVER} --protocol websocket",
                         "--select", "*/net/handshake_grammar", "--select", "*/net/close_code_classes"),
    "websocket server, permessage-deflate on": (
        "net", "--codec", DEFLATE, "--server-cmd", f"{PYSERVER} --codec '{DEFLATE}'",
        "--select", "*/net/deflate_negotiation"),
    "websocket client": ("net", "--protocol", "websocket", "--client", LOAD,
                         "--select", "*/client/opening_response_grammar"),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from conftest import run_frameproof
    out = {}
    for what, args in RUNS.items():
        rc, text, doc = run_frameproof(list(args), tmp_path_factory.mktemp(what.replace(" ", "-")), timeout=300)
        assert rc == 0 and doc is not None, f"{what}: exit {rc}\n{text[-3000:]}"
        assert doc["totals"]["passed"] >= 1 and not doc["totals"]["failed"], (what, doc["totals"])
        out[what] = doc
    return out


def test_every_declared_class_is_drawn(reports):
    covered = C.union(t for doc in reports.values() for t in doc["tests"])
    declared = C.declared()
    assert declared, "no dimension declared"
    gaps = C.missing(declared.values(), covered)
    assert not gaps, "classes of the input space no test drew (ci profile):\n" + C.missing_text(gaps)
    # and nothing is noted outside its declaration (a class misspelled where it is noted)
    stray = {n: sorted(set(cs) - set(declared[n].classes)) for n, cs in covered.items()
             if n not in declared or set(cs) - set(declared[n].classes)}
    assert not stray, f"classes noted but not declared: {stray}"


def test_reports_carry_classes_per_test(reports):
    """classes_covered is per test: each dimension shows up on the tests that draw it, the old keys stay."""
    by_name = {t["name"]: t for doc in reports.values() for t in doc["tests"]}
    serve = by_name["rpc/RPC-ECHO-1/prop_serve_agrees_with_model"]["classes_covered"]
    assert "rpc.id" in serve and "ws.fragments" not in serve
    grammar = by_name["websocket/WS-HS-6/net/handshake_grammar"]["classes_covered"]
    assert set(grammar) == {n for n in C.declared() if n.startswith("ws.hs.")}
    assert set(by_name["websocket/WS-CLOSE-2/net/close_code_classes"]["classes_covered"]) == {"ws.close_code"}
    stateful = by_name["rpc/DISC-REG-1/discovery_registry_stateful"]
    assert set(stateful["discovery_pairs_covered"]) == set(stateful["classes_covered"]["rpc.discovery.pairs"])
    assert "classes_covered" not in by_name["rpc/RPC-MATCH-1/prop_matching_agrees_with_model"]


def test_codec_close_code_classes_are_the_servers():
    from frameproof.protocols.websocket import net, strategies
    assert C.declared()[strategies.CLOSE_CODE_CODEC].classes == ("no code",) + tuple(c[3] for c in net.CLOSE_CLASSES)


def test_a_planted_gap_is_caught():
    dims = [C.Dimension("planted.dim", ("drawn", "never drawn"), ("WS-HS-6",)),
            C.Dimension("planted.other", ("a",), ("RPC-HDR-7",))]
    C.reset()
    C.note("planted.dim", "drawn")
    C.note("planted.other", "a")
    tests = [{"name": "x", "classes_covered": C.drawn()}, {"name": "y"}]
    assert C.missing(dims, C.union(tests)) == {"planted.dim": ["never drawn"]}
    assert C.missing(dims, {}) == {"planted.dim": ["drawn", "never drawn"], "planted.other": ["a"]}
    assert C.missing(dims[1:], C.union(tests)) == {}
    # a dimension declared through declare() is found the same way, and named with its requirements
    name = C.declare("planted.declared", ["x", "y"], ["WS-CLOSE-2"])
    try:
        gaps = C.missing([C.DECLARED[name]], {name: ["x"]})
        assert gaps == {name: ["y"]}
        assert "planted.declared (WS-CLOSE-2): never drew y" in C.missing_text(gaps)
    finally:
        del C.DECLARED[name]
        C.reset()


def test_classifiers():
    assert [C.id_class(n) for n in (0, 1, 2, 999, 1000, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 0x7FFFFFFE)] == \
        ["0", "1", "small", "small", "other", "2^31-1", "2^31", "2^32-1", "other"]
    assert [C.case_class(s) for s in ("host", "HOST", "Host", "sec-websocket-key")] == ["lower", "upper", "mixed", "lower"]
    assert [C.ows_class(s) for s in ("", " ", "  ", "\t", " \t ")] == ["none", "space", "space", "tab", "space+tab"]
    C.declared()
    with pytest.raises(ValueError):
        C.declare("rpc.id", ["0"], ["RPC-HDR-7"])  # declared once
