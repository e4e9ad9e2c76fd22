"""The plug-in layout holds (docs/adding-a-protocol.md): every registered protocol has all its
parts, and no shared module of the suite or the tools branches on a protocol name."""
import json
import re
from pathlib import Path

import pytest

from frameproof import protocols as registry, spec
from frameproof.paths import IMPL_DIR, ROOT
from frameproof.vectors import load

PROTOS = registry.all_protocols()


@pytest.mark.parametrize("p", PROTOS, ids=lambda p: p.name)
def test_protocol_has_every_part(p):
    assert p.spec_file.is_file(), f"{p.name}: no spec {p.spec_file}"
    reqs = [r for r in spec.requirements().values() if r.protocol == p.name]
    assert reqs, f"{p.name}: the spec defines no requirement"
    assert all(r.id.startswith(p.id_prefix + "-") for r in reqs)
    assert p.schema_file.is_file(), f"{p.name}: no schema {p.schema_file}"
    assert load(p.name), f"{p.name}: no vectors in {p.vector_dir}"
    assert p.properties(), f"{p.name}: no properties"
    assert p.net_cases(), f"{p.name}: no network cases"
    assert p.mutants, f"{p.name}: no mutants (the suite must be shown to bite)"
    assert p.truncation_requirement in {r.id for r in reqs}
    assert p.stop_requirement in {r.id for r in reqs}
    # the codec JSON round-trips and rejects unknown keys
    c = p.codec()
    assert p.codec_from_json(c.to_json()) == c
    with pytest.raises(ValueError):
        p.codec_from_json({**c.to_json(), "no_such_key": 1})
    # every requirement named by a property or network case exists in the spec (or in the spec of
    # a layer the protocol carries, Protocol.layer_specs: rpc's service discovery)
    known = {r.id for r in spec.requirements().values() if r.protocol in (p.name,) + spec.layers_of(p.name)}
    for item in p.properties() + p.net_cases():
        assert set(item.requirements) <= known, (item.name, set(item.requirements) - known)


def test_module_names_match_protocol_names():
    for mod in registry.MODULES:
        assert registry.get_module(mod).PROTOCOL.name.replace("-", "_") == mod


@pytest.mark.parametrize("impl", sorted(p.parent.name for p in IMPL_DIR.glob("*/impl.json")))
def test_every_implementation_lists_every_protocol(impl):
    """Each implementation implements a registered protocol (and its registry names it) or
    says explicitly that it skips it, and why."""
    d = json.loads((IMPL_DIR / impl / "impl.json").read_text())
    implemented, skipped = set(d.get("protocols", [])), dict(d.get("skipped", {}))
    for name in registry.names():
        assert (name in implemented) != (name in skipped), \
            f"{impl}: protocol {name!r} must be in exactly one of impl.json's 'protocols' and 'skipped'"
        if name in skipped:
            assert skipped[name].strip(), f"{impl}: skipping {name!r} needs a reason"
    assert implemented <= set(registry.names()), implemented - set(registry.names())


# A protocol name as a quoted literal, or a two-way branch on the protocol, in shared code.
_BRANCH = re.compile(r"""(protocol\s*[!=]=\s*["'])|(["'](standard|length-field)["'])""")
SHARED = sorted(p for p in (ROOT / "conformance" / "frameproof").rglob("*.py")
                if not {"protocols", "_generated"} & set(p.relative_to(ROOT / "conformance" / "frameproof").parts)) + \
    [ROOT / "tools" / "gen_vectors.py", ROOT / "tools" / "docs" / "gen_docs.py"] + \
    sorted((ROOT / "tools" / "docs" / "gendocs").glob("*.py"))


@pytest.mark.parametrize("path", SHARED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_protocol_branch_in_shared_code(path):
    hits = []
    in_doc = False
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        quotes = line.count('"""')
        if in_doc or (quotes and line.strip().startswith('"""')):  # docstrings may give examples
            in_doc = in_doc != (quotes % 2 == 1)
            continue
        code = line.split("#", 1)[0]
        if _BRANCH.search(code) and "e.g." not in code:
            hits.append(f"{i}: {line.strip()}")
    assert not hits, f"{path.name} names a protocol outside frameproof/protocols/:\n" + "\n".join(hits)
