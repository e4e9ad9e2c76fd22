"""The spec is the source of truth: every requirement is tested, vectors agree
with the Kaitai oracle, and generated files are up to date."""
import json
import subprocess
import sys

import pytest

from frameproof import oracle, spec, vectors as V
from frameproof import protocols as registry
from frameproof.protocols import names as protocol_names

from conftest import ROOT


def test_requirements_parse():
    reqs = spec.requirements()
    assert len(reqs) >= 50
    for r in reqs.values():
        assert r.level in ("MUST", "SHOULD", "MAY") and r.text
        if r.protocol in registry.names():
            assert r.id.startswith(registry.get(r.protocol).id_prefix + "-")
        else:  # the harness spec, a protocol's layer spec (rpc: discovery): one prefix per spec
            assert len({q.id.split("-", 1)[0] for q in reqs.values() if q.protocol == r.protocol}) == 1, r.protocol
    layers = {x for p in registry.names() for x in spec.layers_of(p)}
    assert {r.protocol for r in reqs.values()} == set(registry.names()) | layers | {"harness"}


def suite_requirement_ids():
    """From the collected codec suite (what `frameproof run` really runs) plus the network and client suites."""
    out = subprocess.run([sys.executable, "-m", "frameproof.cli", "list"], cwd=ROOT, capture_output=True, text=True)
    ids = set()
    names = set()
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            ids.update(d["requirements"])
            names.add(d["name"])
    assert len(names) > 400
    from frameproof import catalog
    cat = catalog.tests()
    # the catalog (used by the docs site) lists exactly what the runner collects
    assert {t["name"] for t in cat if t["suite"] == "run"} == names
    for t in cat:
        ids.update(t["requirements"])
    return ids


def test_every_requirement_has_a_test():
    tested = suite_requirement_ids()
    missing = sorted(set(spec.requirements()) - tested)
    assert not missing, f"spec requirements with no test: {missing}"


def test_tests_name_only_known_requirements():
    unknown = sorted(suite_requirement_ids() - set(spec.requirements()))
    assert not unknown, unknown


@pytest.mark.parametrize("protocol", protocol_names())
def test_vectors_agree_with_oracle(protocol):
    vecs = V.load(protocol)
    assert len(vecs) > 40
    for v in vecs:
        assert v.verdict in ("y", "n", "i"), v.id
        for r in v.requirements:
            assert r in spec.requirements(), (v.id, r)
        if v.kind == "decode":
            got = oracle.decode(v.codec, v.data)
            allowed = [(o.frames, o.error) for o in v.outcomes()]
            assert (got.frames, got.error) in allowed, v.id
            if v.verdict == "y":
                assert got.error is None, v.id
            if v.verdict == "n":
                assert got.error is not None, v.id
            if v.verdict == "i":
                assert len(allowed) > 1, v.id
        elif v.kind == "encode":
            assert oracle.encode(v.codec, v.frame) == v.expect, v.id
        else:
            exp = v.expected_match()
            got = oracle.match(v.codec, v.events(), int(v.raw.get("timeout_ms", 0)))
            assert got == exp, v.id


def test_vector_files_are_generated_and_current():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_vectors.py"), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_spec_worked_examples_decode():
    """The hex examples in the spec tables are what the oracle decodes."""
    std = registry.get("standard").codec()
    assert oracle.decode(std, bytes.fromhex("010104004F70656E")).frames == [oracle.Frame(1, 1, b"Open")]
    assert oracle.decode(std, bytes.fromhex("C1010300616263")).frames == [oracle.Frame(0xC1, 1, b"abc")]
    lf = lambda o, s: registry.get("length-field").codec(lf_offset=o, lf_size=s)
    table = {(0, 2): "0300616263", (0, -2): "0003616263", (0, 4): "03000000616263", (0, -4): "00000003616263",
             (0, 1): "03616263", (0, 0): "03616263", (2, 2): "00000300616263"}
    for (o, s), hx in table.items():
        assert oracle.encode(lf(o, s), oracle.Frame(0, 0, b"abc")) == bytes.fromhex(hx)
        assert oracle.decode(lf(o, s), bytes.fromhex(hx)).frames == [oracle.Frame(0, 0, b"abc")]
    assert oracle.encode(lf(0, 0), oracle.Frame(0, 0, b"x" * 300))[:2] == bytes.fromhex("AC02")


def test_oracle_rejects_what_kaitai_validates():
    std = registry.get("standard").codec()
    assert oracle.decode(std, bytes.fromhex("0101ffff00000000")).error == oracle.Error("STD-LEN-3", 0)
    assert oracle.decode(std, bytes.fromhex("0101ffff00000080")).error == oracle.Error("STD-LEN-4", 0)
    v = registry.get("length-field").codec(lf_offset=0, lf_size=0)
    assert oracle.decode(v, bytes.fromhex("ffffffff7f")).error == oracle.Error("LF-LEN-2", 0)


def test_deselect_leaves_out_what_it_names_and_nothing_else():
    """`--deselect GLOB` (run, list, net) after `--select`: the mutation tool leaves the registry's tests out of
    the Python rpc runs with it (tools/mutation/run.py PY_NOT_THE_MODULE)."""
    def names(*extra):
        out = subprocess.run([sys.executable, "-m", "frameproof.cli", "list", "--names", "--protocol", "rpc", *extra],
                             cwd=ROOT, capture_output=True, text=True, check=True)
        return set(out.stdout.split())
    every = names()
    rest = names("--deselect", "rpc/DISC-*")
    gone = every - rest
    assert gone and all(n.startswith("rpc/DISC-") for n in gone)
    assert not any(n.startswith("rpc/DISC-") for n in rest)
    assert names("--select", "rpc/DISC-*", "--deselect", "*etcd*") == {n for n in gone if "etcd" not in n}
