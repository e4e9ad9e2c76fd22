"""`frameproof net --protocol websocket` against a server whose echo service lives at its own resource
path and speaks its own subprotocol (codec JSON `"websocket": {"path": ..., "subprotocol": ...}`,
spec/websocket.md §13): every connection of the network cases, the healthy traffic, the stress
scenarios and the handshake grammar asks for that path and offers that subprotocol. The Python
reference server configured so answers 404 for any other path, so a connection that forgot the path
fails the run. A planted fault that names a subprotocol the client did not offer is caught under
WS-HS-4; the load client sends the path and the subprotocol, and the client suite's checking server
refuses a request without them."""
import json
import os

import pytest

from frameproof import protocols as registry
from frameproof.oracle import Codec
from frameproof.paths import ROOT
from frameproof.protocols.websocket import client_opening as CO
from frameproof.protocols.websocket.handshake_grammar import browser_requests

from conftest import PY

ENDPOINT = {"path": "/ws/echo", "subprotocol": "echo.v1"}
CODEC = json.dumps({"protocol": "websocket", "websocket": ENDPOINT})
SERVER = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0 --codec '{CODEC}'"
LOAD = (f"{PY} -m frameproof.pyload --connect {{host}}:{{port}} --connections 3 --requests 600 --payload 24 "
        f"--mode pipelined --window 8 --timeout-ms 1000 --json {{json}} --codec '{CODEC}'")
WS = registry.get("websocket")


def _by_status(doc):
    out = {}
    for t in doc["tests"]:
        out.setdefault(t["status"], {})[t["name"].rsplit("/", 1)[-1]] = t.get("message", "")
    return out


def failed(doc):
    return {rid for rid, v in doc["requirements"].items() if v["failed"]}


def test_python_server_with_path_and_subprotocol_passes(frameproof):
    rc, out, doc = frameproof("net", "--codec", CODEC, "--contract", "--server-cmd", SERVER, timeout=900)
    assert doc is not None, out[-3000:]
    st = _by_status(doc)
    assert set(st) == {"passed"}, {k: v for k, v in st.items() if k != "passed"}
    assert {"handshake_grammar", "browser_opening_requests", "handshake_subprotocol_selected"} <= set(st["passed"])
    assert rc == 0, out[-3000:]


def test_suite_without_the_path_is_refused(frameproof, monkeypatch):
    """The server configured with a path answers 404 elsewhere: a run that does not name the path fails
    (the check above is not vacuous)."""
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--server-cmd", SERVER,
                              "--select", "*/one_request_one_reply", timeout=300)
    assert rc == 1 and "expected status 101, actual 404" in out, out[-2000:]


@pytest.mark.parametrize("codec", [None, CODEC], ids=["default", "configured"])
def test_unoffered_subprotocol_fault_is_caught(frameproof, monkeypatch, codec):
    """ws-names-unoffered-subprotocol names the echo service's subprotocol on every 101, offered or not:
    by default every connection (none offers one) fails it, configured the WS-HS-4 case does (its
    offering without the subprotocol); both under WS-HS-4 (RFC 6455 §4.1 item 6)."""
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    cmd = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0 --fault ws-names-unoffered-subprotocol " + (
        f"--codec '{codec}'" if codec else "--protocol websocket")
    args = ["--codec", codec] if codec else ["--protocol", "websocket"]
    sel = "*/handshake_subprotocol_selected" if codec else "*/one_request_one_reply"
    rc, out, doc = frameproof("net", *args, "--server-cmd", cmd, "--select", sel, timeout=300)
    assert rc == 1, out[-2000:]
    assert "WS-HS-4" in failed(doc), (failed(doc), out[-2000:])


def test_any_path_fault_is_caught(frameproof, monkeypatch):
    """ws-serves-any-path, configured with the path, upgrades every target: the other-path case fails it
    under WS-HS-9 (a prefix, the path with more after it, its neighbours as text); without a path the case
    does not run, for a server may then serve every target."""
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    cmd = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0 --fault ws-serves-any-path --codec '{CODEC}'"
    rc, out, doc = frameproof("net", "--codec", CODEC, "--server-cmd", cmd, "--select", "*/handshake_other_path_404",
                              timeout=300)
    assert rc == 1 and "expected status one of 400-499" in out, out[-2000:]
    assert failed(doc) == {"WS-HS-9"}, (failed(doc), out[-2000:])
    case = next(c for c in WS.net_cases() if c.name == "handshake_other_path_404")
    assert case.applies(Codec.from_json(json.loads(CODEC))) and not case.applies(Codec.from_json({"protocol": "websocket"}))


@pytest.mark.skipif(not (ROOT / "reference-impls/rust/target/release/fp-server").exists(),
                    reason="the Rust fp-server is not built (bash reference-impls/rust/build.sh)")
def test_rust_server_with_path_and_subprotocol_passes(frameproof):
    cmd = f"{ROOT}/reference-impls/rust/target/release/fp-server --codec '{CODEC}' --listen 127.0.0.1:0"
    rc, out, doc = frameproof("net", "--codec", CODEC, "--contract", "--server-cmd", cmd, timeout=900)
    assert doc is not None, out[-3000:]
    st = _by_status(doc)
    assert set(st) == {"passed"}, {k: v for k, v in st.items() if k != "passed"}
    assert rc == 0, out[-3000:]


def test_python_load_client_sends_path_and_subprotocol(frameproof):
    rc, out, doc = frameproof("net", "--codec", CODEC, "--client", LOAD, timeout=600)
    assert doc is not None, out[-3000:]
    st = _by_status(doc)
    assert set(st) <= {"passed", "skipped"}, {k: v for k, v in st.items() if k not in ("passed", "skipped")}
    assert rc == 0, out[-3000:]


def test_checking_server_refuses_a_request_without_them():
    c = Codec.from_json(json.loads(CODEC))
    side = WS.load_side(Codec.from_json({"protocol": "websocket"}), "binary")
    head = side.opening("127.0.0.1").decode("latin-1").split("\r\n\r\n")[0]
    assert "websocket.path" in CO.request_problem(c, head)
    head = head.replace("GET / ", "GET /ws/echo ")
    assert "websocket.subprotocol" in CO.request_problem(c, head)
    ok = WS.load_side(c, "binary").opening("127.0.0.1").decode("latin-1").split("\r\n\r\n")[0]
    assert CO.request_problem(c, ok) is None


def test_browser_requests_made_for_the_endpoint():
    for name, data, key in browser_requests(ENDPOINT["path"], ENDPOINT["subprotocol"]):
        lines = data.decode("latin-1").split("\r\n")
        assert lines[0].split(" ")[1] == "/ws/echo" and data.endswith(b"\r\n\r\n"), name
        assert "Sec-WebSocket-Protocol: echo.v1" in lines and key in data.decode(), name


@pytest.mark.parametrize("params,error", [
    ({"path": "ws"}, "websocket.path"),
    ({"path": "/a b"}, "websocket.path"),
    ({"subprotocol": "a, b"}, "websocket.subprotocol"),
    ({"subprotocol": ""}, "websocket.subprotocol"),
    ({"subprotocols": ["x"]}, "unknown websocket parameter"),
])
def test_codec_json_rejects(params, error):
    with pytest.raises(ValueError, match=error):
        Codec.from_json({"protocol": "websocket", "websocket": params})


def test_codec_json_round_trip():
    c = Codec.from_json({"protocol": "websocket", "websocket": {**ENDPOINT, "max_message": 4096}})
    assert (c.request_path, c.echo_subprotocol) == ("/ws/echo", "echo.v1")
    assert Codec.from_json(c.to_json()) == c
    d = Codec.from_json({"protocol": "websocket"})
    assert d.to_json() == {"protocol": "websocket"} and (d.request_path, d.echo_subprotocol) == ("/ws", "frameproof.echo")


def test_files_stay_small():
    for p in ("net.py", "client_opening.py", "handshake_grammar.py", "reference.py", "oracle.py"):
        assert sum(1 for _ in open(os.path.join(ROOT, "conformance/frameproof/protocols/websocket", p))) < 600, p
