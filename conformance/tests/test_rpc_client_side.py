"""rpc's client-side requirements on every load client (spec/rpc.md §8): `frameproof net --client`
writes stray frames before every 13th reply of a unary call (conformance/frameproof/protocols/rpc/
client_strays.py). Unmatched RESPONSEs (RPC-MATCH-2) and frames of other types (RPC-MATCH-4) must
complete nothing, count neither as replies nor as errors, and leave the connection in use. The
Python load client passes in every unary mode and skips the cases in stream mode; its planted bugs
are caught under the requirement each breaks; the bundled Rust, C++ and C# clients pass where built."""
import shutil

import pytest

from frameproof import protocols as registry
from frameproof.protocols.rpc import client_strays as CS
from frameproof.protocols.rpc import frames as K
from frameproof.protocols.rpc.load import FAULT_ARGS, FAULTS

from conftest import PY, ROOT

RPC = registry.get("rpc")
OPTS = "--connections 3 --payload 24 --timeout-ms 1000 --json {json}"
LOAD = f"{PY} -m frameproof.pyload --protocol rpc --connect {{host}}:{{port}} {OPTS}"
CASES = {"RPC-MATCH-2", "RPC-MATCH-4"}


def failed(doc):
    return {rid for rid, v in doc["requirements"].items() if v["failed"]}


def verdicts(doc, rid):
    v = doc["requirements"][rid]
    return v["passed"], v["failed"]


def test_stray_frames_answer_nothing():
    reply = K.response(5, b"payload!")
    for f in CS.unmatched_responses(reply):
        assert f.header.type == K.RESPONSE and f.header.id != 5
    assert {f.header.id for f in CS.unmatched_responses(reply)} == {5 ^ 0x80000000, 4}
    assert [f.header.id for f in CS.unmatched_responses(K.response(0, b"x"))] == [0x80000000]
    others = CS.non_responses(reply)
    assert {f.header.type for f in others} == {K.REQUEST, K.DATA, K.END}
    assert all(f.header.id == 5 and f.payload != reply.payload for f in others)


def test_python_side_takes_strays_as_the_spec_says():
    side = RPC.load_side(RPC.codec(), "unary")
    side.fault = ""
    key, frame = side.request(b"abc")
    side.sent(key, "entry")
    for f in CS.non_responses(K.response(key, b"abc")):
        assert not side.counted(f)  # RPC-MATCH-4: not a reply
    stray = K.response(key ^ 0x80000000, b"abc")
    assert side.counted(stray) and not side.take(stray) and side.stray(stray)  # RPC-MATCH-2
    assert side.take(K.response(key, b"abc")) == "entry"
    side.fault = "rpc-client-counts-stray-response"
    assert not side.stray(stray)
    side.fault = "rpc-client-counts-non-response"
    assert side.counted(K.request(key, b"abd"))


@pytest.mark.parametrize("args", ["--mode pipelined --window 8 --requests 1500", "--mode per-packet --requests 300",
                                  "--mode batched --batch 16 --requests 1500",
                                  "--variant client-stream --mode pipelined --window 8 --requests 1500"],
                         ids=["pipelined", "per-packet", "batched", "client-stream"])
def test_python_client_passes(frameproof, args):
    rc, out, doc = frameproof("net", "--protocol", "rpc", "--client", f"{LOAD} {args}", timeout=300)
    assert rc == 0, out[-3000:]
    for rid in CASES:
        assert verdicts(doc, rid) == (1, 0), (rid, out[-2000:])


def test_stream_mode_skips_the_cases(frameproof):
    rc, out, doc = frameproof("net", "--protocol", "rpc", "--client",
                              f"{LOAD} --mode stream --frames-per-stream 8 --window 4 --requests 60", timeout=300)
    assert rc == 0, out[-3000:]
    from frameproof.protocols.rpc.client_strays import client_cases
    # rpc's own cases (unary calls only), and receive mode's detects_unasked_replies (HAR-VERIFY-3)
    assert doc["totals"]["skipped"] == len(client_cases()) + 1 and doc["totals"]["failed"] == 0, doc["totals"]


@pytest.mark.parametrize("fault,rid", sorted(FAULTS.items()))
def test_planted_fault_is_caught(frameproof, fault, rid, monkeypatch):
    monkeypatch.setenv("FRAMEPROOF_CLIENT_TIMEOUT", "20")
    rc, out, doc = frameproof("net", "--protocol", "rpc", "--client",
                              f"{LOAD} --mode pipelined --window 8 --requests 1500 --fault {fault} "
                              f"{FAULT_ARGS.get(fault, '')}", timeout=300)
    assert rc == 1, out[-2000:]
    # rpc's stray-frame cases and largest_payload_accepted (HAR-CLI-2) check every request too: a client whose
    # calls are ill-formed fails them as well
    also = CASES | {"HAR-CLI-2"} if rid == "HAR-CLI-1" else set()
    assert failed(doc) == {rid} | also, (sorted(failed(doc)), out[-2000:])


def _native():
    rust = ROOT / "reference-impls/rust/target/release/fp-load"
    cpp = ROOT / "reference-impls/cpp/build/fp-load"
    cs = ROOT / "reference-impls/csharp/build/fp-load.exe"
    return [pytest.param(str(rust), id="rust", marks=pytest.mark.skipif(not rust.exists(), reason="not built")),
            pytest.param(str(cpp), id="cpp", marks=pytest.mark.skipif(not cpp.exists(), reason="not built")),
            pytest.param(f"mono {cs}", id="csharp", marks=pytest.mark.skipif(
                not cs.exists() or not shutil.which("mono"), reason="not built, or no mono"))]


@pytest.mark.parametrize("args", ["--mode pipelined --window 16 --requests 1000",
                                  "--variant bidi --mode pipelined --window 16 --requests 2000",
                                  "--mode batched --requests 1000"], ids=["pipelined", "bidi", "batched"])
@pytest.mark.parametrize("client", _native())
def test_bundled_client_passes(frameproof, client, args):
    cmd = f"{client} --protocol rpc --connect {{host}}:{{port}} --connections 4 --payload 32 {args} --timeout-ms 2000 --json {{json}}"
    rc, out, doc = frameproof("net", "--protocol", "rpc", "--client", cmd, timeout=300)
    for rid in CASES:
        assert verdicts(doc, rid) == (1, 0), (rid, out[-3000:])
