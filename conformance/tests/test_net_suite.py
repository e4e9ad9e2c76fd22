"""`frameproof net` passes a correct echo server and catches broken ones with the
right requirement IDs; `frameproof net --client` passes a correct load client and
catches one that miscounts or skips verification."""
import os

import pytest

from frameproof import protocols as registry
from frameproof.pyload import FAULTS as CLIENT_FAULTS, RECEIVE_FAULTS

from conftest import PY

SERVER = f"{PY} -m frameproof.pyserver --listen 127.0.0.1:0"
LOAD = (f"{PY} -m frameproof.pyload --connect {{host}}:{{port}} --connections 3 --requests 3000 "
        f"--payload 24 --mode per-packet --timeout-ms 1000 --json {{json}}")


def failed(doc):
    return {rid for rid, v in doc["requirements"].items() if v["failed"]}


@pytest.mark.parametrize("protocol,codec", [("standard", ""), ("length-field", ""),
                                            ("length-field", '{"protocol":"length-field","length_field":{"offset":2,"size":0}}')])
def test_correct_server_passes(frameproof, protocol, codec):
    if codec:
        args = ["net", "--codec", codec, "--server-cmd", f"{SERVER} --codec '{codec}'"]
    else:
        args = ["net", "--protocol", protocol, "--server-cmd", f"{SERVER} --protocol {protocol}"]
    rc, out, doc = frameproof(*args, timeout=300)
    assert rc == 0, out[-3000:]
    assert doc["totals"]["failed"] == 0 and doc["totals"]["passed"] >= 12
    assert "server stopped with status 0" in out


@pytest.mark.parametrize("protocol,fault,broken", [(p.name, f, r) for p in registry.all_protocols()
                                                   for f, r in sorted(p.server_faults.items())])
def test_broken_server_is_caught(frameproof, protocol, fault, broken, monkeypatch):
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    # only the cases of the requirement the fault breaks (net --requirement): they must fail
    rc, out, doc = frameproof("net", "--protocol", protocol, "--contract", "--server-cmd",
                              f"{SERVER} --protocol {protocol} --fault {fault}",
                              "--requirement", broken, timeout=300)
    assert rc == 1, out[-2000:]
    assert broken in failed(doc), sorted(failed(doc))


def test_exitfirst_stops_at_the_first_failure(frameproof, monkeypatch):
    """net -x (tools/mutation.sh's Rust network runs): a server that breaks one requirement's several cases
    stops the run at its first failure, where the same run without -x goes on to the others."""
    monkeypatch.setenv("FRAMEPROOF_NET_TIMEOUT", "2")
    args = ["net", "--protocol", "standard", "--server-cmd", f"{SERVER} --protocol standard --fault ignore-half-close",
            "--requirement", registry.get("standard").server_faults["ignore-half-close"]]
    rc, out, whole = frameproof(*args, timeout=300)
    assert rc == 1 and whole["totals"]["failed"] >= 2, (whole["totals"], out[-2000:])
    rc, out, first = frameproof(*args, "-x", timeout=300)
    assert rc == 1 and first["totals"]["failed"] == 1, (first["totals"], out[-2000:])
    assert sum(first["totals"].values()) < sum(whole["totals"].values()), (first["totals"], whole["totals"])


def test_server_that_does_not_start(frameproof):
    rc, out, _ = frameproof("net", "--protocol", "standard", "--server-cmd", "sleep 0.1", timeout=60)
    assert rc == 2 and "LISTENING" in out


@pytest.mark.parametrize("protocol", ["standard", "length-field"])
def test_correct_client_passes(frameproof, protocol):
    rc, out, doc = frameproof("net", "--protocol", protocol, "--client", f"{LOAD} --protocol {protocol}", timeout=300)
    assert rc == 0, out[-3000:]
    from frameproof.clientsuite import all_cases
    # detects_unasked_replies: receive mode's case, skipped elsewhere
    assert doc["totals"] == {"passed": len(all_cases(protocol)) - 1, "failed": 0, "skipped": 1, "xfailed": 0,
                             "xpassed": 0}


@pytest.mark.parametrize("protocol", registry.names())
def test_receive_mode_client(frameproof, protocol):
    # receive mode (the server a sink, --sink): the client's counts, and every reply the sink writes all the
    # same (every 97th request) counted as an error (HAR-VERIFY-3)
    load = LOAD.replace("per-packet", "receive") + f" --protocol {protocol}"
    rc, out, doc = frameproof("net", "--protocol", protocol, "--sink", "--client", load, timeout=300)
    assert rc == 0, out[-3000:]
    assert doc["requirements"]["HAR-VERIFY-3"]["passed"] == 1 and doc["requirements"]["HAR-COUNT-1"]["passed"] == 1


@pytest.mark.parametrize("fault", sorted(RECEIVE_FAULTS))
def test_broken_receive_mode_client_is_caught(frameproof, fault):
    load = LOAD.replace("per-packet", "receive") + f" --protocol rpc --fault {fault}"
    rc, out, doc = frameproof("net", "--protocol", "rpc", "--sink", "--client", load, timeout=300)
    assert rc == 1, out[-2000:]
    assert failed(doc) == {RECEIVE_FAULTS[fault]}, sorted(failed(doc))


@pytest.mark.parametrize("fault", sorted(CLIENT_FAULTS))
def test_broken_client_is_caught(frameproof, fault, monkeypatch):
    monkeypatch.setenv("FRAMEPROOF_CLIENT_TIMEOUT", "8")
    rc, out, doc = frameproof("net", "--protocol", "standard", "--client", f"{LOAD} --protocol standard --fault {fault}",
                              timeout=300)
    assert rc == 1, out[-2000:]
    assert CLIENT_FAULTS[fault] in failed(doc), sorted(failed(doc))
