"""fp-load against the faulty servers of faulty_servers.py: every reply must be verified (a
corrupted, reordered, duplicated, missing or wrong-flag reply is an error, a reordered standard one
is not), the requests in flight are what the mode says, and every loop is bounded in time."""
import socket
import subprocess
import time

from faulty_servers import BatchWatcher, DeafServer, FakeServer, HoldingServer, flip_byte
from wire import LENGTH_FIELD, STANDARD, lf_codec

PROTOCOLS = {"standard": STANDARD, "length-field": LENGTH_FIELD}


def test_load_detects_corrupted_payload(fp):
    with FakeServer(STANDARD, flip_byte(0, 37)) as srv:
        rc, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                             "--requests", 100, "--payload", 32, "--mode", "pipelined", "--window", 4,
                             "--timeout-ms", 1000)
        assert rc == 1 and doc["errors"] >= 1 and doc["error_details"], "corruption not detected: rc %d %r" % (rc, doc)
        assert doc["replies_verified"] == 99, "replies_verified %r" % doc["replies_verified"]


def test_load_detects_corrupted_index_bytes(fp):
    """A reply whose index bytes (payload 0..7) are changed must not verify either."""
    with FakeServer(LENGTH_FIELD, flip_byte(0, 5, pos=2)) as srv:
        rc, doc, _ = fp.load("--protocol", "length-field", "--connect", "127.0.0.1:%d" % srv.port, "--connections",
                             1, "--requests", 20, "--payload", 16, "--mode", "per-packet", "--timeout-ms", 1000)
        assert rc == 1 and doc["errors"] >= 1, "rc %d %r" % (rc, doc)


def test_load_detects_length_field_reorder(fp):
    """LF-MATCH-1 FIFO: two swapped replies carry the wrong payloads for their requests."""
    with FakeServer(LENGTH_FIELD, reorder=lambda c, i: i == 10) as srv:
        rc, doc, _ = fp.load("--protocol", "length-field", "--connect", "127.0.0.1:%d" % srv.port, "--connections",
                             1, "--requests", 50, "--payload", 24, "--mode", "pipelined", "--window", 8,
                             "--timeout-ms", 1000)
        assert rc == 1 and doc["errors"] >= 2, "reorder not detected: rc %d %r" % (rc, doc)


def test_load_standard_accepts_reordered_replies(fp):
    """STD-MATCH-1: replies out of order are matched by sequence number: all verify."""
    with FakeServer(STANDARD, reorder=lambda c, i: i % 5 == 0) as srv:
        rc, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                             "--requests", 200, "--payload", 24, "--mode", "pipelined", "--window", 8,
                             "--timeout-ms", 2000)
        assert rc == 0 and doc["replies_verified"] == 200, "rc %d %r" % (rc, doc)


def test_load_detects_missing_reply(fp):
    with FakeServer(STANDARD, lambda c, i, f: b"" if i == 5 else f) as srv:
        t0 = time.time()
        rc, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                             "--requests", 20, "--payload", 16, "--mode", "pipelined", "--window", 4,
                             "--timeout-ms", 500)
        assert rc == 1 and doc["replies_verified"] == 19, "rc %d %r" % (rc, doc)
        assert time.time() - t0 < 20, "fp-load took too long to give up"


def test_load_detects_wrong_flag(fp):
    """A reply must carry flag 0x81: an error reply (0xC1) is not a verified echo."""
    def m(c, i, f):
        return bytes([0xC1]) + f[1:] if i == 3 else f
    with FakeServer(STANDARD, m) as srv:
        rc, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                             "--requests", 10, "--payload", 16, "--mode", "per-packet", "--timeout-ms", 1000)
        assert rc == 1 and doc["errors"] >= 1, "rc %d %r" % (rc, doc)


def test_load_detects_duplicated_reply(fp):
    """An extra copy of a reply is unmatched (standard, STD-MATCH-2) or completes the next request
    with the wrong payload (length-field): either way an error."""
    for proto in ("standard", "length-field"):
        with FakeServer(PROTOCOLS[proto], lambda c, i, f: f + f if i == 3 else f) as srv:
            rc, doc, _ = fp.load("--protocol", proto, "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                                 "--requests", 10, "--payload", 16, "--mode", "per-packet", "--timeout-ms", 1000)
            assert rc == 1 and doc["errors"] >= 1, "%s: rc %d %r" % (proto, rc, doc)


def test_load_splits_requests_over_connections(fp):
    with FakeServer(STANDARD) as srv:
        fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                "--requests", 10, "--payload", 8, "--mode", "per-packet", expect_rc=0)
        assert sorted(srv.per_conn, reverse=True) == [4, 3, 3], "per-connection requests %r" % srv.per_conn


def test_load_batched_waits_for_the_whole_batch(fp):
    """reference-impls/README.md (fp-load --mode batched): a batch of --batch N requests is written at
    once and nothing of the next is written before every reply of this one is in. A length-field
    server that answers the first request of each batch, waits 0.3 s and notes whether the client
    wrote meanwhile, then answers the rest: batched writes nothing early, pipelined (sliding window)
    does; the JSON's window is N; defaults and usage errors."""
    for mode, flag, refills_early in (("batched", "--batch", False), ("pipelined", "--window", True)):
        flags = []
        srv = BatchWatcher(LENGTH_FIELD, 8, flags)
        rc, doc, out = fp.load("--codec", lf_codec(), "--connect", "127.0.0.1:%d" % srv.port, "--requests", "40",
                               "--mode", mode, flag, "8", "--timeout-ms", "3000")
        srv.thread.join(15)
        assert rc == 0 and doc["requests_sent"] == 40 and doc["replies_verified"] == 40, \
            "%s: rc %d %r" % (mode, rc, out[-500:])
        assert doc["window"] == 8 and doc["mode"] == mode, "%s: window %r mode %r" % (mode, doc["window"], doc["mode"])
        assert len(flags) >= 4, "%s: only %d batches seen" % (mode, len(flags))
        if refills_early:
            assert all(flags[:-1]), "pipelined did not refill early: %r (the check does not bite)" % flags
        else:
            assert not any(flags), "batched wrote before the whole batch was back: %r" % flags
    with fp.server("--protocol", "standard") as srv:
        rc, doc, out = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", "2",
                               "--requests", "1001", "--mode", "batched")
        assert rc == 0 and doc["window"] == 255 and doc["replies_verified"] == 1001, \
            "standard default batch: %r" % out[-500:]
    for args, want in ((["--mode", "batched", "--batch", "256"], "--batch must be at most 255"),
                       (["--mode", "pipelined", "--batch", "4"], "--batch needs --mode batched"),
                       (["--mode", "batched", "--window", "4"], "--window is not used in batched mode")):
        p = subprocess.run([fp.load_path, "--protocol", "standard", "--connect", "127.0.0.1:9", "--requests", "1"] + args,
                           capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and want in p.stderr, "fp-load %r: rc %d %r" % (args, p.returncode, p.stderr)
    h = subprocess.run([fp.load_path, "--help"], capture_output=True, text=True, timeout=10)
    assert "batched" in h.stdout, "--help does not name batched"


def test_load_window_and_latency(fp):
    """per-packet keeps exactly one request in flight, pipelined exactly up to --window (the
    server holding replies sees that many at most, and reaches it); latency is measured from
    the write of a request to its reply (every reply is held ~50 ms: p50 >= 25 ms)."""
    for proto, mode, window in (("standard", "per-packet", 1), ("standard", "pipelined", 8),
                                ("length-field", "pipelined", 20), ("length-field", "per-packet", 1)):
        with HoldingServer(PROTOCOLS[proto], 0.05) as srv:
            args = ["--mode", mode] + (["--window", window] if mode == "pipelined" else [])
            _, doc, _ = fp.load("--protocol", proto, "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                                "--requests", window * 2 * 6, "--payload", 16, "--timeout-ms", 3000, *args,
                                expect_rc=0)
            assert doc["replies_verified"] == window * 12, "%s %s: %r" % (proto, mode, doc)
            assert srv.max_held == [window, window], "%s %s window %d: server held at most %r" % (
                proto, mode, window, srv.max_held)
            lat = doc["latency_us"]
            assert 25_000 <= lat["p50"] <= 60_000 * 4 and lat["max"] < 1_000_000, \
                "%s %s: latency %r with replies held 50 ms" % (proto, mode, lat)


def test_load_bounded_in_time_against_deaf_server(fp):
    """Every fp-load loop is bounded in time: against a server that never reads nor answers,
    each mode gives up (exit 1) within a few --timeout-ms, even with far more requests to send
    than the socket buffers hold."""
    cases = [
        ("standard", ["--mode", "per-packet", "--requests", 4]),
        ("standard", ["--mode", "pipelined", "--window", 255, "--requests", 600]),
        ("length-field", ["--mode", "pipelined", "--window", 16, "--requests", 100]),
        ("standard", ["--mode", "pipelined", "--window", 16, "--duration", 0.5]),
        ("standard", ["--mode", "receive", "--requests", 10_000_000, "--payload", 1024]),
        ("length-field", ["--mode", "receive", "--requests", 10_000_000, "--payload", 1024]),
        ("standard", ["--mode", "receive", "--duration", 0.5, "--payload", 1024]),
    ]
    problems = []
    for proto, args in cases:
        what = "%s %s" % (proto, " ".join(map(str, args)))
        with DeafServer() as srv:
            if "--payload" not in args:
                args = args + ["--payload", 16]
            t0 = time.time()
            try:
                rc, doc, _ = fp.load("--protocol", proto, "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                                     "--timeout-ms", 300, *args, timeout=20)
            except subprocess.TimeoutExpired:
                problems.append("%s: still running after 20 s" % what)
                continue
            took = time.time() - t0
            if rc != 1:
                problems.append("%s: exit %d" % (what, rc))
            if took >= 6:
                problems.append("%s: took %.1f s to give up" % (what, took))
    assert not problems, "; ".join(problems)


def test_load_bounded_against_non_accepting_listener(fp):
    """A listener that never accepts (backlog full): connects that cannot complete give up after
    --timeout-ms instead of blocking in SYN retries for minutes."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    try:
        t0 = time.time()
        try:
            rc, doc, _ = fp.load("--protocol", "standard", "--connect", "127.0.0.1:%d" % ls.getsockname()[1],
                                 "--connections", 6, "--requests", 6, "--payload", 8, "--mode", "per-packet",
                                 "--timeout-ms", 300, timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("fp-load still running after 30 s") from None
        took = time.time() - t0
        assert rc == 1 and doc["replies_verified"] == 0, "rc %d %r" % (rc, doc)
        assert took < 6, "took %.1f s (timeout 0.3 s)" % took
    finally:
        ls.close()
