"""`frameproof net` under the permessage-deflate profile (spec/websocket-deflate.md, WSD-*): the Python
reference server with the extension on passes every case; each planted deflate fault of the Python
server is caught under the requirement it breaks; with the extension off the WSD cases do not run and
an accepted offer breaks WS-HS-5; the matrix gives the profile only to a server that claims it."""
import json
import shlex

import pytest

from frameproof import protocols as registry
from frameproof.netsuite import cases
from frameproof.oracle import Codec

from conftest import PY

ON = {"protocol": "websocket", "websocket": {"permessage_deflate": True}}
# a small message limit, so that a bomb of 256 MiB is far past it and cheap for the planted fault
SMALL = {"protocol": "websocket", "websocket": {"permessage_deflate": True, "max_message": 8 << 20}}


def server(codec, fault=""):
    return f"{PY} -m frameproof.pyserver --codec '{json.dumps(codec)}' --listen 127.0.0.1:0" + \
        (f" --fault {fault}" if fault else "")


def failed(doc):
    return {rid for rid, v in doc["requirements"].items() if v["failed"]}


def test_correct_server_passes_the_deflate_profile(frameproof):
    rc, out, doc = frameproof("net", "--codec", json.dumps(ON), "--server-cmd", server(ON), timeout=300)
    assert rc == 0, out[-3000:]
    names = {t["name"].rsplit("/", 1)[-1] for t in doc["tests"]}
    wsd = {c.name for c in cases("websocket") if c.when is not None and c.applies(Codec.from_json(ON))}
    assert wsd and wsd <= names, sorted(wsd - names)
    assert doc["totals"]["failed"] == 0
    reached = {rid for rid, v in doc["requirements"].items() if v["passed"]}
    assert {"WSD-NEG-1", "WSD-NEG-4", "WSD-FRM-2", "WSD-CTX-1", "WSD-CMP-5", "WSD-LIM-1"} <= reached, sorted(reached)


@pytest.mark.parametrize("fault,broken", sorted((f, r) for f, r in registry.get("websocket").opt_in_server_faults.items()
                                                 if r.startswith("WSD-") or r.startswith("WS-RES-")))
def test_planted_deflate_fault_is_caught(frameproof, fault, broken, monkeypatch):
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    monkeypatch.setenv("FRAMEPROOF_WSD_BOMB_MIB", "256")
    rc, out, doc = frameproof("net", "--codec", json.dumps(SMALL), "--server-cmd", server(SMALL, fault),
                              "--requirement", broken, timeout=300)
    assert rc == 1, out[-2000:]
    assert broken in failed(doc), sorted(failed(doc))


def test_deflate_cases_run_only_with_the_extension_on():
    off = Codec.from_json({"protocol": "websocket"})
    on = Codec.from_json(ON)
    budget = Codec.from_json(registry.get("websocket").DEFLATE_BUDGET_PROFILE[1])
    wsd = [c for c in cases("websocket") if any(r.startswith("WSD-") for r in c.requirements)
           and c.name not in ("handshake_deflate_declined", "deflate_state_in_budget",
                              "deflate_idle_after_large_messages")]
    assert len(wsd) >= 10
    assert all(c.applies(on) and c.applies(budget) and not c.applies(off) for c in wsd)
    # and the one that starts a server with a budget of a few MiB: only under a message limit that allows it
    (state,) = [c for c in cases("websocket") if c.name == "deflate_state_in_budget"]
    assert state.applies(budget) and not state.applies(on) and not state.applies(off)
    # and the one whose messages together are over that budget (WSD-LIM-4): the same cell
    (idle,) = [c for c in cases("websocket") if c.name == "deflate_idle_after_large_messages"]
    assert idle.applies(budget) and not idle.applies(on) and not idle.applies(off)
    # the other opt-in case: the resource path's (WS-HS-9), under a codec naming websocket.path
    # and the budget's count of unfinished frames beside it, in the same cell: a small message limit, with or
    # without the extension
    small = [c for c in cases("websocket") if c.name in ("budget_unfinished_frames", "timeouts_in_seconds")]
    assert len(small) == 2 and all(c.applies(budget) and not c.applies(on) and not c.applies(off) for c in small)
    assert all(c.applies(off) for c in cases("websocket") if c not in wsd and c.name not in (state.name, idle.name)
               and c not in small
               and "WS-HS-9" not in c.requirements)


def test_accepting_server_breaks_ws_hs_5_when_the_extension_is_off(frameproof, monkeypatch):
    # the suite told the extension is off, the server accepts it: WS-HS-5 (declined) is what fails
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--server-cmd", server(ON), "--requirement", "WS-HS-5",
                              timeout=300)
    assert rc == 1, out[-2000:]
    assert "WS-HS-5" in failed(doc), sorted(failed(doc))


def test_deflate_net_profile_only_for_servers_that_claim_it():
    ws = registry.get("websocket")
    impl = {"name": "x", "dir": "/tmp/x", "server": "srv"}
    cmd = lambda key: impl.get(key)  # noqa: E731
    label = ws.DEFLATE_PROFILE[0]
    assert label not in {lab for _, lab, _ in ws.matrix_suites(impl, cmd, "smoke", "small")}
    impl["websocket_extensions"] = {"server": ["permessage-deflate"]}
    impl["xfail_net"] = {label: "gaps.txt"}
    cells = {lab: (group, argv) for group, lab, argv in ws.matrix_suites(impl, cmd, "smoke", "small")}
    group, argv = cells[label]
    assert group == "net" and argv[0] == "net"
    assert json.loads(argv[argv.index("--codec") + 1])["websocket"]["permessage_deflate"] is True
    assert argv[argv.index("--server-cmd") + 1].startswith("srv --codec ") and "permessage_deflate" in argv[4]
    assert argv[-2:] == ["--xfail", "/tmp/x/gaps.txt"]
    # the zlib state in the budget: a cell of its own, one case, for a server with the limit flags only
    blabel, bcodec = ws.DEFLATE_BUDGET_PROFILE
    group, argv = cells[blabel]
    assert json.loads(argv[argv.index("--codec") + 1]) == bcodec
    assert argv[-8:] == ["--select", "websocket/*/net/deflate_state_in_budget",
                         "--select", "websocket/*/net/budget_unfinished_frames",
                         "--select", "websocket/*/net/timeouts_in_seconds",
                         "--select", "websocket/*/net/deflate_idle_after_large_messages"]
    impl["third_party"] = True
    assert blabel not in {lab for _, lab, _ in ws.matrix_suites(impl, cmd, "smoke", "small")}
    impl["limit_flags"] = True
    assert blabel in {lab for _, lab, _ in ws.matrix_suites(impl, cmd, "smoke", "small")}
    del impl["third_party"], impl["limit_flags"]
    # the load client's cell: only where "load" claims the extension ("client" is the Autobahn client's)
    impl["load"] = "ld"
    impl["websocket_extensions"]["client"] = ["permessage-deflate"]
    assert [g for g, lab, _ in ws.matrix_suites(impl, cmd, "smoke", "small") if lab == label] == ["net"]
    impl["websocket_extensions"]["load"] = ["permessage-deflate"]
    cells = [(lab, argv) for group, lab, argv in ws.matrix_suites(impl, cmd, "smoke", "small") if group == "client"]
    assert [lab for lab, _ in cells] == [label]
    argv = cells[0][1]
    assert json.loads(argv[argv.index("--codec") + 1])["websocket"]["permessage_deflate"] is True
    client = argv[argv.index("--client") + 1]
    assert client.startswith("ld --codec ") and "permessage_deflate" in client and "--requests 1000" in client


#: the Python load client with the extension on (long enough for the corrupted and dropped replies)
DLOAD = (f"{PY} -m frameproof.pyload --codec {shlex.quote(json.dumps(ON))} --connect {{host}}:{{port}} --connections 3 "
         f"--requests 1000 --payload 32 --mode pipelined --window 16 --timeout-ms 2000 --json {{json}}")


def test_client_cases_require_the_offer_under_a_deflate_codec(frameproof):
    # under a codec with permessage-deflate on, a load client that never offers it (planted in the Python
    # one) fails HAR-COUNT-1: it would otherwise pass every client case unchecked
    load = f"{DLOAD} --fault ws-deflate-no-offer"
    rc, out, doc = frameproof("net", "--codec", json.dumps(ON), "--client", load, "--requirement", "HAR-COUNT-1",
                              timeout=300)
    assert rc == 1 and failed(doc) == {"HAR-COUNT-1"}, out[-2000:]
    assert "did not agree on it" in out, out[-2000:]


@pytest.mark.parametrize("fault", ["", "ws-deflate-sends-plain"])
def test_client_compresses_prose_once_agreed(frameproof, fault):
    # HAR-CLI-3: the Python load client with the extension offers it, compresses its messages and inflates
    # the echoes, passing every client case; planted, one that agrees and then sends everything plain fails
    # prose_sent_compressed (RFC 7692 allows it, the benchmark's deflate rows would not measure compression)
    load = DLOAD + (f" --fault {fault}" if fault else "")
    rc, out, doc = frameproof("net", "--codec", json.dumps(ON), "--client", load, timeout=300)
    if fault:
        assert rc == 1 and failed(doc) == {"HAR-CLI-3"}, out[-2000:]
        assert "sent uncompressed" in out, out[-2000:]
    else:
        assert rc == 0 and doc["requirements"]["HAR-CLI-3"]["passed"] == 1, out[-2000:]


def test_prose_watch_counts_only_what_compression_shrinks():
    # the checking server's side of HAR-CLI-3: compressed prose counted as such; plain prose DEFLATE shrinks
    # counted as plain; a message it cannot shrink (16 random bytes), or any message where the client was
    # given an 8-bit window (zlib cannot compress with it), not held against the client
    import os
    from frameproof.oracle import Frame
    from frameproof.protocols.websocket.client_compression import ProseWatch, shrinks
    from frameproof.protocols.websocket.deflate import Params
    from frameproof.protocols.websocket.frames import TEXT, WsHeader
    from frameproof.protocols.websocket.load import prose

    def text(payload, rsv=0):
        return Frame(0, 0, payload, WsHeader(True, rsv, TEXT, True, b"abcd"))
    noise = os.urandom(16).hex()[:16].encode()
    assert shrinks(prose(7, 256)) and not shrinks(noise)
    tally = {}
    w = ProseWatch("prose")
    w.watch(text(prose(1, 256)), 1)  # before the agreement: not counted
    w.agreed(Params(client_max_window_bits=15), tally)
    for n, f in enumerate([text(b"\x00", 4), text(prose(2, 256)), text(noise)], 2):
        w.watch(f, n)
    assert tally["prose compressed"] == 1 and tally["prose plain"] == 1 and tally["prose plain example"][0] == 3
    narrow = {}
    w8 = ProseWatch("prose")
    w8.agreed(Params(client_max_window_bits=8), narrow)
    w8.watch(text(prose(3, 256)), 1)
    assert narrow == {}
    other = {}
    wb = ProseWatch("binary")
    wb.agreed(Params(), other)
    wb.watch(text(prose(4, 256)), 1)
    assert other == {}


LOAD = (f"{PY} -m frameproof.pyload --protocol websocket --connect {{host}}:{{port}} --connections 2 --requests 20 "
        f"--payload 16 --timeout-ms 1000 --json {{json}}")


@pytest.mark.parametrize("fault", ["", "ws-client-ignores-extensions"])
def test_client_fails_invalid_deflate_responses(frameproof, fault):
    # WSD-NEG-5 (the client's side): the Python load client refuses every invalid permessage-deflate
    # response; planted, one that never reads Sec-WebSocket-Extensions takes them
    rc, out, doc = frameproof("net", "--protocol", "websocket", "--client", LOAD + (f" --fault {fault}" if fault else ""),
                              "--requirement", "WSD-NEG-5", timeout=300)
    if fault:
        assert rc == 1 and "WSD-NEG-5" in failed(doc), out[-2000:]
    else:
        assert rc == 0 and doc["totals"]["passed"] == 1, out[-2000:]


def test_a_close_1002_is_a_refusal_and_any_other_frame_is_not():
    # WSD-NEG-5 lets a client fail the connection with a close 1002 (and nothing else): that first
    # frame counts as refusing the response; a data frame, or a close with another code, does not
    from frameproof.oracle import Frame
    from frameproof.protocols.websocket.client_opening import _is_close
    from frameproof.protocols.websocket.frames import BINARY, CLOSE, WsHeader

    def frame(opcode, payload):
        return Frame(0, 0, payload, WsHeader(True, 0, opcode, True, b"\0\0\0\0"))
    assert _is_close(frame(CLOSE, (1002).to_bytes(2, "big")), 1002)
    assert not _is_close(frame(CLOSE, (1000).to_bytes(2, "big")), 1002)
    assert not _is_close(frame(CLOSE, b""), 1002)
    assert not _is_close(frame(BINARY, (1002).to_bytes(2, "big")), 1002)
    assert not _is_close(None, 1002)


@pytest.mark.parametrize("act", ["corrupt", "drop"])
def test_checking_server_corrupts_or_drops_before_compressing(act):
    # HAR-VERIFY-1/2 under permessage-deflate: the checking server of `frameproof net --client` alters or
    # withholds a reply before it is compressed, so that with context takeover the client's inflater and
    # the server's deflater stay in step: the replies after it still inflate to the echoed messages
    from frameproof.oracle import Frame
    from frameproof.protocols.websocket.deflate import Deflater, Inflater, Params
    from frameproof.protocols.websocket.deflate_session import session
    from frameproof.protocols.websocket.frames import TEXT, WsHeader
    codec = Codec.from_json(ON)
    _, reply = session(codec, Params(client_max_window_bits=15))
    client_out, client_in = Deflater(15), Inflater(15)
    messages = [b"the same words again and again %d " % i * 8 for i in range(6)]
    got = []
    for i, m in enumerate(messages):
        if i == 2:
            reply.echo.next_reply = act
        r = reply(Frame(0, 0, client_out.compress(m), WsHeader(True, 4, TEXT, True, b"\0\0\0\0")))
        assert r.header.rsv == 4
        done, reply.echo.done = reply.echo.done, None
        assert (done == act) == (i == 2)
        if i == 2 and act == "drop":
            assert r.payload == m  # never compressed: the deflater's window never saw it
            continue
        got.append(client_in.inflate(r.payload))
    want = [m if i != 2 else bytes([m[0] ^ 1]) + m[1:] for i, m in enumerate(messages) if not (i == 2 and act == "drop")]
    assert got == want


def test_echo_of_an_incompressible_message_goes_uncompressed():
    # WSD-FRM-3 in the Python server's echo (pyserver, and the checking server of `net --client`): random
    # bytes are echoed uncompressed, RSV1 clear, and the deflater reset; the next compressible message is
    # compressed again and inflates at a client that kept its window. Planted (ws-deflate-always-compresses):
    # compressed whatever it grows to
    import random
    from frameproof.oracle import Frame
    from frameproof.protocols.websocket.deflate import Deflater, Inflater, Params
    from frameproof.protocols.websocket.deflate_session import session
    from frameproof.protocols.websocket.frames import BINARY, WsHeader
    codec = Codec.from_json(ON)
    noise = random.Random(5).randbytes(50_000)
    words = b"the same words again and again " * 20
    after = noise[-100:] * 3 + words

    def client(fault=""):
        _, reply = session(codec, Params(client_max_window_bits=15), fault)
        out = Deflater(15)
        return lambda m: reply(Frame(0, 0, out.compress(m), WsHeader(True, 4, BINARY, True, b"\0\0\0\0")))
    send, client_in = client(), Inflater(15)
    r = send(words)
    assert r.header.rsv == 4 and client_in.inflate(r.payload) == words
    r = send(noise)
    assert r.header.rsv == 0 and r.payload == noise
    r = send(after)
    assert r.header.rsv == 4 and len(r.payload) < len(after) and client_in.inflate(r.payload) == after
    r = client("ws-deflate-always-compresses")(noise)
    assert r.header.rsv == 4 and len(r.payload) > len(noise)


@pytest.mark.parametrize("act", ["corrupt", "drop"])
def test_checking_server_corrupts_or_drops_an_uncompressed_message_too(act):
    # a message the client sent uncompressed (an incompressible one, WSD-FRM-3) is echoed uncompressed: the
    # checking server's corrupt or drop (HAR-VERIFY-1/2) reaches it as it reaches a compressed one
    from frameproof.oracle import Frame
    from frameproof.protocols.websocket.deflate import Params
    from frameproof.protocols.websocket.deflate_session import session
    from frameproof.protocols.websocket.frames import BINARY, WsHeader
    _, reply = session(Codec.from_json(ON), Params())
    reply.echo.next_reply = act
    r = reply(Frame(0, 0, b"plain message", WsHeader(True, 0, BINARY, True, b"\0\0\0\0")))
    assert reply.echo.done == act and r.header.rsv == 0
    assert r.payload == (b"qlain message" if act == "corrupt" else b"plain message")
    reply.echo.done = None
    r = reply(Frame(0, 0, b"next", WsHeader(True, 0, BINARY, True, b"\0\0\0\0")))
    assert reply.echo.done is None and r.payload == b"next"


def test_the_python_servers_budget_counts_the_zlib_state():
    # WSD-LIM-2 in the Python reference server (pyserver counts Protocol.held_bytes against --memory-budget):
    # nothing before the first compressed message (WSD-LIM-3), then the deflater's and inflater's state, about
    # 256 + 44 KiB at 15 bits, for as long as the connection keeps its context; a connection without context
    # takeover drops it after each message. Before 2026-12-05 the Python server counted only the bytes of
    # unfinished frames and messages, so its budget never saw the zlib state the other three servers count.
    from frameproof.oracle import Frame
    from frameproof.protocols import get
    from frameproof.protocols.websocket.deflate import Deflater, Params
    from frameproof.protocols.websocket.deflate_session import session
    from frameproof.protocols.websocket.frames import TEXT, WsHeader
    codec, ws = Codec.from_json(ON), get("websocket")
    for agreed, kept in ((Params(client_max_window_bits=15), True),
                         (Params(server_no_context_takeover=True, client_no_context_takeover=True), False)):
        dec, reply = session(codec, agreed)
        assert ws.held_bytes(dec, reply) == 0
        out = Deflater(15, agreed.client_no_context_takeover)
        r = reply(Frame(0, 0, out.compress(b"words words words " * 40), WsHeader(True, 4, TEXT, True, b"\0\0\0\0")))
        assert r.header.rsv == 4
        held = ws.held_bytes(dec, reply)
        if kept:
            assert (1 << 18) + (1 << 15) <= held < (1 << 19), held  # deflater 262 KiB, inflater 44 KiB, history
        else:
            assert held < 64 * 1024, held  # no context kept: zlib's state dropped after the message
