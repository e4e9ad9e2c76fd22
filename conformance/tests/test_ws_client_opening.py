"""WS-HS-7 (the client side of the opening handshake) and the close-code classes (WS-CLOSE-2): the
response grammar against the Python load client in-process, the planted load-client bugs caught under
WS-HS-7 by `frameproof net --client`, and the planted server fault `ws-close-rejects-4xxx` caught
under WS-CLOSE-2 by the `close_code_classes` case."""
import pytest
from hypothesis import given, settings

from frameproof import protocols as registry
from frameproof.protocols.websocket import client_opening as CO
from frameproof.protocols.websocket.load import FAULTS as WS_LOAD_FAULTS
from frameproof.protocols.websocket.net import CLOSE_CLASSES, CLOSE_EDGES, close_class
from frameproof.protocols.websocket.reference import accept_for

from conftest import PY

WS = registry.get("websocket")
LOAD = (f"{PY} -m frameproof.pyload --connect {{host}}:{{port}} --connections 3 --requests 600 --payload 24 "
        f"--mode pipelined --window 8 --timeout-ms 1000 --json {{json}} --protocol websocket")
SERVER = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0 --protocol websocket"
CANON = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: \x00\r\n\r\n")


def failed(doc):
    return {rid for rid, v in doc["requirements"].items() if v["failed"]}


def _opened(side, sp):
    """Feeds ``sp``'s segments to the Python client's opening check; returns the bytes after the head."""
    for seg in sp.segments(side.key):
        rest = side.opened(seg)
        if rest is not None:
            return rest
    return None


@settings(max_examples=300, derandomize=True, deadline=None)
@given(CO.responses())
def test_python_client_accepts_every_spelling(sp):
    side = WS.load_side(WS.codec(), "binary")
    side.opening("127.0.0.1")
    rest = _opened(side, sp)
    assert rest == b"", sp.show()


@settings(max_examples=100, derandomize=True, deadline=None)
@given(CO.responses())
def test_spellings_shrink_to_the_rfc_example(sp):
    for _ in range(100):
        nxt = next(CO.simpler(sp), None)
        if nxt is None:
            break
        sp = nxt
    assert sp.head == CANON and sp.cuts == () and sp.pong is None


@pytest.mark.parametrize("what,head", CO.REFUSE, ids=[w.split(" (")[0] for w, _ in CO.REFUSE])
def test_python_client_refuses(what, head):
    side = WS.load_side(WS.codec(), "binary")
    side.opening("127.0.0.1")
    with pytest.raises(ValueError):
        _opened(side, CO.Spelling(head))


def test_planted_client_faults_bite_in_process():
    sp = CO.Spelling("", reason="Switching Protocols", headers=(
        ("Upgrade", "upgrade", "websocket", " ", ""), ("Connection", "Connection", "Upgrade, keep-alive", " ", ""),
        ("Sec-WebSocket-Accept", "Sec-WebSocket-Accept", CO.ACCEPT, " ", "")))
    for fault in WS_LOAD_FAULTS:
        side = WS.load_side(WS.codec(), "binary")
        side.fault = fault
        side.opening("127.0.0.1")
        with pytest.raises(ValueError):
            _opened(side, sp)


def test_correct_client_passes_ws_hs_7(frameproof):
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--client", LOAD, "--requirement", "WS-HS-7",
                              timeout=400)
    assert rc == 0, out[-3000:]
    assert doc["totals"]["passed"] == 3, doc["totals"]


@pytest.mark.parametrize("fault", sorted(WS_LOAD_FAULTS))
def test_broken_client_is_caught_under_ws_hs_7(frameproof, fault):
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--client", f"{LOAD} --fault {fault}",
                              "--requirement", "WS-HS-7", timeout=600)
    assert rc == 1, out[-2000:]
    assert "WS-HS-7" in failed(doc), sorted(failed(doc))
    assert "smallest refused spelling" in out, out[-3000:]


def test_close_classes_cover_every_code():
    assert [c[0] for c in CLOSE_CLASSES] == [0] + [c[1] + 1 for c in CLOSE_CLASSES[:-1]] and CLOSE_CLASSES[-1][1] == 65535
    valid = {code for code in range(65536) if close_class(code)[2]}
    assert valid == set(range(1000, 1004)) | set(range(1007, 1015)) | set(range(3000, 5000))
    assert {999, 1000, 1011, 1012, 1014, 1015, 1016, 2999, 3000, 4999, 5000, 65535} <= set(CLOSE_EDGES)


def test_close_code_classes_pass_a_correct_server(frameproof):
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--server-cmd", SERVER, "--select",
                              "websocket/*/net/close_code_classes", timeout=300)
    assert rc == 0, out[-3000:]
    assert doc["totals"]["passed"] == 1, doc["totals"]


def test_close_code_fault_caught_under_ws_close_2(frameproof):
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--server-cmd", f"{SERVER} --fault ws-close-rejects-4xxx",
                              "--select", "websocket/*/net/close_code_classes", timeout=300)
    assert rc == 1, out[-2000:]
    assert failed(doc) == {"WS-CLOSE-2"}, sorted(failed(doc))
    assert "code 4000" in out, out[-2000:]
