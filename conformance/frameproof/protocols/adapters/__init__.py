"""The adapters of a protocol: one small class a concern, each with neutral defaults (an empty
list, nothing, or ``NotImplementedError`` with the reason), so that a protocol implements only the
concerns it has. ``frameproof.protocols.base.Protocol`` composes the core and all of them; a
protocol package subclasses it and overrides the members of the adapters it implements.

Each adapter's members are listed in docs/adding-a-protocol.md (section 2).
"""
from __future__ import annotations

from ... import lazy
from .bench import Benchmarks
from .commands import Commands
from .docs import Docs
from .fuzzing import Fuzzing
from .layers import Layers
from .limits import Limits
from .load import LoadClient
from .matrix import MatrixSuites
from .models import Models, ServeResult, echo_serve
from .netcases import NetCases
from .netclient import NetClient
from .properties import Properties
from .python_impl import PythonImpl
from .upstream import Upstream
from .wire import Wire

#: every adapter, in the order ``Protocol`` composes them
ADAPTERS = (Wire, Models, PythonImpl, Limits, Properties, NetCases, NetClient, LoadClient, Commands, MatrixSuites,
            Docs, Fuzzing, Upstream, Benchmarks, Layers)

__all__ = [a.__name__ for a in ADAPTERS] + ["ADAPTERS", "ServeResult", "echo_serve"]
