"""The protocol registry: the one place that lists the protocols.

Each protocol is a package ``frameproof.protocols.<module>`` whose ``PROTOCOL`` object (a
:class:`frameproof.protocols.base.Protocol`) holds everything protocol-specific: the codec
configuration, the oracle adapter over the Kaitai parser, the Python reference codec, Hypothesis
strategies and properties, network cases, fuzz hooks and mutants. The runner, the plugin, the
suites, the fuzzer, the reports and the matrix reach protocol code only through this module.

Adding a protocol: docs/adding-a-protocol.md (one package, one line below).
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Dict, Tuple

# One line per protocol, in the order suites and reports list them.
MODULES = (
    "standard",
    "length_field",
    "rpc",
    "websocket",
)


@lru_cache(maxsize=None)
def _registry() -> Dict[str, object]:
    out = {}
    for mod in MODULES:
        p = importlib.import_module(f"{__name__}.{mod}").PROTOCOL
        if p.name in out:
            raise ValueError(f"protocol {p.name!r} registered twice")
        out[p.name] = p
    return out


def names() -> Tuple[str, ...]:
    """The registered protocol names, e.g. ("standard", "length-field")."""
    return tuple(_registry())


def all_protocols():
    return list(_registry().values())


def get(name: str):
    """The protocol called ``name``; a clear error naming the known ones otherwise."""
    try:
        return _registry()[name]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r} (known: {', '.join(names())})") from None


def get_module(module: str):
    """The package of a registered protocol by its module name (``length_field``)."""
    return importlib.import_module(f"{__name__}.{module}")
