"""fp-load against fp-server: exact counts, the JSON report (its codec, defaults, rates, latency),
every mode (per-packet, pipelined, duration, receive against --sink, rpc variants and streams,
websocket), IPv6, an unreachable server and a server stopped under load."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from wire import LENGTH_FIELD, Client, lf, lf_codec, lf_frame


def latency_ordered(doc):
    l = doc["latency_us"]
    return l["p50"] <= l["p90"] <= l["p99"] <= l["p999"] <= l["max"] and l["max"] > 0


def test_ipv6_loopback(fp):
    """[::1]:0 is printed as LISTENING [::1]:PORT, and fp-load connects to [::1]:PORT."""
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError as e:
        pytest.skip("no IPv6 loopback here: %s" % e)
    p = subprocess.Popen([fp.server_path, "--protocol", "standard", "--listen", "[::1]:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().strip()
        assert line.startswith("LISTENING [::1]:"), "LISTENING line %r" % line
        port = int(line.rsplit(":", 1)[1])
        _, doc, _ = fp.load("--protocol", "standard", "--connect", "[::1]:%d" % port, "--connections", 2,
                            "--requests", 500, "--payload", 40, "--mode", "pipelined", "--window", 8, expect_rc=0)
        assert doc["replies_verified"] == 500, "doc %r" % doc
    finally:
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=15)
    assert json.loads(out.strip().splitlines()[-1])["frames"] == 500, "server counters %r" % out


def test_codec_and_protocol_are_the_same(fp):
    """--protocol NAME is --codec '{"protocol": NAME}'; fp-load reports the codec object as given."""
    codec = '{"protocol": "length-field", "limits": {"max_payload": 300}, "length_field": {"offset": 1, "size": -2}}'
    with fp.server("--codec", codec) as srv:
        s = Client(srv.port, LENGTH_FIELD, lf(1, -2, 300))
        s.send(lf_frame(b"x" * 300, 1, -2) + lf_frame(b"y", 1, -2))
        assert s.exactly(303 + 4) == lf_frame(b"x" * 300, 1, -2) + lf_frame(b"y", 1, -2), "echo differs"
        _, doc, _ = fp.load("--codec", codec, "--connect", "127.0.0.1:%d" % srv.port, "--requests", 10,
                            "--payload", 300, expect_rc=0)
        assert doc["codec"] == json.loads(codec) and list(doc["codec"]) == ["protocol", "limits", "length_field"], \
            "codec %r" % doc["codec"]
        assert doc["protocol"] == "length-field" and doc["window"] == 1, "doc %r" % doc
        s.send(lf_frame(b"z" * 301, 1, -2))  # above limits.max_payload: LF-LIM-1, closed
        assert s.to_eof() == b"", "an oversize frame was answered"
        assert srv.stop()["protocol_errors"] == 1, "protocol_errors"
    with fp.server("--protocol", "standard") as srv:
        _, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--requests", 40,
                            "--mode", "pipelined", expect_rc=0)
        assert doc["codec"] == {"protocol": "standard"} and doc["window"] == 32, "doc %r" % doc
        assert all(isinstance(v, int) for v in doc["latency_us"].values()), "latency not integers: %r" % doc
        assert doc["payload"] == 32 and doc["connections"] == 1, "defaults %r" % doc


def test_load_per_packet_exact(fp):
    with fp.server("--protocol", "standard") as srv:
        _, doc, out = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                              "--requests", 1000, "--payload", 32, "--mode", "per-packet", expect_rc=0)
        assert doc["requests_sent"] == doc["replies_received"] == doc["replies_verified"] == 1000, "counts %r" % doc
        assert doc["errors"] == 0 and latency_ordered(doc), "doc %r" % doc
        assert out.strip(), "no human summary on stdout"
        c = srv.stop()
        assert c["frames"] == 1000 and c["bytes"] == 32000 and c["connections"] == 3, "server counters %r" % c


def test_load_pipelined_length_field_exact(fp):
    with fp.server("--codec", lf_codec(0, -4)) as srv:
        _, doc, _ = fp.load("--codec", lf_codec(0, -4), "--connect", "127.0.0.1:%d" % srv.port,
                            "--connections", 4, "--requests", 5001, "--payload", 1000, "--mode", "pipelined",
                            "--window", 32, expect_rc=0)
        assert doc["requests_sent"] == doc["replies_verified"] == 5001 and doc["errors"] == 0, "doc %r" % doc
        assert abs(doc["mb_per_s"] - 5001 * 1000 / 1e6 / doc["duration_s"]) < 0.05 * doc["mb_per_s"] + 0.01, \
            "mb_per_s inconsistent: %r" % doc
        assert srv.stop()["frames"] == 5001, "server frame count"


def test_load_pipelined_standard_window_255_varint_small_payloads(fp):
    with fp.server("--protocol", "standard") as srv:
        for payload in (0, 5, 8, 70000):
            _, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                                "--requests", 600 if payload < 1000 else 60, "--payload", payload, "--mode",
                                "pipelined", "--window", 255, expect_rc=0)
            assert doc["errors"] == 0 and doc["replies_verified"] == doc["requests_sent"], \
                "payload %d: %r" % (payload, doc)


def test_load_duration_mode(fp):
    with fp.server("--protocol", "standard") as srv:
        _, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                            "--duration", 0.5, "--payload", 64, "--mode", "pipelined", "--window", 8, expect_rc=0)
        assert doc["requests_sent"] > 0 and doc["requests_sent"] == doc["replies_verified"], "doc %r" % doc
        assert 0.4 <= doc["duration_s"] <= 6, "duration_s %r" % doc["duration_s"]
        assert srv.stop()["frames"] == doc["requests_sent"], "server saw a different count"


def test_load_receive_mode_against_sink(fp):
    with fp.server("--protocol", "length-field", "--sink") as srv:
        _, doc, _ = fp.load("--protocol", "length-field", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                            "--requests", 30000, "--payload", 32, "--mode", "receive", expect_rc=0)
        assert doc["requests_sent"] == 30000 and doc["errors"] == 0, "doc %r" % doc
        # 1 MB of writes on loopback: anything near 2 s means the writer idles between batches
        # (e.g. a poll() without POLLOUT while there is more to send waits its full timeout).
        assert doc["duration_s"] < 1.0, "receive mode took %.2f s for 30000 x 32 B (%.0f msg/s)" % (
            doc["duration_s"], doc["msgs_per_s"])
        time.sleep(0.5)  # the server may still be reading the last bytes when fp-load exits
        c = srv.stop()
        assert c["frames"] == 30000 and c["bytes"] == 960000, "server counters %r" % c


def test_load_unreachable_server(fp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % port, "--connections", 1,
                         "--requests", 10, "--payload", 8, "--mode", "per-packet")
    assert rc == 1 and doc["replies_verified"] == 0, "rc %d doc %r" % (rc, doc)


def test_load_many_connections_exact(fp):
    with fp.server("--codec", lf_codec(0, 0), "--threads", "2") as srv:
        _, doc, _ = fp.load("--codec", lf_codec(0, 0), "--connect", "127.0.0.1:%d" % srv.port,
                            "--connections", 200, "--requests", 20011, "--payload", 200, "--mode", "pipelined",
                            "--window", 8, expect_rc=0)
        assert doc["requests_sent"] == doc["replies_verified"] == 20011, "doc %r" % doc
        c = srv.stop()
        assert c["connections"] == 200 and c["frames"] == 20011 and c["bytes"] == 20011 * 200, "counters %r" % c


def test_sigterm_with_traffic_in_flight(fp):
    """SIGTERM while clients are busy: the server still exits 0 with its counters line, and
    fp-load (whose connections are closed under it) ends with exit 1 in bounded time."""
    with fp.server("--protocol", "standard", "--threads", "2") as srv:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
        load = subprocess.Popen([str(a) for a in [
                                    fp.load_path, "--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port,
                                    "--connections", 4, "--duration", 5, "--payload", 64, "--mode", "pipelined",
                                    "--window", 16, "--timeout-ms", 1000, "--json", path]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.7)
            c = srv.stop()
            assert c["connections"] == 4 and c["frames"] > 0, "counters %r" % c
            rc = load.wait(timeout=15)
            assert rc == 1, "fp-load exit %d after its server went away" % rc
            with open(path) as f:
                doc = json.load(f)
            assert doc["replies_verified"] <= c["frames"] and doc["errors"] == 0, "doc %r vs %r" % (doc, c)
        finally:
            if load.poll() is None:
                load.kill()
            os.unlink(path)


def test_rpc_load_variants_and_streams(fp):
    """fp-load --protocol rpc: every variant pipelined, and --mode stream: exact counts."""
    with fp.server("--protocol", "rpc", "--threads", "2") as srv:
        for v in ("unary", "client-stream", "server-stream", "bidi"):
            rc, doc, _ = fp.load("--protocol", "rpc", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                                 "--requests", 3001, "--mode", "pipelined", "--variant", v, expect_rc=0)
            assert doc["variant"] == v and doc["replies_verified"] == 3001, "%s: %r" % (v, doc)
        rc, doc, _ = fp.load("--protocol", "rpc", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                             "--requests", 31, "--mode", "stream", "--frames-per-stream", 5, "--window", 3,
                             expect_rc=0)
        assert doc["streams_completed"] == 31 and doc["requests_sent"] == 155 and doc["replies_verified"] == 155, \
            "stream counts %r" % doc
        assert doc["streams_per_s"] > 0, "streams_per_s %r" % doc
    p = subprocess.run([fp.load_path, "--protocol", "standard", "--connect", "127.0.0.1:1", "--requests", "1", "--mode",
                        "stream"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "no streams" in p.stderr, "standard --mode stream: rc %d %r" % (p.returncode, p.stderr)
    p = subprocess.run([fp.load_path, "--protocol", "rpc", "--connect", "127.0.0.1:1", "--requests", "1", "--variant",
                        "x"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "unary" in p.stderr, "bad variant: rc %d %r" % (p.returncode, p.stderr)


def test_websocket_load_binary_text_and_sink(fp):
    """fp-load --protocol websocket: binary and text variants verified, close 1000 at the end; against
    --sink (receive mode) every frame is counted."""
    with fp.server("--protocol", "websocket", "--threads", "2") as srv:
        for v in ("binary", "text"):
            rc, doc, _ = fp.load("--protocol", "websocket", "--connect", "127.0.0.1:%d" % srv.port, "--connections",
                                 3, "--requests", 3001, "--payload", 300, "--mode", "pipelined", "--variant", v,
                                 expect_rc=0)
            assert doc["replies_verified"] == 3001 and doc["variant"] == v, "%s: %r" % (v, doc)
        c = srv.stop()
        assert c["frames"] == 6002 + 6 and c["protocol_errors"] == 0, "counters %r (6002 messages + 6 closes)" % c
    with fp.server("--protocol", "websocket", "--sink", "--threads", "1") as srv:
        rc, doc, _ = fp.load("--protocol", "websocket", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                             "--requests", 5000, "--mode", "receive", expect_rc=0)
        c = srv.stop()
        assert c["frames"] == 5000 + 2, "sink counters %r" % c
