"""A crashing, hanging or garbage-writing testee gives a clear report, and the
runner survives it, restarts the testee and goes on."""
import time

import pytest

from conftest import PYTESTEE

# A few tests only: the faulty testees misbehave on every multi-chunk decode.
SELECT = "standard/STD-HDR-1/y_request_open/*"


@pytest.mark.parametrize("fault,words", [
    ("crash-on-decode", "testee crash"),
    ("hang-on-decode", "testee timeout"),
    ("garbage-on-decode", "testee garbage"),
])
def test_faulty_testee_is_reported_not_fatal(frameproof, fault, words):
    t0 = time.monotonic()
    rc, out, doc = frameproof("run", "--testee", f"{PYTESTEE} --mutant {fault}", "--select", SELECT,
                              "--timeout", "2", timeout=120)
    assert time.monotonic() - t0 < 60
    assert rc == 1, out[-2000:]
    by = {t["name"].rsplit("/", 1)[1]: t for t in doc["tests"]}
    # one chunk: the testee answers; several chunks: it misbehaves
    assert by["whole"]["status"] == "passed"
    for v in ("chunked-1", "chunked-7"):
        assert by[v]["status"] == "failed", by[v]
        assert words in by[v]["message"], by[v]["message"]
    # it was restarted after each failure and the encode check after it still ran and passed
    assert by["encode"]["status"] == "passed"
    assert doc["testee_restarts"] >= 2


def test_testee_that_cannot_start(frameproof):
    rc, out, doc = frameproof("run", "--testee", "/nonexistent/testee", "--select", SELECT, timeout=60)
    assert rc == 3  # frameproof --help: 3 = the testee could not start
    assert all(t["status"] == "failed" for t in doc["tests"])
    assert "cannot start" in out


def test_testee_that_exits_at_once(frameproof):
    rc, out, doc = frameproof("run", "--testee", "true", "--select", SELECT, timeout=60)
    assert rc == 3
    assert "testee crash" in out


def test_sigterm_stops_the_server_frameproof_started():
    """SIGTERM to `frameproof net` (a CI job's or cargo-mutants' timeout) ends the run as Ctrl-C would, and the
    server it started in a session of its own is stopped with it, not left running (cli._stop_on_sigterm)."""
    import os
    import signal
    import subprocess
    import sys
    from conftest import PY
    server = f"{PY} -m frameproof.pyserver --protocol standard --listen 127.0.0.1:0"
    fp = subprocess.Popen([sys.executable, "-m", "frameproof.cli", "net", "--protocol", "standard", "--server-cmd",
                           server], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        children = []
        deadline = time.monotonic() + 60
        while not children and time.monotonic() < deadline:  # the server, once started
            time.sleep(0.5)
            out = subprocess.run(["pgrep", "-P", str(fp.pid)], capture_output=True, text=True).stdout
            children = [int(x) for x in out.split()]
        assert children, "frameproof net started no server within 60 s"
        time.sleep(2)  # well into the cases
        fp.send_signal(signal.SIGTERM)
        assert fp.wait(timeout=60) != 0  # an interrupted run is not a passing one
        time.sleep(1)
        alive = [c for c in children if os.path.exists(f"/proc/{c}") and
                 open(f"/proc/{c}/stat").read().split()[2] != "Z"]
        assert not alive, f"processes frameproof started still run after its SIGTERM: {alive}"
    finally:
        if fp.poll() is None:
            fp.kill()
