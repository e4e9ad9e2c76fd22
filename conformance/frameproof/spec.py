"""Reads the requirements (ID, level, text) out of the spec documents.

The spec is the source of truth: a requirement is a paragraph that starts with
``**ID** (LEVEL; source: SOURCE):``. Nothing here is typed twice.

SOURCE says whose rule it is (spec/harness.md, "Requirement sources"): ``rfc`` (the RFC's MUST),
``rfc-should`` (the RFC's SHOULD, made a MUST here), ``upstream`` (the upstream implementation's
behaviour, kept) or ``spec`` (this spec's own decision, stricter than or different from the RFC /
upstream; its paragraph gives the reason in a sentence starting "Spec decision:"). A requirement
without the label parses with source ``""`` (unlabelled); the suite's own tests reject that.
"""
import re
from dataclasses import dataclass
from functools import lru_cache

from .paths import HARNESS_SPEC, SPEC_DIR

_REQ = re.compile(r"^\*\*(?P<id>[A-Z]{2,6}(?:-[A-Z0-9]{1,8})+-\d+)\*\* \((?P<level>MUST|SHOULD|MAY)"
                  r"(?:; source: (?P<source>[a-z-]+))?\): (?P<text>.*)")

# source label -> what it means. `frameproof run/net --level rfc` counts as failures only the
# requirements whose source is in RFC_LEVEL (and unlabelled ones); the others are listed apart.
SOURCES = {"rfc": "the RFC's MUST", "rfc-should": "the RFC's SHOULD (a MUST here)",
           "upstream": "upstream's behaviour", "spec": "this spec's own decision"}
RFC_LEVEL = ("rfc", "upstream")
REASON_MARK = "Spec decision:"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str  # MUST | SHOULD | MAY
    protocol: str
    text: str
    section: str
    source: str = ""  # rfc | rfc-should | upstream | spec; "" when the spec gives no label

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
                src = m.group("source") or ""
                if src and src not in SOURCES:
                    raise ValueError(f"{path}: {rid}: unknown source {src!r} (known: {', '.join(SOURCES)})")
                out[rid] = Requirement(rid, m.group("level"), protocol, " ".join(text), section, src)
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


def source_of(rid: str) -> str:
    """The source label of a requirement ("" when unlabelled or unknown)."""
    r = requirements().get(rid)
    return r.source if r else ""


def rfc_verdict(req_ids, sources=None) -> str:
    """How a failure that breaks `req_ids` counts at ``--level rfc``: ``failed`` when any of them is
    the RFC's MUST, upstream's behaviour, unlabelled or unknown; else ``stricter`` when any is this
    spec's own decision; else ``should`` (only RFC SHOULDs broken)."""
    if sources is None:
        sources = {rid: r.source for rid, r in requirements().items()}
    srcs = {sources.get(r, "") for r in req_ids}
    if not srcs or srcs - {"spec", "rfc-should"}:
        return "failed"
    return "stricter" if "spec" in srcs else "should"
