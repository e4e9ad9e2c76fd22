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
