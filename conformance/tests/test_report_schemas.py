"""The JSON Schemas of the reports (issue 31): conformance/frameproof/schemas/report.schema.json for
every kind `frameproof` writes (run, net, client, stress, autobahn, fuzz) and matrix.schema.json for
`frameproof matrix`. Each kind is produced here by the CLI, as a user runs it, and validated with
jsonschema; each schema is shown to reject a broken report. (conftest.run_frameproof also validates
every run/net report any test of the suite produces.)"""
import copy
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import PY, PYTESTEE, ROOT
from frameproof import report

SCHEMAS = ROOT / "conformance" / "frameproof" / "schemas"
PYSERVER = f"{PY} -m frameproof.pyserver --protocol standard --listen 127.0.0.1:0"
PYLOAD = (f"{PY} -m frameproof.pyload --protocol standard --connect {{host}}:{{port}} --connections 2 --payload 16 "
          f"--mode pipelined --window 8 --requests 300 --timeout-ms 2000 --json {{json}}")


def _cli(tmp_path: Path, *args, timeout=300) -> dict:
    out = tmp_path / "r.json"
    p = subprocess.run([PY, "-m", "frameproof.cli", *args, "--json", str(out)], cwd=ROOT, capture_output=True,
                       text=True, timeout=timeout)
    assert out.exists(), p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads(out.read_text())


def test_schemas_are_valid_json_schema():
    for f in sorted(SCHEMAS.glob("*.schema.json")):
        jsonschema.Draft202012Validator.check_schema(json.loads(f.read_text()))
    assert {f.name for f in SCHEMAS.glob("*.schema.json")} == {"report.schema.json", "matrix.schema.json"}


KINDS = {
    "run": lambda: ["run", "--testee", PYTESTEE, "--protocol", "standard", "--select", "*STD-HDR-1*"],
    "net": lambda: ["net", "--protocol", "standard", "--server-cmd", PYSERVER, "--select", "*/net/one_request*"],
    "client": lambda: ["net", "--protocol", "standard", "--client", PYLOAD, "--select", "*counts_agree*"],
    "stress": lambda: ["net", "--protocol", "standard", "--stress", "--server-cmd", PYSERVER, "--stress-scale", "0.05",
                       "--select", "connect_close_10000"],
    "fuzz": lambda: ["fuzz", "--testee", PYTESTEE, "--protocol", "standard", "--examples", "30", "--seconds", "0"],
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_report_kind_follows_its_schema(kind, tmp_path):
    doc = _cli(tmp_path, *KINDS[kind]())
    assert doc["kind"] == kind
    assert report.schema_problems(doc) == []
    if kind == "client":  # --name names the implementation (the matrix groups its pages by it)
        doc2 = _cli(tmp_path, *KINDS[kind](), "--name", "my-client")
        assert doc2["implementation"]["name"] == "my-client"
    assert report.ran(doc) > 0, "nothing ran: the report would be checked empty"
    # and the schema bites: a broken copy of this very report is refused, with the path of what broke
    for breaking, where in (
            (lambda d: d.pop("totals"), "(top)"),
            (lambda d: d["tests"][0].update(status="passd"), "tests/0/status"),
            (lambda d: d["tests"][0].update(requirements=["not an id"]), "tests/0/requirements/0"),
            (lambda d: d.update(kind="bench"), "kind"),
            (lambda d: d["levels"]["rfc"].pop("stricter"), "levels/rfc")):
        bad = copy.deepcopy(doc)
        breaking(bad)
        found = report.schema_problems(bad)
        assert found and any(p.startswith(where) for p in found), (where, found)
    with pytest.raises(ValueError, match="report model"):
        bad = copy.deepcopy(doc)
        bad["tests"][0]["status"] = "passd"
        report.write(bad, tmp_path / "never.json")


def test_kind_specific_fields_are_required():
    """A stress report without its scenarios, an Autobahn report without its side, a fuzz report
    without its findings: each refused by the kind's own part of the schema."""
    t = [report.test("x/STD-HDR-1/y", ["STD-HDR-1"], "passed")]
    for kind, must in (("stress", "'scenarios' is a required property"), ("autobahn", "'side' is a required property"),
                       ("fuzz", "'findings' is a required property")):
        assert any(must in p for p in report.schema_problems(report.make(kind, {"name": "x"}, t))), kind


def test_committed_matrix_follows_its_schema_and_the_schema_bites():
    files = sorted((ROOT / "results").glob("matrix-*.json"))
    assert files, "no committed matrix under results/"
    for f in files:
        doc = json.loads(f.read_text())
        assert report.schema_problems(doc, "matrix") == [], f
    bad = copy.deepcopy(doc)
    impl = next(iter(bad["results"]))
    cell = next(iter(bad["results"][impl]["net"].values()))
    cell["totals"]["failed"] = -1
    bad["scale"] = "medium"
    found = report.schema_problems(bad, "matrix")
    assert any(p.startswith("scale") for p in found) and any("/totals/failed" in p for p in found), found
