"""fp-server driven with raw sockets: echo rules, errors closing only the offending connection,
half-close, bounded buffering, descriptor exhaustion, resource limits, counters on SIGTERM, and
the rpc and websocket endpoints. Frames are the suite's reference codecs' (wire.py)."""
import os
import random
import signal
import struct
import subprocess
import threading
import time

from frameproof.netsuite.conn import rss_kib
from frameproof.oracle import Frame

from wire import (LENGTH_FIELD, RFC_KEY, RPC, STANDARD, WEBSOCKET, Client, lf, lf_codec, lf_frame, request_head,
                  rpc, rpc_frame, std_frame, ws, ws_frame, ws_handshake)


def oversize_header(n):
    """A standard request header declaring n payload bytes, nothing after it."""
    return STANDARD.oversize_header(STANDARD.codec(), n)


def test_echo_rules_standard(fp):
    """STD-ECHO-1/2/3/5: one reply per request (flag 0x80|kind), none for one-way or replies,
    in order, all of them on half-close, then close."""
    with fp.server("--protocol", "standard", "--threads", "2") as srv:
        s = Client(srv.port)
        want, out = [], bytearray()
        for kind in range(64):
            p = bytes([kind]) * (kind * 3)
            out += std_frame(kind, (kind * 7) & 0xFF, p)
            want.append(Frame(0x80 | kind, (kind * 7) & 0xFF, p))
            out += std_frame(0x40 | kind, 1, b"one-way")      # no reply
            out += std_frame(0x80 | kind, 2, b"a reply")      # no reply
            out += std_frame(0xC0 | kind, 3, b"an error")     # no reply
        s.send(out)
        s.shutdown_write()
        got = s.frames_to_eof()
        assert got == want, "replies differ: got %d, want %d" % (len(got), len(want))
        c = srv.stop()
        assert c["frames"] == 256 and c["protocol_errors"] == 0, "counters %r" % c


def test_split_and_sticky(fp):
    """STD-STR-1/2 over TCP: frames written 1..5 bytes at a time, and 200 frames in one write."""
    with fp.server("--protocol", "standard") as srv:
        rng = random.Random(5)
        s = Client(srv.port)
        payloads = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40))) for _ in range(60)]
        stream = b"".join(std_frame(0x01, i, p) for i, p in enumerate(payloads))
        i = 0
        while i < len(stream):
            n = rng.randint(1, 5)
            s.send(stream[i:i + n])
            i += n
        for i, p in enumerate(payloads):
            r = s.frame()
            assert r == Frame(0x81, i, p), "reply %d is %r" % (i, r)
        s.send(b"".join(std_frame(0x02, i & 0xFF, b"x" * (i % 50)) for i in range(200)))
        for i in range(200):
            r = s.frame()
            assert r == Frame(0x82, i & 0xFF, b"x" * (i % 50)), "sticky reply %d is %r" % (i, r)


def test_extended_length_echo(fp):
    """STD-LEN-2: 65534 (short form), 65535 and 1 MiB (extended) payloads echo exactly."""
    with fp.server("--protocol", "standard") as srv:
        s = Client(srv.port)
        for n in (65534, 65535, 1 << 20):
            p = bytes((i * 13) & 0xFF for i in range(n))
            s.send(std_frame(0x01, 9, p))
            r = s.frame(30)
            assert r == Frame(0x81, 9, p), "payload of %d bytes not echoed" % n


def test_decode_error_closes_only_that_connection(fp):
    """STD-ECHO-4: replies to the frames before the error, then close; others keep working."""
    with fp.server("--protocol", "standard", "--threads", "2") as srv:
        other = Client(srv.port)
        bad = Client(srv.port)
        # between them an extended header declaring 16 bytes: not canonical (STD-LEN-3)
        bad.send(std_frame(0x01, 1, b"before") + b"\x01\x02\xff\xff\x10\x00\x00\x00" + std_frame(0x01, 3, b"after"))
        got = bad.frames_to_eof()
        assert got == [Frame(0x81, 1, b"before")], "offending connection got %r" % got
        other.send(std_frame(0x01, 5, b"still here"))
        assert other.frame() == Frame(0x81, 5, b"still here"), "other connection stopped working"
        fresh = Client(srv.port)
        fresh.send(std_frame(0x01, 6, b"new"))
        assert fresh.frame() == Frame(0x81, 6, b"new"), "new connection not served"
        c = srv.stop()
        assert c["protocol_errors"] == 1, "protocol_errors %r" % c


def test_oversize_rejected_at_header_time(fp):
    """STD-LIM-1 with limits.max_payload 1000: the connection closes right after the header (the
    server does not wait for the 1001 bytes); exactly 1000 is echoed."""
    codec = '{"protocol": "standard", "limits": {"max_payload": 1000}}'
    with fp.server("--codec", codec) as srv:
        s = Client(srv.port)
        s.send(std_frame(0x01, 1, b"z" * 1000))
        assert s.frame() == Frame(0x81, 1, b"z" * 1000), "1000-byte payload not echoed"
        s.send(oversize_header(1001))  # declares 1001, nothing follows
        t0 = time.time()
        rest = s.to_eof(5)
        assert rest == b"" and time.time() - t0 < 4, "no close at header time"


def test_half_close_with_partial_frame(fp):
    """STD-ECHO-5 / STD-STR-3: three complete frames and half of a fourth, then EOF: three replies."""
    with fp.server("--protocol", "standard") as srv:
        s = Client(srv.port)
        s.send(b"".join(std_frame(0x01, i, b"f%d" % i) for i in range(3)) + std_frame(0x01, 9, b"partial")[:6])
        s.shutdown_write()
        got = s.frames_to_eof()
        assert got == [Frame(0x81, i, b"f%d" % i) for i in range(3)], "got %r" % got


def test_bounded_buffering_when_client_does_not_read(fp):
    """STD-LIM-3 / bounded output: a client that writes 48 MiB without reading does not make the
    server's memory grow with it; another connection is served meanwhile; every reply arrives
    once the client reads."""
    with fp.server("--protocol", "standard", "--threads", "1") as srv:
        s = Client(srv.port)
        base = rss_kib(srv.pid)
        payload = bytes(range(256)) * 256  # 64 KiB
        n = 768
        errs = []

        def writer():
            try:
                s.sock.settimeout(60)
                for i in range(n):
                    s.sock.sendall(std_frame(0x01, i & 0xFF, payload))
            except Exception as e:  # noqa: BLE001
                errs.append(e)

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        time.sleep(1.5)
        peak = rss_kib(srv.pid)
        other = Client(srv.port)
        other.send(std_frame(0x01, 1, b"ping"))
        assert other.frame() == Frame(0x81, 1, b"ping"), "server stalled for other connections"
        assert peak - base < 40 * 1024, "server RSS grew by %d KiB while the client did not read" % (peak - base)
        for i in range(n):
            r = s.frame(30)
            assert r is not None and r == Frame(0x81, i & 0xFF, payload), "reply %d wrong" % i
        t.join(30)
        assert not errs, "writer failed: %r" % errs


def test_mixed_small_and_big_replies_keep_order(fp):
    """Small replies are copied into the output buffer, big ones (>= 16 KiB) go out by gather
    write: interleaved in one stream, with the client reading late (partial writes at arbitrary
    points), every reply must arrive intact and in order, in both protocols."""
    rng = random.Random(11)
    sizes = [rng.choice([0, 1, 100, 16383, 16384, 40000, 65534, 65535, 70000, 300000]) for _ in range(160)]
    payloads = [bytes(((i * 131) + j) & 0xFF for j in range(min(n, 256))) * (n // 256) +
                bytes(((i * 131) + j) & 0xFF for j in range(n % 256)) for i, n in enumerate(sizes)]
    for proto, extra, enc in (
            ("standard", [], lambda i, p: std_frame(0x01 | (i % 3), i & 0xFF, p)),
            ("length-field", ["--codec", lf_codec(3, 4)], lambda i, p: lf_frame(p, 3, 4, b"\x07\x08\x09"))):
        with fp.server(*(extra or ["--protocol", proto]), "--threads", "1") as srv:
            s = Client(srv.port, STANDARD) if proto == "standard" else Client(srv.port, LENGTH_FIELD, lf(3, 4))
            stream = b"".join(enc(i, p) for i, p in enumerate(payloads))
            t = threading.Thread(target=lambda: s.sock.sendall(stream), daemon=True)
            t.start()
            time.sleep(0.5)  # let the server's writes hit a full socket first
            for i, p in enumerate(payloads):
                if proto == "standard":
                    r = s.frame(30)
                    assert r == Frame(0x81 | (i % 3), i & 0xFF, p), "%s reply %d (%d bytes) wrong" % (proto, i, len(p))
                else:  # the echo in the same profile, its header bytes zeroed (LF-FMT-4)
                    want = lf_frame(p, 3, 4)
                    got = s.exactly(len(want), 30)
                    assert got[:7] == want[:7], "%s reply %d header %r" % (proto, i, got[:7])
                    assert got == want, "%s reply %d (%d bytes) payload differs" % (proto, i, len(p))
            t.join(10)


def test_descriptor_exhaustion(fp):
    """With more connections than descriptors (ulimit -n 40) the server neither spins on its
    always-readable listener nor drops the waiting connections: they are served once
    descriptors are free again."""
    srv = subprocess.Popen(["bash", "-c", "ulimit -n 40 && exec \"$0\" --protocol standard --threads 1 "
                            "--listen 127.0.0.1:0", fp.server_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    socks = []
    try:
        line = srv.stdout.readline()
        assert line.startswith("LISTENING "), "first line %r" % line
        port = int(line.rsplit(":", 1)[1])
        socks = [Client(port) for _ in range(60)]
        time.sleep(0.3)

        def cpu():
            with open("/proc/%d/stat" % srv.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        c0 = cpu()
        time.sleep(1.0)
        used = cpu() - c0
        assert used < 0.3, "server used %.2f s of CPU in 1 s while out of descriptors" % used
        socks[0].send(std_frame(0x01, 1, b"first"))
        assert socks[0].frame() == Frame(0x81, 1, b"first"), "an accepted connection is not served"
        for s in socks[:30]:
            s.close()
        socks[-1].send(std_frame(0x01, 2, b"last"))
        assert socks[-1].frame(5) == Frame(0x81, 2, b"last"), "a waiting connection was not served later"
    finally:
        for s in socks:
            s.close()
        srv.send_signal(signal.SIGTERM)
        try:
            srv.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            srv.kill()
            raise AssertionError("server did not stop") from None
    assert srv.returncode == 0, "server exit %d" % srv.returncode


def test_counters_on_sigterm(fp):
    """Contract: SIGTERM prints {"connections","frames","bytes","protocol_errors"} and exits 0."""
    with fp.server("--protocol", "standard", "--threads", "2") as srv:
        socks = [Client(srv.port) for _ in range(3)]
        for s in socks:
            s.send(b"".join(std_frame(0x01, i, b"q" * 100) for i in range(10)))
        for s in socks:
            for i in range(10):
                assert s.frame() is not None, "missing reply"
        c = srv.stop()
        assert c == {"connections": 3, "frames": 30, "bytes": 3000, "protocol_errors": 0}, "counters %r" % c
    with fp.server("--protocol", "length-field") as srv:
        c = srv.stop(signal.SIGINT)
        assert c == {"connections": 0, "frames": 0, "bytes": 0, "protocol_errors": 0}, "SIGINT counters %r" % c


def test_sink_mode_counts_and_sends_nothing(fp):
    with fp.server("--protocol", "length-field", "--sink") as srv:
        s = Client(srv.port, LENGTH_FIELD)
        s.send(b"".join(lf_frame(b"k" * 50) for _ in range(100)))
        s.shutdown_write()
        assert s.to_eof() == b"", "sink server sent bytes"
        c = srv.stop()
        assert c["frames"] == 100 and c["bytes"] == 5000, "counters %r" % c


def test_length_field_profiles_echo(fp):
    """LF-ECHO-1, LF-FMT-4: every profile echoes in the same profile with zeroed header bytes."""
    for offset, size in ((0, 2), (2, 0), (0, -4), (1, 1), (0, 4), (3, -2)):
        with fp.server("--codec", lf_codec(offset, size)) as srv:
            s = Client(srv.port, LENGTH_FIELD, lf(offset, size))
            payloads = [b"", b"abc", bytes(range(200)), b"v" * 255]
            hdr = b"\xaa" * offset
            s.send(b"".join(lf_frame(p, offset, size, hdr) for p in payloads))
            want = b"".join(lf_frame(p, offset, size) for p in payloads)
            got = s.exactly(len(want))
            assert got == want, "profile (%d,%d): echo differs" % (offset, size)


def test_length_field_decode_error(fp):
    """LF-ECHO-2: a 6-byte varint (LF-LEN-2): reply to the frame before it, then close."""
    with fp.server("--codec", lf_codec(0, 0)) as srv:
        s = Client(srv.port, LENGTH_FIELD, lf(0, 0))
        s.send(lf_frame(b"ok", 0, 0) + b"\x80\x80\x80\x80\x80\x00" + lf_frame(b"no", 0, 0))
        assert s.to_eof() == lf_frame(b"ok", 0, 0), "wrong bytes before close"
        assert srv.stop()["protocol_errors"] == 1, "protocol_errors not counted"


def test_resource_limit_flags(fp):
    """reference-impls/README.md "Resource limits" (*-RES-*): the generic flags take positive integers
    (else a usage error), a budget below the largest frame is a usage error; the idle timeout closes a
    silent connection (counted from the accept), the frame timeout one stopped inside a frame, both
    leaving a busy connection alone; beyond --max-connections a connection is closed at once while the
    others are served; over the memory budget the connection holding the most is closed, never the
    small holder."""
    for args, want in ((["--idle-timeout-ms", "0"], "--idle-timeout-ms must be a positive integer"),
                       (["--memory-budget", "-5"], "--memory-budget must be a positive integer"),
                       (["--max-connections", "x"], "--max-connections: not a number"),
                       (["--memory-budget", "1000"], "below the largest frame"),
                       (["--codec", '{"protocol": "websocket", "websocket": {"max_message": 2000000}}',
                         "--memory-budget", "1999999"], "below the largest frame")):
        full = (["--protocol", "standard"] if "--codec" not in args else []) + args + ["--listen", "127.0.0.1:0"]
        p = subprocess.run([fp.server_path] + full, capture_output=True, text=True, timeout=10)
        assert p.returncode == 2 and p.stderr.startswith("usage error: ") and want in p.stderr.splitlines()[0], \
            "fp-server %r: rc %d stderr %r" % (args, p.returncode, p.stderr)
    with fp.server("--protocol", "standard", "--threads", "1", "--idle-timeout-ms", "300", "--frame-timeout-ms", "600",
                   "--max-connections", "3") as srv:
        silent = Client(srv.port)
        partial = Client(srv.port)
        partial.send(std_frame(1, 1, b"x" * 100)[:50])       # inside a frame: the frame timeout
        busy = Client(srv.port)
        t0 = time.monotonic()
        over = Client(srv.port)                              # the fourth: closed at once, nothing written
        assert over.to_eof(3.0) == b"", "the connection beyond --max-connections got bytes"
        assert time.monotonic() - t0 < 2.0, "the connection beyond the limit was not closed at once"
        for i in range(8):                                   # busy keeps talking past the idle timeout
            busy.send(std_frame(1, i, b"ping"))
            assert busy.frame() == Frame(0x81, i, b"ping"), "busy connection not echoed"
            time.sleep(0.1)
        assert silent.to_eof(3.0) == b"", "the silent connection got bytes"
        t_silent = time.monotonic() - t0
        assert partial.to_eof(3.0) == b"", "the partial frame got a reply"
        t_partial = time.monotonic() - t0
        assert 0.25 <= t_silent <= 2.5, "silent connection closed after %.2f s (idle timeout 0.3 s)" % t_silent
        assert 0.55 <= t_partial <= 3.0, "unfinished frame closed after %.2f s (frame timeout 0.6 s)" % t_partial
        busy.send(std_frame(1, 9, b"still"))
        assert busy.frame() == Frame(0x81, 9, b"still"), "busy connection closed by a timeout"
    # the budget: unfinished frames of 3 and 3.5 MiB do not fit in 5 MiB; the bigger holder is closed, the
    # small holder (1 KiB unfinished) keeps its connection and is served
    codec = '{"protocol": "standard", "limits": {"max_payload": 4194304}}'
    with fp.server("--codec", codec, "--threads", "1", "--memory-budget", str(5 << 20)) as srv:
        small = Client(srv.port)
        small.send(std_frame(1, 1, b"s" * 1000)[:500])
        big = [Client(srv.port) for _ in range(2)]
        for k, b in enumerate(big):
            try:
                n = (3 << 20) + k * (512 << 10)  # the second frame is the bigger one
                b.send(std_frame(1, 1, bytes([65 + k]) * n)[:n - 10])
            except OSError:
                pass
            time.sleep(0.3)
        closed = [b.closed_within(3.0) for b in big]
        assert closed == [False, True], "over the budget closed %r (want the second, bigger holder)" % closed
        small.send(std_frame(1, 1, b"s" * 1000)[500:])
        assert small.frame() == Frame(0x81, 1, b"s" * 1000), "the small holder was not served"


def test_largest_frame_at_default_maximum(fp):
    """STD-LIM-1 default: a payload of exactly 10 MiB is echoed, 10 MiB + 1 closes the connection."""
    with fp.server("--protocol", "standard") as srv:
        s = Client(srv.port)
        p = bytes((i * 7) & 0xFF for i in range(1 << 16)) * 160  # 10 MiB
        s.send(std_frame(0x01, 1, p))
        assert s.frame(60) == Frame(0x81, 1, p), "10 MiB payload not echoed"
        s.send(oversize_header((10 << 20) + 1))
        assert s.to_eof(10) == b"", "10 MiB + 1 not rejected"


def test_rpc_unary_and_stream_on_one_port(fp):
    """RPC-ECHO-7: the first frame picks the endpoint; unary echo with flags mode|END (RPC-MODE-2),
    unknown service code 2; a stream INIT/DATA/END exchange on another connection."""
    with fp.server("--protocol", "rpc", "--threads", "1") as srv:
        a = Client(srv.port, RPC)
        a.send(rpc_frame(rpc.request(5, b"hi", flags=0x01)) + rpc_frame(rpc.request(6, b"x", service=b"Other")))
        assert a.frame() == rpc.response(5, b"hi", code=0, flags=0x05), "unary echo"
        assert a.frame() == rpc.response(6, b"", code=2, flags=0x04), "unknown service: code 2"
        b = Client(srv.port, RPC)
        b.send(rpc_frame(rpc.init(7)) + rpc_frame(rpc.stream(rpc.DATA, 99, b"abc")) + rpc_frame(rpc.stream(rpc.END, 7)))
        assert b.frame() == rpc.stream(rpc.INIT_ACK, 7), "INIT_ACK"
        assert b.frame() == rpc.stream(rpc.DATA, 7, b"abc"), "DATA echoed with the stream's id"
        assert b.frame() == rpc.stream(rpc.END, 7), "END"
        # a STREAM_INIT on the unary connection closes it (RPC-ECHO-4)
        a.send(rpc_frame(rpc.init(8)))
        assert a.to_eof() == b"", "unary connection closes on a STREAM_INIT without a reply"
        a.close()
        b.close()
        c = srv.stop()
        assert c["protocol_errors"] == 1 and c["connections"] == 2, "counters %r" % c


def test_websocket_handshake_echo_and_close(fp):
    """WS-HS-2/4: 101 with the RFC's accept key and the subprotocol; a fragmented text message with a
    ping between the fragments is echoed whole after the pong (WS-CTL-3); the close handshake
    echoes the code (WS-CLOSE-5); an unmasked frame is closed with 1002 (WS-ERR-1)."""
    key = b"\x01\x02\x03\x04"
    with fp.server("--protocol", "websocket", "--threads", "1") as srv:
        a = Client(srv.port, WEBSOCKET)
        head = ws_handshake(a, "Sec-WebSocket-Protocol: x, frameproof.echo\r\n")
        assert (head.startswith("HTTP/1.1 101") and "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in head
                and "Sec-WebSocket-Protocol: frameproof.echo\r\n" in head), "handshake answer %r" % head
        a.send(ws_frame(ws.frame(ws.TEXT, b"Hel", fin=False, key=key)) + ws_frame(ws.frame(ws.PING, b"p", key=key)) +
               ws_frame(ws.frame(ws.CONT, "lo €".encode(), key=key)))
        assert a.frame() == ws.frame(ws.PONG, b"p"), "pong"
        assert a.frame() == ws.frame(ws.TEXT, "Hello €".encode()), "echo of the whole message"
        big = bytes(range(256)) * 300
        a.send(ws_frame(ws.frame(ws.BINARY, big, key=key)))
        assert a.frame() == ws.frame(ws.BINARY, big), "64-bit length echo"
        a.send(ws_frame(ws.frame(ws.CLOSE, struct.pack(">H", 4001) + b"bye", key=key)))
        assert a.frame() == ws.frame(ws.CLOSE, struct.pack(">H", 4001)), "close echo without the reason"
        assert a.to_eof() == b"", "the server closes after the close handshake"
        b = Client(srv.port, WEBSOCKET)
        ws_handshake(b)
        b.send(ws_frame(ws.frame(ws.TEXT, b"hi")))  # not masked
        assert b.frame() == ws.frame(ws.CLOSE, struct.pack(">H", 1002)), "close 1002 for an unmasked frame"
        assert b.to_eof() == b"", "closed after the error"
        v = Client(srv.port, WEBSOCKET)
        v.send(request_head(RFC_KEY, version="8"))
        ans = v.to_eof().decode("latin-1")
        assert ans.startswith("HTTP/1.1 426") and "Sec-WebSocket-Version: 13" in ans, "version 8: %r" % ans
        for s in (a, b, v):
            s.close()
