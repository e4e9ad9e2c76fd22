"""The classes of each requirement's input space, and which of them a test's inputs covered (issue 26).

A *dimension* is one way the inputs of a requirement vary (the rpc id's place in the u32 range, the
case of a header name, the class of a close code, ...); it is declared once, with every class it has
and the requirement IDs it serves::

    RPC_ID = declare("rpc.id", ["0", "1", "2^31-1", "2^31", "2^32-1", "small", "other"], ["RPC-HDR-7"])

and the code that draws or sends an input notes the class of what it drew (a set add)::

    note(RPC_ID, id_class(rid))

The plugin resets the drawn classes before each test and writes those it drew into the test's JSON
report (``classes_covered``: {dimension: [classes drawn]}, only dimensions drawn). The suite's own
tests union a dimension's classes over a report's tests and require every declared class
(``missing``): a class no strategy draws is a gap in the input space, found before a bug hides in it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Set, Tuple


@dataclass(frozen=True)
class Dimension:
    name: str
    classes: Tuple[str, ...]
    requirements: Tuple[str, ...]


DECLARED: Dict[str, Dimension] = {}
DRAWN: Dict[str, Set[str]] = {}  # since the last reset: dimension -> classes drawn

#: the modules that declare dimensions (imported by ``declared``)
DECLARING_MODULES = ("frameproof.protocols.rpc.strategies", "frameproof.protocols.rpc.net",
                     "frameproof.protocols.rpc.discovery_stateful",
                     "frameproof.protocols.websocket.handshake_grammar", "frameproof.protocols.websocket.net",
                     "frameproof.protocols.websocket.client_opening", "frameproof.protocols.websocket.strategies",
                     "frameproof.protocols.websocket.deflate_net")


def declare(name: str, classes: Iterable[str], requirements: Iterable[str]) -> str:
    """Declares the dimension ``name`` with all its ``classes``; returns the name (for ``note``)."""
    d = Dimension(name, tuple(classes), tuple(requirements))
    old = DECLARED.get(name)
    if old is not None and old != d:
        raise ValueError(f"dimension {name!r} declared twice, differently")
    DECLARED[name] = d
    return name


def note(name: str, cls: str) -> None:
    """``cls`` of dimension ``name`` was drawn (or sent)."""
    s = DRAWN.get(name)
    if s is None:
        s = DRAWN[name] = set()
    s.add(cls)


def reset() -> None:
    DRAWN.clear()


def _order(name: str, classes: Iterable[str]) -> List[str]:
    d = DECLARED.get(name)
    rank = {c: i for i, c in enumerate(d.classes)} if d else {}
    return sorted(classes, key=lambda c: (rank.get(c, len(rank)), c))


def drawn() -> Dict[str, List[str]]:
    """The classes drawn since the last reset, per dimension, in declared order (for the report)."""
    return {n: _order(n, cs) for n, cs in sorted(DRAWN.items()) if cs}


def declared() -> Dict[str, Dimension]:
    """Every declared dimension (the declaring modules imported)."""
    import importlib
    for m in DECLARING_MODULES:
        importlib.import_module(m)
    return dict(DECLARED)


def union(tests: Iterable[Mapping]) -> Dict[str, Set[str]]:
    """The classes drawn per dimension over a report's tests (their ``classes_covered``)."""
    out: Dict[str, Set[str]] = {}
    for t in tests:
        for n, cs in (t.get("classes_covered") or {}).items():
            out.setdefault(n, set()).update(cs)
    return out


def missing(dimensions: Iterable[Dimension], covered: Mapping[str, Iterable[str]]) -> Dict[str, List[str]]:
    """The declared classes of ``dimensions`` that ``covered`` lacks: {dimension: [classes]} ({} when
    every class was drawn)."""
    out = {}
    for d in dimensions:
        got = set(covered.get(d.name, ()))
        gap = [c for c in d.classes if c not in got]
        if gap:
            out[d.name] = gap
    return out


def missing_text(gaps: Mapping[str, List[str]]) -> str:
    return "\n".join(f"  {n} ({', '.join(DECLARED[n].requirements) if n in DECLARED else '?'}): never drew "
                     f"{', '.join(cs)}" for n, cs in sorted(gaps.items()))


# ------------------------------------------------------------------ classifiers shared by several modules

ID_CLASSES = ("0", "1", "2^31-1", "2^31", "2^32-1", "small", "other")
_ID_NAMED = {0: "0", 1: "1", 2 ** 31 - 1: "2^31-1", 2 ** 31: "2^31", 2 ** 32 - 1: "2^32-1"}
SMALL_ID = 1000  # ids 2..999 are "small" (the ids a client numbers its calls with)


def id_class(n: int) -> str:
    """The class of a u32 id: an edge of the range by name, small (2..999), or other."""
    c = _ID_NAMED.get(n)
    if c is not None:
        return c
    return "small" if n < SMALL_ID else "other"


CASE_CLASSES = ("lower", "upper", "mixed")


def case_class(text: str) -> str:
    """lower, upper or mixed (the case of the letters of ``text``)."""
    if text == text.lower():
        return "lower"
    return "upper" if text == text.upper() else "mixed"


OWS_CLASSES = ("none", "space", "tab", "space+tab")


def ows_class(ows: str) -> str:
    if not ows:
        return "none"
    if "\t" in ows:
        return "space+tab" if " " in ows else "tab"
    return "space"
