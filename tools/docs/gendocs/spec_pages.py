"""The spec pages: each spec with the tests that check every requirement, and the requirement index."""
from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

from frameproof import spec as fspec
from .common import ROOT, SUITES, _PREFIXES, esc_cell, write


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
    req_re = re.compile(r"^\*\*(?P<id>[A-Z]{2,6}(?:-[A-Z0-9]{1,8})+-\d+)\*\* \((?P<level>MUST|SHOULD|MAY)"
                        r"(?:; source: [a-z-]+)?\):")
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
             "tests that name the requirement (`frameproof.catalog`); the spec pages list them. *Source* says "
             "whose rule it is: `rfc` (the RFC's MUST), `rfc-should` (the RFC's SHOULD, a MUST here), `upstream` "
             "(upstream's behaviour) or `spec` (this spec's own decision, its reason in the requirement); "
             "`frameproof run/net --level rfc` counts only `rfc` and `upstream` failures as failures.", "",
             "| ID | level | source | spec | section | tests | requirement |", "|---|---|---|---|---|---:|---|"]
    for rid, r in reqs.items():
        text = r.text.replace("`", "")  # a shortened text must not end inside a code span
        text = text if len(text) <= 160 else text[:157].rsplit(" ", 1)[0] + " …"
        lines.append(f"| [{rid}]({r.protocol}.md#{rid}) | {r.level} | {r.source or '—'} | {r.protocol} | {esc_cell(r.section)} | "
                     f"{len(rmap.get(rid, []))} | {esc_cell(text)} |")
    write(out / "requirements.md", "\n".join(lines) + "\n")
