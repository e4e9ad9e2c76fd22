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
    # a layer the protocol carries, Protocol.layer_specs: rpc's service discovery; or in the harness spec,
    # whose echo-server requirements, HAR-SRV-*, every protocol's network suite checks)
    known = {r.id for r in spec.requirements().values()
             if r.protocol in (p.name, "harness") + spec.layers_of(p.name)}
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


# ------------------------------------------------------------------ the reference implementations
# The same rule in the three languages: outside a protocol's own files (a path part named after it:
# rust codec/src/rpc/, cpp websocket.cpp, csharp Codec/WebSocket/, Standard.cs ...) and the one registry
# of each language, the programs name no protocol: no name literal ("rpc"), no variant or type of one
# protocol (Protocol::Rpc, fp::WebSocket, RpcProtocol.Module). Comments and test code (Rust
# #[cfg(test)] modules inline or in a tests.rs, tests/ folders) may name them.
IMPL_SOURCES = {
    "rust": ("rs", [IMPL_DIR / "rust" / d / "src" for d in ("codec", "net", "testee", "discovery", "baselines")]
             + [IMPL_DIR / "rust" / "fuzz" / "fuzz_targets"]),
    "cpp": (("cpp", "hpp", "h"), [IMPL_DIR / "cpp" / d for d in ("src", "include", "fuzz", "bench")]),
    "csharp": ("cs", [IMPL_DIR / "csharp" / "src"]),
}
_NAMES = {"standard": ("standard", "Standard"), "length-field": ("length-field", "LengthField", "length_field"),
          "rpc": ("rpc", "Rpc"), "websocket": ("websocket", "WebSocket", "Websocket", "Ws")}
# A name literal, or a protocol's own type/variant used from outside (Protocol::Rpc, fp::WebSocket,
# WebSocketProtocol.Module, LengthFieldParams): the type-like spellings only where a type starts.
_IMPL_BRANCH = {proto: re.compile(r'"%s"|\b(?:%s)(?:Protocol|Codec|Params|Session|Header|Frame)?\b(?!\s*\()'
                                  % (re.escape(names[0]), "|".join(re.escape(n) for n in names[1:] if n[0].isupper())))
                for proto, names in _NAMES.items()}
# Where a program must tell protocols apart, and why. Keyed by path (relative to reference-impls/)
# and protocol; anything else is a branch that belongs in the protocol's own module.
IMPL_ALLOWED = {
    # the registries: the one line per protocol
    ("rust/codec/src/registry.rs", "*"): "the registry (one line a protocol)",
    ("cpp/include/frameproof/registry.hpp", "*"): "the registry (the variant of every protocol)",
    ("csharp/src/Codec/Registry.cs", "*"): "the registry (Modules, one line a protocol)",
    # programs of one protocol: the Autobahn testsuite's client side is websocket's alone
    ("cpp/src/autobahn_client.cpp", "websocket"): "fp-autobahn-client speaks only websocket (Autobahn)",
    ("rust/net/src/bin/fp-autobahn-client.rs", "websocket"): "fp-autobahn-client speaks only websocket (Autobahn)",
    ("csharp/src/AutobahnClient/Program.cs", "websocket"): "fp-autobahn-client speaks only websocket (Autobahn)",
    # baselines of one protocol, outside the registry on purpose (tools/bench compares against them)
    ("rust/baselines/src/bin/fp-tokio-lf-echo.rs", "length-field"): "a length-field echo over tokio-util's "
                                                                     "LengthDelimitedCodec, the peer baseline",
    ("rust/baselines/src/bin/fp-alloc.rs", "standard"): "the allocation table's fixed rows (tools/bench reads them)",
    ("rust/baselines/src/bin/fp-alloc.rs", "length-field"): "the allocation table's fixed rows (tools/bench reads them)",
    # fuzz targets that must tell protocols apart: one input byte picks the protocol, and the target
    # compares each protocol's frames field by field (conformance/FUZZING.md)
    ("cpp/fuzz/wire_fuzz.cpp", "rpc"): "the wire fuzz target builds and compares rpc frames",
    ("cpp/fuzz/wire_fuzz.cpp", "websocket"): "the wire fuzz target builds and compares websocket frames",
}


def _own(path: Path, proto: str) -> bool:
    """A file belongs to a protocol when a part of its path is named after it."""
    key = proto.replace("-", "").lower()
    return any(part.lower().replace("_", "").replace("-", "").split(".")[0].startswith(key)
               or (proto == "websocket" and part.startswith("Ws")) for part in path.parts)


def _code_lines(path: Path, lang: str):
    """(line number, code) without comments; Rust #[cfg(test)] modules left out."""
    in_block = False
    skip_depth = None
    depth = 0
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        code = line
        if in_block:
            if "*/" not in code:
                continue
            code, in_block = code.split("*/", 1)[1], False
        while "/*" in code:
            head, _, rest = code.partition("/*")
            if "*/" in rest:
                code = head + rest.split("*/", 1)[1]
            else:
                code, in_block = head, True
        code = code.split("//", 1)[0]
        if lang == "rust":
            if skip_depth is None and line.strip() == "#[cfg(test)]":
                skip_depth = depth
                continue
            opens, closes = code.count("{"), code.count("}")
            depth += opens - closes
            if skip_depth is not None:
                if depth <= skip_depth and closes:
                    skip_depth = None
                continue
        yield i, code


def _impl_files():
    for lang, (exts, dirs) in IMPL_SOURCES.items():
        exts = (exts,) if isinstance(exts, str) else exts
        for d in dirs:
            for p in sorted(d.rglob("*")) if d.is_dir() else ():
                # build outputs (C#'s bin/ and obj/, not Rust's src/bin/) and test folders are not programs
                skip = {"build", "target", "tests"} | ({"bin", "obj"} if lang == "csharp" else set())
                test_module = lang == "rust" and p.name == "tests.rs"  # `#[cfg(test)] mod tests;`
                if p.suffix.lstrip(".") in exts and not test_module and not skip & set(p.relative_to(IMPL_DIR).parts[1:]):
                    yield lang, p


IMPL_FILES = list(_impl_files())


def _impl_hits(path: Path, lang: str):
    rel = path.relative_to(IMPL_DIR).as_posix()
    hits = []
    for proto, rx in _IMPL_BRANCH.items():
        if _own(path.relative_to(IMPL_DIR), proto) or (rel, "*") in IMPL_ALLOWED or (rel, proto) in IMPL_ALLOWED:
            continue
        for i, code in _code_lines(path, lang):
            if rx.search(code):
                hits.append(f"{rel}:{i} names {proto}: {code.strip()}")
    return hits


@pytest.mark.parametrize("lang", sorted(IMPL_SOURCES))
def test_no_protocol_branch_in_the_programs(lang):
    files = [p for lg, p in IMPL_FILES if lg == lang]
    assert files, f"{lang}: no source found under {IMPL_SOURCES[lang][1]}"
    hits = [h for p in files for h in _impl_hits(p, lang)]
    assert not hits, (f"{lang}: a program names a protocol outside that protocol's own files (move the code into "
                      "the protocol's module, or add it to IMPL_ALLOWED with the reason):\n" + "\n".join(hits))


def test_the_layout_check_bites(tmp_path):
    """A planted branch on a protocol name in a shared program is found in every language."""
    planted = {"rust": 'if cfg.protocol == "rpc" { return; }\nlet x = Protocol::WebSocket;\n',
               "cpp": 'if (name == "length-field") return;\nauto p = fp::Rpc{};\n',
               "csharp": 'if (spec.Protocol == "websocket") return;\nvar m = StandardProtocol.Module;\n'}
    ext = {"rust": "rs", "cpp": "cpp", "csharp": "cs"}
    for lang, text in planted.items():
        p = IMPL_DIR / f"{lang}-layout-probe.{ext[lang]}"
        fake = tmp_path / p.relative_to(ROOT)
        fake.parent.mkdir(parents=True, exist_ok=True)
        fake.write_text("// a comment naming \"rpc\" is fine\n" + text)
        rel_hits = []
        for proto, rx in _IMPL_BRANCH.items():
            rel_hits += [proto for _, code in _code_lines(fake, lang) if rx.search(code)]
        assert len(rel_hits) == 2, (lang, rel_hits)


@pytest.mark.parametrize("entry", sorted(IMPL_ALLOWED), ids=lambda e: f"{e[0]}:{e[1]}")
def test_every_allowance_is_needed(entry):
    """An allow-list entry names a file that exists and still names that protocol: a stale entry
    would let a later branch in the same file pass unseen."""
    rel, proto = entry
    path = IMPL_DIR / rel
    assert path.is_file(), f"IMPL_ALLOWED names {rel}, which does not exist"
    lang = next(lg for lg, (exts, _) in IMPL_SOURCES.items()
                if path.suffix.lstrip(".") in ((exts,) if isinstance(exts, str) else exts))
    protos = list(_IMPL_BRANCH) if proto == "*" else [proto]
    found = [p for p in protos if any(_IMPL_BRANCH[p].search(code) for _, code in _code_lines(path, lang))]
    assert found, f"IMPL_ALLOWED[{entry}] is not needed any more ({IMPL_ALLOWED[entry]}): remove it"
