"""Multi-host mode: the server in one network namespace, clients in others, joined by veth pairs
the benchmark creates (10.77.<i>.1 server side, 10.77.<i>.2 client side, /24 per pair, only on
those veths), with a `tc netem` delay when the kernel has it. Everything is removed in a
``finally`` (and on SIGINT/SIGTERM), and stale namespaces of an earlier crashed run (same
``fpb-`` prefix) are removed first. No traffic leaves the namespaces: the namespaces have no
route except their /24.

Packets per recv(): the servers do not report it through the contract, so the raw echo
(``fp-raw-echo``) and the Rust ``fp-server --stats`` count the reads that returned data and the
frames decoded; frames / reads is the figure (documented in tools/bench/README.md).
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import List, Optional

from frameproof import protocols as registry

from .core import Program, Scenario, ServerPool, log, run_client_once, sent

PREFIX = "fpb-"


def sh(*argv, check=True) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=30)


def available() -> Optional[str]:
    """None if namespaces can be made here, else the reason."""
    if os.geteuid() != 0:
        return "not root (ip netns needs CAP_SYS_ADMIN / CAP_NET_ADMIN)"
    try:
        sh("ip", "netns", "list")
    except (OSError, subprocess.SubprocessError) as e:
        return f"ip netns unavailable: {e}"
    return None


def cleanup_stale():
    try:
        out = sh("ip", "netns", "list").stdout
    except (OSError, subprocess.SubprocessError):
        return
    for line in out.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(PREFIX):
            sh("ip", "netns", "del", name, check=False)


class Net:
    def __init__(self, clients: int = 2):
        tag = f"{os.getpid() % 100000}"
        self.srv = f"{PREFIX}{tag}-s"
        self.cli = [f"{PREFIX}{tag}-c{i}" for i in range(1, clients + 1)]
        self.veth = [(f"fpb{tag}s{i}", f"fpb{tag}c{i}") for i in range(1, clients + 1)]
        self.made: List[str] = []
        self.qdisc = "none"

    def server_ip(self, i: int) -> str:
        return f"10.77.{i + 1}.1"

    def __enter__(self):
        self._old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def bye(signum, frame):
            raise KeyboardInterrupt(f"signal {signum}")
        for s in self._old:
            signal.signal(s, bye)
        try:
            cleanup_stale()
            for ns in [self.srv] + self.cli:
                sh("ip", "netns", "add", ns)
                self.made.append(ns)
                sh("ip", "-n", ns, "link", "set", "lo", "up")
            for i, ((vs, vc), ns) in enumerate(zip(self.veth, self.cli)):
                # Created directly inside the namespaces: nothing appears in the root namespace.
                sh("ip", "-n", self.srv, "link", "add", vs, "type", "veth", "peer", "name", vc, "netns", ns)
                sh("ip", "-n", self.srv, "addr", "add", f"10.77.{i + 1}.1/24", "dev", vs)
                sh("ip", "-n", ns, "addr", "add", f"10.77.{i + 1}.2/24", "dev", vc)
                sh("ip", "-n", self.srv, "link", "set", vs, "up")
                sh("ip", "-n", ns, "link", "set", vc, "up")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def set_link(self, kind: str, value: str) -> Optional[str]:
        """kind: none | delay (netem, both directions, value like 0.2ms) | rate (tbf, both
        directions, value like 1gbit). Returns None or why it could not be applied."""
        for (vs, vc), ns in zip(self.veth, self.cli):
            for n, dev in ((self.srv, vs), (ns, vc)):
                sh("tc", "-n", n, "qdisc", "del", "dev", dev, "root", check=False)
                if kind == "none":
                    continue
                if kind == "delay":
                    args = ["netem", "delay", value, "limit", "100000"]
                else:
                    args = ["tbf", "rate", value, "burst", "256kb", "latency", "50ms"]
                r = sh("tc", "-n", n, "qdisc", "add", "dev", dev, "root", *args, check=False)
                if r.returncode != 0:
                    self.set_link("none", "")
                    return (r.stderr or r.stdout).strip() or f"tc exited {r.returncode}"
        self.qdisc = "none" if kind == "none" else f"{kind} {value}"
        return None

    def __exit__(self, *exc):
        for ns in reversed(self.made):
            sh("ip", "netns", "del", ns, check=False)  # deletes the veths inside too
        self.made = []
        for s, h in getattr(self, "_old", {}).items():
            signal.signal(s, h)
        return False


def _per_recv(counters: Optional[dict]) -> Optional[float]:
    if not counters or not counters.get("reads"):
        return None
    return round(counters["frames"] / counters["reads"], 2)


def run(servers: List[Program], clients: List[Program], duration: float, quick: bool) -> dict:
    """Receive (sink) and echo scenarios over loopback and over the namespaces, with the servers
    that can count their reads. Returns the `packets_per_recv` section of the results."""
    why = available()
    out = {"method": "frames decoded / recv() calls that returned data, counted by fp-raw-echo and "
                     "fp-server --stats (Rust); throughput = frames the server counted / client run time",
           "claim": "seed 001: in a real network ~12 packets per recv() (~370 B) suffice for 22.6 M packets/s; "
                    "checked here as: frames/recv >= 12 together with >= 1 M frames/s",
           "rows": [], "links": []}
    sv = {p.name: p for p in servers}
    cl = {p.name: p for p in clients}
    stat_servers = [sv[n] for n in ("raw", "rust") if n in sv]
    blast, load = cl.get("rust-blast"), cl.get("rust")
    conns = 8 if quick else 16
    scen = []
    # The protocol(s) whose frames the seeds' claim counts (Protocol.upstream_recv_claim).
    for proto in [p for p in registry.all_protocols() if p.upstream_recv_claim]:
        # the protocol's name in the label only when there is more than one such protocol
        tag = f"{proto.name}: " if sum(1 for p in registry.all_protocols() if p.upstream_recv_claim) > 1 else ""
        if blast and proto.name in blast.protocols:
            scen.append((f"{tag}receive, one write per frame, Nagle on (seeds' 逐包发送)", blast,
                         Scenario(proto.name, "receive", 32, conns, 1, "receive-blast")))
            # The claim's premise made certain: 12 frames (384 B) per write, so recv() sees >= 12.
            scen.append((f"{tag}receive, 12 frames per write (the claim's ~12 per recv)", blast,
                         Scenario(proto.name, "receive", 32, conns, 12, "receive-blast")))
        if load and proto.name in load.protocols:
            scen.append((f"{tag}pipelined echo, window {proto.pipeline_window}", load,
                         Scenario(proto.name, "pipelined", 32, conns, proto.pipeline_window, "netns")))
            if not quick:
                scen.append((f"{tag}per-packet echo", load, Scenario(proto.name, "per-packet", 32, conns, 1, "netns")))

    def one(link: str, srv: Program, label: str, cl: Program, s: Scenario, wrap_srv, listen, addrs, wraps):
        pool = ServerPool()
        try:
            e = pool.get(srv, s, wrap_prefix=wrap_srv, listen=listen)
            port = e["server"].port
            share = [s.connections // len(addrs) + (1 if i < s.connections % len(addrs) else 0) for i in range(len(addrs))]
            procs = []
            t0 = time.monotonic()
            # clients run in parallel, one process per client namespace
            import concurrent.futures as cf
            with cf.ThreadPoolExecutor(len(addrs)) as ex:
                futs = [ex.submit(run_client_once, cl, s, f"{a}:{port}", duration, w, n)
                        for a, w, n in zip(addrs, wraps, share) if n]
                procs = [f.result() for f in futs]
            wall = time.monotonic() - t0
            e["sent"] = e["goodbye"] = 0
            for r in procs:
                sent(e, cl, r)
        finally:
            pool.stop_all()
        chk = pool.checks[-1] if pool.checks else {}
        c = chk.get("counters") or {}
        secs = max([r.get("duration_s") or 0 for r in procs] + [0]) or wall
        frames = c.get("frames") or 0
        row = {"link": link, "scenario": label, "server": srv.name, "client": cl.name, "connections": s.connections,
               "payload": s.payload, "ok": all(r.get("ok") for r in procs) and bool(chk.get("ok")),
               "frames": frames, "reads": c.get("reads"), "read_bytes": c.get("read_bytes"),
               "frames_per_recv": _per_recv(c),
               "bytes_per_recv": round(c["read_bytes"] / c["reads"], 1) if c.get("reads") else None,
               "frames_per_s": round(frames / secs, 1) if secs else None,
               "client_msgs_per_s": round(sum(r.get("msgs_per_s") or 0 for r in procs), 1)}
        row["claim_holds"] = bool(row["frames_per_recv"] and row["frames_per_recv"] >= 12
                                  and row["frames_per_s"] and row["frames_per_s"] >= 1e6)
        if not row["ok"]:
            row["detail"] = [r.get("output") for r in procs if not r.get("ok")][:2]
        out["rows"].append(row)
        log(f"  {link:22} {label[:40]:40} {srv.name:5} {row['frames_per_s'] or 0:>12,.0f} frames/s "
            f"{row['frames_per_recv']} frames/recv" + ("" if row["ok"] else "  FAILED"))

    # loopback, for comparison
    for label, cl, s in scen:
        for srv in stat_servers:
            if s.protocol not in srv.protocols:
                continue
            one("loopback", srv, label, cl, s, None, "127.0.0.1:0", ["127.0.0.1"], [None])
    if why:
        out["skipped"] = why
        log(f"  namespaces skipped: {why}")
        return out
    links = [("none", ""), ("delay", "0.2ms"), ("delay", "1ms"), ("rate", "1gbit")]
    if quick:
        links = [("none", ""), ("delay", "0.2ms"), ("rate", "1gbit")]
    with Net(2) as net:
        out["topology"] = {"server_ns": net.srv, "client_ns": net.cli,
                           "addresses": [f"{net.server_ip(i)} <-> 10.77.{i + 1}.2" for i in range(len(net.cli))]}
        for kind, value in links:
            err = net.set_link(kind, value)
            name = "veth" if kind == "none" else f"veth + {kind} {value}"
            out["links"].append({"link": name, "applied": err is None, "error": err})
            if err:
                log(f"  {name}: not applied ({err})")
                continue
            addrs = [net.server_ip(i) for i in range(len(net.cli))]
            wraps = [["ip", "netns", "exec", ns] for ns in net.cli]
            for label, cl, s in scen:
                for srv in stat_servers:
                    if s.protocol not in srv.protocols:
                        continue
                    one(name, srv, label, cl, s, ["ip", "netns", "exec", net.srv], "0.0.0.0:0", addrs, wraps)
    return out
