"""A private 3-member etcd cluster for one check (spec/discovery.md DISC-ETCD-8): members on
127.0.0.1, 127.0.0.2 and 127.0.0.3, each behind a relay of the runner's own (etcd_proxy.py), so the
runner sees which member a registry talks to and can kill that one."""
from __future__ import annotations

from typing import List

from .discovery_etcd import LocalEtcd, started
from .etcd_proxy import CuttableProxy


class LocalEtcdCluster:
    def __init__(self, size: int = 3):
        self.members: List[LocalEtcd] = [LocalEtcd(f"127.0.0.{i + 1}", f"fp{i}") for i in range(size)]
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        for m in self.members:
            m.initial_cluster = initial
        self.proxies: List[CuttableProxy] = []

    def start(self, timeout: float = 30.0):
        for m in self.members:  # all at once: a member alone has no quorum and answers nothing
            m.launch()
        for m in self.members:
            m.wait_ready(timeout)
        self.proxies = [CuttableProxy(m.endpoint) for m in self.members]

    @property
    def endpoints(self) -> str:
        """What a registry is given: the relays, comma-separated (DISC-ETCD-8)."""
        return ",".join(p.endpoint for p in self.proxies)

    @property
    def direct(self) -> str:
        """The members themselves, for the runner's own reads and writes."""
        return ",".join(m.endpoint for m in self.members)

    def busiest(self) -> int:
        """The member the registry holds the most connections to (its watch streams, its keep-alive)."""
        counts = [p.live() for p in self.proxies]
        return max(range(len(counts)), key=lambda i: counts[i])

    def cleanup(self):
        for p in self.proxies:
            p.close()
        for m in self.members:
            m.cleanup()


def started_cluster() -> LocalEtcdCluster:
    """A private cluster for one check, answering (discovery_etcd.started)."""
    return started(LocalEtcdCluster)
