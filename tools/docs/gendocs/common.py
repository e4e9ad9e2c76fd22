"""What every page family shares: the repository's paths, the requirement-ID pattern and links,
escaping, writing a page."""
from __future__ import annotations

import re
import sys
from pathlib import Path



ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "conformance"))

from frameproof import spec as fspec  # noqa: E402
from frameproof import protocols as registry  # noqa: E402

PROTOCOLS = registry.names()

HERE = Path(__file__).resolve().parents[1]  # tools/docs: the stylesheet, the script, the hand-written pages
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
