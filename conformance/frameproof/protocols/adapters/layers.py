"""The Layers adapter: a layer a protocol carries above its frames with a spec of its own (rpc's
service registry, spec/discovery.md), checked through the testee's registry scripts."""
from __future__ import annotations

from typing import Tuple


class Layers:
    #: the specs (spec/<name>.md) of the layers this protocol carries: their requirements have a
    #: prefix of their own and their tests run under the protocol (frameproof.spec.layers_of)
    layer_specs: Tuple[str, ...] = ()
    #: testee features the layers' checks need (spec/testee.md), announced by the Python testee
    registry_features: Tuple[str, ...] = ()
    #: the Python reference's answer to a registry script (spec/testee.md, ``discovery``): a method
    #: ``registry_script(req) -> DiscoveryResponse``, or None (the Python testee answers ``skipped``)
    registry_script = None
