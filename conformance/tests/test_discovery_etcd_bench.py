"""The discovery benchmark on etcd (spec/discovery.md §9, "On etcd"; tools/bench/discovery_etcd.py):
every implementation's ``--etcd`` mode runs against a private etcd and writes the shared JSON, and a
run that cannot reach etcd fails fast with a message instead of hanging. Figures are not judged here
(a benchmark prints them); the shape and the error paths are."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from frameproof.protocols.rpc.discovery_etcd_bench import percentile

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tools" / "bench" / "discovery_etcd.py"
IMPLS = ["python", "rust", "cpp", "csharp"]


@pytest.fixture(scope="module")
def driver():
    """The driver module, with the Rust program built with the etcd feature (build.sh builds the
    testee's, not the benchmark's)."""
    sys.path.insert(0, str(DRIVER.parent))
    import discovery_etcd as drv
    drv.build()
    return drv


def test_percentile_is_nearest_rank():
    xs = [float(i) for i in range(1, 101)]
    assert percentile(xs, 0.5) == 50.0 and percentile(xs, 0.99) == 99.0 and percentile(xs, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0 and percentile([], 0.5) == 0.0
    assert percentile([1.0, 2.0, 3.0], 0.5) == 2.0  # ceil(1.5) = 2nd smallest


def test_every_implementation_runs_on_one_member(driver, tmp_path):
    p = subprocess.run([sys.executable, str(DRIVER), "--no-build", "--seconds", "0.3", "--samples", "5", "--runs", "1",
                        "--threads", "2", "--topologies", "member", "--allow-noisy", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads(next(tmp_path.glob("discovery-etcd-*.json")).read_text())
    assert "| rust |" in next(tmp_path.glob("discovery-etcd-*.md")).read_text()
    for name in IMPLS:
        (run,) = doc["runs"]["member"][name]["runs"]
        j = run["json"]
        assert j["implementation"] == name and j["benchmark"] == "discovery-etcd" and j["threads"] == 2
        assert j["endpoints"] == [doc["endpoints"]["member"]], j["endpoints"]
        ph = {x["op"]: x for x in j["runs"]}
        assert list(ph) == ["register", "discover", "watch"], name
        for op in ("register", "discover"):
            assert ph[op]["ops"] > 0 and ph[op]["errors"] == 0 and 0 < ph[op]["p50_us"] <= ph[op]["p99_us"], (name, ph[op])
        w = ph["watch"]
        assert (w["samples"], w["lost"], w["errors"]) == (5, 0, 0), (name, w)
        assert 0 < w["p50_us"] <= w["p99_us"] <= w["max_us"], (name, w)
    for name in ("rust", "cpp", "csharp"):
        assert doc["in_process"][name] > 0, (name, doc["in_process"][name])


@pytest.mark.parametrize("name", IMPLS)
def test_an_etcd_that_is_not_there_fails_fast(driver, name):
    argv, cwd = driver.PROGRAMS[name]
    t = time.monotonic()
    p = subprocess.run(argv + ["--etcd", "127.0.0.1:1", "--seconds", "0.2", "--samples", "3"], cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "127.0.0.1:1" in p.stderr and "answer" in p.stderr, p.stderr
    assert took < 20, f"{name} took {took:.1f} s to give up (the request timeout is 5 s)"
