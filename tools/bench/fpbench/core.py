"""The benchmark runner: harness validation, calibration, the scenario matrix, allocations.

Every load run is bounded (``--duration`` plus the client's ``--timeout-ms``, and a subprocess
timeout on top); every server is stopped with SIGTERM and its counters are compared with the
clients' counts.
"""
from __future__ import annotations

import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from frameproof import protocols as registry
from frameproof.matrix import codec_args
from frameproof.paths import IMPL_DIR, ROOT
from frameproof.servers import start_server
from . import cpu
from .stats import summary

RUST_BIN = IMPL_DIR / "rust" / "target" / "release"
FLOOR_BIN = ROOT / "tools" / "bench" / "floor" / "build"
SCHEMA = "frameproof-bench/1"

# The largest payload of the payload sweep. Every protocol-specific fact the benchmark uses (the
# codec that carries a payload size, the seeds' windows and figures, extra baselines) comes from the
# protocol packages (frameproof.protocols: Protocol.bench_codec, pipeline_window, upstream_figures,
# upstream_recv_claim, bench_baselines).
KIB64 = 65536


def default_batch(protocol: str) -> int:
    """The batch of the batched (seed-shaped) echo: ``Protocol.default_batch`` where the protocol
    declares it, else the seeds' batch recorded in tools/bench/seeds.json (NewLife: 255 standard,
    128 length-field), else the protocol's seed window."""
    p = registry.get(protocol)
    own = getattr(p, "default_batch", None)
    if own:
        return own
    seeds = json.loads((Path(__file__).resolve().parents[1] / "seeds.json").read_text(encoding="utf-8"))
    return seeds["batched"]["batch"].get(protocol) or p.pipeline_window


def probe_modes(c: "Program") -> "Program":
    """Adds the optional modes a load client's ``--help`` names (``batched``, ``stream``) to ``c.modes``."""
    if "batched" in c.modes or "stream" in c.modes or "receive" not in c.modes or "pipelined" not in c.modes:
        return c
    try:
        p = subprocess.run(c.argv + ["--help"], capture_output=True, text=True, timeout=30, cwd=str(ROOT / "conformance"))
        text = p.stdout + p.stderr
    except (subprocess.SubprocessError, OSError):
        return c
    c.modes = tuple(c.modes) + tuple(m for m in ("batched", "stream") if m in text)
    return c


def pipeline_windows() -> Dict[str, int]:
    """The pipelined window per registered protocol (the seeds' windows for batched echo)."""
    return {p: registry.get(p).pipeline_window for p in registry.names()}


def codec_argv(codec) -> List[str]:
    """``--codec JSON`` as argv words (reference-impls/README.md, "The profile syntax")."""
    return shlex.split(codec_args(codec))


def codec_key(codec) -> str:
    return json.dumps(codec.to_json(), sort_keys=True, separators=(",", ":"))


def _known(protocols) -> tuple:
    """``protocols`` (e.g. an impl.json list) restricted to registered ones, in registry order."""
    return tuple(p for p in registry.names() if p in protocols)


def log(msg: str):
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# Programs


@dataclass
class Program:
    name: str
    argv: List[str]          # command prefix (absolute paths)
    kind: str = "reference"  # reference | baseline | extra
    # default: every registered protocol the load-client checks support
    protocols: tuple = field(default_factory=lambda: tuple(p.name for p in registry.all_protocols() if p.load_client_checks))
    stats: bool = False      # server: accepts --stats (reads / read_bytes in its counters)
    sink: bool = True        # server: has --sink (receive scenarios); third-party servers do not
    threads: bool = True     # server: has --threads N (the instruction counts run one worker); third-party ones do not
    modes: tuple = ("per-packet", "pipelined", "receive")  # client: supported modes
    extensions: tuple = ()   # server: what it has beyond the contract (impl.json "websocket_extensions" "server")
    goodbye: bool = True     # client: ends each connection with the protocol's goodbye frames (fp-blast does not)

    def cmd(self, extra: List[str]) -> str:
        return " ".join(shlex.quote(a) for a in self.argv + extra)

    def available(self) -> bool:
        """The program (and, for `mono X.exe` / `dotnet X.dll` / `python -m`, its runner) exists."""
        a0 = self.argv[0]
        if len(self.argv) > 1 and self.argv[1] == "-m":
            return bool(shutil_which(a0)) or Path(a0).exists()
        if Path(a0).name in ("mono", "dotnet", "java") and len(self.argv) > 1:
            return bool(shutil_which(a0)) and Path(self.argv[1]).exists()
        return Path(a0).exists() or bool(shutil_which(a0))


def shutil_which(x):
    import shutil
    return shutil.which(x)


def _impl_argv(impl_dir: Path, argv: List[str]) -> List[str]:
    argv = list(argv)
    for i in (0, 1):
        if i < len(argv) and not argv[i].startswith("/") and (impl_dir / argv[i]).exists():
            argv[i] = str(impl_dir / argv[i])
            break
    return argv


def reference_impls() -> List[dict]:
    out = []
    for f in sorted(IMPL_DIR.glob("*/impl.json")):
        d = json.loads(f.read_text())
        d["dir"] = f.parent
        out.append(d)
    return out


def _extensions(impl: dict) -> tuple:
    """What an implementation's server has beyond the contract (impl.json "websocket_extensions")."""
    return tuple((impl.get("websocket_extensions") or {}).get("server", ()))


def servers_and_clients(extra_clients: Dict[str, str]):
    servers, clients, benches = [], [], {}
    rust_protocols = registry.names()
    for d in reference_impls():
        protos = _known(d.get("protocols", registry.names()))  # impl.json: the protocols it has
        if d["name"] == "rust":
            rust_protocols = protos
        if "server" in d:
            servers.append(Program(d["name"], _impl_argv(d["dir"], d["server"]), protocols=protos,
                                   stats=d["name"] == "rust", extensions=_extensions(d)))
        if "load" in d:
            clients.append(Program(d["name"], _impl_argv(d["dir"], d["load"]), protocols=protos))
        if "bench" in d:
            benches[d["name"]] = _impl_argv(d["dir"], d["bench"])
    # Established libraries' echo servers (tools/third-party/*/impl.json with a "server" following the
    # fp-server contract): beside ours for their protocols, where no raw echo exists (websocket) the
    # comparison the issue asks for
    for f in sorted((ROOT / "tools" / "third-party").glob("*/impl.json")):
        d = json.loads(f.read_text())
        if "server" in d:
            servers.append(Program(d["name"], _impl_argv(f.parent, d["server"]), kind="third-party",
                                   protocols=_known(d.get("protocols", ())), sink=bool(d.get("sink")),
                                   threads=bool(d.get("threads")), extensions=_extensions(d)))
    # The Rust baselines: the raw echo and fp-blast work with every protocol of the Rust codec
    # library; a protocol's own baselines (Protocol.bench_baselines) with that protocol only.
    servers.append(Program("raw", [str(RUST_BIN / "fp-raw-echo")], kind="baseline", stats=True,
                           protocols=tuple(rust_protocols)))
    # The floors: one thread of C over epoll (and over io_uring), raw's header walk (standard, length-field)
    # or reply rewriters (rpc, websocket), nothing else; built by tools/bench/run.sh
    # (tools/bench/floor/build.sh), left out and said so where they are not
    for name, exe in (("floor", "fp-floor-epoll"), ("floor-uring", "fp-floor-uring")):
        if (FLOOR_BIN / exe).exists():
            servers.append(Program(name, [str(FLOOR_BIN / exe)], kind="baseline", stats=True,
                                   protocols=("standard", "length-field", "rpc", "websocket")))
        else:
            log(f"bench: {FLOOR_BIN / exe} not built (bash tools/bench/floor/build.sh): no {name} rows")
    own: Dict[tuple, tuple] = {}
    for p in registry.all_protocols():
        for name, exe in p.bench_baselines.items():
            own[(name, exe)] = own.get((name, exe), ()) + (p.name,)
    for (name, exe), protos in own.items():
        servers.append(Program(name, [str(RUST_BIN / exe)], kind="baseline", protocols=protos))
    clients.append(Program("rust-blast", [str(RUST_BIN / "fp-blast")], kind="baseline", modes=("receive",),
                           protocols=rust_protocols, goodbye=False))
    for name, cmd in extra_clients.items():
        clients.append(Program(name, shlex.split(cmd), kind="extra"))
    return servers, clients, benches


# ---------------------------------------------------------------------------------------------
# Machine description and calibration


def machine(calibrate_seconds: float) -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    m = {"hostname": socket.gethostname(), "cpu_model": cpu, "cpus": os.cpu_count(), "kernel": platform.release(),
         "mem_gib": round(mem / 2 ** 30, 1), "python": platform.python_version(),
         "loadavg_start": list(os.getloadavg()),
         "note": "CPU cores are shared with other processes; the load average at start and end is recorded. "
                 "Client and server share the machine (loopback), so figures are lower bounds of the server's capacity."}
    calib = RUST_BIN / "fp-calib"
    if calib.exists():
        try:
            out = subprocess.run([str(calib), "--seconds", str(calibrate_seconds)], capture_output=True, text=True,
                                 timeout=60).stdout
            m["calibration"] = json.loads(out.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
            m["calibration"] = {"error": str(e)}
    else:
        m["calibration"] = {"error": "fp-calib not built"}
    return m


# ---------------------------------------------------------------------------------------------
# Harness validation


def validate_client(c: Program, protocol: str, mode: str) -> dict:
    """Runs the client against frameproof's checking server (spec/harness.md, the same checks as
    ``frameproof net --client``): counts must agree, no protocol error, and for echo modes a
    corrupted reply in every 97 must be counted as an error (a harness that does not verify fails)."""
    from frameproof.checks import CheckFailure
    from frameproof.clientsuite import ClientTarget, c_corrupted, c_counts, c_json, c_well_formed
    codec = registry.get(protocol).bench_codec(32)
    requests = "60" if mode == "stream" else "600"  # stream: 60 streams of 16 DATA frames
    opts = [codec_args(codec), "--connect", "{host}:{port}", "--connections", "2", "--requests", requests,
            "--payload", "32", "--mode", mode, "--json", "{json}"]
    if mode == "stream":
        opts += ["--window", "4"]
    if mode == "pipelined":
        opts += ["--window", "16"]
    if mode == "batched":
        opts += ["--batch", "16"]
    t = ClientTarget(command=c.cmd([]) + " " + " ".join(opts), codec=codec, sink=(mode == "receive"),
                     cwd=str(ROOT / "conformance"))
    checks = {}
    ok = True
    for name, fn in (("json_report", c_json), ("well_formed", c_well_formed), ("counts_agree", c_counts),
                     ("detects_corrupted_replies", c_corrupted)):
        if name == "detects_corrupted_replies" and mode == "receive":
            continue
        try:
            fn(t)
            checks[name] = "pass"
        except CheckFailure as e:
            checks[name] = "FAIL: " + str(e)[:600]
            ok = False
        except Exception as e:  # noqa: BLE001 - a crash of the client is a failure too
            checks[name] = f"FAIL: {type(e).__name__}: {str(e)[:600]}"
            ok = False
    clean = t.__dict__.get("_runs", {}).get("clean")
    seen = None
    if clean is not None:
        s = clean.stats
        seen = {"client": {k: (clean.report or {}).get(k) for k in ("requests_sent", "replies_received", "replies_verified", "errors")},
                "checker": {"frames": s.frames, "replies": s.replies, "protocol_errors": s.protocol_errors,
                            "client_errors": s.client_errors}}
    return {"client": c.name, "protocol": protocol, "mode": mode, "ok": ok, "checks": checks, "counts": seen}


def validate(clients: List[Program], protocols=None) -> List[dict]:
    """Every client, for every protocol (default: the registered ones) it has."""
    out = []
    for c in clients:
        for p in protocols or registry.names():
            if p not in c.protocols:
                continue
            for mode in c.modes:
                if mode == "per-packet" and "pipelined" in c.modes:
                    continue  # pipelined (window 16) covers the same code paths and more
                if mode == "stream" and not registry.get(p).load_streams:
                    continue  # the protocol has no streams (Protocol.load_streams)
                r = validate_client(c, p, mode)
                log(f"  validate {c.name:10} {p:12} {mode:10} {'ok' if r['ok'] else 'FAILED'}"
                    + ("" if r["ok"] else "\n    " + "\n    ".join(f"{k}: {v}" for k, v in r["checks"].items() if v != "pass")))
                out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# Load runs


@dataclass
class Scenario:
    protocol: str
    mode: str            # per-packet | pipelined | batched | receive
    payload: int
    connections: int
    window: int = 1      # pipelined: the sliding window; batched: the batch; receive: frames per write
    group: str = ""      # concurrency | payload | receive | a protocol's own (Protocol.bench_scenarios)
    args: tuple = ()     # more fp-load arguments (a protocol's own scenarios: --variant, --frames-per-stream)
    seed: Optional[dict] = None  # the seed's figure for this row, printed beside ours
    # a protocol's own scenarios: codec keys merged over bench_codec's (websocket: permessage_deflate),
    # the name they go by in the row's key and label, and what a server must have to run the row
    # (impl.json "websocket_extensions" "server": Program.extensions)
    overlay: Optional[dict] = None
    tag: str = ""
    needs: tuple = ()

    @property
    def key(self) -> str:
        return f"{self.protocol}/{self.mode}/{self.payload}B/c{self.connections}/w{self.window}" + \
            "".join(f"/{a.lstrip('-')}" for a in self.args) + (f"/{self.tag}" if self.tag else "")

    @property
    def codec(self):
        """The codec of both ends: the protocol's choice for this payload size (Protocol.bench_codec),
        with the scenario's overlay merged over it."""
        c = registry.get(self.protocol).bench_codec(self.payload)
        if not self.overlay:
            return c
        return registry.get(self.protocol).codec_from_json(_merged(c.to_json(), self.overlay))

    def to_json(self) -> dict:
        d = dict(self.__dict__, args=list(self.args), codec=self.codec.to_json(), needs=list(self.needs))
        for k in ("overlay", "tag", "needs"):
            if not d[k]:
                del d[k]
        return d


def _merged(base: dict, over: dict) -> dict:
    """``over`` merged into ``base`` key by key (nested objects merged too)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def client_args(s: Scenario, addr: str, duration: float, jpath: str, connections: Optional[int] = None,
                window_in_receive: bool = False) -> List[str]:
    a = codec_argv(s.codec) + ["--connect", addr, "--connections", str(connections or s.connections),
                                             "--duration", f"{duration:g}", "--payload", str(s.payload),
                                             "--mode", s.mode, "--timeout-ms", "5000", "--json", jpath]
    # --window is the contract's pipelining window; in receive mode each fp-load batches its writes
    # its own way (the Rust one 256 frames), so it only goes to fp-blast, where it is the batch.
    if s.mode in ("pipelined", "stream") or (s.mode == "receive" and window_in_receive):
        a += ["--window", str(s.window)]
    a += list(s.args)
    if s.mode == "batched":
        a += ["--batch", str(s.window)]
    return a


# CPU pinning of the matrix's servers and load clients (``frameproof bench --pin``; the method study
# chose it, tools/bench/README.md "How we measure"): name -> (server prefix, client prefix).
PINS = {"none": (None, None), "split": (["taskset", "-c", "0"], ["taskset", "-c", "1"]),
        "same-core": (["taskset", "-c", "0"], ["taskset", "-c", "0"])}
PIN = {"name": "none", "server": None, "client": None}


def set_pin(name: str, cpu: int = 0) -> None:
    """``same-core``: server and client on ``cpu``; ``split``: server on ``cpu``, client on another."""
    other = next((c for c in sorted(os.sched_getaffinity(0)) if c != cpu), cpu)
    srv = {"none": None, "same-core": cpu, "split": cpu}[name]
    cli = {"none": None, "same-core": cpu, "split": other}[name]
    PIN.update(name=name, cpu=cpu, server=None if srv is None else ["taskset", "-c", str(srv)],
               client=None if cli is None else ["taskset", "-c", str(cli)])


def run_client_once(c: Program, s: Scenario, addr: str, duration: float, wrap: Optional[List[str]] = None,
                    connections: Optional[int] = None, server_pid: Optional[int] = None) -> dict:
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fpbench-")
    os.close(fd)
    os.unlink(jpath)
    argv = (wrap if wrap is not None else PIN["client"] or []) + c.argv + client_args(s, addr, duration, jpath, connections,
                                               window_in_receive=c.name == "rust-blast")
    t0 = time.monotonic()
    window = cpu.Window(server_pid)  # the server's and the client's CPU over the client's life (fpbench/cpu.py)
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60, cwd=str(ROOT / "conformance"))
        rc, out = p.returncode, (p.stdout + p.stderr)[-1500:]
    except subprocess.TimeoutExpired:
        rc, out = -9, "timed out"
    wall = time.monotonic() - t0
    used = window.close()
    rep = None
    try:
        rep = json.loads(Path(jpath).read_text())
        os.unlink(jpath)
    except (OSError, ValueError):
        pass
    r = {"rc": rc, "wall_s": round(wall, 3), "cpu": used}
    if rep:
        r.update({k: rep.get(k) for k in ("connections", "requests_sent", "replies_received", "replies_verified", "errors",
                                          "duration_s", "msgs_per_s", "mb_per_s", "streams_completed")})
        r["latency_us"] = rep.get("latency_us")
        if rep.get("error_details"):
            r["error_details"] = rep["error_details"][:3]
    r["ok"] = bool(rep) and rc == 0 and rep.get("errors") == 0
    if not r["ok"]:
        r["output"] = out
    return r


def _median_spread(vals: List[float]) -> dict:
    """median, min, max, spread_pct, n; and q1, q3, iqr_pct and the median's 95 % interval
    (ci_low, ci_high, ci_coverage; fpbench.stats.median_ci)."""
    from .stats import summary
    return summary(vals)


def repeat_check(rows_a: List[dict], rows_b: List[dict]) -> dict:
    """--repeat-check: the same matrix twice back to back. Per row (scenario, group, server,
    client): the two medians with their 95 % intervals, and whether the intervals overlap. Each row
    of the first matrix gets ``repeat`` = {"median_b", "ci_b", "overlap"}."""
    from .stats import overlap, rel_diff_pct
    idx = {(r["key"], r["scenario"]["group"], r["server"], r["client"]): r for r in rows_b}
    out = []
    for r in rows_a:
        b = idx.get((r["key"], r["scenario"]["group"], r["server"], r["client"]))
        a_s, b_s = r.get("msgs_per_s") or {}, (b or {}).get("msgs_per_s") or {}
        ov = overlap(a_s, b_s) if b else None
        row = {"key": r["key"], "group": r["scenario"]["group"], "server": r["server"], "client": r["client"],
               "a": {k: a_s.get(k) for k in ("median", "ci_low", "ci_high", "ci_coverage", "n")},
               "b": {k: b_s.get(k) for k in ("median", "ci_low", "ci_high", "ci_coverage", "n")},
               "median_diff_pct": rel_diff_pct(a_s.get("median"), b_s.get("median")), "overlap": ov,
               "ratio_to_raw": [r.get("ratio_to_raw"), (b or {}).get("ratio_to_raw")]}
        # The same test on the fraction of raw: run k of the server over run k of the raw echo (taken
        # back to back), a median and its interval per matrix; drift of the machine between the two
        # matrices moves both and cancels.
        ra, rb = r.get("ratio_runs") or {}, (b or {}).get("ratio_runs") or {}
        row["ratio_a"] = {k: ra.get(k) for k in ("median", "ci_low", "ci_high")}
        row["ratio_b"] = {k: rb.get(k) for k in ("median", "ci_low", "ci_high")}
        row["ratio_overlap"] = overlap(ra, rb) if ra and rb else None
        r["repeat"] = {"median_b": b_s.get("median"), "ci_b": [b_s.get("ci_low"), b_s.get("ci_high")], "overlap": ov,
                       "ratio_to_raw_b": (b or {}).get("ratio_to_raw"), "ratio_overlap": row["ratio_overlap"]}
        out.append(row)
    compared = [x for x in out if x["overlap"] is not None]
    ratios = [x for x in out if x["ratio_overlap"] is not None]
    return {"what": "the full matrix twice back to back; per row, do the 95 % intervals of the two medians "
                    "(order statistics, fpbench.stats.median_ci) overlap?",
            "compared": len(compared), "overlapping": sum(1 for x in compared if x["overlap"]),
            "ratio_what": "the same for the fraction of the raw echo: per row, the median of the per-run ratios "
                          "(run k of the server over run k of raw, back to back) and its 95 % interval, in each matrix",
            "ratio_compared": len(ratios), "ratio_overlapping": sum(1 for x in ratios if x["ratio_overlap"]),
            "rows": out}


def sent(e: dict, client: Program, r: dict):
    """A client run's frames into its server's expected count: its requests, and (for a client that
    ends its connections with them) the protocol's goodbye frames on each of its connections."""
    e["sent"] += r.get("requests_sent") or 0
    # rpc stream mode: each completed stream also sent its STREAM_INIT and STREAM_END, which a server that
    # counts every frame it reads (raw's rewriter, the floors) counts and ours do not
    e["control"] = e.get("control", 0) + 2 * (r.get("streams_completed") or 0)
    if client.goodbye and r.get("requests_sent"):
        e["goodbye"] += e["goodbye_each"] * (r.get("connections") or 0)


def write_json(path, doc: dict):
    """A results file: compact (the per-run figures of a full run with --repeat-check came to 2.6 MB
    indented, 1.75 MB compact); tools read it, people read the Markdown beside it."""
    Path(path).write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")


def tally(name: str, cmd: str, protocol: str) -> dict:
    """What a server's clients sent, for server_check (core.sent adds to it)."""
    return {"sent": 0, "goodbye": 0, "control": 0, "name": name, "cmd": cmd,
            "goodbye_each": registry.get(protocol).load_goodbye_frames}


def server_check(e: dict, code, counters) -> dict:
    """A stopped server's counters against its tally: it received every frame its clients sent. The
    requests, and the clients' goodbye frames (websocket: a close frame a connection) for a server that
    counts every frame it receives (ours; Protocol.load_goodbye_frames), not for one that counts messages
    (the third-party servers); no protocol error."""
    frames = (counters or {}).get("frames")
    expected = e["sent"] + e["goodbye"]
    control = e.get("control", 0)
    ok = counters is not None and frames in (e["sent"], expected, e["sent"] + control, expected + control) \
        and (counters.get("protocol_errors") or 0) == 0
    if not ok:
        log(f"  ! server {e['name']}: counters {counters} vs {e['sent']} requests and {e['goodbye']} goodbye "
            f"frames sent by the clients")
    return {"server": e["name"], "command": e["cmd"], "exit": code, "counters": counters,
            "client_requests_sent": e["sent"], "client_goodbye_frames": e["goodbye"],
            "client_stream_control_frames": control,
            "expected_frames": expected, "ok": ok}


class ServerPool:
    """One running server per (server, codec, sink), reused across scenarios; its
    counters are checked against the sum of the clients' requests when it is stopped."""

    def __init__(self):
        self.running = {}
        self.checks = []

    def get(self, srv: Program, s: Scenario, wrap_prefix: Optional[List[str]] = None, listen="127.0.0.1:0"):
        sink = s.mode == "receive"
        key = (srv.name, codec_key(s.codec), sink)
        if key not in self.running:
            extra = codec_argv(s.codec) + ["--listen", listen] + (["--sink"] if sink else []) \
                + (["--stats"] if srv.stats else [])
            pre = wrap_prefix if wrap_prefix is not None else PIN["server"] or []
            cmd = " ".join(shlex.quote(a) for a in pre) + " " + srv.cmd(extra)
            rs = start_server(cmd.strip(), cwd=str(ROOT))
            self.running[key] = {**tally(srv.name, cmd.strip(), s.codec.protocol), "server": rs, "sink": sink}
        return self.running[key]

    def stop(self, key=None):
        keys = [key] if key else list(self.running)
        for k in keys:
            e = self.running.pop(k)
            code, counters, _ = e["server"].stop()
            self.checks.append(server_check(e, code, counters))

    def stop_all(self):
        self.stop()


def _cfg_key(s: Scenario):
    return (codec_key(s.codec), s.mode == "receive")


def run_matrix(scenarios: List[Scenario], servers: List[Program], clients: List[Program], runs: int,
               duration: float, pool: ServerPool, cross: List[Scenario]) -> List[dict]:
    """Primary client (clients[0]) against every server for every scenario; the other reference
    clients: the `cross` scenarios only. Runs are interleaved: all servers of one configuration
    (codec, sink) run side by side, and run i of a scenario visits every
    server (in an order rotated by i) before run i+1 starts, so background load on the shared
    machine falls on all servers alike and the ratios to the raw ceiling compare like with like."""
    primary = clients[0]
    blast = next((c for c in clients if c.name == "rust-blast"), None)
    plan = {}  # cfg -> {scenario key -> (scenario, [(server, client)])}
    for s in scenarios:
        cl = blast if s.group.startswith("receive-blast") else primary
        if cl is None or s.mode not in cl.modes:
            continue
        for srv in servers:
            if s.protocol in srv.protocols and (srv.sink or s.mode != "receive") \
                    and all(n in srv.extensions for n in s.needs):
                plan.setdefault(_cfg_key(s), {}).setdefault((s.key, s.group), (s, []))[1].append((srv, cl))
    for s in cross:
        for srv in servers:
            if s.protocol not in srv.protocols:
                continue
            for c in clients:
                if c is not primary and c.kind == "reference" and s.mode in c.modes:
                    plan.setdefault(_cfg_key(s), {}).setdefault((s.key, s.group), (s, []))[1].append((srv, c))
    total = sum(len(v[1]) for cfg in plan.values() for v in cfg.values())
    rows = []
    i = 0
    for cfg, scen in plan.items():
        up = {}
        for s, pairs in scen.values():
            for srv, _ in pairs:
                if srv.name in up:
                    continue
                try:
                    up[srv.name] = pool.get(srv, s)
                except RuntimeError as ex:
                    up[srv.name] = ex
                    continue
                # warm-up (not recorded): first connections, page faults, a JIT's first compilations
                w = run_client_once(pairs[0][1], s, up[srv.name]["server"].addr, min(0.2, duration))
                sent(up[srv.name], pairs[0][1], w)
        for s, pairs in scen.values():
            res = {(srv.name, c.name): [] for srv, c in pairs}
            for k in range(runs):
                order = pairs[k % len(pairs):] + pairs[:k % len(pairs)]
                for srv, c in order:
                    e = up[srv.name]
                    if isinstance(e, Exception):
                        continue
                    if not e["server"].alive():
                        res[(srv.name, c.name)].append({"ok": False, "output": "server exited"})
                        continue
                    r = run_client_once(c, s, e["server"].addr, duration, server_pid=e["server"].proc.pid)
                    sent(e, c, r)
                    res[(srv.name, c.name)].append(r)
            for srv, c in pairs:
                i += 1
                rr = res[(srv.name, c.name)]
                e = up[srv.name]
                if isinstance(e, Exception):
                    rows.append({"scenario": s.to_json(), "key": s.key, "server": srv.name, "server_kind": srv.kind,
                                 "client": c.name, "ok": False, "error": str(e)[:300], "runs": [],
                                 "msgs_per_s": _median_spread([]), "ratio_to_raw": None})
                    log(f"  [{i:3}/{total}] {s.key:42} {srv.name:9} server did not start")
                    continue
                good = [r for r in rr if r.get("ok")]
                st = _median_spread([r["msgs_per_s"] for r in good if r.get("msgs_per_s")])
                mb = _median_spread([r["mb_per_s"] for r in good if r.get("mb_per_s") is not None])
                p50 = _median_spread([r["latency_us"]["p50"] for r in good if r.get("latency_us")])
                p99 = _median_spread([r["latency_us"]["p99"] for r in good if r.get("latency_us")])
                ok = len(good) == runs
                rows.append({"scenario": s.to_json(), "key": s.key, "server": srv.name, "server_kind": srv.kind,
                             "client": c.name, "ok": ok, "loadavg_1m": round(os.getloadavg()[0], 2),
                             "msgs_per_s": st, "mb_per_s": mb["median"],
                             "latency_p50_us": p50["median"], "latency_p99_us": p99["median"],
                             "cpu_ns_per_msg": cpu.row_summary(rr), "runs": rr})
                log(f"  [{i:3}/{total}] {s.key:42} {srv.name:9} <- {c.name:10} "
                    + (f"{st['median']:>12,.0f} msg/s ±{st['spread_pct']}%" if st["median"] else "FAILED")
                    + ("" if ok else "  (some runs failed)"))
        for k in list(pool.running):
            pool.stop(k)
    pool.stop_all()
    # Ratios to the raw-echo ceiling, same scenario, same client: the median of the per-run ratios
    # (run k of a server and run k of raw ran back to back), and the ratio of the medians.
    raw = {(r["key"], r["scenario"]["group"], r["client"]): r for r in rows if r["server"] == "raw"}
    for r in rows:
        base = raw.get((r["key"], r["scenario"]["group"], r["client"]))
        med = (r.get("msgs_per_s") or {}).get("median")
        bmed = (base or {}).get("msgs_per_s", {}).get("median")
        r["ratio_of_medians"] = round(med / bmed, 3) if bmed and med else None
        pairs = [a["msgs_per_s"] / b["msgs_per_s"] for a, b in zip(r.get("runs", []), (base or {}).get("runs", []))
                 if a.get("ok") and b.get("ok") and a.get("msgs_per_s") and b.get("msgs_per_s")]
        r["ratio_to_raw"] = round(statistics.median(pairs), 3) if pairs else r["ratio_of_medians"]
        r["ratio_spread"] = [round(min(pairs), 3), round(max(pairs), 3)] if pairs else None
        # the per-run ratios' median with its 95 % interval (the repeat check compares these too)
        r["ratio_runs"] = summary(pairs, digits=4) if pairs and r["server"] != "raw" else None
    return rows
