"""Hostile peers (issue 17): every protocol has at least 30 hostile single-connection network
cases, `frameproof net --stress` passes the Python reference server (small bounds, so that it
runs in CI), and each deliberately broken server (no budget, no idle timeout, spins when out of
descriptors, loses replies across SIGSTOP ...) is caught by the RES requirement it breaks."""
import json

import pytest

from frameproof import protocols as registry, spec
from frameproof.pyserver import RES_FAULTS
from frameproof.stress import SCENARIOS, SMALL_LIMITS, SMALL_SCALE

from conftest import PY

MIN_HOSTILE = 30
LIMITS = SMALL_LIMITS
CODECS = {p.name: p.stress_codec().to_json() for p in registry.all_protocols()}


@pytest.mark.parametrize("p", registry.all_protocols(), ids=lambda p: p.name)
def test_at_least_30_hostile_cases(p):
    cases = p.net_cases()
    hostile = [c for c in cases if c.hostile]
    assert len({c.name for c in cases}) == len(cases), "network case names repeat"
    assert len(hostile) >= MIN_HOSTILE, f"{p.name}: {len(hostile)} hostile network cases, at least {MIN_HOSTILE} wanted"
    known = spec.requirements()
    for c in hostile:
        assert c.requirements and set(c.requirements) <= set(known), (c.name, c.requirements)


def test_every_res_requirement_has_a_scenario():
    for p in registry.all_protocols():
        res = {r for r in spec.requirements() if r.startswith(p.id_prefix + "-RES-")}
        covered = {f"{p.id_prefix}-RES-{n}" for sc in SCENARIOS for n in sc.res}
        assert res and res <= covered, (p.name, sorted(res - covered))


def _stress(frameproof, protocol, *extra, fault=""):
    codec = json.dumps(CODECS[protocol])
    server = f"{PY} -m frameproof.pyserver --codec '{codec}' --listen 127.0.0.1:0" + (f" --fault {fault}" if fault else "")
    return frameproof("net", "--codec", codec, "--stress", "--stress-scale", SMALL_SCALE, *LIMITS, "--server-cmd", server,
                      "--stress-grace-s", "3",  # CI machines run other tests beside (pytest -n 2)
                      *extra, timeout=240)


@pytest.mark.parametrize("protocol", sorted(CODECS))
def test_stress_passes_the_python_server(frameproof, protocol):
    rc, out, doc = _stress(frameproof, protocol, "--stress-p99-ms", "5000")  # a shared CI machine
    failing = [(r["name"], r["failures"]) for r in (doc or {}).get("scenarios", []) if r["verdict"] != "ok"]
    assert rc == 0, (failing, out[-4000:])
    assert doc["passed"] and len(doc["scenarios"]) == len(SCENARIOS)
    for r in doc["scenarios"]:
        assert r["verdict"] == "ok", (r["name"], r["failures"], r.get("skip_reason"))
        assert r["healthy_served"] > 0 and r["healthy_errors"] == 0, r
        assert r["peak_rss_kib"], r
    prefix = registry.get(protocol).id_prefix
    assert set(doc["requirements"]) == {f"{prefix}-RES-{n}" for n in range(1, 9)}
    assert all(v["passed"] and not v["failed"] for v in doc["requirements"].values()), doc["requirements"]


@pytest.mark.parametrize("entries,status", [("slow_loris\n", 0), ("slow_loris\nno_such_scenario\n", 1),
                                             ("connect_close_10000\n", 1)])
def test_xfail_entries_are_judged_only_on_scenarios_that_ran(frameproof, tmp_path, entries, status):
    """--select with an expected-failures file (CI's small-scale third-party cell): an entry naming
    only scenarios left out is not judged; one naming no scenario at all is stale, and one naming a
    scenario that ran and passed is an expected failure that did not happen: both fail the run."""
    xf = tmp_path / "xfail.txt"
    xf.write_text(entries)
    rc, out, doc = _stress(frameproof, "standard", "--select", "connect_close_10000", "--xfail", str(xf))
    assert rc == status, out[-3000:]
    assert len(doc["scenarios"]) == 1
    if status == 0:
        assert "not judged (its scenarios were not selected): slow_loris" in out


# each fault, and the scenario that must catch it
CATCHES = {"no-memory-budget": "maximal_unfinished_frames", "budget-closes-everyone": "maximal_unfinished_frames",
           "no-idle-timeout": "open_and_idle",
           "no-frame-timeout": "slow_loris", "unbounded-output": "readers_that_never_read",
           "no-connection-limit": "connection_limit", "spins-at-emfile": "descriptor_exhaustion",
           "pause-drops-connections": "sigstop_sigcont"}


def test_every_res_fault_has_a_catching_scenario():
    assert set(CATCHES) == set(RES_FAULTS)


@pytest.mark.parametrize("fault", sorted(RES_FAULTS))
def test_broken_server_is_caught(frameproof, fault):
    rc, out, doc = _stress(frameproof, "standard", "--select", CATCHES[fault], fault=fault)
    assert rc == 1, out[-3000:]
    broken = f"STD-RES-{RES_FAULTS[fault]}"
    assert doc["requirements"].get(broken, {}).get("failed"), (broken, doc["requirements"], out[-3000:])


@pytest.mark.parametrize("args", [["--protocol", "standard", "--memory-budget", "1048576"],  # below the 10 MiB frame
                                  ["--protocol", "websocket", "--memory-budget", "67108864"],  # below the 100 MiB message
                                  ["--protocol", "standard", "--idle-timeout-ms", "0"],
                                  ["--protocol", "rpc", "--max-connections", "many"]])
def test_pyserver_refuses_bad_limits(args):
    """RES-1: a budget below the largest frame (websocket: message) is a usage error; limits are
    positive integers."""
    import subprocess
    p = subprocess.run([PY, "-m", "frameproof.pyserver", "--listen", "127.0.0.1:0", *args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "LISTENING" not in p.stdout, (p.returncode, p.stdout, p.stderr)
