"""Reads the requirements (ID, level, text) out of the spec documents.

The spec is the source of truth: a requirement is a paragraph that starts with
``**ID** (LEVEL):``. Nothing here is typed twice.
"""
import re
from dataclasses import dataclass
from functools import lru_cache

from .paths import HARNESS_SPEC, SPEC_DIR

_REQ = re.compile(r"^\*\*(?P<id>[A-Z]{2,6}(?:-[A-Z0-9]{1,8})+-\d+)\*\* \((?P<level>MUST|SHOULD|MAY)\): (?P<text>.*)")


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str  # MUST | SHOULD | MAY
    protocol: str
    text: str
    section: str

    @property
    def category(self) -> str:
        """Required (MUST), recommended (SHOULD) or optional (MAY)."""
        return {"MUST": "required", "SHOULD": "recommended", "MAY": "optional"}[self.level]


def spec_files() -> dict:
    """name -> spec file: every registered protocol's, the specs of the layers a protocol carries
    (``Protocol.layer_specs``, e.g. rpc's service discovery), then the harness spec."""
    from . import protocols
    out = {p.name: p.spec_file for p in protocols.all_protocols()}
    for p in protocols.all_protocols():
        for name in layers_of(p.name):
            out[name] = SPEC_DIR / f"{name}.md"
    out["harness"] = HARNESS_SPEC
    return out


def layers_of(protocol: str) -> tuple:
    """The layer specs a protocol carries (their requirements have a prefix of their own, and their
    tests run under the protocol)."""
    from . import protocols
    return tuple(getattr(protocols.get(protocol), "layer_specs", ()))


@lru_cache(maxsize=None)
def requirements() -> dict:
    out = {}
    for protocol, path in spec_files().items():
        section = ""
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("## "):
                section = line[3:].strip()
            m = _REQ.match(line)
            if m:
                text = [m.group("text")]
                i += 1
                while i < len(lines) and lines[i].strip() and not lines[i].startswith(("<a ", "#", "**")):
                    text.append(lines[i].strip())
                    i += 1
                rid = m.group("id")
                if rid in out:
                    raise ValueError(f"duplicate requirement ID {rid} in {path}")
                out[rid] = Requirement(rid, m.group("level"), protocol, " ".join(text), section)
                continue
            i += 1
    return out


def level_of(req_ids) -> str:
    """The strongest level among the requirements (MUST > SHOULD > MAY)."""
    reqs = requirements()
    levels = [reqs[r].level for r in req_ids if r in reqs]
    for lv in ("MUST", "SHOULD", "MAY"):
        if lv in levels:
            return lv
    return "MUST"
