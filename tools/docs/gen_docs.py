#!/usr/bin/env python3
"""Generates the Markdown sources of the spec docs site (MkDocs, see mkdocs.yml) from
the repository: nothing on the site is typed twice.

  spec/*.md            -> <out>/<name>.md, each requirement followed by the tests that check
                          it (frameproof.catalog.requirement_map(), the suite's own map)
  schemas/*.ksy        -> <out>/schemas/<name>.md: field tables from the .ksy, the Kaitai
                          compiler's graphviz diagram rendered to SVG by `dot`, the source
  schemas/testee.proto -> <out>/schemas/testee.md
  conformance/vectors  -> <out>/vectors/<protocol>.md: every vector, hex dumps annotated by
                          field (frames and errors from frameproof.oracle, field positions from
                          the same .ksy compiled with Kaitai's --debug position tracking)
  reports/matrix.json  -> <out>/results/matrix.md (implementation x requirement)
  results/bench-*.*    -> <out>/results/benchmarks.md (+ PNG charts)
  tools/docs/pages/*   -> hand-written pages (landing page template, implementers' guide)

  -> <out>.mkdocs.yml: mkdocs.yml (INHERIT) + the sources directory + the navigation

Usage: gen_docs.py --out build/docs [--config FILE] [--kaitai-lib tools/kaitai/lib] [--matrix FILE] [--results DIR]
"""
from __future__ import annotations

import argparse
import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "conformance"))

from frameproof import catalog, oracle, spec as fspec, vectors as V  # noqa: E402
from frameproof import protocols as registry  # noqa: E402

PROTOCOLS = registry.names()

HERE = Path(__file__).resolve().parent
# requirement-ID prefixes come from the specs (STD, LF, HAR, ...), never typed here
_PREFIXES = "|".join(sorted({r.split("-", 1)[0] for r in fspec.requirements()}))
ID_RE = re.compile(rf"\b(?:{_PREFIXES})-[A-Z]+-\d+\b")
SUITES = {"run": "codec", "net": "network (server)", "client": "load client"}
VERDICTS = {"y": "accept (y_)", "n": "reject (n_)", "i": "implementation-defined (i_)"}

# ---------------------------------------------------------------- helpers


def esc_cell(s: str) -> str:
    """Text safe inside a Markdown table cell. An escaped pipe inside a code span would show its
    backslash, so a cell with both loses its code spans."""
    s = str(s)
    if "|" in s and "`" in s:
        s = s.replace("`", "")
    return s.replace("|", "\\|").replace("\n", " ")


def link_ids(text: str, prefix: str) -> str:
    """Links every known requirement ID in `text` to its anchor on the spec pages."""
    reqs = fspec.requirements()

    def sub(m):
        rid = m.group(0)
        r = reqs.get(rid)
        return f"[{rid}]({prefix}{r.protocol}.md#{rid})" if r else rid
    return ID_RE.sub(sub, text)


def req_link(rid: str, prefix: str) -> str:
    r = fspec.requirements().get(rid)
    return f"[{rid}]({prefix}{r.protocol}.md#{rid})" if r else f"`{rid}`"


def write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- spec pages


def grouped_tests(tests):
    """Tests of one requirement, the variants of one vector folded into one row."""
    groups = OrderedDict()
    for t in tests:
        if t.get("vector"):
            key = ("v", t["vector"])
            g = groups.setdefault(key, {"name": t["name"].rsplit("/", 1)[0] + "/…", "vector": t["vector"],
                                        "suite": t["suite"], "description": t["description"], "variants": []})
            g["variants"].append(t["name"].rsplit("/", 1)[1])
        else:
            groups[("t", t["name"])] = {"name": t["name"], "vector": None, "suite": t["suite"],
                                        "description": t["description"], "variants": []}
    return list(groups.values())


def checked_by_block(rid: str, tests, prefix: str) -> list:
    if not tests:
        return ['!!! failure "Not checked by any test"', "",
                "    The suite has no test for this requirement yet.", ""]
    groups = grouped_tests(tests)
    lines = [f'??? success "Checked by {len(tests)} test{"s" if len(tests) != 1 else ""} '
             f'({len(groups)} case{"s" if len(groups) != 1 else ""})"', "",
             "    | test | suite | what it checks |", "    |---|---|---|"]
    for g in groups:
        name = f"`{g['name']}`"
        if g["vector"]:
            proto, vid = g["vector"].split("/", 1)
            name = f"[`{g['name']}`]({prefix}vectors/{proto}.md#{vid})"
            name += f" ({', '.join(g['variants'])})"
        lines.append(f"    | {name} | {SUITES.get(g['suite'], g['suite'])} | {esc_cell(g['description'])} |")
    lines.append("")
    return lines


def rewrite_spec_links(text: str, src: Path) -> str:
    """Links out of spec/ point at files the site renders as pages: rewrite them, or
    turn them into plain code text when the site has no page for them."""
    def sub(m):
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        path, _, frag = target.partition("#")
        if path.startswith("../schemas/"):
            stem = Path(path).name.split(".")[0]
            return f"[{label}](schemas/{stem}.md{'#' + frag if frag else ''})"
        if "/" not in path and path.endswith(".md") and (src.parent / path).exists():
            return m.group(0)
        return f"{label} (`{path}`)" if label.strip("`") != path.split("/")[-1] else label
    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", sub, text)


_PROSE_ID = re.compile(rf"(?<![\w\[*#/`-])((?:{_PREFIXES})-[A-Z]+-\d+)(?![\w\]*`-])")


def link_prose_ids(line: str, page: str) -> str:
    """Links requirement IDs mentioned in spec prose to their anchors (not inside code spans,
    links or the bold ID that starts a requirement)."""
    reqs = fspec.requirements()
    parts = line.split("`")

    def sub(m):
        r = reqs.get(m.group(1))
        if not r:
            return m.group(0)
        target = f"#{r.id}" if r.protocol == page else f"{r.protocol}.md#{r.id}"
        return f"[{r.id}]({target})"
    for k in range(0, len(parts), 2):  # even parts are outside code spans
        if "](" in parts[k] or "<a " in parts[k]:
            # leave segments that already hold links alone
            continue
        parts[k] = _PROSE_ID.sub(sub, parts[k])
    return "`".join(parts)


def gen_spec_pages(out: Path, rmap) -> list:
    pages = []
    req_re = re.compile(r"^\*\*(?P<id>[A-Z]{2,6}(?:-[A-Z0-9]{1,8})+-\d+)\*\* \((?P<level>MUST|SHOULD|MAY)\):")
    for src in sorted((ROOT / "spec").glob("*.md")):
        lines = rewrite_spec_links(src.read_text(encoding="utf-8"), src).splitlines()
        outl = []
        i = 0
        in_fence = False
        noted = False
        while i < len(lines):
            line = lines[i]
            if line.startswith("```"):
                in_fence = not in_fence
            m = None if in_fence else req_re.match(line)
            if not m:
                outl.append(line if in_fence or line.startswith(("#", "<")) else link_prose_ids(line, src.stem))
                i += 1
                if line.startswith("# ") and not noted:
                    noted = True
                    has_reqs = any(r.protocol == src.stem for r in fspec.requirements().values())
                    outl += ["", f"*Rendered from `spec/{src.name}`." + (
                        f" Every requirement is an anchor (`{src.stem}/#ID`); below each one, the "
                        "conformance tests that check it, from the suite's own catalog.*" if has_reqs else "*")]
                continue
            # the requirement's ID links to itself (copy the link), then the paragraph runs to the
            # next blank line
            rid = m.group("id")
            outl.append(link_prose_ids(line.replace(f"**{rid}**", f"[**{rid}**](#{rid})", 1), src.stem))
            i += 1
            while i < len(lines) and lines[i].strip():
                outl.append(link_prose_ids(lines[i], src.stem))
                i += 1
            outl.append("")
            outl += checked_by_block(m.group("id"), rmap.get(m.group("id"), []), "")
        write(out / src.name, "\n".join(outl) + "\n")
        pages.append(src.stem)
    return pages


def gen_requirements_index(out: Path, rmap):
    reqs = fspec.requirements()
    lines = ["# All requirements", "",
             f"Every requirement of every spec ({len(reqs)} in all), read from `spec/*.md` by "
             "`frameproof.spec` — the same parser the suite uses. *Tests* counts the conformance "
             "tests that name the requirement (`frameproof.catalog`); the spec pages list them.", "",
             "| ID | level | spec | section | tests | requirement |", "|---|---|---|---|---:|---|"]
    for rid, r in reqs.items():
        text = r.text.replace("`", "")  # a shortened text must not end inside a code span
        text = text if len(text) <= 160 else text[:157].rsplit(" ", 1)[0] + " …"
        lines.append(f"| [{rid}]({r.protocol}.md#{rid}) | {r.level} | {r.protocol} | {esc_cell(r.section)} | "
                     f"{len(rmap.get(rid, []))} | {esc_cell(text)} |")
    write(out / "requirements.md", "\n".join(lines) + "\n")


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
                  f"Generated by `kaitai-struct-compiler -t graphviz` and rendered by graphviz `dot`.", "",
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
    write(d / "index.md", "\n".join(index) + "\n")
    return pages


# ---------------------------------------------------------------- vectors and annotated hex dumps


def load_debug_parsers(compiled: Path):
    """The schemas compiled with Kaitai's --debug (position tracking, explicit _read)."""
    mods = {}
    for k in sorted((ROOT / "schemas").glob("*.ksy")):
        mid = yaml.safe_load(k.read_text())["meta"]["id"]
        spec_ = importlib.util.spec_from_file_location(f"fp_docs_dbg_{mid}", compiled / "python" / f"{mid}.py")
        mod = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(mod)
        mods[mid] = mod
    return mods




class Annotator:
    def __init__(self, parsers):
        import kaitaistruct
        self.ks = kaitaistruct
        self.parsers = parsers

    def _small_int_struct(self, obj) -> bool:
        vals = [getattr(obj, n, None) for n in obj.SEQ_FIELDS]
        return all(v is None or isinstance(v, (int, bool)) for v in vals)

    def _summary(self, obj) -> str:
        if hasattr(type(obj), "value"):
            try:
                return f"{obj.value}"
            except Exception:  # pragma: no cover - partial struct
                pass
        parts = [f"{n}={int(getattr(obj, n))}" for n in obj.SEQ_FIELDS if getattr(obj, n, None) is not None]
        return ", ".join(parts)

    def _walk(self, obj, prefix=""):
        out = []
        for name in obj.SEQ_FIELDS:
            if name not in obj._debug:
                continue  # conditional field not present
            d = obj._debug[name]
            val = getattr(obj, name, None)
            if isinstance(val, self.ks.KaitaiStruct) and not self._small_int_struct(val):
                out += self._walk(val, prefix)
                if "end" not in d:
                    break
                continue
            if "end" not in d:
                break
            if isinstance(val, self.ks.KaitaiStruct):
                text = self._summary(val)
            elif isinstance(val, bool):
                text = str(int(val))
            elif isinstance(val, int):
                text = f"{val}" + (f" (0x{val:X})" if val > 9 else "")
            elif isinstance(val, (bytes, bytearray)):
                text = f"{len(val)} bytes" + (f": {bytes_preview(val)}" if val else "")
            else:
                text = str(val)
            if d["end"] > d["start"]:
                out.append([d["start"], d["end"], name, text])
        return out

    def _parse(self, codec, data, pos):
        io = self.ks.KaitaiStream(self.ks.BytesIO(data))
        io.seek(pos)
        module, cls, params = codec.spec.kaitai_frame(codec)
        obj = getattr(self.parsers[module], cls)(*params, io)
        err = None
        try:
            obj._read()
        except (EOFError, self.ks.KaitaiStructError, ValueError) as e:
            err = e
        return obj, err, io.pos()

    def segments(self, codec, data: bytes):
        """[start, end, frame index, field, value] covering the stream, from the oracle's
        decision (frames, error) and the debug parser's field positions."""
        res = oracle.decode(codec, data)
        segs = []
        pos = 0
        for i, fr in enumerate(res.frames):
            obj, err, end = self._parse(codec, data, pos)
            # the debug parse must agree with the oracle (its payload, where the frame has one at the top)
            if err or (hasattr(obj, "payload") and bytes(obj.payload) != fr.payload):
                raise SystemExit(f"annotation disagrees with the oracle at offset {pos}: {err}")
            for s, e, name, text in self._walk(obj):
                segs.append([s, e, i, name, text])
            pos = end
        if res.error:
            if res.error.offset != pos:
                raise SystemExit(f"oracle error offset {res.error.offset} != annotation position {pos}")
            if not codec.spec.invalid_config(codec):
                obj, _err, _end = self._parse(codec, data, pos)
                for s, e, name, text in self._walk(obj):
                    if name != "payload" and e <= len(data):
                        segs.append([s, e, len(res.frames), name, text])
                        pos = e
            # the rest of the stream from the end of the last field read (possibly nothing)
            segs.append([pos, len(data), len(res.frames), "rejected",
                         f"frame at offset {res.error.offset}: {res.error.requirement}"])
        elif pos < len(data):  # the protocol ends the stream before its bytes do (e.g. a WebSocket close)
            segs.append([pos, len(data), len(res.frames), "not read",
                         "after the frame that ends the stream: the decoder reads no further"])
        return res, segs


FIELD_CLASSES = {}


def bytes_preview(b: bytes, n: int = 12) -> str:
    """Short rendering of a byte string: quoted text when it is printable ASCII, else hex."""
    if all(32 <= c < 127 for c in b[:40]) and len(b) <= 40:
        return '"' + b.decode("ascii") + '"'
    return b[:n].hex(" ") + (" …" if len(b) > n else "")


def field_class(name: str) -> str:
    if name == "rejected":
        return "fp-x"
    if name not in FIELD_CLASSES:
        FIELD_CLASSES[name] = f"fp-f{len(FIELD_CLASSES) % 8}"
    return FIELD_CLASSES[name]


def hexdump_html(data: bytes, segs, max_rows=24) -> str:
    owner = {}
    for k, (s, e, *_rest) in enumerate(segs):
        for b in range(s, min(e, len(data))):
            owner[b] = k
    nrows = (len(data) + 15) // 16
    boundaries = set()
    for s, e, *_ in segs:
        boundaries.add(s // 16)
        boundaries.add(max(e - 1, s) // 16)
    keep = []
    for r in range(nrows):
        if r < 4 or r in boundaries or r - 1 in boundaries or r == nrows - 1:
            keep.append(r)
    out = ['<div class="fp-hex" data-search-exclude><pre>']
    last = -1
    shown = 0
    for r in keep:
        if shown >= max_rows:
            out.append(f'<span class="fp-gap">… {len(data) - r * 16} more bytes</span>')
            break
        if r != last + 1:
            out.append(f'<span class="fp-gap">⋮ {(r - last - 1) * 16} bytes</span>')
        # one span per run of bytes of the same field in this row
        cells = []
        asc = []
        count = 0
        b = r * 16
        row_end = min(r * 16 + 16, len(data))
        while b < row_end:
            k = owner.get(b)
            e = b
            while e < row_end and owner.get(e) == k:
                e += 1
            hx = " ".join(f"{x:02x}" for x in data[b:e])
            ch = html.escape("".join(chr(x) if 32 <= x < 127 else "." for x in data[b:e]))
            if k is None:
                cells.append(hx)
                asc.append(ch)
            else:
                s, _e, fi, name, text = segs[k]
                title = html.escape(f"frame {fi + 1} · {name} = {text}", quote=True)
                cls = field_class(name) + (" fp-alt" if fi % 2 else "")
                cells.append(f'<span class="{cls}" title="{title}">{hx}</span>')
                asc.append(f'<span class="{cls}">{ch}</span>')
            count += e - b
            b = e
        pad = "   " * (16 - count)
        out.append(f'<span class="fp-off">{r * 16:08x}</span>  {" ".join(cells)}{pad}  {"".join(asc)}')
        last = r
        shown += 1
    out.append("</pre></div>")
    return "\n".join(out)


def field_table(segs, max_rows=24) -> list:
    lines = ["| offset | bytes | frame | field | value |", "|---:|---:|---:|---|---|"]
    for s, e, fi, name, text in segs[:max_rows]:
        cls = field_class(name)
        val = esc_cell(text)
        if name == "rejected":
            val = (f"the decoder must reject the frame: {link_ids(val, '../')}"
                   + (f" ({e - s} more bytes not decoded)" if e > s else ""))
        lines.append(f"| {s} | {e - s} | {fi + 1} | <span class=\"{cls}\">{name}</span> | {val} |")
    if len(segs) > max_rows:
        frames = len({fi for _s, _e, fi, *_ in segs})
        lines.append(f"| | | | … | {len(segs) - max_rows} more fields ({frames} frames in all) |")
    return lines + [""]


def frame_text(f: oracle.Frame, protocol: str) -> str:
    p = f.payload
    shown = p[:16].hex(" ") + (" …" if len(p) > 16 else "")
    head = registry.get(protocol).describe_header(f)
    return (f"{head}, " if head else "") + f"payload {len(p)} bytes `{shown}`"


def expected_lines(frames, error, protocol, prefix) -> list:
    """'no frames' / 'N frames:' + list, then the error sentence."""
    if frames:
        head = f"{len(frames)} frame{'s' if len(frames) != 1 else ''}"
    else:
        head = "no frames"
    if error:
        head += f", then the error {req_link(error.requirement, prefix)} at offset {error.offset}"
    out = [head + (":" if frames else "."), ""]
    for i, f in enumerate(frames[:8]):
        out.append(f"{i + 1}. {frame_text(f, protocol)}")
    if len(frames) > 8:
        out.append(f"9. … {len(frames) - 8} more")
    if frames:
        out.append("")
    return out


def codec_text(c: oracle.Codec) -> str:
    parts = []
    if c.max_payload:
        parts.append(f"max_payload {c.max_payload}")
    for k, v in c.params_json().items():
        parts.append(f"{k} {json.dumps(v)}")
    return ", ".join(parts) or "defaults"


def annotated(ann, codec, data, title) -> list:
    note = ""
    if codec.spec.kaitai_frame(codec) is None:
        segs, note = [], "(no field annotation for this protocol yet)"
    elif codec.spec.invalid_config(codec):
        err = oracle.decode(codec, data).error
        segs = [[0, len(data), 0, "rejected", f"{err.requirement} (invalid configuration)"]] if data else []
    else:
        try:
            _res, segs = ann.segments(codec, data)
        except SystemExit as e:
            raise SystemExit(f"{title}: {e}") from e
    out = [f"**{title}** ({len(data)} bytes){' ' + note if note else ''}:", ""]
    if not data:
        return out + ["(empty)", ""]
    out += [hexdump_html(data, segs), ""]
    if segs:
        out += field_table(segs)
    return out


def gen_vectors(out: Path, ann, rmap) -> list:
    d = out / "vectors"
    d.mkdir(parents=True, exist_ok=True)
    tests_by_vector = {}
    for t in catalog.tests():
        if t.get("vector"):
            tests_by_vector.setdefault(t["vector"], []).append(t["name"])
    index = ["# Test vectors", "",
             "The codec suite's inputs, one JSON file per vector in `conformance/vectors/<protocol>/`, "
             "named after JSONTestSuite: `y_` must be accepted, `n_` must be rejected, `i_` leaves a "
             "documented choice. Each vector is run whole and at many splits (`whole`, `chunked-1`, …). "
             "The pages show every vector with its bytes as a hex dump annotated by field: frames and "
             "errors are what the suite's oracle (`frameproof.oracle`) decides, field positions come "
             "from the Kaitai parser generated from the same schema. Hover a byte to see its field.", "",
             "| protocol | vectors | decode | encode | match |", "|---|---:|---:|---:|---:|"]
    pages = []
    for proto in PROTOCOLS:
        vecs = V.load(proto)
        kinds = {k: sum(1 for v in vecs if v.kind == k) for k in ("decode", "encode", "match")}
        index.append(f"| [{proto}]({proto}.md) | {len(vecs)} | {kinds['decode']} | {kinds['encode']} | {kinds['match']} |")
        lines = [f"# {proto} test vectors", "",
                 f"{len(vecs)} vectors from `conformance/vectors/{proto}/` "
                 f"(spec: [{proto}](../{proto}.md), schema: [{proto}.ksy](../schemas/{proto}.md)). "
                 "Hover a byte in a hex dump for its frame and field; every other frame is underlined.", "",
                 "| vector | kind | verdict | requirements | description |", "|---|---|---|---|---|"]
        for v in vecs:
            lines.append(f"| [`{v.id}`](#{v.id}) | {v.kind} | {v.verdict} | "
                         f"{', '.join(req_link(r, '../') for r in v.requirements)} | {esc_cell(v.description)} |")
        lines.append("")
        for v in vecs:
            lines += vector_section(v, ann, tests_by_vector.get(f"{proto}/{v.id}", []))
        write(d / f"{proto}.md", "\n".join(lines) + "\n")
        pages.append(proto)
    write(d / "index.md", "\n".join(index) + "\n")
    return pages


def vector_section(v, ann, test_names) -> list:
    proto = v.protocol
    out = [f"## {v.id} {{#{v.id}}}", "",
           f"**{v.kind}** · {VERDICTS.get(v.verdict, v.verdict)} · requirements "
           f"{', '.join(req_link(r, '../') for r in v.requirements)} · codec: {codec_text(v.codec)}", "",
           link_ids(v.description, "../") or "", ""]
    if test_names:
        base = test_names[0].rsplit("/", 1)[0]
        variants = [n.rsplit("/", 1)[1] for n in test_names]
        out += [f"Tests: `{base}/` {{{', '.join(variants)}}}", ""]
    if v.kind == "decode":
        data = v.data
        if v.splits:
            out += [f"Split into reads at offsets {v.splits}.", ""]
        out += annotated(ann, v.codec, data, f"Input stream of {v.protocol}/{v.id}")
        outcomes = v.outcomes()
        if len(outcomes) == 1:
            exp = expected_lines(outcomes[0].frames, outcomes[0].error, proto, "../")
            out += ["**Expected:** " + exp[0]] + exp[1:]
        else:
            out += ["**Expected:** any one of these outcomes conforms:", ""]
            for k, o in enumerate(outcomes):
                out += [f"*Outcome {k + 1}*", ""] + expected_lines(o.frames, o.error, proto, "../")
        if v.check_encode:
            out += ["Encoding the expected frames must give exactly the input bytes.", ""]
    elif v.kind == "encode":
        out += [f"**Frame to encode:** {frame_text(v.frame, proto)}", ""]
        exp = v.expect
        if isinstance(exp, oracle.Error):
            out += [f"**Expected:** the encoder refuses with {req_link(exp.requirement, '../')}.", ""]
        else:
            out += annotated(ann, v.codec, exp, "Expected bytes")
    elif v.kind == "match":
        out += [f"Timeout: {v.raw.get('timeout_ms') or oracle.DEFAULT_TIMEOUT_MS} ms (virtual clock).", "",
                "| # | event | bytes |", "|---:|---|---|"]
        received = b""
        for k, (ev, arg) in enumerate(v.events()):
            if ev == "advance_ms":
                out.append(f"| {k} | advance {arg} ms | |")
            elif not isinstance(arg, (bytes, bytearray)):  # a typed frame (send_frame)
                out.append(f"| {k} | {ev} | {esc_cell(frame_text(arg, v.protocol))} |")
            else:
                shown = arg[:24].hex(" ") + (" …" if len(arg) > 24 else "")
                out.append(f"| {k} | {ev} ({len(arg)} bytes) | `{shown}` |")
                if ev == "receive":
                    received += arg
        out.append("")
        exp = v.expected_match()
        sent = b"".join(exp.sent)
        if sent:
            out += annotated(ann, v.codec, sent, "Expected bytes sent (all send events, concatenated)")
        if received:
            out += annotated(ann, v.codec, received, "Bytes received (all receive events, concatenated)")
        out += ["**Expected completions:**", "", "| # | completion | request | frame |", "|---:|---|---:|---|"]
        for k, c in enumerate(exp.completions):
            out.append(f"| {k} | {c.kind} | {'' if c.request is None else c.request} | "
                       f"{esc_cell(frame_text(c.frame, proto)) if c.frame else ''} |")
        out.append("")
        if exp.error:
            out += [f"and the connection fails with {req_link(exp.error.requirement, '../')} at offset "
                    f"{exp.error.offset}.", ""]
    raw = json.dumps(v.raw, indent=1)
    if len(raw) > 4000:
        raw = raw[:4000] + "\n… (truncated)"
    out += [f'??? abstract "Source: conformance/vectors/{proto}/{v.id}.json"', "", "    ```json"]
    out += ["    " + line for line in raw.splitlines()] + ["    ```", ""]
    return out


# ---------------------------------------------------------------- results


def find_matrix(explicit):
    if explicit:
        p = Path(explicit)
        return p if p.exists() else None
    main = ROOT / "reports" / "matrix.json"
    if main.exists():
        return main
    cands = sorted((ROOT / "reports").glob("*/matrix.json"), key=lambda p: p.stat().st_mtime)
    return cands[-1] if cands else None


def gen_matrix(out: Path, path):
    lines = ["# Conformance results", ""]
    if not path:
        lines += ['!!! note "No results yet"', "",
                  "    No conformance matrix has been generated in this checkout. Run the main job, then "
                  "rebuild the site:", "", "    ```sh", "    bash tools/main.sh            # builds every implementation, writes reports/matrix.json",
                  "    ./frameproof matrix --no-build   # the same with the implementations already built",
                  "    bash tools/docs/build.sh", "    ```", ""]
        write(out / "results" / "matrix.md", "\n".join(lines))
        return
    from frameproof.matrix import render
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["implementations"], doc["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        lines += ['!!! warning "Results unreadable"', "",
                  f"    `{path.name}` could not be read ({type(e).__name__}); run the matrix again.", ""]
        write(out / "results" / "matrix.md", "\n".join(lines))
        return
    names = doc["implementations"]
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    lines += [f"Generated by `frameproof matrix` on **{doc.get('generated', '?')}** "
              f"(profile `{doc.get('profile', '?')}`, {doc.get('duration_s', '?')} s) from `{rel}`. "
              "Rebuild the site after a new run to update this page.", "",
              "## Summary", "", "Tests passed per suite and implementation; interop runs every load client "
              "against every echo server with every reply verified.", "",
              render(doc).replace("\nFailures:\n", "\n**Failures:**\n\n"), "",
              "## Implementation × requirement", "",
              "Every requirement of every spec, with the tests run against each implementation in all "
              "suites (codec, network, load client). ✓ N: N tests passed, none failed; ✗ F/N: F of N "
              "failed; *skip*: only skipped tests; — : no test of it ran.", "",
              "| requirement | level | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    agg = {n: {} for n in names}
    for n in names:
        r = doc["results"].get(n, {})
        for group in ("codec", "net", "client"):
            for cell in (r.get(group) or {}).values():
                for rid, c in (cell.get("requirements") or {}).items():
                    a = agg[n].setdefault(rid, {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0, "xpassed": 0})
                    for k in a:
                        a[k] += c.get(k, 0)
    for rid, req in fspec.requirements().items():
        cells = []
        for n in names:
            if doc["results"].get(n, {}).get("build") not in (None, 0):
                cells.append("✗ build")
                continue
            a = agg[n].get(rid)
            if not a:
                cells.append("—")
                continue
            total = a["passed"] + a["failed"] + a["xfailed"] + a["xpassed"]
            bad = a["failed"] + a["xpassed"]
            if bad:
                cells.append(f"✗ {bad}/{total}")
            elif total:
                cells.append(f"✓ {total}" + (f" ({a['xfailed']} xfail)" if a["xfailed"] else ""))
            else:
                cells.append("skip")
        lines.append(f"| [{rid}](../{req.protocol}.md#{rid}) | {req.level} | " + " | ".join(cells) + " |")
    lines.append("")
    write(out / "results" / "matrix.md", "\n".join(lines))


def _sanitize_md(text: str, keep_images) -> str:
    """Keeps a report's Markdown buildable in strict mode: links to anything but the images
    copied next to it (or an absolute URL) become plain text."""
    def sub(m):
        bang, label, target = m.group(1), m.group(2), m.group(3)
        if re.match(r"^https?://", target):
            return m.group(0)
        if bang and target in keep_images:
            return m.group(0)
        return label if not bang else f"*(image {label} not available)*"
    return re.sub(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)", sub, text)


def gen_bench(out: Path, results_dir: Path):
    d = out / "results"
    d.mkdir(parents=True, exist_ok=True)
    runs = sorted(results_dir.glob("bench-*.json")) if results_dir.exists() else []
    lines = ["# Benchmark results", ""]
    if not runs:
        lines += ['!!! note "No results yet"', "",
                  "    No benchmark results were found in `results/`. The benchmark runner writes "
                  "`results/bench-<date>.json`, `.md` and PNG charts:", "", "    ```sh",
                  "    bash tools/bench/run.sh      # or: ./frameproof bench", "    bash tools/docs/build.sh",
                  "    ```", ""]
        write(d / "benchmarks.md", "\n".join(lines))
        return
    latest = runs[-1]
    stem = latest.stem
    pngs = sorted(results_dir.glob(f"{stem}*.png"))
    for p in pngs:
        shutil.copy(p, d / p.name)
    lines += [f"The latest run, `results/{latest.name}` (written by the benchmark runner, "
              "`bash tools/bench/run.sh`). "
              + (f"Earlier runs kept in `results/`: {', '.join('`' + r.name + '`' for r in runs[:-1])}."
                 if len(runs) > 1 else ""), ""]
    md = latest.with_suffix(".md")
    if md.exists():
        body = md.read_text(encoding="utf-8")
        body = re.sub(r"\A# [^\n]*\n", "", body)          # our own title instead
        body = re.sub(r"(?m)^(#{1,5}) ", r"#\1 ", body)     # its sections below ours
        body = _sanitize_md(body, {p.name for p in pngs})
        shown = set(re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", body))
        lines += [body.rstrip(), ""]
        extra = [p for p in pngs if p.name not in shown]
    else:
        try:
            doc = json.loads(latest.read_text(encoding="utf-8"))
        except ValueError:
            doc = {}
        lines += [f"(No Markdown report next to the JSON; schema `{doc.get('schema', '?')}`, "
                  f"date {doc.get('date', '?')}.)", ""]
        extra = pngs
    if extra:
        lines += ["## Charts", ""] + [f"![{p.stem}]({p.name})" for p in extra] + [""]
    write(d / "benchmarks.md", "\n".join(lines))


# ---------------------------------------------------------------- hand-written pages


def gen_pages(out: Path, rmap, spec_pages):
    reqs = fspec.requirements()
    tests = catalog.tests()
    nvec = {p: len(V.load(p)) for p in PROTOCOLS}
    levels = {lv: sum(1 for r in reqs.values() if r.level == lv) for lv in ("MUST", "SHOULD", "MAY")}
    subst = {
        "{{requirements}}": str(len(reqs)),
        "{{must}}": str(levels["MUST"]),
        "{{should}}": str(levels["SHOULD"]),
        "{{vectors}}": str(sum(nvec.values())),
        "{{tests}}": str(len(tests)),
        "{{untested}}": str(sum(1 for r in reqs if not rmap.get(r))),
    }
    for src in hand_written_pages():
        text = src.read_text(encoding="utf-8")
        for k, v in subst.items():
            text = text.replace(k, v)
        write(out / src.name, text)
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "frameproof.css", assets / "frameproof.css")
    ids = {rid: f"{r.protocol}/" for rid, r in reqs.items()}
    write(assets / "requirement-ids.js", (HERE / "requirement-ids.js").read_text(encoding="utf-8")
          .replace("/*IDS*/{}", json.dumps(ids, sort_keys=True)))


SPEC_TITLES = {"harness": "Load-client harness", "testee": "Testee protocol", "discovery": "rpc service discovery"}


def hand_written_pages():
    """tools/docs/pages/*.md (landing page, implementers' guide) and the maintainers' docs/*.md."""
    return sorted((HERE / "pages").glob("*.md")) + sorted((ROOT / "docs").glob("*.md"))


def _h1(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def _protocol_first(stem: str):
    return (PROTOCOLS.index(stem) if stem in PROTOCOLS else len(PROTOCOLS), stem)


def gen_config(out: Path, config: Path, spec_pages, schema_pages, vector_pages):
    """The MkDocs configuration of this build: the repository's mkdocs.yml (INHERIT), this
    sources directory, and the navigation generated from the pages that exist, so that a new
    spec, schema or protocol shows up without editing mkdocs.yml."""
    order = sorted(spec_pages, key=_protocol_first)
    spec_nav = [{SPEC_TITLES.get(p, p): f"{p}.md"} for p in order] + [{"All requirements": "requirements.md"}]
    extra = [{_h1(p).split(":")[0]: p.name} for p in hand_written_pages() if p.name != "index.md"]
    schema_nav = ["schemas/index.md"] + [{next(f.name for f in (ROOT / "schemas").iterdir() if f.stem == st
                                                and f.suffix in (".ksy", ".proto")): f"schemas/{st}.md"}
                                          for st in sorted(schema_pages, key=_protocol_first)]
    nav = ([{"Home": "index.md"}, {"Specification": spec_nav}] + extra
           + [{"Schemas": schema_nav},
              {"Test vectors": ["vectors/index.md"] + [{f"{p} vectors": f"vectors/{p}.md"} for p in vector_pages]},
              {"Results": [{"Conformance matrix": "results/matrix.md"}, {"Benchmarks": "results/benchmarks.md"}]}])
    text = ("# generated by tools/docs/gen_docs.py: mkdocs.yml + this build's sources and navigation\n"
            + yaml.safe_dump({"INHERIT": str(ROOT / "mkdocs.yml"), "docs_dir": str(out.resolve()), "nav": nav},
                             sort_keys=False, allow_unicode=True))
    config.parent.mkdir(parents=True, exist_ok=True)
    tmp = config.with_name(config.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(config)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    ap.add_argument("--kaitai-lib", default=str(ROOT / "tools" / "kaitai" / "lib"))
    ap.add_argument("--matrix", help="matrix.json to show (default: reports/matrix.json, else the newest reports/*/matrix.json)")
    ap.add_argument("--results", default=str(ROOT / "results"), help="directory of bench-*.json/.md/.png")
    ap.add_argument("--config", help="MkDocs configuration to write (default: <out>.mkdocs.yml)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lib = Path(a.kaitai_lib)
    if not (lib / "kaitai-struct-compiler_2.13-0.11.jar").exists() and not list(lib.glob("kaitai-struct-compiler*.jar")):
        raise SystemExit(f"Kaitai compiler jars missing in {lib}: run `bash tools/bootstrap.sh`")
    rmap = catalog.requirement_map()
    spec_pages = gen_spec_pages(out, rmap)
    gen_requirements_index(out, rmap)
    with tempfile.TemporaryDirectory(prefix="fp-docs-ksc-") as tmp:
        compiled = compile_ksy(lib, Path(tmp))
        schema_pages = gen_schemas(out, compiled)
        vector_pages = gen_vectors(out, Annotator(load_debug_parsers(compiled)), rmap)
    gen_matrix(out, find_matrix(a.matrix))
    gen_bench(out, Path(a.results))
    gen_pages(out, rmap, spec_pages)
    config = Path(a.config) if a.config else out.with_name(out.name + ".mkdocs.yml")
    gen_config(out, config, spec_pages, schema_pages, vector_pages)
    n = sum(1 for _ in out.rglob("*.md"))
    print(f"docs sources: {n} pages in {out}; MkDocs configuration {config}")


if __name__ == "__main__":
    main()
