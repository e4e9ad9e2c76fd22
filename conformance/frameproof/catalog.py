"""The map from requirements to the tests that check them, for every suite
(codec vectors and properties, network cases, stress scenarios, load-client cases). The docs site and
the coverage test read it; nothing here is typed twice."""
from __future__ import annotations

from typing import Dict, List

from . import spec, vectors as V
from .protocols import names as protocol_names


def tests() -> List[dict]:
    """Every test of every suite: name, suite, protocol, requirements, description."""
    from . import clientsuite, netsuite, plugin, stress
    from .properties import properties
    out = []
    for protocol in protocol_names():
        for vec in V.load(protocol):
            for variant in plugin._variants(vec):
                out.append({"name": f"{protocol}/{vec.requirements[0]}/{vec.id}/{variant}", "suite": "run",
                            "protocol": protocol, "requirements": vec.requirements, "description": vec.description,
                            "vector": f"{protocol}/{vec.id}"})
        for prop in properties(protocol):
            out.append({"name": f"{protocol}/{prop.requirements[0]}/{prop.name}", "suite": "run", "protocol": protocol,
                        "requirements": prop.requirements, "description": prop.description})
        for case in netsuite.cases(protocol):
            reqs = netsuite.requirements_for(case, protocol)
            out.append({"name": f"{protocol}/{reqs[0]}/net/{case.name}", "suite": "net", "protocol": protocol,
                        "requirements": reqs, "description": case.description})
        for sc in stress.SCENARIOS:
            out.append({"name": stress.scenario_name(protocol, sc), "suite": "stress", "protocol": protocol,
                        "requirements": stress.scenario_requirements(protocol, sc), "description": sc.description})
        for case in clientsuite.all_cases(protocol):
            out.append({"name": f"{protocol}/{case.requirements[0]}/client/{case.name}", "suite": "client",
                        "protocol": protocol, "requirements": case.requirements, "description": case.description})
    return out


def requirement_map() -> Dict[str, List[dict]]:
    """requirement ID -> the tests that check it (every spec requirement is a key)."""
    m = {rid: [] for rid in spec.requirements()}
    for t in tests():
        for rid in t["requirements"]:
            m.setdefault(rid, []).append(t)
    return m
