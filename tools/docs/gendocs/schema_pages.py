"""The schema pages: field tables from the .ksy files, the Kaitai compiler's diagrams, the testee
protocol's tables."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import yaml
from .common import ROOT, esc_cell, link_ids, write


# ---------------------------------------------------------------- schemas


def _fmt_type(f: dict) -> str:
    t = f.get("type")
    if isinstance(t, dict):  # switch-on
        return "switch on `" + str(t.get("switch-on")) + "`"
    if t:
        return f"`{t}`"
    return "bytes" if "size" in f or "size-eos" in f else ""


def _field_rows(fields, kind: str) -> list:
    rows = []
    for f in fields:
        size = f.get("size", "eos" if f.get("size-eos") else "")
        cond = f.get("if", "")
        valid = f.get("valid", "")
        if isinstance(valid, dict):
            valid = ", ".join(f"{k} {v}" for k, v in valid.items())
        doc = " ".join(str(f.get("doc", "")).split())
        cells = [f"`{f['id']}`", _fmt_type(f) if kind == "seq" else f"`{' '.join(str(f.get('value', '')).split())}`",
                 f"`{size}`" if size != "" else "", f"`{cond}`" if cond else "", f"`{valid}`" if valid else "",
                 link_ids(esc_cell(doc), "../")]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _type_section(title: str, anchor: str, t: dict, top: bool = False) -> list:
    out = [f"### {title} {{#{anchor}}}", ""]
    if t.get("doc") and not top:
        out += [link_ids(" ".join(str(t["doc"]).split()), "../"), ""]
    if t.get("params"):
        out += ["Parameters:", "", "| param | type | doc |", "|---|---|---|"]
        for p in t["params"]:
            out.append(f"| `{p['id']}` | `{p.get('type', '')}` | {link_ids(esc_cell(' '.join(str(p.get('doc', '')).split())), '../')} |")
        out.append("")
    if t.get("seq"):
        out += ["| field | type | size | present if | valid | doc |", "|---|---|---|---|---|---|"]
        out += _field_rows(t["seq"], "seq")
        out.append("")
    if t.get("instances"):
        out += ["Computed (instances):", "", "| instance | value | | | | doc |", "|---|---|---|---|---|---|"]
        out += _field_rows([dict(v, id=k) for k, v in t["instances"].items()], "instances")
        out.append("")
    return out


def compile_ksy(lib: Path, dest: Path) -> Path:
    """One run of the Kaitai compiler over schemas/*.ksy: graphviz (diagrams) and Python with
    --debug (field positions for the hex dumps), into dest/graphviz and dest/python."""
    ksys = sorted((ROOT / "schemas").glob("*.ksy"))
    try:
        subprocess.run(["java", "-cp", f"{lib}/*", "io.kaitai.struct.JavaMain", "-t", "graphviz", "-t", "python",
                        "--debug", "--outdir", str(dest)] + [str(k) for k in ksys],
                       check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"kaitai-struct-compiler failed: {getattr(e, 'stderr', '') or e}")
    return dest


def kaitai_diagrams(ksys, compiled: Path, dest: Path) -> dict:
    """ksy stem -> SVG file name: the compiler's graphviz output rendered by `dot`."""
    out = {}
    for k in ksys:
        mid = yaml.safe_load(k.read_text())["meta"]["id"]
        svg = dest / f"{mid}.svg"
        try:
            subprocess.run(["dot", "-Tsvg", str(compiled / "graphviz" / f"{mid}.dot"), "-o", str(svg)],
                           check=True, capture_output=True, text=True)
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(f"graphviz dot failed for {k.name}: {getattr(e, 'stderr', '') or e}")
        out[k.stem] = svg.name
    return out


def _proto_comments(text: str) -> dict:
    """'Message.field' / 'Message' / 'Enum.VALUE' -> the // comment lines just above it."""
    out, stack, pending = {}, [], []
    for line in text.splitlines():
        t = line.strip()
        if t.startswith("//"):
            pending.append(t[2:].strip())
            continue
        m = re.match(r"(message|enum|oneof)\s+(\w+)\s*\{", t)
        if m:
            if m.group(1) != "oneof":
                out[".".join([n for k, n in stack if k != "oneof"] + [m.group(2)])] = " ".join(pending)
            stack.append((m.group(1), m.group(2)))
        elif t.startswith("}"):
            if stack:
                stack.pop()
        else:
            f = re.match(r"(?:repeated\s+|optional\s+)?[\w.]+\s+(\w+)\s*=\s*-?\d+\s*;", t) or \
                re.match(r"(\w+)\s*=\s*-?\d+\s*;", t)
            if f and stack:
                out[".".join([n for k, n in stack if k != "oneof"] + [f.group(1)])] = " ".join(pending)
        pending = [] if not t.startswith("//") else pending
    return out


def proto_tables(proto: Path) -> list:
    """Message tables from the generated Python bindings' descriptors, with the .proto comments."""
    try:
        mod = importlib.import_module(f"frameproof._generated.{proto.stem}_pb2")
    except ImportError:
        return []
    from google.protobuf.descriptor import FieldDescriptor as FD
    names = {v: k[5:].lower() for k, v in vars(FD).items() if k.startswith("TYPE_")}
    comments = _proto_comments(proto.read_text(encoding="utf-8"))
    lines = ["## Messages", ""]

    def message(desc, path):
        lines.extend([f"### {'.'.join(path)} {{#{'-'.join(path).lower()}}}", ""])
        if comments.get(".".join(path)):
            lines.extend([esc_cell(comments[".".join(path)]), ""])
        if desc.fields:
            lines.extend(["| field | # | type | | doc |", "|---|---:|---|---|---|"])
            for f in desc.fields:
                if f.message_type and f.message_type.name in mod.DESCRIPTOR.message_types_by_name:
                    typ = f.message_type.name
                    typ = f"[`{typ}`](#{typ.lower()})"
                elif f.message_type:
                    typ = f.message_type.name
                elif f.enum_type:
                    typ = f.enum_type.name
                else:
                    typ = names.get(f.type, str(f.type))
                rep = f.is_repeated if hasattr(f, "is_repeated") else f.label == FD.LABEL_REPEATED
                label = "repeated" if rep else ""
                if f.containing_oneof is not None:
                    label = f"oneof `{f.containing_oneof.name}`"
                doc = link_ids(esc_cell(comments.get(".".join(path + [f.name]), "")), "../")
                typ = typ if typ.startswith("[") else f"`{typ}`"
                lines.append(f"| `{f.name}` | {f.number} | {typ} | {label} | {doc} |")
            lines.append("")
        for e in desc.enum_types:
            lines.extend([f"Enum `{e.name}`:", "", "| value | # | doc |", "|---|---:|---|"])
            for v in e.values:
                doc = esc_cell(comments.get(".".join(path + [e.name, v.name]), ""))
                lines.append(f"| `{v.name}` | {v.number} | {doc} |")
            lines.append("")
        for n in desc.nested_types:
            message(n, path + [n.name])

    for name, desc in mod.DESCRIPTOR.message_types_by_name.items():
        message(desc, [name])
    return lines


def gen_schemas(out: Path, compiled: Path) -> list:
    d = out / "schemas"
    d.mkdir(parents=True, exist_ok=True)
    ksys = sorted((ROOT / "schemas").glob("*.ksy"))
    svgs = kaitai_diagrams(ksys, compiled, d)
    index = ["# Schemas", "",
             "The wire formats as [Kaitai Struct](https://kaitai.io) schemas. They are the suite's oracle: "
             "`tools/gen.sh` compiles them to the Python parsers that decide what a conforming decoder "
             "must deliver. Each page below is generated from the `.ksy`: field tables, the compiler's "
             "graphviz diagram, and the source.", "", "| schema | title | spec |", "|---|---|---|"]
    pages = []
    for k in ksys:
        doc = yaml.safe_load(k.read_text(encoding="utf-8"))
        meta = doc.get("meta", {})
        ref = doc.get("doc-ref", "")
        spec_stem = Path(ref).stem if ref else ""
        spec_link = f"[{ref}](../{spec_stem}.md)" if ref and (ROOT / ref).exists() else (f"`{ref}`" if ref else "")
        index.append(f"| [{k.name}]({k.stem}.md) | {esc_cell(meta.get('title', ''))} | {spec_link} |")
        lines = [f"# {k.name}", "", f"**{meta.get('title', meta.get('id'))}** · Kaitai id `{meta.get('id')}` · "
                 f"default endianness `{meta.get('endian', '-')}`" + (f" · spec {spec_link}" if spec_link else ""), ""]
        if doc.get("doc"):
            lines += [link_ids(" ".join(str(doc["doc"]).split()), "../"), ""]
        lines += ["## Fields", ""]
        lines += _type_section(f"{meta.get('id')} (top level)", meta.get("id"), doc, top=True)
        for tname, t in (doc.get("types") or {}).items():
            lines += _type_section(f"type `{tname}`", f"type-{tname}", t)
        lines += ["## Diagram", "",
                  "Generated by `kaitai-struct-compiler -t graphviz` and rendered by graphviz `dot`.", "",
                  f"[![{meta.get('id')} diagram]({svgs[k.stem]})]({svgs[k.stem]}){{ .fp-diagram }}", "",
                  "## Source", "", f"`schemas/{k.name}`:", "", "```yaml", k.read_text(encoding="utf-8").rstrip(),
                  "```", ""]
        write(d / f"{k.stem}.md", "\n".join(lines))
        pages.append(k.stem)
    for proto in sorted((ROOT / "schemas").glob("*.proto")):
        index.append(f"| [{proto.name}]({proto.stem}.md) | testee protocol messages (protobuf) | "
                     f"[testee.md](../testee.md) |")
        write(d / f"{proto.stem}.md", "\n".join([
            f"# {proto.name}", "",
            "The messages the conformance runner and a testee exchange over the testee's stdin/stdout; "
            "[the testee protocol](../testee.md) fixes their meaning and the "
            "[implementers' guide](../implementers.md) walks through them.", ""]
            + proto_tables(proto) + [
            "## Source", "", f"`schemas/{proto.name}`:", "",
            "```protobuf", proto.read_text(encoding="utf-8").rstrip(), "```", ""]))
        pages.append(proto.stem)
    index.append("| [Report JSON Schemas](reports.md) | the JSON every `frameproof` command writes (`--json`) | "
                 "[harness.md](../harness.md) |")
    gen_report_schemas(d)
    write(d / "index.md", "\n".join(index) + "\n")
    return pages


def gen_report_schemas(d: Path):
    """schemas/reports.md: the JSON Schemas of the reports (conformance/frameproof/schemas), shown and
    copied beside the page for download; the suite validates every report it writes against them."""
    src = ROOT / "conformance" / "frameproof" / "schemas"
    lines = ["# Report JSON Schemas", "",
             "Every report `frameproof run`, `net` (and `net --client`, `net --stress`), `autobahn` and `fuzz` write "
             "with `--json` follows `report.schema.json`; `frameproof matrix` writes `matrix.json` following "
             "`matrix.schema.json` (JSON Schema 2020-12). The CLI checks each report against its schema before "
             "writing it, and the suite's own tests validate every report they produce, so a CI that reads these "
             "files can rely on them. Fields a schema does not list are a kind's own additions; a reader of the "
             "listed ones need not know them.", ""]
    for f in sorted(src.glob("*.schema.json")):
        shutil.copyfile(f, d / f.name)
        lines += [f"## {f.name}", "", f"[Download]({f.name}) · source `conformance/frameproof/schemas/{f.name}`", "",
                  "```json", f.read_text(encoding="utf-8").rstrip(), "```", ""]
    write(d / "reports.md", "\n".join(lines))
