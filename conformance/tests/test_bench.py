"""The benchmark runner (tools/bench, `frameproof bench`): no benchmark is judged here. These
tests check that harness validation rejects a miscounting load client (and accepts a correct
one), and that a seconds-long run writes a well-formed results set (JSON schema, Markdown, PNG)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
RUST = ROOT / "reference-impls" / "rust" / "target" / "release"


def bench(*args, timeout=300):
    p = subprocess.run([PY, "-m", "frameproof.cli", "bench", *args], cwd=ROOT / "conformance",
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_validation_rejects_a_miscounting_client():
    rc, out = bench("--validate-only", "--clients", "py", "--client", f"py={PY} -m frameproof.pyload --fault miscount")
    assert rc == 1, out
    assert "counts_agree: FAIL" in out and "client says 601, server received 600" in out, out
    assert "no benchmark was run" in out


def test_validation_rejects_a_client_that_does_not_verify():
    rc, out = bench("--validate-only", "--clients", "py", "--client", f"py={PY} -m frameproof.pyload --fault no-verify")
    assert rc == 1, out
    assert "detects_corrupted_replies: FAIL" in out, out


def test_validation_accepts_a_correct_client():
    rc, out = bench("--validate-only", "--clients", "py", "--client", f"py={PY} -m frameproof.pyload")
    assert rc == 0, out
    assert "every load client passed validation" in out


def test_validation_accepts_fp_blast_on_every_protocol():
    """fp-blast (the seeds' pure-receive client) on every registered protocol: websocket's needs
    the opening handshake first (the full run once refused to start without it)."""
    if not (RUST / "fp-blast").exists():
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    rc, out = bench("--validate-only", "--clients", "rust-blast")
    assert rc == 0, out
    assert out.count("validate rust-blast") >= 4 and "websocket    receive    ok" in out, out


def test_short_run_writes_well_formed_results(tmp_path):
    needed = ["fp-server", "fp-load", "fp-raw-echo", "fp-blast", "fp-calib"]
    if not all((RUST / b).exists() for b in needed):
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    # the floor (tools/bench/floor, C over epoll): built here, a second with cc
    _build_floors()
    # two protocols and the Rust fp-load only: seconds, and independent of protocols being added right now
    rc, out = bench("--smoke", "--servers", "rust,raw,floor,floor-uring", "--clients", "rust", "--protocols", "standard,length-field",
                    "--no-netns", "--no-alloc",
                    "--runs", "2", "--duration", "0.1", "--out", str(tmp_path), "--name", "b",
                    "--allow-noisy", "--quiet-seconds", "0.2", "--repeat-check")
    assert rc == 0, out
    doc = json.loads((tmp_path / "b.json").read_text())
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    from fpbench.report import check_schema
    assert check_schema(doc) == []
    assert all(v["ok"] for v in doc["validation"])
    assert doc["machine"]["calibration"].get("memcpy_gb_per_s", 0) > 0
    assert {r["server"] for r in doc["results"]} == {"rust", "raw", "floor", "floor-uring"}
    assert all(r["ok"] for r in doc["results"] if r["server"].startswith("floor")), [r for r in doc["results"] if not r["ok"]]
    # the seed-shaped batched echo runs once the client has it (the Rust fp-load has)
    batched = {"batched"} if "batched" in subprocess.run([str(RUST / "fp-load"), "--help"], capture_output=True,
                                                         text=True).stdout else set()
    assert {r["scenario"]["mode"] for r in doc["results"]} == {"per-packet", "pipelined", "receive"} | batched
    assert all(r["msgs_per_s"]["n"] == 2 for r in doc["results"] if r["ok"])
    rust = [r for r in doc["results"] if r["server"] == "rust" and r["ok"]]
    assert rust and all(r["ratio_to_raw"] is not None for r in rust)
    assert all(c["ok"] for c in doc["server_checks"]), doc["server_checks"]
    # --repeat-check: the matrix twice, every row compared, and the Markdown says so row by row
    rc_ = doc["repeat_check"]
    assert rc_["compared"] == len([r for r in doc["results"] if r["ok"]]) and len(rc_["rows"]) == len(doc["results"])
    assert all(isinstance(r["repeat"]["overlap"], bool) for r in doc["results"] if r["ok"])
    assert doc["quiet"]["before"]["idle_fraction"] is not None and "ok" in doc["quiet"]
    assert doc["settings"]["pin"]["name"] == "same-core" and doc["settings"]["pin"]["server"][0] == "taskset"
    md = (tmp_path / "b.md").read_text()
    assert "## Harness validation" in md and "fraction of the raw-echo ceiling" in md and "| per-packet 32 B, C=4 |" in md
    assert "## Repeat check" in md and f"{rc_['overlapping']} of {rc_['compared']} rows overlap" in md
    # and on the fraction of raw: every ok row of our server has a per-run ratio interval in both matrices
    assert rc_["ratio_compared"] == len([r for r in doc["results"] if r["ok"] and r["server"] != "raw"])
    assert all(isinstance(r["repeat"]["ratio_overlap"], bool) for r in rust)
    # the median ratio lies in its interval; it is written with 3 decimals and the interval with 4, so a
    # median within 0.0005 of an end may round past it (a clean CI run of f683ace failed on that alone)
    assert all(r["ratio_runs"]["ci_low"] - 5e-4 <= r["ratio_to_raw"] <= r["ratio_runs"]["ci_high"] + 5e-4
               for r in rust), [(r["ratio_to_raw"], r["ratio_runs"]) for r in rust]
    assert f"{rc_['ratio_overlapping']} of {rc_['ratio_compared']} rows overlap" in md
    assert "Quiet-machine check" in md
    # CPU per message (issue 28): both sides for every good row, the client's from getrusage (µs resolution,
    # never zero for a run that sent anything), the server's from /proc ticks (10 ms: may be 0 at 0.1 s)
    good = [r for r in doc["results"] if r["ok"]]
    assert all(r["cpu_ns_per_msg"]["client"]["total"] > 0 and r["cpu_ns_per_msg"]["server"]["total"] >= 0
               for r in good), [r["cpu_ns_per_msg"] for r in good]
    assert all(abs(r["cpu_ns_per_msg"]["client"]["user"] + r["cpu_ns_per_msg"]["client"]["sys"]
                   - r["cpu_ns_per_msg"]["client"]["total"]) < 1 for r in good)
    assert "## CPU per message (ns), server and load client" in md and "× floor)" in md
    pngs = [tmp_path / p for p in doc["outputs"]["charts"]]
    assert pngs and all(p.exists() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    for p in pngs:
        assert f"]({p.name})" in md


def _build_floors():
    fb = subprocess.run(["bash", str(ROOT / "tools/bench/floor/build.sh")], capture_output=True, text=True, timeout=300)
    assert fb.returncode == 0, fb.stdout + fb.stderr
    return ROOT / "tools/bench/floor/build"


def test_floors_rewrite_rpc_and_websocket_in_a_short_run(tmp_path):
    """The floors' rpc and websocket replies (issue 28): rewritten as raw's rewriters do, so the verifying
    Rust fp-load accepts every reply in each mode, the servers' counters agree with the clients', and the
    CPU table sets these protocols against the floor, not raw."""
    if not all((RUST / b).exists() for b in ("fp-load", "fp-raw-echo", "fp-calib")):
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    _build_floors()
    rc, out = bench("--smoke", "--servers", "raw,floor,floor-uring", "--clients", "rust", "--protocols", "rpc,websocket",
                    "--groups", "concurrency,receive-batched", "--no-netns", "--no-alloc", "--runs", "2",
                    "--duration", "0.1", "--out", str(tmp_path), "--name", "f", "--allow-noisy", "--quiet-seconds", "0.2")
    assert rc == 0, out
    doc = json.loads((tmp_path / "f.json").read_text())
    assert _check_schema()(doc) == []
    rows = {(r["server"], r["scenario"]["protocol"], r["scenario"]["mode"]): r for r in doc["results"]}
    for floor in ("floor", "floor-uring"):
        for proto in ("rpc", "websocket"):
            for mode in ("per-packet", "pipelined", "receive"):
                r = rows.get((floor, proto, mode))
                assert r and r["ok"] and r["msgs_per_s"]["n"] == 2, (floor, proto, mode, r)
    assert all(c["ok"] for c in doc["server_checks"]), doc["server_checks"]
    cpu = (tmp_path / "f.md").read_text().split("## CPU per message (ns)")[1].split("\n## ")[0]
    for proto in ("rpc", "websocket"):
        table = cpu.split(f"### {proto}\n")[1].split("\n### ")[0]
        assert "× floor)" in table and "× raw)" not in table, table


def test_floor_replies_equal_raw_echo_byte_for_byte():
    """The floors answer rpc and websocket with raw's bytes (its ReplyRewriter implementations), whatever
    the split of the stream: every rpc kind (REQUEST and STREAM_INIT with names, clipped names, DATA, END,
    kinds that get nothing), and websocket's handshake (subprotocol offered), text, binary, continuation
    and RSV bits, ping, pong and the close; with --sink only what is sent even then."""
    import random
    import select
    import signal
    import socket
    import struct
    if not (RUST / "fp-raw-echo").exists():
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    build = _build_floors()
    rng = random.Random(28)

    def ws_frame(op, payload, fin=True, rsv=0):
        n, key = len(payload), rng.randbytes(4)
        ext = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 \
            else bytes([0x80 | 127]) + struct.pack(">Q", n)
        return bytes([(0x80 if fin else 0) | rsv << 4 | op]) + ext + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))

    ws = (b"GET /echo HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
          b"Sec-WebSocket-Protocol: chat, frameproof.echo\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n")
    for op, n, fin, rsv in ((1, 5, True, 0), (2, 0, True, 0), (9, 3, True, 0), (2, 126, False, 0), (0, 70000, True, 0),
                            (10, 2, True, 0), (2, 65535, True, 4), (1, 125, True, 0), (2, 1000, True, 0)):
        ws += ws_frame(op, rng.randbytes(n), fin, rsv)
    ws += ws_frame(8, struct.pack(">H", 1000) + b"bye")

    def rpc_frame(kind, flags, id_, body):
        return b"GRPC" + bytes([1, kind, flags, 0]) + struct.pack(">II", id_, len(body)) + body

    names = struct.pack(">H", 15) + b"frameproof.Echo" + struct.pack(">H", 4) + b"echo"
    long_names = struct.pack(">H", 300) + b"s" * 300 + struct.pack(">H", 20000) + b"m" * 20000
    rpc = b"".join(rpc_frame(k, f, i, b) for i, (k, f, b) in enumerate((
        (0x01, 0x05, names + rng.randbytes(47)), (0x01, 0x02, long_names + rng.randbytes(70000)), (0x01, 0, b""),
        (0x01, 0, names[:9]), (0x10, 0, names), (0x12, 0x04, rng.randbytes(128)), (0x12, 0, b""), (0x03, 0, b"hb"),
        (0x13, 0, b""), (0x10, 0, long_names + b"xy"), (0x12, 0, rng.randbytes(65536)), (0x14, 0, b""),
        (0x01, 0x01, names + rng.randbytes(1024)))))

    def replies(exe, proto, data, sink):
        p = subprocess.Popen([str(exe), "--protocol", proto, "--listen", "127.0.0.1:0"] + (["--sink"] if sink else []),
                             stdout=subprocess.PIPE, text=True)
        try:
            host, port = p.stdout.readline().split()[1].rsplit(":", 1)
            c = socket.create_connection((host, int(port)), timeout=10)
            c.setblocking(False)
            out, i, deadline, split = bytearray(), 0, time.time() + 20, random.Random(7)
            while time.time() < deadline:
                r, w, _ = select.select([c], [c] if i < len(data) else [], [], 0.5)
                if r:
                    b = c.recv(1 << 20)
                    if not b:
                        break
                    out += b
                if w:  # the stream in splits of 1 byte to 64 KiB, so that headers straddle reads
                    i += c.send(data[i:i + split.choice((1, 2, 3, 7, 100, 4096, 65536))])
                    if i == len(data) and proto == "rpc":
                        c.shutdown(socket.SHUT_WR)  # rpc has no goodbye: the end of stream is
            c.close()
        finally:
            p.send_signal(signal.SIGTERM)
            counters = json.loads(p.communicate(timeout=10)[0].strip().splitlines()[-1])
        return bytes(out), {k: counters[k] for k in ("connections", "frames", "bytes")}

    for proto, data in (("rpc", rpc), ("websocket", ws)):
        for sink in (False, True):
            want = replies(RUST / "fp-raw-echo", proto, data, sink)
            assert want[0] or sink, (proto, "raw echo sent nothing")
            for exe in ("fp-floor-epoll", "fp-floor-uring"):
                if (build / exe).exists():
                    assert replies(build / exe, proto, data, sink) == want, (exe, proto, sink)


def test_deflate_rows_run_on_servers_that_have_the_extension(tmp_path):
    """websocket's own rows (issue 30): --variant prose uncompressed on every server, and with
    permessage-deflate (the codec overlay) on the servers whose impl.json lists the extension only;
    the load client offers it (the server counted compressed frames as the client's requests)."""
    if not all((RUST / b).exists() for b in ("fp-server", "fp-load", "fp-raw-echo", "fp-calib")):
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    rc, out = bench("--smoke", "--servers", "rust,raw", "--clients", "rust", "--protocols", "websocket",
                    "--groups", "deflate", "--no-netns", "--no-alloc", "--runs", "2", "--duration", "0.1",
                    "--out", str(tmp_path), "--name", "d", "--allow-noisy", "--quiet-seconds", "0.2")
    assert rc == 0, out
    doc = json.loads((tmp_path / "d.json").read_text())
    assert _check_schema()(doc) == []
    own = {(r["server"], r["scenario"].get("tag")): r for r in doc["results"] if r["scenario"]["group"] == "deflate"}
    assert set(own) == {("rust", "uncompressed"), ("raw", "uncompressed"), ("rust", "permessage-deflate")}, sorted(own)
    assert len(doc["results"]) == 3  # --groups deflate: nothing else ran
    z = own[("rust", "permessage-deflate")]
    assert z["ok"] and z["scenario"]["codec"]["websocket"]["permessage_deflate"] is True, z
    assert z["scenario"]["args"] == ["--variant", "prose"] and z["key"].endswith("/prose/permessage-deflate")
    assert z["cpu_ns_per_msg"]["client"]["total"] > 0
    assert all(c["ok"] for c in doc["server_checks"]), doc["server_checks"]
    md = (tmp_path / "d.md").read_text()
    assert "--variant prose [permessage-deflate] |" in md and "--variant prose [uncompressed] |" in md


def test_instruction_rows_follow_the_servers_extensions():
    _fpbench()
    from fpbench.core import Program
    from fpbench.instructions import by_codec, scenarios
    plain = Program("x", ["x"])
    ext = Program("y", ["y"], extensions=("permessage-deflate",))
    assert [s.tag for s in scenarios("websocket", plain)] == ["", "", "uncompressed"]
    sc = scenarios("websocket", ext)
    assert [s.tag for s in sc] == ["", "", "uncompressed", "permessage-deflate"]
    groups = by_codec(sc)  # one server process a codec: the deflate row gets its own
    assert [len(g) for g in groups] == [3, 1] and groups[1][0].codec.to_json()["websocket"]["permessage_deflate"]
    assert [s.tag for s in scenarios("standard", ext)] == ["", ""]
    # under callgrind the pair runs at a window of at most 16, the same for both codecs
    assert {s.window for s in sc[2:]} == {16}


def _check_schema():
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    from fpbench.report import check_schema
    return check_schema


def test_committed_results_are_well_formed():
    check_schema = _check_schema()
    files = sorted((ROOT / "results").glob("bench-*.json"))
    assert files, "no committed results set in results/"
    for f in files:
        doc = json.loads(f.read_text())
        assert check_schema(doc) == [], f
        md = f.with_suffix(".md")
        assert md.exists(), md
        for c in doc["outputs"]["charts"]:
            assert (f.parent / Path(c).name).exists(), c


def test_schema_check_rejects_malformed_results():
    check_schema = _check_schema()
    doc = json.loads(sorted((ROOT / "results").glob("bench-*.json"))[-1].read_text())
    doc["results"][0]["msgs_per_s"].pop("median")
    doc["validation"][0]["mode"] = "bulk"
    del doc["machine"]["calibration"]
    bad = check_schema(doc)
    assert any("msgs_per_s.median: missing" in b for b in bad)
    assert any("validation[0].mode" in b for b in bad)
    assert any("machine.calibration: missing" in b for b in bad)


def test_schema_check_rejects_an_unregistered_protocol():
    check_schema = _check_schema()
    doc = json.loads(sorted((ROOT / "results").glob("bench-*.json"))[-1].read_text())
    doc["results"][0]["scenario"]["protocol"] = "no-such-protocol"
    assert any("results[0].scenario.protocol: 'no-such-protocol' is not a registered protocol" in b
               for b in check_schema(doc))


def test_bench_without_tools_says_where_the_runner_is(tmp_path):
    """As in an installed wheel: no tools/bench under the root. `frameproof` still starts, and
    `frameproof bench` says why it cannot run instead of crashing."""
    import os
    env = dict(os.environ, FRAMEPROOF_ROOT=str(tmp_path))
    for args in (["bench", "--quick"], ["bench"]):
        p = subprocess.run([PY, "-m", "frameproof.cli", *args], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 2 and "benchmark runner is not here" in p.stderr and "tools/bench" in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
# The seed-shaped batched mode (pyload --mode batched): counts checked by net --client, and the
# shape (nothing of batch k+1 before all of batch k is back) by a server that holds replies.


@pytest.mark.parametrize("protocol", ["standard", "length-field"])
def test_batched_mode_passes_net_client(protocol):
    p = subprocess.run([PY, "-m", "frameproof.cli", "net", "--protocol", protocol, "--client",
                        f"{PY} -m frameproof.pyload --protocol {protocol} --connect {{host}}:{{port}} --connections 2 "
                        "--requests 2000 --mode batched --batch 16 --timeout-ms 1500 --json {json}"],
                       cwd=ROOT / "conformance", capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "0 failed" in p.stdout


def _batch_watcher(batch, results):
    """The server fp-load's batched mode is checked against (reference-impls/cpp/tests/faulty_servers.py,
    BatchWatcher): a length-field echo on 127.0.0.1 that, once a whole batch of requests is in,
    answers the first only, waits 0.3 s and notes in `results` whether the client wrote anything
    meanwhile (a sliding window refills at once; a batched client must wait for the whole batch),
    then answers the rest. Serves one connection, at most 20 batches."""
    sys.path.insert(0, str(ROOT / "reference-impls" / "cpp" / "tests"))
    from faulty_servers import BatchWatcher
    from wire import LENGTH_FIELD
    return BatchWatcher(LENGTH_FIELD, batch, results)


@pytest.mark.parametrize("mode,refills_early", [("batched", False), ("pipelined", True)])
def test_batched_mode_waits_for_the_whole_batch(mode, refills_early):
    results = []
    srv = _batch_watcher(8, results)
    flag = "--batch" if mode == "batched" else "--window"
    p = subprocess.run([PY, "-m", "frameproof.pyload", "--protocol", "length-field", "--connect", f"127.0.0.1:{srv.port}",
                        "--requests", "40", "--mode", mode, flag, "8", "--timeout-ms", "3000"],
                       cwd=ROOT / "conformance", capture_output=True, text=True, timeout=60)
    srv.thread.join(15)
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(results) >= 4, results
    if refills_early:  # the check bites: a sliding window writes as soon as one reply is back
        assert all(results[:-1]), results  # (after the last batch there is nothing left to send)
    else:
        assert not any(results), results


def test_batched_scenario_passes_the_seed_batch():
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    from fpbench import core
    assert core.default_batch("standard") == 255 and core.default_batch("length-field") == 128  # seed 000
    s = core.Scenario("length-field", "batched", 32, 4, core.default_batch("length-field"), "concurrency")
    a = core.client_args(s, "127.0.0.1:1", 0.1, "/tmp/x.json")
    assert a[a.index("--mode") + 1] == "batched" and a[a.index("--batch") + 1] == "128" and "--window" not in a


# ---------------------------------------------------------------------------------------------
# tools/microbench.py: one JSON shape (tools/bench/microbench.schema.json), nothing else


def microbench(tmp_path, *args):
    p = subprocess.run([PY, str(ROOT / "tools" / "microbench.py"), "--quiet-seconds", "0.2", "--allow-noisy",
                        "--out", str(tmp_path), "--name", "m", *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def test_microbench_reads_the_contract_shape(tmp_path):
    rc, out = microbench(tmp_path, "--only", "python", "--program", f"python={PY} -m fpbench.pymicro",
                         "--cases", "standard/decode/32/16,length-field/encode/1024/1,websocket/mask/1024/1",
                         "--iterations", "50", "--samples", "3")
    assert rc == 0, out
    doc = json.loads((tmp_path / "m.json").read_text())
    res = doc["implementations"]["python"]["results"]
    assert [r["case"] for r in res] == ["standard/decode/32/16", "length-field/encode/1024/1"]
    assert all(r["ns_per_frame"]["n"] == 3 and r["ns_per_frame"]["median"] > 0 for r in res)
    assert res[0]["bytes_per_frame"] == 36 and res[0]["frames_per_read"] == 16
    assert doc["implementations"]["python"]["not_implemented"] == ["websocket/mask/1024/1"]
    assert doc["machine"]["calibration"].get("memcpy_gb_per_s") or "error" in doc["machine"]["calibration"]
    md = (tmp_path / "m.md").read_text()
    assert "| standard/decode/32/16 | python |" in md and "seed 004" in md  # the seed's mask figure beside


BAD_PROGRAM = '''
import json, sys
a = sys.argv
doc = {"schema": "frameproof-microbench/1", "implementation": "bad", "case": a[a.index("--case") + 1],
       "protocol": "standard", "op": "decode", "payload": 32, "frames_per_read": 16, "iterations": 1, "samples": 1,
       "warmup_iterations": 0, "ns_per_frame": {"median": 5.0, "min": 5.0, "max": 5.0, "n": 1},
       "bytes_per_frame": 36, "allocs_per_frame": 0, "bytes_alloc_per_frame": 0, "allocation_counter": "x",
       "instructions_per_frame": None, "checksum": 1}
MODE
json.dump(doc, open(a[a.index("--json") + 1], "w"))
'''


@pytest.mark.parametrize("mode,problem", [
    ("del doc['bytes_alloc_per_frame']", "bytes_alloc_per_frame: missing"),
    ("doc['ns_per_frame'] = 5.0", "ns_per_frame: expected object"),
    ("doc['ns_per_second'] = 1", "ns_per_second: not in the schema"),        # a tool's own format
    ("doc['payload'] = 1024", "the case asked for has 32"),                  # answers another case
    ("doc['ns_per_frame']['n'] = 7", "samples = 1"),
])
def test_microbench_rejects_json_not_matching_the_schema(tmp_path, mode, problem):
    prog = tmp_path / "bad.py"
    prog.write_text(BAD_PROGRAM.replace("MODE", mode))
    rc, out = microbench(tmp_path, "--only", "bad", "--program", f"bad={PY} {prog}", "--cases", "standard/decode/32/16",
                         "--iterations", "1", "--samples", "1")
    assert rc == 1, out
    doc = json.loads((tmp_path / "m.json").read_text())
    rej = doc["implementations"]["bad"]["rejected"]
    assert rej and rej[0]["case"] == "standard/decode/32/16" and any(problem in p for p in rej[0]["problems"]), rej
    assert doc["implementations"]["bad"]["results"] == []
    assert "rejected" in (tmp_path / "m.md").read_text()


# ---------------------------------------------------------------------------------------------
# The quiet-machine check, the method study and the instruction counts


def _busy_loop(seconds=60):
    """A process that spins one CPU (bounded in time), as another engineer's build would."""
    return subprocess.Popen([PY, "-c", f"import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass"])


def _fpbench():
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    import fpbench.quiet
    import fpbench.stats
    return fpbench


def test_quiet_check_refuses_a_busy_machine():
    fp = _fpbench()
    hog = _busy_loop()
    try:
        time.sleep(0.3)
        s = fp.quiet.sample(1.5)
        q = fp.quiet.judge(s, s)
    finally:
        hog.kill()
        hog.wait()
    assert not q["ok"]
    # the loop is listed as a busy process (on a machine busy with other work too it gets less than a core)
    assert any(b["pid"] == hog.pid and b["core_share"] > fp.quiet.MAX_OTHER_CORE for b in s["busy_processes"]), \
        s["busy_processes"]
    assert any("other processes busy" in r for r in q["reasons"]), q["reasons"]
    assert s["idle_fraction"] < fp.quiet.MIN_IDLE
    assert any("NOISY" in line for line in fp.quiet.banner(q))


def test_quiet_judge_accepts_an_idle_sample():
    fp = _fpbench()
    idle = {"seconds": 3, "idle_fraction": 0.97, "loadavg": [0.1, 0.1, 0.1], "cpus": 2, "busy_processes": []}
    assert fp.quiet.judge(idle, idle)["ok"]
    busy = dict(idle, busy_processes=[{"pid": 1, "comm": "rustc", "core_share": 0.4, "cmdline": ""}])
    assert not fp.quiet.judge(idle, busy)["ok"]


def test_median_interval_and_overlap():
    st = _fpbench().stats
    lo, hi, cov = st.median_ci(list(range(1, 12)))  # 11 runs: [x(2), x(10)], 98.8 %
    assert (lo, hi) == (2, 10) and cov > 0.98
    lo, hi, cov = st.median_ci([5, 1, 4, 2, 3])  # 5 runs: min-max, 93.75 %
    assert (lo, hi, cov) == (1, 5, 0.9375)
    a, b, c = st.summary([10, 11, 12, 13, 14]), st.summary([14, 15, 16, 17, 18]), st.summary([20, 21, 22, 23, 24])
    assert st.overlap(a, b) is True and st.overlap(a, c) is False and a["iqr_pct"] == 16.7


def test_method_study_tiny_run_on_a_busy_machine(tmp_path):
    """A tiny method study while a busy loop runs: well-formed JSON and Markdown, and because the
    machine is busy they go to the noisy directory marked NOISY, not to --out."""
    if not all((RUST / b).exists() for b in ("fp-server", "fp-load", "fp-raw-echo")):
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    out, noisy = tmp_path / "results", tmp_path / "reports"
    hog = _busy_loop()
    try:
        rc, log_ = bench("--method-study", "--smoke", "--protocols", "standard", "--study-pins", "unpinned", "--study-base-pin", "unpinned",
                         "--study-durations", "0.05", "--study-runs", "2,3", "--quiet-seconds", "0.5",
                         "--out", str(out), "--noisy-out", str(noisy), "--name", "s")
    finally:
        hog.kill()
        hog.wait()
    assert rc == 0, log_
    assert not out.exists() or not list(out.iterdir())
    doc = json.loads((noisy / "NOISY-s.json").read_text())
    _fpbench()
    from fpbench.study import check
    assert check(doc) == []
    assert doc["quiet"]["ok"] is False and doc["quiet"]["reasons"]
    arms = doc["study"]["arms"]
    assert {a["scenario"]["mode"] for a in arms} == {"per-packet", "pipelined"}
    assert {a["order"] for a in arms} == {"interleaved", "blocked"}
    assert all(set(a["stats"]) == {"2", "3"} for a in arms)
    assert all(c["ok"] for c in doc["study"]["server_checks"]), doc["study"]["server_checks"]
    md = (noisy / "NOISY-s.md").read_text()
    assert "**NOISY**" in md and "ratio blocks differ" in md and "Load average" in md


def test_instructions_tiny_run(tmp_path):
    import shutil
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        pytest.skip("valgrind not installed")
    if not all((RUST / b).exists() for b in ("fp-load", "fp-raw-echo")):
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    rc, log_ = bench("--instructions", "--smoke", "--servers", "raw", "--protocols", "standard",
                     "--instructions-messages", "300", "--allow-noisy", "--quiet-seconds", "0.2",
                     "--out", str(tmp_path), "--name", "i")
    assert rc == 0, log_
    doc = json.loads((tmp_path / "i.json").read_text())
    _fpbench()
    from fpbench.report import check_instructions
    ins = doc["instructions"]
    assert check_instructions(ins) == []
    assert [r["scenario"]["mode"] for r in ins["rows"]] == ["per-packet", "pipelined"]
    for r in ins["rows"]:
        assert r["ok"] and r["server"] == "raw" and r["ratio_to_raw"] == 1.0
        (a, b) = r["counts"]
        assert b["messages"] == 2 * a["messages"] and b["instructions"] > a["instructions"] > 0
        assert 10 < r["ir_per_msg"] < 100000
    assert ins["rows"][1]["counts"][0]["messages"] == 300 * ins["pipelined_factor"]
    assert {t["key"] for t in ins["timing"]} == {r["key"] for r in ins["rows"]}
    md = (tmp_path / "i.md").read_text()
    assert "Instructions per echoed message" in md and "| standard | per-packet C=1 | raw |" in md


C_MICRO = r"""
/* A native micro-benchmark program following tools/bench/microbench.md, for two cases only:
   length-field/encode/32/{1,16} (2-byte little-endian length + 32-byte payload into a reused buffer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static unsigned char src[16 * 32], out[16 * 34];
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    const char *c = 0, *js = 0; long n = 0, s = 11, w = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) { puts("length-field/encode/32/1\nlength-field/encode/32/16"); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "usage error: %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--case")) c = argv[++i];
        else if (!strcmp(argv[i], "--iterations")) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--samples")) s = atol(argv[++i]);
        else if (!strcmp(argv[i], "--warmup")) w = atol(argv[++i]);
        else if (!strcmp(argv[i], "--json")) js = argv[++i];
        else { fprintf(stderr, "usage error: %s\n", argv[i]); return 2; }
    }
    if (!c || !js || n < 1 || s < 1) { fprintf(stderr, "usage error\n"); return 2; }
    int f = !strcmp(c, "length-field/encode/32/1") ? 1 : !strcmp(c, "length-field/encode/32/16") ? 16 : 0;
    if (!f) { fprintf(stderr, "c-micro: case %s is not implemented here\n", c); return 3; }
    if (w < 0) w = n / 10 > 0 ? n / 10 : 1;
    for (int i = 0; i < 16 * 32; i++) src[i] = (unsigned char)(i * 7);
    unsigned long long check = 0; double *per = malloc(sizeof(double) * s);
    for (long it = -w, k = 0; k < s; ) {
        double t0 = now();
        long end = it < 0 ? 0 : n;
        for (long j = it < 0 ? it : 0; j < end; j++) {
            size_t len = 0;
            for (int q = 0; q < f; q++) { out[len] = 32; out[len + 1] = 0; memcpy(out + len + 2, src + q * 32, 32); len += 34; }
            __asm__ volatile("" : : "r"(out) : "memory");
            check += len + out[len - 1];
        }
        if (it < 0) { it = 0; continue; }
        per[k++] = (now() - t0) / ((double)n * f);
    }
    qsort(per, s, sizeof(double), cmp);
    FILE *o = fopen(js, "w");
    fprintf(o, "{\"schema\": \"frameproof-microbench/1\", \"implementation\": \"c\", \"case\": \"%s\", \"protocol\": \"length-field\", "
               "\"op\": \"encode\", \"payload\": 32, \"frames_per_read\": %d, \"iterations\": %ld, \"samples\": %ld, "
               "\"warmup_iterations\": %ld, \"ns_per_frame\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f, \"n\": %ld}, "
               "\"bytes_per_frame\": 34, \"allocs_per_frame\": null, \"bytes_alloc_per_frame\": null, "
               "\"allocation_counter\": \"not measured\", \"instructions_per_frame\": null, \"checksum\": %llu}\n",
            c, f, n, s, w, per[s / 2] > 0 ? per[s / 2] : 0.001, per[0] > 0 ? per[0] : 0.001, per[s - 1] > 0 ? per[s - 1] : 0.001, s,
            check % 1000000007ULL);
    fclose(o);
    return 0;
}
"""


def test_microbench_counts_instructions_of_a_native_program(tmp_path):
    """The iteration-count mode: microbench.py --instructions runs the program under callgrind at N
    and 2N iterations; the difference per frame is the loop's cost, free of start-up."""
    import shutil
    if not (shutil.which("gcc") and shutil.which("valgrind")):
        pytest.skip("gcc or valgrind missing")
    src, exe = tmp_path / "micro.c", tmp_path / "c-micro"
    src.write_text(C_MICRO)
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(src)], check=True, capture_output=True, timeout=120)
    rc, out = microbench(tmp_path, "--only", "c", "--program", f"c={exe}", "--cases", "length-field/encode/32/*",
                         "--iterations", "2000", "--samples", "3", "--instructions")
    assert rc == 0, out
    res = json.loads((tmp_path / "m.json").read_text())["implementations"]["c"]["results"]
    assert [r["case"] for r in res] == ["length-field/encode/32/1", "length-field/encode/32/16"]
    for r in res:
        # a 2-byte header and a 32-byte copy: tens of instructions per frame, not the program's start-up
        assert r["instructions_per_frame"] is not None and 5 < r["instructions_per_frame"] < 200, r
        # where they go: the program's own loop is among the functions, none above the total
        fns = r["instructions_by_function"]
        assert fns and all(0 < f["ir_per_frame"] <= r["instructions_per_frame"] + 1 for f in fns), fns
        assert sum(f["ir_per_frame"] for f in fns) <= r["instructions_per_frame"] * 1.05, fns
    md = (tmp_path / "m.md").read_text()
    assert "| length-field/encode/32/16 | c |" in md and "Where a frame's instructions go" in md


def test_microbench_counts_instructions_of_the_mono_program(tmp_path):
    """A managed runtime is counted as a native program: the JIT compiles each method in both runs alike,
    so the difference is the steady state (the C# rpc decode of a 32-byte frame: a few hundred instructions,
    as the C++ and Rust ones, not the runtime's start-up); its methods are named from Mono's JIT map."""
    import shutil
    exe = ROOT / "reference-impls" / "csharp" / "build" / "fp-bench.exe"
    if not (exe.exists() and shutil.which("mono") and shutil.which("valgrind")):
        pytest.skip("the C# programs are not built (reference-impls/csharp/build.sh), or no mono or valgrind")
    rc, out = microbench(tmp_path, "--only", "csharp", "--cases", "rpc/decode/32/1", "--iterations", "20000",
                         "--samples", "1", "--instructions")
    assert rc == 0, out
    r = json.loads((tmp_path / "m.json").read_text())["implementations"]["csharp"]["results"][0]
    assert 100 < r["instructions_per_frame"] < 2000, r
    names = [f["function"] for f in r["instructions_by_function"]]
    assert any(n.startswith("Frameproof.Codec.RpcDecoder:") for n in names), names


def test_cpu_window_reads_a_busy_process_and_divides_by_verified_replies():
    """fpbench/cpu.py: /proc/<pid>/stat of a process that spins for 0.3 s shows about 0.3 s of user
    time; the client side is getrusage of the children reaped in the window; per message divides by
    the verified replies (receive mode: the requests sent)."""
    sys.path.insert(0, str(ROOT / "tools" / "bench"))
    from fpbench import cpu
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                             "while time.process_time()-t<0.3: pass\ntime.sleep(5)"])
    try:
        w = cpu.Window(spin.pid)
        subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.2: pass"])
        time.sleep(0.4)
        used = w.close()
    finally:
        spin.kill()
        spin.wait()
    assert 0.15 <= used["server_user_s"] + used["server_sys_s"] <= 0.6, used
    assert 0.15 <= used["client_user_s"] + used["client_sys_s"] <= 0.6, used
    run = {"ok": True, "replies_verified": 1000, "cpu": {"server_user_s": 0.002, "server_sys_s": 0.001,
                                                         "client_user_s": 0.005, "client_sys_s": 0.0}}
    per = cpu.per_message(run)
    assert per["server"] == {"user": 2000.0, "sys": 1000.0, "total": 3000.0} and per["client"]["total"] == 5000.0
    row = cpu.row_summary([run, {**run, "cpu": {**run["cpu"], "server_user_s": 0.004}}, {"ok": False}])
    assert row["server"]["total"] == 4000.0 and row["heavier"] == "client"
    assert cpu.per_message({"ok": True, "requests_sent": 10, "cpu": {"client_user_s": 1e-6, "client_sys_s": 0}}) \
        == {"client": {"user": 100.0, "sys": 0.0, "total": 100.0}}


def test_scaling_tiny_run(tmp_path):
    """bench --scaling (issue 28): every listed server at --threads 1 and 2, client on the other CPU and
    on the same one; each row has msg/s, both sides' CPU per message and the cores the server used."""
    if not all((RUST / b).exists() for b in ("fp-load", "fp-server", "fp-raw-echo")):
        pytest.skip("Rust programs not built (bash reference-impls/rust/build.sh)")
    rc, log_ = bench("--scaling", "--smoke", "--servers", "rust,raw", "--clients", "rust", "--protocols", "standard",
                     "--allow-noisy", "--quiet-seconds", "0.2", "--out", str(tmp_path), "--name", "s")
    assert rc == 0, log_
    sc = json.loads((tmp_path / "s.json").read_text())["scaling"]
    got = {(r["server"], r["placement"], r["threads"]) for r in sc["rows"]}
    assert got == {(s, p, t) for s in ("rust", "raw") for p in ("split", "same-core") for t in (1, 2)}, got
    for r in sc["rows"]:
        assert r["ok"] and r["msgs_per_s"]["median"] > 0, r
        c = r["cpu_ns_per_msg"]
        assert c["server"]["total"] > 0 and c["client"]["total"] > 0 and r["server_cores_busy"] > 0, r
        # where each side ran: one CPU for both in same-core, two in split (this machine has 2)
        assert (r["server_cpu"] == r["client_cpu"]) == (r["placement"] == "same-core" or os.cpu_count() < 2), r
    md = (tmp_path / "s.md").read_text()
    assert "### standard" in md and "split, --threads 2" in md and "| rust |" in md and "| raw |" in md


def test_servers_of_other_protocols_need_not_be_built():
    """bench --protocols P runs only P's servers, so a peer of another protocol that is not built (CI
    builds the third-party wrappers beside the suite's tests) does not stop it."""
    _fpbench()
    from fpbench import core, runner
    servers, _, _ = core.servers_and_clients({})
    kept = runner.serving(servers, ["standard"])
    assert kept and all("standard" in s.protocols for s in kept)
    assert "websocketpp" in {s.name for s in servers} and "websocketpp" not in {s.name for s in kept}
    assert {s.name for s in runner.serving(servers, ["standard", "websocket"])} >= {s.name for s in kept} | {"websocketpp"}
