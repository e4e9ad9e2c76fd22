"""`frameproof net --protocol rpc` against servers shaped like galay-rpc's (spec/rpc.md §9a): the
endpoints a server offers and the names of its echo handler come from the codec JSON. The Python
reference server is run in every shape: both endpoints on one port (the default), and a unary-only
and a stream-only process on two ports (galay-rpc's RpcServer and RpcStreamServer). Every case
either passes or is skipped with the reason, and a stream-only server's stream cases all run (their
healthy traffic is streams, never a REQUEST)."""
import json

import pytest

from frameproof.oracle import Codec
from frameproof.servers import start_server

from conftest import PY

SERVER = f"{PY} -m frameproof.pyserver --protocol rpc --listen 127.0.0.1:0"
STREAM_CASES = {"stream_echo", "stream_cancel", "stream_refusals", "stream_ids_whole_range",
                "stream_end_with_body_closes", "stream_flood_unread", "first_frame_stream_types"}
# runs on whatever the server offers (each endpoint's first frame)
ANY_ENDPOINT = {"first_frame_endpoint"}
# the cases that start servers of their own from --server-cmd (netsuite/process_cases.py): skipped with --server
PROCESS_CASES = {"counters_on_stop", "usage_errors_refused", "counters_on_stop_streams"}


def _by_status(doc):
    out = {}
    for t in doc["tests"]:
        out.setdefault(t["status"], {})[t["name"].rsplit("/", 1)[-1]] = t.get("message", "")
    return out


def _net(frameproof, codec, *server):
    rc, out, doc = frameproof("net", "--codec", json.dumps(codec), *server, timeout=600)
    assert doc is not None, out[-3000:]
    st = _by_status(doc)
    assert set(st) <= {"passed", "skipped"}, (rc, {k: v for k, v in st.items() if k not in ("passed", "skipped")})
    assert rc == 0, out[-3000:]
    return st


def test_both_endpoints_on_one_port(frameproof):
    """The default shape (RPC-ECHO-7), with the unary-only method named: every case runs."""
    st = _net(frameproof, {"protocol": "rpc", "rpc": {"unary_only": "unary_only"}}, "--server-cmd", SERVER)
    assert "skipped" not in st, st.get("skipped")
    assert STREAM_CASES | {"unary_only_routing", "call_modes"} <= set(st["passed"])


def test_unary_and_stream_servers_on_two_ports(frameproof):
    """galay-rpc's shape: RpcServer (unary, BenchEchoService) and RpcStreamServer (stream,
    StreamBenchService), two processes on two ports; net once per endpoint, then once with both
    (rpc.stream_address)."""
    unary = start_server(f"{SERVER} --endpoints unary --service BenchEchoService")
    stream = start_server(f"{SERVER} --endpoints stream --service StreamBenchService")
    try:
        st = _net(frameproof, {"protocol": "rpc", "rpc": {"service": "BenchEchoService", "endpoints": ["unary"],
                                                            "unary_only": "unary_only"}},
                  "--server", unary.addr, "--server-pid", str(unary.proc.pid))
        assert set(st["skipped"]) == STREAM_CASES | PROCESS_CASES, st["skipped"]
        assert all("needs the stream endpoint" in m for n, m in st["skipped"].items() if n in STREAM_CASES), st
        assert all("needs the server's command" in st["skipped"][n] for n in PROCESS_CASES), st["skipped"]
        assert "unary_only_routing" in st["passed"] and len(st["passed"]) >= 50

        st = _net(frameproof, {"protocol": "rpc", "rpc": {"service": "StreamBenchService", "endpoints": ["stream"]}},
                  "--server", stream.addr, "--server-pid", str(stream.proc.pid))
        # every stream case runs and passes: its healthy traffic (alongside, after) is streams too
        assert set(st["passed"]) == STREAM_CASES | ANY_ENDPOINT, st["passed"]
        assert all("needs the unary endpoint" in m for k, m in st["skipped"].items() if k != "counters_on_stop_streams"), \
            st["skipped"]
        assert "needs the server's command" in st["skipped"]["counters_on_stop_streams"], st["skipped"]

        st = _net(frameproof, {"protocol": "rpc", "rpc": {
            "service": "BenchEchoService", "stream_service": "StreamBenchService", "stream_address": stream.addr,
            "unary_only": "unary_only"}}, "--server", unary.addr)
        assert set(st.get("skipped", {})) == PROCESS_CASES, st.get("skipped")
        assert STREAM_CASES <= set(st["passed"])
        for srv in (unary, stream):
            assert srv.alive()
    finally:
        for srv in (unary, stream):
            srv.stop()


def test_per_mode_routing_fault_is_caught(frameproof, monkeypatch):
    """A server that serves the unary-only method in every call mode breaks RPC-ECHO-8; without
    rpc.unary_only in the codec the case is skipped with its reason."""
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    cmd = f"{SERVER} --fault rpc-ignores-mode"
    rc, out, doc = frameproof("net", "--codec", '{"protocol": "rpc", "rpc": {"unary_only": "unary_only"}}',
                              "--server-cmd", cmd, "--requirement", "RPC-ECHO-8", timeout=300)
    assert rc == 1, out[-2000:]
    assert doc["requirements"]["RPC-ECHO-8"]["failed"], doc["requirements"]["RPC-ECHO-8"]
    rc, out, doc = frameproof("net", "--protocol", "rpc", "--server-cmd", cmd, "--select", "*/unary_only_routing",
                              timeout=300)
    st = _by_status(doc)
    assert "rpc.unary_only" in st["skipped"]["unary_only_routing"], st


@pytest.mark.parametrize("params,error", [
    ({"endpoints": ["unary", "bidi"]}, "rpc.endpoints"),
    ({"endpoints": []}, "rpc.endpoints"),
    ({"service": 7}, "rpc.service"),
    ({"stream_address": "9100"}, "HOST:PORT"),
    ({"endpoints": ["unary"], "stream_address": "127.0.0.1:9100"}, "no 'stream'"),
    ({"port": 9000}, "unknown rpc parameter"),
])
def test_codec_json_rejects(params, error):
    with pytest.raises(ValueError, match=error):
        Codec.from_json({"protocol": "rpc", "rpc": params})


def test_codec_json_round_trip():
    d = {"protocol": "rpc", "rpc": {"max_body": 8192, "service": "BenchEchoService", "method": "echo2",
                                    "endpoints": ["unary", "stream"], "stream_address": "127.0.0.1:9100",
                                    "stream_service": "StreamBenchService", "unary_only": "unary_only"}}
    c = Codec.from_json(d)
    assert c.stream_names == (b"StreamBenchService", b"echo2") and c.offers("stream")
    assert Codec.from_json(c.to_json()) == c
    assert Codec.from_json({"protocol": "rpc"}).to_json() == {"protocol": "rpc"}  # defaults write nothing


def test_pyserver_shape_options_are_rpc_only():
    import subprocess
    p = subprocess.run([PY, "-m", "frameproof.pyserver", "--protocol", "standard", "--endpoints", "unary"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "for rpc only" in p.stderr, p.stderr
