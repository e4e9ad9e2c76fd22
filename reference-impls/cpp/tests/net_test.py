#!/usr/bin/env python3
"""End-to-end tests of fp-server and fp-load (standard library only, 127.0.0.1 only).

    python3 tests/net_test.py BUILD_DIR

fp-server is driven with raw sockets (echo rules, errors closing only the offending connection,
half-close, bounded buffering, counters on SIGTERM); fp-load is run against fp-server (exact
counts, JSON report) and against small faulty servers written here (a corrupted, a reordered and
a missing reply must each be detected). Prints one line per test and ends with
"NET: N passed, N failed".
"""
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
SERVER = os.path.join(BUILD, "fp-server")
LOAD = os.path.join(BUILD, "fp-load")
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Fail(Exception):
    pass


class Skip(Exception):
    """The environment cannot run this test (counted neither as passed nor as failed)."""


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# ----------------------------------------------------------------------------------------------
# framing (independent of the C++ codec)

def std_frame(flag, seq, payload):
    n = len(payload)
    if n < 0xFFFF:
        return bytes([flag, seq]) + struct.pack("<H", n) + payload
    return bytes([flag, seq]) + b"\xff\xff" + struct.pack("<I", n) + payload


def leb128(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lf_frame(payload, offset=0, size=2, header=b""):
    n = len(payload)
    head = header if header else bytes(offset)
    fmt = {1: "<B", 2: "<H", 4: "<I", -2: ">H", -4: ">I"}
    field = leb128(n) if size == 0 else struct.pack(fmt[size], n)
    return head + field + payload


def lf_codec(offset=0, size=2, max_payload=0):
    """--codec JSON of a length-field profile (reference-impls/README.md)."""
    d = {"protocol": "length-field", "length_field": {"offset": offset, "size": size}}
    if max_payload:
        d["limits"] = {"max_payload": max_payload}
    return json.dumps(d)


def recv_exact(sock, n, timeout=10.0):
    sock.settimeout(timeout)
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None if not buf else bytes(buf)
        buf += chunk
    return bytes(buf)


def read_std(sock, timeout=10.0):
    h = recv_exact(sock, 4, timeout)
    if h is None:
        return None
    check(len(h) == 4, "EOF inside a reply header")
    n = struct.unpack("<H", h[2:4])[0]
    if n == 0xFFFF:
        n = struct.unpack("<I", recv_exact(sock, 4, timeout))[0]
    p = recv_exact(sock, n, timeout) if n else b""
    check(p is not None and len(p) == n, "EOF inside a reply payload")
    return h[0], h[1], p


def read_to_eof(sock, timeout=10.0):
    sock.settimeout(timeout)
    buf = bytearray()
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            c = sock.recv(65536)
        except ConnectionResetError:
            raise Fail("connection reset instead of an orderly close")
        if not c:
            return bytes(buf)
        buf += c
    raise Fail("no EOF within %.0f s" % timeout)


def parse_std_stream(b):
    out, i = [], 0
    while i < len(b):
        check(len(b) - i >= 4, "trailing partial header")
        n = struct.unpack("<H", b[i + 2:i + 4])[0]
        hl = 4
        if n == 0xFFFF:
            n = struct.unpack("<I", b[i + 4:i + 8])[0]
            hl = 8
        check(len(b) - i >= hl + n, "trailing partial frame")
        out.append((b[i], b[i + 1], b[i + hl:i + hl + n]))
        i += hl + n
    return out


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ----------------------------------------------------------------------------------------------
# fp-server under test

class Server:
    def __init__(self, *args):
        self.args = [SERVER] + list(args) + ["--listen", "127.0.0.1:0"]
        self.proc = None
        self.port = None
        self.counters = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("LISTENING "):
            self.proc.kill()
            raise Fail("first stdout line is %r, stderr %r" % (line, self.proc.stderr.read()[-2000:]))
        self.port = int(line.split()[1].rsplit(":", 1)[1])
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.counters is not None:
            return self.counters
        self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Fail("server did not exit within 15 s of the signal")
        check(self.proc.returncode == 0, "server exit status %s, stderr %r" % (self.proc.returncode, err[-2000:]))
        lines = [l for l in out.splitlines() if l.strip()]
        check(len(lines) == 1, "expected one JSON line after LISTENING, got %r" % lines)
        self.counters = json.loads(lines[0])
        check(set(self.counters) == {"connections", "frames", "bytes", "protocol_errors"},
              "counter keys %r" % sorted(self.counters))
        return self.counters

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            try:
                self.stop()
            except Exception:
                self.proc.kill()
                if exc[0] is None:
                    raise


def run_load(*args, expect_rc=None, timeout=120):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        p = subprocess.run([LOAD] + [str(a) for a in args] + ["--json", path], capture_output=True, text=True,
                           timeout=timeout)
        with open(path) as f:
            text = f.read()
        check(text.strip(), "fp-load wrote no JSON (rc %d, stderr %r)" % (p.returncode, p.stderr[-1500:]))
        doc = json.loads(text)
    finally:
        os.unlink(path)
    keys = {"implementation", "protocol", "codec", "mode", "connections", "window", "payload", "requests_sent",
            "replies_received", "replies_verified", "errors", "error_details", "duration_s", "msgs_per_s",
            "mb_per_s", "latency_us"}
    check(keys <= set(doc), "missing keys %r" % sorted(keys - set(doc)))
    check(set(doc["latency_us"]) == {"p50", "p90", "p99", "p999", "max"}, "latency keys %r" % doc["latency_us"])
    check(doc["implementation"] == "cpp", "implementation %r" % doc["implementation"])
    check(len(doc["error_details"]) <= 10, "more than 10 error_details")
    if expect_rc is not None:
        check(p.returncode == expect_rc, "fp-load exit %d (want %d): %s %s" % (p.returncode, expect_rc, doc,
                                                                            p.stderr[-1500:]))
    return p.returncode, doc, p.stdout


# ----------------------------------------------------------------------------------------------
# fp-server tests

@test
def echo_rules_standard():
    """STD-ECHO-1/2/3/5: one reply per request (flag 0x80|kind), none for one-way or replies,
    in order, all of them on half-close, then close."""
    with Server("--protocol", "standard", "--threads", "2") as srv:
        s = connect(srv.port)
        want, out = [], bytearray()
        for kind in range(64):
            p = bytes([kind]) * (kind * 3)
            out += std_frame(kind, (kind * 7) & 0xFF, p)
            want.append((0x80 | kind, (kind * 7) & 0xFF, p))
            out += std_frame(0x40 | kind, 1, b"one-way")      # no reply
            out += std_frame(0x80 | kind, 2, b"a reply")      # no reply
            out += std_frame(0xC0 | kind, 3, b"an error")     # no reply
        s.sendall(out)
        s.shutdown(socket.SHUT_WR)
        got = parse_std_stream(read_to_eof(s))
        check(got == want, "replies differ: got %d, want %d" % (len(got), len(want)))
        c = srv.stop()
        check(c["frames"] == 256 and c["protocol_errors"] == 0, "counters %r" % c)


@test
def split_and_sticky():
    """STD-STR-1/2 over TCP: frames written 1..5 bytes at a time, and 200 frames in one write."""
    with Server("--protocol", "standard") as srv:
        rng = random.Random(5)
        s = connect(srv.port)
        frames = [std_frame(0x01, i, bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 40)))) for i in range(60)]
        stream = b"".join(frames)
        i = 0
        while i < len(stream):
            n = rng.randint(1, 5)
            s.sendall(stream[i:i + n])
            i += n
        for i, f in enumerate(frames):
            r = read_std(s)
            check(r == (0x81, i, f[4:]), "reply %d is %r" % (i, r))
        s.sendall(b"".join(std_frame(0x02, i & 0xFF, b"x" * (i % 50)) for i in range(200)))
        for i in range(200):
            r = read_std(s)
            check(r == (0x82, i & 0xFF, b"x" * (i % 50)), "sticky reply %d is %r" % (i, r))


@test
def extended_length_echo():
    """STD-LEN-2: 65534 (short form), 65535 and 1 MiB (extended) payloads echo exactly."""
    with Server("--protocol", "standard") as srv:
        s = connect(srv.port)
        for n in (65534, 65535, 1 << 20):
            p = bytes((i * 13) & 0xFF for i in range(n))
            s.sendall(std_frame(0x01, 9, p))
            r = read_std(s, 30)
            check(r == (0x81, 9, p), "payload of %d bytes not echoed" % n)


@test
def decode_error_closes_only_that_connection():
    """STD-ECHO-4: replies to the frames before the error, then close; others keep working."""
    with Server("--protocol", "standard", "--threads", "2") as srv:
        other = connect(srv.port)
        bad = connect(srv.port)
        bad.sendall(std_frame(0x01, 1, b"before") + b"\x01\x02\xff\xff\x10\x00\x00\x00" + std_frame(0x01, 3, b"after"))
        got = parse_std_stream(read_to_eof(bad))
        check(got == [(0x81, 1, b"before")], "offending connection got %r" % got)
        other.sendall(std_frame(0x01, 5, b"still here"))
        check(read_std(other) == (0x81, 5, b"still here"), "other connection stopped working")
        fresh = connect(srv.port)
        fresh.sendall(std_frame(0x01, 6, b"new"))
        check(read_std(fresh) == (0x81, 6, b"new"), "new connection not served")
        c = srv.stop()
        check(c["protocol_errors"] == 1, "protocol_errors %r" % c)


@test
def oversize_rejected_at_header_time():
    """STD-LIM-1 with limits.max_payload 1000: the connection closes right after the header (the
    server does not wait for the 1001 bytes); exactly 1000 is echoed."""
    with Server("--codec", '{"protocol": "standard", "limits": {"max_payload": 1000}}') as srv:
        s = connect(srv.port)
        s.sendall(std_frame(0x01, 1, b"z" * 1000))
        check(read_std(s) == (0x81, 1, b"z" * 1000), "1000-byte payload not echoed")
        s.sendall(b"\x01\x02\xe9\x03")  # declares 1001, nothing follows
        t0 = time.time()
        rest = read_to_eof(s, 5)
        check(rest == b"" and time.time() - t0 < 4, "no close at header time")


@test
def half_close_with_partial_frame():
    """STD-ECHO-5 / STD-STR-3: three complete frames and half of a fourth, then EOF: three replies."""
    with Server("--protocol", "standard") as srv:
        s = connect(srv.port)
        s.sendall(b"".join(std_frame(0x01, i, b"f%d" % i) for i in range(3)) + std_frame(0x01, 9, b"partial")[:6])
        s.shutdown(socket.SHUT_WR)
        got = parse_std_stream(read_to_eof(s))
        check(got == [(0x81, i, b"f%d" % i) for i in range(3)], "got %r" % got)


@test
def bounded_buffering_when_client_does_not_read():
    """STD-LIM-3 / bounded output: a client that writes 48 MiB without reading does not make the
    server's memory grow with it; another connection is served meanwhile; every reply arrives
    once the client reads."""
    with Server("--protocol", "standard", "--threads", "1") as srv:
        s = connect(srv.port)
        base = rss_kib(srv.proc.pid)
        payload = bytes(range(256)) * 256  # 64 KiB
        n = 768
        errs = []

        def writer():
            try:
                s.settimeout(60)
                for i in range(n):
                    s.sendall(std_frame(0x01, i & 0xFF, payload))
            except Exception as e:  # noqa: BLE001
                errs.append(e)

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        time.sleep(1.5)
        peak = rss_kib(srv.proc.pid)
        other = connect(srv.port)
        other.sendall(std_frame(0x01, 1, b"ping"))
        check(read_std(other) == (0x81, 1, b"ping"), "server stalled for other connections")
        check(peak - base < 40 * 1024, "server RSS grew by %d KiB while the client did not read" % (peak - base))
        for i in range(n):
            r = read_std(s, 30)
            check(r is not None and r[0] == 0x81 and r[1] == i & 0xFF and r[2] == payload, "reply %d wrong" % i)
        t.join(30)
        check(not errs, "writer failed: %r" % errs)


@test
def mixed_small_and_big_replies_keep_order():
    """Small replies are copied into the output buffer, big ones (>= 16 KiB) go out by gather
    write: interleaved in one stream, with the client reading late (partial writes at arbitrary
    points), every reply must arrive intact and in order, in both protocols."""
    rng = random.Random(11)
    sizes = [rng.choice([0, 1, 100, 16383, 16384, 40000, 65534, 65535, 70000, 300000]) for _ in range(160)]
    payloads = [bytes(((i * 131) + j) & 0xFF for j in range(min(n, 256))) * (n // 256) +
                bytes(((i * 131) + j) & 0xFF for j in range(n % 256)) for i, n in enumerate(sizes)]
    for proto, extra, enc, dec_len in (
            ("standard", [], lambda i, p: std_frame(0x01 | (i % 3), i & 0xFF, p), None),
            ("length-field", ["--codec", lf_codec(3, 4)], lambda i, p: lf_frame(p, 3, 4, b"\x07\x08\x09"),
             None)):
        with Server(*(extra or ["--protocol", proto]), "--threads", "1") as srv:
            s = connect(srv.port)
            stream = b"".join(enc(i, p) for i, p in enumerate(payloads))
            t = threading.Thread(target=lambda: s.sendall(stream), daemon=True)
            t.start()
            time.sleep(0.5)  # let the server's writes hit a full socket first
            for i, p in enumerate(payloads):
                if proto == "standard":
                    r = read_std(s, 30)
                    check(r == (0x81 | (i % 3), i & 0xFF, p), "%s reply %d (%d bytes) wrong" % (proto, i, len(p)))
                else:
                    h = recv_exact(s, 7, 30)
                    check(h is not None and h[:3] == b"\0\0\0" and struct.unpack("<I", h[3:])[0] == len(p),
                          "%s reply %d header %r" % (proto, i, h))
                    body = recv_exact(s, len(p), 30) if p else b""
                    check(body == p, "%s reply %d (%d bytes) payload differs" % (proto, i, len(p)))
            t.join(10)


@test
def ipv6_loopback():
    """[::1]:0 is printed as LISTENING [::1]:PORT, and fp-load connects to [::1]:PORT."""
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError as e:
        raise Skip("no IPv6 loopback here: %s" % e)
    p = subprocess.Popen([SERVER, "--protocol", "standard", "--listen", "[::1]:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().strip()
        check(line.startswith("LISTENING [::1]:"), "LISTENING line %r" % line)
        port = int(line.rsplit(":", 1)[1])
        _, doc, _ = run_load("--protocol", "standard", "--connect", "[::1]:%d" % port, "--connections", 2,
                             "--requests", 500, "--payload", 40, "--mode", "pipelined", "--window", 8, expect_rc=0)
        check(doc["replies_verified"] == 500, "doc %r" % doc)
    finally:
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=15)
    check(json.loads(out.strip().splitlines()[-1])["frames"] == 500, "server counters %r" % out)


@test
def descriptor_exhaustion():
    """With more connections than descriptors (ulimit -n 40) the server neither spins on its
    always-readable listener nor drops the waiting connections: they are served once
    descriptors are free again."""
    srv = subprocess.Popen(["bash", "-c", "ulimit -n 40 && exec \"$0\" --protocol standard --threads 1 "
                            "--listen 127.0.0.1:0", SERVER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    socks = []
    try:
        line = srv.stdout.readline()
        check(line.startswith("LISTENING "), "first line %r" % line)
        port = int(line.rsplit(":", 1)[1])
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(60)]
        time.sleep(0.3)

        def cpu():
            with open("/proc/%d/stat" % srv.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        c0 = cpu()
        time.sleep(1.0)
        used = cpu() - c0
        check(used < 0.3, "server used %.2f s of CPU in 1 s while out of descriptors" % used)
        socks[0].sendall(std_frame(0x01, 1, b"first"))
        check(read_std(socks[0]) == (0x81, 1, b"first"), "an accepted connection is not served")
        for s in socks[:30]:
            s.close()
        socks[-1].sendall(std_frame(0x01, 2, b"last"))
        check(read_std(socks[-1], 5) == (0x81, 2, b"last"), "a waiting connection was not served later")
    finally:
        for s in socks:
            s.close()
        srv.send_signal(signal.SIGTERM)
        try:
            srv.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            srv.kill()
            raise Fail("server did not stop")
    check(srv.returncode == 0, "server exit %d" % srv.returncode)


@test
def counters_on_sigterm():
    """Contract: SIGTERM prints {"connections","frames","bytes","protocol_errors"} and exits 0."""
    with Server("--protocol", "standard", "--threads", "2") as srv:
        socks = [connect(srv.port) for _ in range(3)]
        for s in socks:
            s.sendall(b"".join(std_frame(0x01, i, b"q" * 100) for i in range(10)))
        for s in socks:
            for i in range(10):
                check(read_std(s) is not None, "missing reply")
        c = srv.stop()
        check(c == {"connections": 3, "frames": 30, "bytes": 3000, "protocol_errors": 0}, "counters %r" % c)
    with Server("--protocol", "length-field") as srv:
        c = srv.stop(signal.SIGINT)
        check(c == {"connections": 0, "frames": 0, "bytes": 0, "protocol_errors": 0}, "SIGINT counters %r" % c)


@test
def sink_mode_counts_and_sends_nothing():
    with Server("--protocol", "length-field", "--sink") as srv:
        s = connect(srv.port)
        s.sendall(b"".join(lf_frame(b"k" * 50) for _ in range(100)))
        s.shutdown(socket.SHUT_WR)
        check(read_to_eof(s) == b"", "sink server sent bytes")
        c = srv.stop()
        check(c["frames"] == 100 and c["bytes"] == 5000, "counters %r" % c)


@test
def length_field_profiles_echo():
    """LF-ECHO-1, LF-FMT-4: every profile echoes in the same profile with zeroed header bytes."""
    for offset, size in ((0, 2), (2, 0), (0, -4), (1, 1), (0, 4), (3, -2)):
        with Server("--codec", lf_codec(offset, size)) as srv:
            s = connect(srv.port)
            payloads = [b"", b"abc", bytes(range(200)), b"v" * 255]
            hdr = b"\xaa" * offset
            s.sendall(b"".join(lf_frame(p, offset, size, hdr) for p in payloads))
            want = b"".join(lf_frame(p, offset, size) for p in payloads)
            got = recv_exact(s, len(want))
            check(got == want, "profile (%d,%d): echo differs" % (offset, size))


@test
def length_field_decode_error():
    """LF-ECHO-2: a 6-byte varint (LF-LEN-2): reply to the frame before it, then close."""
    with Server("--codec", lf_codec(0, 0)) as srv:
        s = connect(srv.port)
        s.sendall(lf_frame(b"ok", 0, 0) + b"\x80\x80\x80\x80\x80\x00" + lf_frame(b"no", 0, 0))
        check(read_to_eof(s) == lf_frame(b"ok", 0, 0), "wrong bytes before close")
        check(srv.stop()["protocol_errors"] == 1, "protocol_errors not counted")


@test
def bad_configuration_refused():
    """LF-FMT-3: an unsupported size is refused before listening (a usage error)."""
    p = subprocess.run([SERVER, "--codec", lf_codec(0, 3), "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=10)
    check(p.returncode == 2 and "LISTENING" not in p.stdout and "LF-FMT-3" in p.stderr,
          "rc %d stdout %r stderr %r" % (p.returncode, p.stdout, p.stderr))


USAGE_ERRORS = [
    # (arguments before --listen/--connect, what stderr must mention)
    (["--protocol", "standard", "--codec", '{"protocol": "standard"}'], "exactly one of --codec"),
    ([], "exactly one of --codec"),
    (["--codec", '{"protocol": "standard"'], "not JSON"),
    (["--codec", '"standard"'], "expected a JSON object"),
    (["--codec", '{"limits": {}}'], '"protocol" is required'),
    (["--codec", '{"protocol": "mqtt"}'], 'unknown protocol "mqtt"'),
    (["--protocol", "Standard"], 'unknown protocol "Standard"'),
    (["--codec", '{"protocol": "standard", "max_payload": 5}'], 'unknown key "max_payload"'),
    (["--codec", '{"protocol": "standard", "length_field": {"size": 4}}'], 'unknown key "length_field"'),
    (["--codec", '{"protocol": "length-field", "length_field": {"offset": 1, "bits": 8}}'], 'unknown key "bits"'),
    (["--codec", '{"protocol": "length-field", "length_field": {"offset": -1}}'], "expected an unsigned integer"),
    (["--codec", '{"protocol": "standard", "limits": {"max_payload": "10"}}'], "expected an unsigned integer"),
    (["--protocol", "standard", "--lf-size", "4"], "unknown option --lf-size"),
    (["--protocol", "standard", "--max-payload", "4"], "unknown option --max-payload"),
]


@test
def usage_errors_exit_2():
    """reference-impls/README.md, common rules: --codec JSON or --protocol NAME, exactly one; bad JSON,
    unknown keys and the old per-protocol flags are usage errors: one "usage error:" line and the
    usage on stderr, exit status 2, nothing on stdout. --help: the usage on stdout, exit 0."""
    for prog, tail in ((SERVER, ["--listen", "127.0.0.1:0"]), (LOAD, ["--connect", "127.0.0.1:9", "--requests", "1"])):
        name = os.path.basename(prog)
        for args, want in USAGE_ERRORS:
            p = subprocess.run([prog] + args + tail, capture_output=True, text=True, timeout=10)
            lines = p.stderr.splitlines()
            check(p.returncode == 2 and p.stdout == "", "%s %r: rc %d stdout %r" % (name, args, p.returncode, p.stdout))
            check(lines and lines[0].startswith("usage error:") and want in lines[0],
                  "%s %r: stderr %r (want %r)" % (name, args, p.stderr, want))
            check(any(l.startswith("usage: %s" % name) for l in lines), "%s %r: no usage in %r" % (name, args, p.stderr))
        h = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=10)
        check(h.returncode == 0 and h.stdout.startswith("usage: %s (--codec JSON | --protocol standard|length-field|rpc|websocket)" % name)
              and h.stderr == "", "%s --help: rc %d %r %r" % (name, h.returncode, h.stdout, h.stderr))
    for args, want in (
            (["--mode", "per-packet", "--window", "2"], "--window must be 1 in per-packet mode"),
            (["--mode", "pipelined", "--window", "256"], "--window must be at most 255 for standard"),
            (["--payload", "2147483648"], "--payload is above"),
            (["--duration", "abc"], "not a number of seconds"),
            (["--requests", "x"], "--requests: not a number")):
        p = subprocess.run([LOAD, "--protocol", "standard", "--connect", "127.0.0.1:9"] + args +
                           ([] if "--duration" in args or "--requests" in args else ["--requests", "1"]),
                           capture_output=True, text=True, timeout=10)
        check(p.returncode == 2 and p.stderr.startswith("usage error: ") and want in p.stderr.splitlines()[0],
              "fp-load %r: rc %d stderr %r" % (args, p.returncode, p.stderr))


@test
def resource_limit_flags():
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
        p = subprocess.run([SERVER] + full, capture_output=True, text=True, timeout=10)
        check(p.returncode == 2 and p.stderr.startswith("usage error: ") and want in p.stderr.splitlines()[0],
              "fp-server %r: rc %d stderr %r" % (args, p.returncode, p.stderr))
    with Server("--protocol", "standard", "--threads", "1", "--idle-timeout-ms", "300", "--frame-timeout-ms", "600",
                "--max-connections", "3") as srv:
        silent = connect(srv.port)
        partial = connect(srv.port)
        partial.sendall(std_frame(1, 1, b"x" * 100)[:50])   # inside a frame: the frame timeout
        busy = connect(srv.port)
        t0 = time.monotonic()
        over = connect(srv.port)                             # the fourth: closed at once, nothing written
        check(read_to_eof(over, 3.0) == b"", "the connection beyond --max-connections got bytes")
        check(time.monotonic() - t0 < 2.0, "the connection beyond the limit was not closed at once")
        for i in range(8):                                   # busy keeps talking past the idle timeout
            busy.sendall(std_frame(1, i, b"ping"))
            check(read_std(busy) == (0x81, i, b"ping"), "busy connection not echoed")
            time.sleep(0.1)
        check(read_to_eof(silent, 3.0) == b"", "the silent connection got bytes")
        t_silent = time.monotonic() - t0
        check(read_to_eof(partial, 3.0) == b"", "the partial frame got a reply")
        t_partial = time.monotonic() - t0
        check(0.25 <= t_silent <= 2.5, "silent connection closed after %.2f s (idle timeout 0.3 s)" % t_silent)
        check(0.55 <= t_partial <= 3.0, "unfinished frame closed after %.2f s (frame timeout 0.6 s)" % t_partial)
        busy.sendall(std_frame(1, 9, b"still"))
        check(read_std(busy) == (0x81, 9, b"still"), "busy connection closed by a timeout")
    # the budget: unfinished frames of 3 and 3.5 MiB do not fit in 5 MiB; the bigger holder is closed, the
    # small holder (1 KiB unfinished) keeps its connection and is served
    codec = '{"protocol": "standard", "limits": {"max_payload": 4194304}}'
    with Server("--codec", codec, "--threads", "1", "--memory-budget", str(5 << 20)) as srv:
        small = connect(srv.port)
        small.sendall(std_frame(1, 1, b"s" * 1000)[:500])
        big = [connect(srv.port) for _ in range(2)]
        for k, b in enumerate(big):
            try:
                n = (3 << 20) + k * (512 << 10)  # the second frame is the bigger one
                b.sendall(std_frame(1, 1, bytes([65 + k]) * n)[:n - 10])
            except OSError:
                pass
            time.sleep(0.3)
        closed = [closed_within(b, 3.0) for b in big]
        check(closed == [False, True], "over the budget closed %r (want the second, bigger holder)" % closed)
        small.sendall(std_frame(1, 1, b"s" * 1000)[500:])
        check(read_std(small) == (0x81, 1, b"s" * 1000), "the small holder was not served")


def closed_within(sock, timeout):
    """True if the peer closed (EOF or reset) within `timeout` s, nothing received."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


@test
def codec_and_protocol_are_the_same():
    """--protocol NAME is --codec '{"protocol": NAME}'; fp-load reports the codec object as given."""
    codec = '{"protocol": "length-field", "limits": {"max_payload": 300}, "length_field": {"offset": 1, "size": -2}}'
    with Server("--codec", codec) as srv:
        s = connect(srv.port)
        s.sendall(lf_frame(b"x" * 300, 1, -2) + lf_frame(b"y", 1, -2))
        check(recv_exact(s, 303 + 4) == lf_frame(b"x" * 300, 1, -2) + lf_frame(b"y", 1, -2), "echo differs")
        _, doc, _ = run_load("--codec", codec, "--connect", "127.0.0.1:%d" % srv.port, "--requests", 10,
                             "--payload", 300, expect_rc=0)
        check(doc["codec"] == json.loads(codec) and list(doc["codec"]) == ["protocol", "limits", "length_field"],
              "codec %r" % doc["codec"])
        check(doc["protocol"] == "length-field" and doc["window"] == 1, "doc %r" % doc)
        s.sendall(lf_frame(b"z" * 301, 1, -2))  # above limits.max_payload: LF-LIM-1, closed
        check(read_to_eof(s) == b"", "an oversize frame was answered")
        check(srv.stop()["protocol_errors"] == 1, "protocol_errors")
    with Server("--protocol", "standard") as srv:
        _, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--requests", 40,
                             "--mode", "pipelined", expect_rc=0)
        check(doc["codec"] == {"protocol": "standard"} and doc["window"] == 32, "doc %r" % doc)
        check(all(isinstance(v, int) for v in doc["latency_us"].values()), "latency not integers: %r" % doc)
        check(doc["payload"] == 32 and doc["connections"] == 1, "defaults %r" % doc)


# ----------------------------------------------------------------------------------------------
# fp-load against fp-server

def latency_ordered(doc):
    l = doc["latency_us"]
    return l["p50"] <= l["p90"] <= l["p99"] <= l["p999"] <= l["max"] and l["max"] > 0


@test
def load_per_packet_exact():
    with Server("--protocol", "standard") as srv:
        _, doc, out = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                               "--requests", 1000, "--payload", 32, "--mode", "per-packet", expect_rc=0)
        check(doc["requests_sent"] == doc["replies_received"] == doc["replies_verified"] == 1000, "counts %r" % doc)
        check(doc["errors"] == 0 and latency_ordered(doc), "doc %r" % doc)
        check(out.strip(), "no human summary on stdout")
        c = srv.stop()
        check(c["frames"] == 1000 and c["bytes"] == 32000 and c["connections"] == 3, "server counters %r" % c)


@test
def load_pipelined_length_field_exact():
    with Server("--codec", lf_codec(0, -4)) as srv:
        _, doc, _ = run_load("--codec", lf_codec(0, -4), "--connect", "127.0.0.1:%d" % srv.port,
                             "--connections", 4, "--requests", 5001, "--payload", 1000, "--mode", "pipelined",
                             "--window", 32, expect_rc=0)
        check(doc["requests_sent"] == doc["replies_verified"] == 5001 and doc["errors"] == 0, "doc %r" % doc)
        check(abs(doc["mb_per_s"] - 5001 * 1000 / 1e6 / doc["duration_s"]) < 0.05 * doc["mb_per_s"] + 0.01,
              "mb_per_s inconsistent: %r" % doc)
        check(srv.stop()["frames"] == 5001, "server frame count")


@test
def load_pipelined_standard_window_255_varint_small_payloads():
    with Server("--protocol", "standard") as srv:
        for payload in (0, 5, 8, 70000):
            _, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                                 "--requests", 600 if payload < 1000 else 60, "--payload", payload, "--mode",
                                 "pipelined", "--window", 255, expect_rc=0)
            check(doc["errors"] == 0 and doc["replies_verified"] == doc["requests_sent"], "payload %d: %r" % (payload, doc))


@test
def load_duration_mode():
    with Server("--protocol", "standard") as srv:
        _, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                             "--duration", 0.5, "--payload", 64, "--mode", "pipelined", "--window", 8, expect_rc=0)
        check(doc["requests_sent"] > 0 and doc["requests_sent"] == doc["replies_verified"], "doc %r" % doc)
        check(0.4 <= doc["duration_s"] <= 6, "duration_s %r" % doc["duration_s"])
        check(srv.stop()["frames"] == doc["requests_sent"], "server saw a different count")


@test
def load_receive_mode_against_sink():
    with Server("--protocol", "length-field", "--sink") as srv:
        _, doc, _ = run_load("--protocol", "length-field", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                             "--requests", 30000, "--payload", 32, "--mode", "receive", expect_rc=0)
        check(doc["requests_sent"] == 30000 and doc["errors"] == 0, "doc %r" % doc)
        # 1 MB of writes on loopback: anything near 2 s means the writer idles between batches
        # (e.g. a poll() without POLLOUT while there is more to send waits its full timeout).
        check(doc["duration_s"] < 1.0, "receive mode took %.2f s for 30000 x 32 B (%.0f msg/s)"
              % (doc["duration_s"], doc["msgs_per_s"]))
        time.sleep(0.5)  # the server may still be reading the last bytes when fp-load exits
        c = srv.stop()
        check(c["frames"] == 30000 and c["bytes"] == 960000, "server counters %r" % c)


@test
def load_unreachable_server():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % port, "--connections", 1,
                          "--requests", 10, "--payload", 8, "--mode", "per-packet")
    check(rc == 1 and doc["replies_verified"] == 0, "rc %d doc %r" % (rc, doc))


@test
def load_many_connections_exact():
    with Server("--codec", lf_codec(0, 0), "--threads", "2") as srv:
        _, doc, _ = run_load("--codec", lf_codec(0, 0), "--connect", "127.0.0.1:%d" % srv.port,
                             "--connections", 200, "--requests", 20011, "--payload", 200, "--mode", "pipelined",
                             "--window", 8, expect_rc=0)
        check(doc["requests_sent"] == doc["replies_verified"] == 20011, "doc %r" % doc)
        c = srv.stop()
        check(c["connections"] == 200 and c["frames"] == 20011 and c["bytes"] == 20011 * 200, "counters %r" % c)


@test
def largest_frame_at_default_maximum():
    """STD-LIM-1 default: a payload of exactly 10 MiB is echoed, 10 MiB + 1 closes the connection."""
    with Server("--protocol", "standard") as srv:
        s = connect(srv.port)
        p = bytes((i * 7) & 0xFF for i in range(1 << 16)) * 160  # 10 MiB
        s.sendall(std_frame(0x01, 1, p))
        check(read_std(s, 60) == (0x81, 1, p), "10 MiB payload not echoed")
        s.sendall(b"\x01\x02\xff\xff" + struct.pack("<I", (10 << 20) + 1))
        check(read_to_eof(s, 10) == b"", "10 MiB + 1 not rejected")


@test
def sigterm_with_traffic_in_flight():
    """SIGTERM while clients are busy: the server still exits 0 with its counters line, and
    fp-load (whose connections are closed under it) ends with exit 1 in bounded time."""
    with Server("--protocol", "standard", "--threads", "2") as srv:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
        load = subprocess.Popen([str(a) for a in [
                                    LOAD, "--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port,
                                    "--connections", 4, "--duration", 5, "--payload", 64, "--mode", "pipelined",
                                    "--window", 16, "--timeout-ms", 1000, "--json", path]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.7)
            c = srv.stop()
            check(c["connections"] == 4 and c["frames"] > 0, "counters %r" % c)
            rc = load.wait(timeout=15)
            check(rc == 1, "fp-load exit %d after its server went away" % rc)
            with open(path) as f:
                doc = json.load(f)
            check(doc["replies_verified"] <= c["frames"] and doc["errors"] == 0, "doc %r vs %r" % (doc, c))
        finally:
            if load.poll() is None:
                load.kill()
            os.unlink(path)


# ----------------------------------------------------------------------------------------------
# fp-load against faulty servers: every reply must be verified

class TestServer:
    """A listener on 127.0.0.1 whose accept thread hands every connection to on_connection(c)."""

    def __init__(self, rcvbuf=None):
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf:
            self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        self.ls.settimeout(0.1)
        while not self.stop:
            try:
                c, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.on_connection(c)

    def close(self):
        self.stop = True
        self.ls.close()


def take_echo(protocol, buf):
    """The echo of the first complete request in `buf` (default profiles), taken out of it; None
    if no frame is complete."""
    h = 4 if protocol == "standard" else 2
    if len(buf) < h or len(buf) < h + struct.unpack("<H", buf[h - 2:h])[0]:
        return None
    n = h + struct.unpack("<H", buf[h - 2:h])[0]
    f = bytes(buf[:n])
    del buf[:n]
    return bytes([f[0] | 0x80]) + f[1:] if protocol == "standard" else f


class FakeServer(TestServer):
    """Echo server whose reply stream passes through `mangle(conn_index, reply_index, frame)`,
    which returns the bytes to send instead (b"" drops it). Counts requests per connection."""

    def __init__(self, protocol, mangle=None, reorder=None):
        self.protocol = protocol
        self.mangle = mangle or (lambda c, i, f: f)
        self.reorder = reorder
        self.per_conn = []
        self.lock = threading.Lock()
        super().__init__()

    def on_connection(self, c):
        with self.lock:
            idx = len(self.per_conn)
            self.per_conn.append(0)
        threading.Thread(target=self.serve, args=(c, idx), daemon=True).start()

    def serve(self, c, idx):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        held = None
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                buf += d
                while (reply := take_echo(self.protocol, buf)) is not None:
                    with self.lock:
                        i = self.per_conn[idx]
                        self.per_conn[idx] += 1
                    out = self.mangle(idx, i, reply)
                    if self.reorder and self.reorder(idx, i):
                        held = out  # send it after the next one
                        continue
                    c.sendall(out)
                    if held is not None:
                        c.sendall(held)
                        held = None
        except OSError:
            pass
        finally:
            c.close()


def flip_byte(at_conn, at_reply, pos=-1):
    def m(c, i, f):
        if c == at_conn and i == at_reply:
            b = bytearray(f)
            b[pos] ^= 0x01
            return bytes(b)
        return f
    return m


@test
def load_detects_corrupted_payload():
    srv = FakeServer("standard", flip_byte(0, 37))
    try:
        rc, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                              "--requests", 100, "--payload", 32, "--mode", "pipelined", "--window", 4,
                              "--timeout-ms", 1000)
        check(rc == 1 and doc["errors"] >= 1 and doc["error_details"], "corruption not detected: rc %d %r" % (rc, doc))
        check(doc["replies_verified"] == 99, "replies_verified %r" % doc["replies_verified"])
    finally:
        srv.close()


@test
def load_detects_corrupted_index_bytes():
    """A reply whose index bytes (payload 0..7) are changed must not verify either."""
    srv = FakeServer("length-field", flip_byte(0, 5, pos=2))
    try:
        rc, doc, _ = run_load("--protocol", "length-field", "--connect", "127.0.0.1:%d" % srv.port, "--connections",
                              1, "--requests", 20, "--payload", 16, "--mode", "per-packet", "--timeout-ms", 1000)
        check(rc == 1 and doc["errors"] >= 1, "rc %d %r" % (rc, doc))
    finally:
        srv.close()


@test
def load_detects_length_field_reorder():
    """LF-MATCH-1 FIFO: two swapped replies carry the wrong payloads for their requests."""
    srv = FakeServer("length-field", reorder=lambda c, i: i == 10)
    try:
        rc, doc, _ = run_load("--protocol", "length-field", "--connect", "127.0.0.1:%d" % srv.port, "--connections",
                              1, "--requests", 50, "--payload", 24, "--mode", "pipelined", "--window", 8,
                              "--timeout-ms", 1000)
        check(rc == 1 and doc["errors"] >= 2, "reorder not detected: rc %d %r" % (rc, doc))
    finally:
        srv.close()


@test
def load_standard_accepts_reordered_replies():
    """STD-MATCH-1: replies out of order are matched by sequence number: all verify."""
    srv = FakeServer("standard", reorder=lambda c, i: i % 5 == 0)
    try:
        rc, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                              "--requests", 200, "--payload", 24, "--mode", "pipelined", "--window", 8,
                              "--timeout-ms", 2000)
        check(rc == 0 and doc["replies_verified"] == 200, "rc %d %r" % (rc, doc))
    finally:
        srv.close()


@test
def load_detects_missing_reply():
    srv = FakeServer("standard", lambda c, i, f: b"" if i == 5 else f)
    try:
        t0 = time.time()
        rc, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                              "--requests", 20, "--payload", 16, "--mode", "pipelined", "--window", 4,
                              "--timeout-ms", 500)
        check(rc == 1 and doc["replies_verified"] == 19, "rc %d %r" % (rc, doc))
        check(time.time() - t0 < 20, "fp-load took too long to give up")
    finally:
        srv.close()


@test
def load_detects_wrong_flag():
    """A reply must carry flag 0x81: an error reply (0xC1) is not a verified echo."""
    def m(c, i, f):
        return bytes([0xC1]) + f[1:] if i == 3 else f
    srv = FakeServer("standard", m)
    try:
        rc, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                              "--requests", 10, "--payload", 16, "--mode", "per-packet", "--timeout-ms", 1000)
        check(rc == 1 and doc["errors"] >= 1, "rc %d %r" % (rc, doc))
    finally:
        srv.close()


@test
def load_detects_duplicated_reply():
    """An extra copy of a reply is unmatched (standard, STD-MATCH-2) or completes the next request
    with the wrong payload (length-field): either way an error."""
    for proto in ("standard", "length-field"):
        srv = FakeServer(proto, lambda c, i, f: f + f if i == 3 else f)
        try:
            rc, doc, _ = run_load("--protocol", proto, "--connect", "127.0.0.1:%d" % srv.port, "--connections", 1,
                                  "--requests", 10, "--payload", 16, "--mode", "per-packet", "--timeout-ms", 1000)
            check(rc == 1 and doc["errors"] >= 1, "%s: rc %d %r" % (proto, rc, doc))
        finally:
            srv.close()


@test
def load_splits_requests_over_connections():
    srv = FakeServer("standard")
    try:
        run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                 "--requests", 10, "--payload", 8, "--mode", "per-packet", expect_rc=0)
        check(sorted(srv.per_conn, reverse=True) == [4, 3, 3], "per-connection requests %r" % srv.per_conn)
    finally:
        srv.close()


class HoldingServer(TestServer):
    """Standard/length-field echo server that holds replies and sends them all every `hold`
    seconds: records, per connection, the most requests it held at once (= the client's
    requests in flight), and makes every reply take about `hold` seconds."""

    def __init__(self, protocol, hold):
        self.protocol = protocol
        self.hold = hold
        self.max_held = []
        super().__init__()

    def on_connection(self, c):
        self.max_held.append(0)
        threading.Thread(target=self.serve, args=(c, len(self.max_held) - 1), daemon=True).start()

    def serve(self, c, idx):
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf, held = bytearray(), []
        next_flush = time.time() + self.hold
        try:
            while not self.stop:
                c.settimeout(max(0.001, next_flush - time.time()))
                try:
                    d = c.recv(65536)
                    if not d:
                        break
                    buf += d
                except socket.timeout:
                    pass
                while (reply := take_echo(self.protocol, buf)) is not None:
                    held.append(reply)
                self.max_held[idx] = max(self.max_held[idx], len(held))
                if time.time() >= next_flush:
                    if held:
                        c.sendall(b"".join(held))
                        held = []
                    next_flush = time.time() + self.hold
        except OSError:
            pass
        finally:
            c.close()


@test
def load_batched_waits_for_the_whole_batch():
    """reference-impls/README.md (fp-load --mode batched): a batch of --batch N requests is written at
    once and nothing of the next is written before every reply of this one is in. A length-field
    server that answers the first request of each batch, waits 0.3 s and notes whether the client
    wrote meanwhile, then answers the rest: batched writes nothing early, pipelined (sliding window)
    does; the JSON's window is N; defaults and usage errors."""
    import socket as so

    def holding(batch, early_flags):
        ls = so.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        ls.settimeout(20)

        def frames(buf):
            out = []
            while len(buf) >= 2 and len(buf) >= 2 + int.from_bytes(buf[:2], "little"):
                n = 2 + int.from_bytes(buf[:2], "little")
                out.append(bytes(buf[:n]))
                del buf[:n]
            return out

        def run():
            try:
                c, _ = ls.accept()
            except OSError:
                return
            c.settimeout(10)
            buf, pending = bytearray(), []
            try:
                for _ in range(20):
                    while len(pending) < batch:
                        data = c.recv(65536)
                        if not data:
                            return
                        buf += data
                        pending += frames(buf)
                    c.sendall(pending[0])
                    c.settimeout(0.3)
                    try:
                        early = c.recv(65536)
                    except so.timeout:
                        early = b""
                    c.settimeout(10)
                    early_flags.append(bool(early) or len(pending) > batch)
                    buf += early
                    c.sendall(b"".join(pending[1:batch]))
                    pending = pending[batch:] + frames(buf)
            except OSError:
                pass
            finally:
                c.close()
                ls.close()
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return ls.getsockname()[1], t

    for mode, flag, refills_early in (("batched", "--batch", False), ("pipelined", "--window", True)):
        flags = []
        port, t = holding(8, flags)
        rc, doc, out = run_load("--codec", lf_codec(), "--connect", "127.0.0.1:%d" % port, "--requests", "40",
                                "--mode", mode, flag, "8", "--timeout-ms", "3000")
        t.join(15)
        check(rc == 0 and doc["requests_sent"] == 40 and doc["replies_verified"] == 40, "%s: rc %d %r" % (mode, rc, out[-500:]))
        check(doc["window"] == 8 and doc["mode"] == mode, "%s: window %r mode %r" % (mode, doc["window"], doc["mode"]))
        check(len(flags) >= 4, "%s: only %d batches seen" % (mode, len(flags)))
        if refills_early:
            check(all(flags[:-1]), "pipelined did not refill early: %r (the check does not bite)" % flags)
        else:
            check(not any(flags), "batched wrote before the whole batch was back: %r" % flags)
    with Server("--protocol", "standard") as srv:
        rc, doc, out = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % srv.port, "--connections", "2",
                                "--requests", "1001", "--mode", "batched")
        check(rc == 0 and doc["window"] == 255 and doc["replies_verified"] == 1001, "standard default batch: %r" % out[-500:])
    for args, want in ((["--mode", "batched", "--batch", "256"], "--batch must be at most 255"),
                       (["--mode", "pipelined", "--batch", "4"], "--batch needs --mode batched"),
                       (["--mode", "batched", "--window", "4"], "--window is not used in batched mode")):
        p = subprocess.run([LOAD, "--protocol", "standard", "--connect", "127.0.0.1:9", "--requests", "1"] + args,
                           capture_output=True, text=True, timeout=10)
        check(p.returncode == 2 and want in p.stderr, "fp-load %r: rc %d %r" % (args, p.returncode, p.stderr))
    h = subprocess.run([LOAD, "--help"], capture_output=True, text=True, timeout=10)
    check("batched" in h.stdout, "--help does not name batched")


@test
def load_window_and_latency():
    """per-packet keeps exactly one request in flight, pipelined exactly up to --window (the
    server holding replies sees that many at most, and reaches it); latency is measured from
    the write of a request to its reply (every reply is held ~50 ms: p50 >= 25 ms)."""
    for proto, mode, window in (("standard", "per-packet", 1), ("standard", "pipelined", 8),
                                ("length-field", "pipelined", 20), ("length-field", "per-packet", 1)):
        srv = HoldingServer(proto, 0.05)
        try:
            args = ["--mode", mode] + (["--window", window] if mode == "pipelined" else [])
            _, doc, _ = run_load("--protocol", proto, "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                                 "--requests", window * 2 * 6, "--payload", 16, "--timeout-ms", 3000, *args,
                                 expect_rc=0)
            check(doc["replies_verified"] == window * 12, "%s %s: %r" % (proto, mode, doc))
            check(srv.max_held == [window, window], "%s %s window %d: server held at most %r"
                  % (proto, mode, window, srv.max_held))
            lat = doc["latency_us"]
            check(25_000 <= lat["p50"] <= 60_000 * 4 and lat["max"] < 1_000_000,
                  "%s %s: latency %r with replies held 50 ms" % (proto, mode, lat))
        finally:
            srv.close()


class DeafServer(TestServer):
    """Accepts connections and never reads from them nor writes to them."""

    def __init__(self):
        self.conns = []
        super().__init__(rcvbuf=4096)

    def on_connection(self, c):
        self.conns.append(c)

    def close(self):
        super().close()
        for c in self.conns:
            c.close()


@test
def load_bounded_in_time_against_deaf_server():
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
        srv = DeafServer()
        what = "%s %s" % (proto, " ".join(map(str, args)))
        try:
            if "--payload" not in args:
                args = args + ["--payload", 16]
            t0 = time.time()
            try:
                rc, doc, _ = run_load("--protocol", proto, "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                                      "--timeout-ms", 300, *args, timeout=20)
            except subprocess.TimeoutExpired:
                problems.append("%s: still running after 20 s" % what)
                continue
            took = time.time() - t0
            if rc != 1:
                problems.append("%s: exit %d" % (what, rc))
            if took >= 6:
                problems.append("%s: took %.1f s to give up" % (what, took))
        finally:
            srv.close()
    check(not problems, "; ".join(problems))


@test
def load_bounded_against_non_accepting_listener():
    """A listener that never accepts (backlog full): connects that cannot complete give up after
    --timeout-ms instead of blocking in SYN retries for minutes."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    try:
        t0 = time.time()
        try:
            rc, doc, _ = run_load("--protocol", "standard", "--connect", "127.0.0.1:%d" % ls.getsockname()[1],
                                  "--connections", 6, "--requests", 6, "--payload", 8, "--mode", "per-packet",
                                  "--timeout-ms", 300, timeout=30)
        except subprocess.TimeoutExpired:
            raise Fail("fp-load still running after 30 s")
        took = time.time() - t0
        check(rc == 1 and doc["replies_verified"] == 0, "rc %d %r" % (rc, doc))
        check(took < 6, "took %.1f s (timeout 0.3 s)" % took)
    finally:
        ls.close()



# ----------------------------------------------------------------------------------------------
# rpc and websocket (framing written here, independent of the C++ codec)

def rpc_frame(kind, rid, body=b"", flags=0x04):
    return b"GRPC" + bytes([1, kind, flags, 0]) + struct.pack(">II", rid, len(body)) + body


def rpc_names(service, method, payload=b""):
    return struct.pack(">H", len(service)) + service + struct.pack(">H", len(method)) + method + payload


def read_rpc(sock, timeout=10.0):
    h = recv_exact(sock, 16, timeout)
    if h is None:
        return None
    check(len(h) == 16 and h[:4] == b"GRPC", "bad rpc reply header %r" % h)
    n = struct.unpack(">I", h[12:16])[0]
    body = recv_exact(sock, n, timeout) if n else b""
    return h[5], h[6], struct.unpack(">I", h[8:12])[0], body


@test
def rpc_unary_and_stream_on_one_port():
    """RPC-ECHO-7: the first frame picks the endpoint; unary echo with flags mode|END (RPC-MODE-2),
    unknown service code 2; a stream INIT/DATA/END exchange on another connection."""
    with Server("--protocol", "rpc", "--threads", "1") as srv:
        a = connect(srv.port)
        a.sendall(rpc_frame(1, 5, rpc_names(b"frameproof.Echo", b"echo", b"hi"), flags=0x01) +
                  rpc_frame(1, 6, rpc_names(b"Other", b"echo", b"x")))
        check(read_rpc(a) == (2, 0x05, 5, b"\x00\x00hi"), "unary echo")
        check(read_rpc(a) == (2, 0x04, 6, b"\x00\x02"), "unknown service: code 2")
        b = connect(srv.port)
        b.sendall(rpc_frame(0x10, 7, rpc_names(b"frameproof.Echo", b"echo"), flags=0) +
                  rpc_frame(0x12, 99, b"abc", flags=0) + rpc_frame(0x13, 7, flags=0))
        check(read_rpc(b) == (0x11, 0, 7, b""), "INIT_ACK")
        check(read_rpc(b) == (0x12, 0, 7, b"abc"), "DATA echoed with the stream's id")
        check(read_rpc(b) == (0x13, 0, 7, b""), "END")
        # a STREAM_INIT on the unary connection closes it (RPC-ECHO-4)
        a.sendall(rpc_frame(0x10, 8, rpc_names(b"frameproof.Echo", b"echo"), flags=0))
        check(read_to_eof(a) == b"", "unary connection closes on a STREAM_INIT without a reply")
        a.close()
        b.close()
        c = srv.stop()
        check(c["protocol_errors"] == 1 and c["connections"] == 2, "counters %r" % c)


@test
def rpc_load_variants_and_streams():
    """fp-load --protocol rpc: every variant pipelined, and --mode stream: exact counts."""
    with Server("--protocol", "rpc", "--threads", "2") as srv:
        for v in ("unary", "client-stream", "server-stream", "bidi"):
            rc, doc, _ = run_load("--protocol", "rpc", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 3,
                                  "--requests", 3001, "--mode", "pipelined", "--variant", v, expect_rc=0)
            check(doc["variant"] == v and doc["replies_verified"] == 3001, "%s: %r" % (v, doc))
        rc, doc, _ = run_load("--protocol", "rpc", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                              "--requests", 31, "--mode", "stream", "--frames-per-stream", 5, "--window", 3,
                              expect_rc=0)
        check(doc["streams_completed"] == 31 and doc["requests_sent"] == 155 and doc["replies_verified"] == 155,
              "stream counts %r" % doc)
        check(doc["streams_per_s"] > 0, "streams_per_s %r" % doc)
    p = subprocess.run([LOAD, "--protocol", "standard", "--connect", "127.0.0.1:1", "--requests", "1", "--mode",
                        "stream"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "no streams" in p.stderr, "standard --mode stream: rc %d %r" % (p.returncode, p.stderr))
    p = subprocess.run([LOAD, "--protocol", "rpc", "--connect", "127.0.0.1:1", "--requests", "1", "--variant", "x"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "unary" in p.stderr, "bad variant: rc %d %r" % (p.returncode, p.stderr))


def ws_handshake(sock, extra=""):
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    sock.sendall(("GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n" % (key, extra)).encode())
    head = b""
    sock.settimeout(10)
    while b"\r\n\r\n" not in head:
        c = sock.recv(1)
        check(c, "EOF in the handshake answer: %r" % head)
        head += c
    return head.decode("latin-1")


def ws_client_frame(opcode, payload, fin=True, key=b"\x01\x02\x03\x04"):
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else \
        bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def read_ws(sock, timeout=10.0):
    h = recv_exact(sock, 2, timeout)
    if h is None:
        return None
    n = h[1] & 0x7F
    check(not h[1] & 0x80, "a server frame is masked")
    if n == 126:
        n = struct.unpack(">H", recv_exact(sock, 2, timeout))[0]
    elif n == 127:
        n = struct.unpack(">Q", recv_exact(sock, 8, timeout))[0]
    return h[0], recv_exact(sock, n, timeout) if n else b""


@test
def websocket_handshake_echo_and_close():
    """WS-HS-2/4: 101 with the RFC's accept key and the subprotocol; a fragmented text message with a
    ping between the fragments is echoed whole after the pong (WS-CTL-3); the close handshake
    echoes the code (WS-CLOSE-5); an unmasked frame is closed with 1002 (WS-ERR-1)."""
    with Server("--protocol", "websocket", "--threads", "1") as srv:
        a = connect(srv.port)
        head = ws_handshake(a, "Sec-WebSocket-Protocol: x, frameproof.echo\r\n")
        check(head.startswith("HTTP/1.1 101") and "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in head
              and "Sec-WebSocket-Protocol: frameproof.echo\r\n" in head, "handshake answer %r" % head)
        a.sendall(ws_client_frame(1, b"Hel", fin=False) + ws_client_frame(9, b"p") + ws_client_frame(0, "lo €".encode()))
        check(read_ws(a) == (0x8A, b"p"), "pong")
        check(read_ws(a) == (0x81, "Hello €".encode()), "echo of the whole message")
        big = bytes(range(256)) * 300
        a.sendall(ws_client_frame(2, big))
        check(read_ws(a) == (0x82, big), "64-bit length echo")
        a.sendall(ws_client_frame(8, struct.pack(">H", 4001) + b"bye"))
        check(read_ws(a) == (0x88, struct.pack(">H", 4001)), "close echo without the reason")
        check(read_to_eof(a) == b"", "the server closes after the close handshake")
        b = connect(srv.port)
        ws_handshake(b)
        b.sendall(b"\x81\x02hi")
        check(read_ws(b) == (0x88, struct.pack(">H", 1002)), "close 1002 for an unmasked frame")
        check(read_to_eof(b) == b"", "closed after the error")
        v = connect(srv.port)
        v.sendall(b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        ans = read_to_eof(v).decode("latin-1")
        check(ans.startswith("HTTP/1.1 426") and "Sec-WebSocket-Version: 13" in ans, "version 8: %r" % ans)
        for s in (a, b, v):
            s.close()


@test
def websocket_load_binary_text_and_sink():
    """fp-load --protocol websocket: binary and text variants verified, close 1000 at the end; against
    --sink (receive mode) every frame is counted."""
    with Server("--protocol", "websocket", "--threads", "2") as srv:
        for v in ("binary", "text"):
            rc, doc, _ = run_load("--protocol", "websocket", "--connect", "127.0.0.1:%d" % srv.port, "--connections",
                                  3, "--requests", 3001, "--payload", 300, "--mode", "pipelined", "--variant", v,
                                  expect_rc=0)
            check(doc["replies_verified"] == 3001 and doc["variant"] == v, "%s: %r" % (v, doc))
        c = srv.stop()
        check(c["frames"] == 6002 + 6 and c["protocol_errors"] == 0, "counters %r (6002 messages + 6 closes)" % c)
    with Server("--protocol", "websocket", "--sink", "--threads", "1") as srv:
        rc, doc, _ = run_load("--protocol", "websocket", "--connect", "127.0.0.1:%d" % srv.port, "--connections", 2,
                              "--requests", 5000, "--mode", "receive", expect_rc=0)
        c = srv.stop()
        check(c["frames"] == 5000 + 2, "sink counters %r" % c)


def main():
    if not (os.access(SERVER, os.X_OK) and os.access(LOAD, os.X_OK)):
        print("NET: fp-server/fp-load missing in %s" % BUILD)
        print("NET: 0 passed, 1 failed")
        return 1
    only = os.environ.get("FP_NET_ONLY")
    passed = failed = 0
    for t in TESTS:
        if only and only not in t.__name__:
            continue
        t0 = time.time()
        try:
            t()
            passed += 1
            print("PASS net %s (%.1f s)" % (t.__name__, time.time() - t0), flush=True)
        except Skip as e:
            print("SKIP net %s: %s" % (t.__name__, e), flush=True)
        except Exception as e:  # noqa: BLE001
            failed += 1
            print("FAIL net %s: %s" % (t.__name__, e), flush=True)
            if not isinstance(e, Fail):
                traceback.print_exc()
    print("NET: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
