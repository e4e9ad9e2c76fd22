"""The programs under test, as the contract of reference-impls/README.md describes them: fp-server
(prints "LISTENING host:port" first; on SIGTERM/SIGINT one JSON line of counters, exit 0) and
fp-load (a JSON report with the contract's keys), from one binary directory (conftest.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from pathlib import Path

COUNTER_KEYS = {"connections", "frames", "bytes", "protocol_errors"}
REPORT_KEYS = {"implementation", "protocol", "codec", "mode", "connections", "window", "payload", "requests_sent",
               "replies_received", "replies_verified", "errors", "error_details", "duration_s", "msgs_per_s",
               "mb_per_s", "latency_us"}


class Server:
    """fp-server with `args` on 127.0.0.1 (a free port): `port` once it listens; `stop()` signals
    it and returns its counters, checking the exit status 0 and the one JSON line of four keys."""

    def __init__(self, path: str, *args: str):
        self.args = [path] + list(args) + ["--listen", "127.0.0.1:0"]
        self.proc = None
        self.port = None
        self.counters = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("LISTENING "):
            self.proc.kill()
            raise AssertionError("first stdout line is %r, stderr %r" % (line, self.proc.stderr.read()[-2000:]))
        self.port = int(line.split()[1].rsplit(":", 1)[1])
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, sig=signal.SIGTERM) -> dict:
        if self.counters is not None:
            return self.counters
        self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("server did not exit within 15 s of the signal") from None
        assert self.proc.returncode == 0, "server exit status %s, stderr %r" % (self.proc.returncode, err[-2000:])
        lines = [l for l in out.splitlines() if l.strip()]
        assert len(lines) == 1, "expected one JSON line after LISTENING, got %r" % lines
        self.counters = json.loads(lines[0])
        assert set(self.counters) == COUNTER_KEYS, "counter keys %r" % sorted(self.counters)
        return self.counters

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            try:
                self.stop()
            except Exception:
                self.proc.kill()
                if exc[0] is None:
                    raise


class Programs:
    """fp-server and fp-load of one binary directory (`label`: release or asan)."""

    def __init__(self, label: str, directory: Path):
        self.label = label
        self.dir = directory
        self.server_path = str(directory / "fp-server")
        self.load_path = str(directory / "fp-load")

    def server(self, *args: str) -> Server:
        """fp-server on a free port of 127.0.0.1, as a context manager (stopped at the end)."""
        return Server(self.server_path, *args)

    def load(self, *args, expect_rc=None, timeout=120):
        """Runs fp-load with `args` and --json; (exit status, the JSON report, stdout). Checks the
        report's keys, its latency keys, implementation "cpp", at most 10 error details, and the exit
        status if `expect_rc` is given."""
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            path = f.name
        try:
            p = subprocess.run([self.load_path] + [str(a) for a in args] + ["--json", path], capture_output=True,
                               text=True, timeout=timeout)
            with open(path) as f:
                text = f.read()
            assert text.strip(), "fp-load wrote no JSON (rc %d, stderr %r)" % (p.returncode, p.stderr[-1500:])
            doc = json.loads(text)
        finally:
            os.unlink(path)
        assert REPORT_KEYS <= set(doc), "missing keys %r" % sorted(REPORT_KEYS - set(doc))
        assert set(doc["latency_us"]) == {"p50", "p90", "p99", "p999", "max"}, "latency keys %r" % doc["latency_us"]
        assert doc["implementation"] == "cpp", "implementation %r" % doc["implementation"]
        assert len(doc["error_details"]) <= 10, "more than 10 error_details"
        if expect_rc is not None:
            assert p.returncode == expect_rc, "fp-load exit %d (want %d): %s %s" % (
                p.returncode, expect_rc, doc, p.stderr[-1500:])
        return p.returncode, doc, p.stdout
