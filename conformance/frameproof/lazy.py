"""Modules imported on first use: Hypothesis and the property machinery cost a process 0.25 s to
import, and most processes the suite starts (the Python testee, echo server and load client, thousands
in a CI run) never draw an example. The standard library's importlib.util.LazyLoader cannot help
here: finding the spec of ``hypothesis.strategies`` imports ``hypothesis`` itself, which is the cost."""
from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """Stands for the module ``name`` and imports it at the first attribute read."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_target"] = name

    def __getattr__(self, attr):
        mod = importlib.import_module(self.__dict__["_lazy_target"])
        self.__dict__.update(mod.__dict__)  # later reads skip this method
        return getattr(mod, attr)


def module(name: str) -> types.ModuleType:
    return LazyModule(name)


class LazyAttribute:
    """A class attribute made on first read from ``"package.module:Name"`` (called with no arguments),
    then kept on the class: ``strategies = LazyAttribute("frameproof.protocols.rpc.strategies:RpcStrategies")``."""

    def __init__(self, target: str):
        self.target = target

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        mod, _, attr = self.target.partition(":")
        value = getattr(importlib.import_module(mod), attr)()
        setattr(owner if owner is not None else type(obj), self.name, value)
        return value


def given(*args, **kwargs):
    """hypothesis.given, imported when a test is made (inside the suites' functions)."""
    from hypothesis import given as _given
    return _given(*args, **kwargs)
