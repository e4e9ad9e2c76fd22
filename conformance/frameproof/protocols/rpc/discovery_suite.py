"""The conformance checks of rpc's service registry (spec/discovery.md): registry scripts sent to
any testee (spec/testee.md, ``discovery``) and compared with the model (``discovery_model``). This
module is the property table; each check lives in a module of its own, re-exported here:

  discovery_pb          scripts, results and events to and from protobuf; a script run on a testee
  discovery_compare     the testee's answers against the model's, and the requirements a difference breaks
  discovery_scripts     the ops' vocabulary and the fixed registry, watch and selector scripts
  discovery_stateful    Hypothesis stateful testing (RuleBasedStateMachine)
  discovery_stats       the random selectors' distributions (chi-square)
  discovery_threads     the threads phase
  discovery_etcd_checks the etcd mapping, and a registry on a private etcd
  discovery_etcd_faults that etcd failing under a running registry (lease revoked, etcd restarted)
"""
from __future__ import annotations

from ... import lazy
from .discovery_compare import (_concurrent_diff, _ev_key, _list_diff, _res_text, _unwatched,  # noqa: F401
                                check_script, describe_op, event_diff, result_diff)
from .discovery_etcd_cluster import etcd_cluster
from .discovery_etcd_faults import etcd_faults
from .discovery_etcd_checks import (ETCD_DECODE_CASES, ETCD_SCRIPT, _names, _per_watcher, check_remote,  # noqa: F401
                                    etcd_live, etcd_mapping)
from .discovery_pb import (_ep_pb, _ep_py, _result_py, op_from_pb, op_to_pb, probe, response_to_pb,  # noqa: F401
                           result_to_pb, run_script)
from .discovery_scripts import (A, B, BAD_NAMES, DEREG, DISC, INSTANCES, REG, REGISTRY_SCRIPTS, SEL,  # noqa: F401
                                SELECTOR_SCRIPTS, SERVICES, WATCH, WATCH_SCRIPTS, WEIGHTS, ep, scripted)
from .discovery_stateful import RegistryMachine, stateful  # noqa: F401
from .discovery_stats import DIST_LISTS, DIST_SEEDS, chi_square, distribution  # noqa: F401
from .discovery_threads import threads  # noqa: F401

P = lazy.module("frameproof.properties")  # on first use (frameproof/lazy.py)

FEATURE = "discovery"


# ------------------------------------------------------------------ the property table

def properties(protocol: str) -> list:
    return [
        P.Property("discovery_registry_scripted", protocol,
                   ["DISC-REG-1", "DISC-REG-2", "DISC-REG-3", "DISC-REG-4", "DISC-REG-5", "DISC-REG-6", "DISC-EP-1",
                    "DISC-EP-2", "DISC-ERR-1"], FEATURE,
                   "Fixed registry scripts: append, replace in place, deregister, missing instances, unknown "
                   "services, independent services, invalid names", scripted(REGISTRY_SCRIPTS, "registry")),
        P.Property("discovery_watch_scripted", protocol,
                   ["DISC-WATCH-3", "DISC-WATCH-1", "DISC-WATCH-2", "DISC-WATCH-4", "DISC-WATCH-5", "DISC-REG-3"], FEATURE,
                   "Fixed watch scripts: order across watchers, callbacks that call the registry (register, "
                   "deregister, watch, unwatch themselves), unwatch, no replay", scripted(WATCH_SCRIPTS, "watch")),
        P.Property("discovery_selectors_scripted", protocol,
                   ["DISC-SEL-2", "DISC-SEL-3", "DISC-SEL-1", "DISC-SEL-6"], FEATURE,
                   "Round-robin and smooth weighted round-robin pick exactly the spec's sequences (weight 0, "
                   "list changes, ties, large weights, nothing eligible, unknown names)",
                   scripted(SELECTOR_SCRIPTS, "selector")),
        P.Property("discovery_registry_stateful", protocol,
                   ["DISC-REG-1", "DISC-REG-2", "DISC-REG-3", "DISC-REG-4", "DISC-REG-5", "DISC-REG-6", "DISC-EP-1",
                    "DISC-EP-2", "DISC-ERR-1", "DISC-WATCH-1", "DISC-WATCH-2", "DISC-WATCH-3", "DISC-WATCH-5",
                    "DISC-SEL-1", "DISC-SEL-2", "DISC-SEL-3", "DISC-SEL-6"], FEATURE,
                   "Hypothesis stateful testing (RuleBasedStateMachine): random registry scripts with watchers, "
                   "callbacks that call the registry and all four selectors, against the model after every step",
                   stateful()),
        P.Property("discovery_selector_distribution", protocol, ["DISC-SEL-4", "DISC-SEL-5", "DISC-SEL-1"], FEATURE,
                   "random and weighted-random: chi-square against the expected counts below the 0.999 quantile "
                   "for at least 4 of the seeds 1..5 (2000 picks per instance); same seed, same picks",
                   distribution()),
        P.Property("discovery_threads", protocol, ["DISC-THREAD-1", "DISC-THREAD-2"], FEATURE,
                   "Threads register, discover and deregister on one registry, then share one round-robin "
                   "selector: no lost update, one event per operation, equal pick counts", threads()),
        P.Property("discovery_etcd_mapping", protocol, ["DISC-ETCD-1", "DISC-ETCD-2", "DISC-ETCD-3"], FEATURE,
                   "The etcd key and JSON value of random endpoints, and how fixed etcd entries (unknown "
                   "members, missing weight, wrong types, mismatched keys) decode", etcd_mapping()),
        P.Property("discovery_etcd_faults", protocol, ["DISC-ETCD-7"], "discovery-etcd",
                   "The runner's etcd fails under a running registry: its lease revoked from outside (instances "
                   "written again under a new lease within a keep-alive interval), etcd killed for 3.5 s "
                   "(CONNECTION_ERROR meanwhile; after, the old instance kept, new operations working, the watch "
                   "resumed with no event lost or repeated), its watch cut off while the service changes and etcd's history "
                   "is compacted (the watcher receives the difference)", etcd_faults()),
        P.Property("discovery_etcd_cluster", protocol, ["DISC-ETCD-8"], "discovery-etcd",
                   "A 3-member etcd cluster (127.0.0.1-3): the member the registry talks to is killed; the "
                   "registry goes on through another one: its instance kept, the watch complete and in order, "
                   "operations after the kill OK", etcd_cluster()),
        P.Property("discovery_etcd_live", protocol, ["DISC-ETCD-4", "DISC-ETCD-5", "DISC-ETCD-6", "DISC-ETCD-7",
                                                     "DISC-ETCD-1", "DISC-ETCD-2"], "discovery-etcd",
                   "On a private etcd (127.0.0.1, temporary data dir): a script against the model, the keys and "
                   "leases it leaves, keys gone within the lease TTL after a crash, CONNECTION_ERROR within the "
                   "request timeout when etcd cannot be reached", etcd_live()),
    ]
