"""`frameproof net --client "CMD"`: validates a load client (spec/harness.md).

frameproof runs a checking echo server on 127.0.0.1 and starts the client with
``{host}``, ``{port}`` and ``{json}`` in CMD replaced by the server's address and the
path where the client must write its JSON report. Three runs:

* clean: the server answers everything; the client's counts must equal the server's;
* corrupted: the server corrupts every 97th reply (a payload bit, or a header field: Protocol.corrupt_reply); the client must count each;
* dropped: the server leaves every 101st request unanswered; the client must report it
  and exit non-zero within its timeout.
"""
from __future__ import annotations

import ctypes
import json
import re
import os
import shlex
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, List, Optional

from .checks import CheckFailure
from .pyserver import EchoServer, ServerThread

CLIENT_TIMEOUT = float(os.environ.get("FRAMEPROOF_CLIENT_TIMEOUT", "60"))
CONTRACT_KEYS = {
    "implementation": str, "protocol": str, "mode": str, "connections": int, "window": int, "payload": int,
    "requests_sent": int, "replies_received": int, "replies_verified": int, "errors": int, "error_details": list,
    "duration_s": (int, float), "msgs_per_s": (int, float), "mb_per_s": (int, float), "latency_us": dict,
    "variant": str, "streams_completed": int, "streams_per_s": (int, float),
}


@dataclass
class ClientTarget:
    command: str
    codec: object  # oracle.Codec of the client under test
    sink: bool = False
    cwd: Optional[str] = None

    @property
    def protocol(self) -> str:
        return self.codec.protocol


@dataclass
class ClientRun:
    rc: int
    report: Optional[dict]
    stats: object
    output: str
    nodelay: dict  # peer port -> TCP_NODELAY value seen on the client's socket


@dataclass
class ClientCase:
    name: str
    requirements: List[str]
    description: str
    run: Callable


def _sockets_nodelay(pid: int, server_port: int, seen: dict):
    """Reads TCP_NODELAY on the client's own sockets (pidfd_getfd duplicates them into this process)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (OSError, AttributeError):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                    continue
            except OSError:
                continue
            dup = libc.syscall(438, pidfd, int(fd), 0)  # SYS_pidfd_getfd
            if dup < 0:
                continue
            s = socket.socket(fileno=dup)
            try:
                if s.type == socket.SOCK_STREAM and s.family in (socket.AF_INET, socket.AF_INET6):
                    try:
                        peer = s.getpeername()
                    except OSError:
                        continue
                    if peer[1] == server_port:
                        seen[s.getsockname()[1]] = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            finally:
                s.close()
    except OSError:
        pass
    finally:
        os.close(pidfd)


def run_client(t: ClientTarget, corrupt_every=0, drop_every=0, strays=None, reply_every=0) -> ClientRun:
    """One run of the client against the checking server; ``strays`` (every, fn(reply) -> frames): the
    frames the server writes before every such reply (a protocol's own client cases: rpc's); ``reply_every``:
    in receive mode, every such request answered all the same."""
    srv = EchoServer(t.codec, t.sink, check=True, corrupt_every=corrupt_every, drop_every=drop_every, strays=strays,
                     client_variant=client_variant(t.command), reply_every=reply_every)
    th = ServerThread(srv)
    host, port = th.addr
    fd, jpath = tempfile.mkstemp(suffix=".json", prefix="fp-client-")
    os.close(fd)
    os.unlink(jpath)
    cmd = t.command.replace("{host}", host).replace("{port}", str(port)).replace("{json}", jpath)
    out = tempfile.TemporaryFile()
    nodelay = {}
    try:
        p = subprocess.Popen(shlex.split(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=t.cwd, start_new_session=True)
        deadline = time.monotonic() + CLIENT_TIMEOUT
        while p.poll() is None and time.monotonic() < deadline:
            if len(nodelay) < 64:
                _sockets_nodelay(p.pid, port, nodelay)
            time.sleep(0.01)
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
            raise CheckFailure(f"the client did not finish within {CLIENT_TIMEOUT:g} s")
        time.sleep(0.2)  # let the server account for the last bytes
    finally:
        th.close()
    text, report = client_results(out, jpath)
    return ClientRun(p.returncode, report, srv.stats, text[-3000:], nodelay)


def client_variant(command: str) -> Optional[str]:
    """The --variant the client's command names (``--variant V`` or ``--variant=V``), else None: the
    protocol's first variant, the contract's default (reference-impls/README.md, fp-load)."""
    words = shlex.split(command)
    for i, w in enumerate(words):
        if w == "--variant" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--variant="):
            return w.split("=", 1)[1]
    return None


def client_results(out, jpath: str):
    """(the client's output, its JSON report: None when it wrote none, {"__invalid__": why} when it does
    not parse); the report file is removed."""
    out.seek(0)
    text = out.read().decode("utf-8", "replace")
    report = None
    if os.path.exists(jpath):
        try:
            report = json.loads(open(jpath, encoding="utf-8").read())
        except ValueError as e:
            report = {"__invalid__": str(e)}
        os.unlink(jpath)
    return text, report


def _need_report(r: ClientRun) -> dict:
    if r.report is None:
        raise CheckFailure("the client wrote no JSON report at {json}\n--- client output ---\n" + r.output)
    if "__invalid__" in r.report:
        raise CheckFailure(f"the client's JSON report does not parse: {r.report['__invalid__']}")
    return r.report


def _cache(t, key, fn):
    cache = t.__dict__.setdefault("_runs", {})
    if key not in cache:
        cache[key] = fn()
    return cache[key]


def clean(t):
    return _cache(t, "clean", lambda: run_client(t))


def c_json(t):
    rep = _need_report(clean(t))
    bad = [f"{k} (missing)" for k in CONTRACT_KEYS if k not in rep]
    bad += [f"{k} (type {type(rep[k]).__name__})" for k, ty in CONTRACT_KEYS.items() if k in rep and not isinstance(rep[k], ty)]
    lat = rep.get("latency_us", {})
    bad += [f"latency_us.{k} (missing)" for k in ("p50", "p90", "p99", "p999", "max") if k not in lat]
    if bad:
        raise CheckFailure("JSON report keys not as the contract says: " + ", ".join(bad))


def c_well_formed(t):
    r = clean(t)
    s = r.stats
    if s.protocol_errors:
        raise CheckFailure(f"the checking server saw {s.protocol_errors} malformed stream(s) from the client")
    if s.client_errors:
        raise CheckFailure(f"{s.client_errors} request(s) break the client rules; first: {s.error_details[0]}")
    if s.frames == 0:
        raise CheckFailure("the client sent no frame at all\n--- client output ---\n" + r.output)


def c_counts(t):
    r = clean(t)
    rep = _need_report(r)
    s = r.stats
    diffs = []
    if rep.get("requests_sent") != s.frames:
        diffs.append(f"requests_sent: client says {rep.get('requests_sent')}, server received {s.frames}")
    if not t.sink:
        if rep.get("replies_received") != s.replies:
            diffs.append(f"replies_received: client says {rep.get('replies_received')}, server wrote {s.replies}")
        if rep.get("replies_verified") != s.replies:
            diffs.append(f"replies_verified: client says {rep.get('replies_verified')}, server wrote {s.replies} correct replies")
    if rep.get("errors") != 0:
        diffs.append(f"errors: client reports {rep.get('errors')} against a correct server: {rep.get('error_details')}")
    from . import protocols
    ext = protocols.get(t.protocol).client_extension(t.codec)
    if ext and s.extended < s.connections:
        # the codec switches an extension on: a client that never offered it has checked nothing of it
        diffs.append(f"extension: the codec switches {ext} on, but {s.connections - s.extended} of "
                     f"{s.connections} connections did not agree on it (the client did not offer it)")
    if r.rc != 0:
        diffs.append(f"exit status {r.rc} after a clean run")
    if diffs:
        raise CheckFailure("client and server disagree:\n  " + "\n  ".join(diffs))


def _altered(t, sink: bool, why: str, stat: str, every: int, what: str, **server):
    """The cached run whose checking server alters every ``every``-th reply (``server``: run_client's keyword),
    skipped (``why``) unless the client's mode is receive mode exactly when ``sink``: (the run, its report, the
    replies the server altered, its Stats field ``stat``)."""
    if t.sink != sink:
        from .netsuite import SkipCase
        raise SkipCase(why)
    r = _cache(t, stat, lambda: run_client(t, **server))
    rep = _need_report(r)
    k = getattr(r.stats, stat)
    if k == 0:
        raise CheckFailure(f"the run was too short for the server to {what} (send at least {every} requests)")
    return r, rep, k


def c_corrupted(t):
    r, rep, k = _altered(t, False, "receive mode has no replies to verify", "corrupted", 97, "corrupt a reply",
                         corrupt_every=97)
    if rep.get("errors") != k:
        raise CheckFailure(f"the server corrupted {k} replies; the client reports errors = {rep.get('errors')}"
                           + (" (it does not verify payloads)" if not rep.get("errors") else ""))
    if r.rc == 0:
        raise CheckFailure(f"the client exited 0 although {k} replies were wrong")


def c_dropped(t):
    r, rep, k = _altered(t, False, "receive mode has no replies", "dropped", 101, "drop a reply", drop_every=101)
    missing = (rep.get("requests_sent") or 0) - (rep.get("replies_received") or 0)
    if missing != k:
        raise CheckFailure(f"the server left {k} requests unanswered; the client reports "
                           f"requests_sent - replies_received = {missing}")
    if r.rc == 0:
        raise CheckFailure(f"the client exited 0 although {k} requests got no reply")


def c_unasked_replies(t):
    """Receive mode (the checking server a sink): every 97th request is answered all the same. The client
    expects no reply there: each that arrives counts as one error, and the client exits non-zero
    (HAR-VERIFY-3)."""
    r, rep, k = _altered(t, True, "only in receive mode (--sink): elsewhere every request is answered", "unasked", 97,
                         "answer a request", reply_every=97)
    if rep.get("errors") != k or r.rc == 0:
        raise CheckFailure(f"in receive mode the server answered {k} of {r.stats.frames} requests, which the "
                           f"client did not ask for:\n  expected errors = {k} (one per reply) and a non-zero exit "
                           f"status\n  actual   errors = {rep.get('errors')}, exit status {r.rc}\n"
                           f"--- client output ---\n{r.output[-1500:]}")


def c_nodelay(t):
    r = clean(t)
    if not r.nodelay:
        from .netsuite import SkipCase
        raise SkipCase("could not inspect the client's sockets (pidfd_getfd unavailable, or the run was too short)")
    off = [p for p, v in r.nodelay.items() if not v]
    if off:
        raise CheckFailure(f"{len(off)} of {len(r.nodelay)} client sockets have TCP_NODELAY off")


def _with_flag(command: str, flag: str, value) -> str:
    """``command`` with ``flag``'s value replaced (``--flag V`` or ``--flag=V``), or the flag added;
    ``value`` None: the flag removed."""
    new = "" if value is None else f"{flag} {value}"
    cmd, n = re.subn(rf"{flag}(?:=|\s+)\S+", new, command)
    return cmd if n or value is None else f"{command} {new}"


def _largest(t) -> int:
    from . import protocols
    return protocols.get(t.protocol).largest_load_payload(t.codec)


def c_payload_refused(t):
    """The client's command with ``--payload`` one byte above the largest payload its codec can carry
    (replacing the command's own ``--payload``, or added): a usage error before it connects (HAR-CLI-2)."""
    too_big = _largest(t) + 1
    flag = f"--payload {too_big}"
    cmd = _with_flag(t.command, "--payload", too_big)
    r = run_client(ClientTarget(cmd, t.codec, t.sink, t.cwd))
    usage = any(line.startswith("usage error:") for line in r.output.splitlines())
    if r.rc != 2 or not usage or r.stats.connections:
        raise CheckFailure(f"the client started with {flag} (the codec carries at most {too_big - 1} payload bytes):\n"
                           f"  expected exit status 2, a line starting 'usage error:', no connection\n"
                           f"  actual   status {r.rc}, {r.stats.connections} connection(s), output "
                           f"{r.output.strip()[-300:]!r}")


def c_largest_payload_accepted(t):
    """The client's command with ``--payload`` at the largest payload its codec can carry, on one connection
    for 2 requests (``--requests 2``, ``--duration`` left out; pipelined and batched runs one request at a time,
    ``--mode per-packet``): it runs, and every request is well formed, answered and verified (HAR-CLI-2: a
    client must not refuse what it can carry). With permessage-deflate too: an incompressible payload goes
    uncompressed (WSD-FRM-3), a compressible one compressed."""
    from . import protocols
    n = _largest(t)
    cmd = _with_flag(_with_flag(_with_flag(t.command, "--payload", n), "--connections", 1), "--duration", None)
    # a reply to the largest frame takes the (Python) checking server a while: 30 s before a request is missing
    cmd = _with_flag(_with_flag(cmd, "--requests", 2), "--timeout-ms", 30000)
    mode = re.search(r"--mode(?:=|\s+)(\S+)", cmd)
    if not mode or mode.group(1) in ("pipelined", "batched"):
        # a request, then its reply: a window or batch of the largest frames written before any read is a peer
        # the server may close for not reading (RES-5)
        cmd = _with_flag(_with_flag(_with_flag(cmd, "--mode", "per-packet"), "--window", None), "--batch", None)
    elif mode.group(1) == "stream":  # one stream at a time, one DATA frame each
        cmd = _with_flag(_with_flag(cmd, "--window", 1), "--frames-per-stream", 1)
    r = run_client(ClientTarget(cmd, t.codec, t.sink, t.cwd))
    rep = r.report or {}
    bad = []
    if r.rc != 0:
        bad.append(f"exit status {r.rc}")
    if r.stats.client_errors or r.stats.protocol_errors:
        bad.append(f"{r.stats.client_errors + r.stats.protocol_errors} ill-formed request(s): {r.stats.error_details[:1]}")
    # the server counts payload bytes as they came: with an extension (permessage-deflate) a request may come
    # compressed, never longer than the message (WSD-FRM-3: else the largest would be a frame over the limit)
    ext = protocols.get(t.protocol).client_extension(t.codec)
    if r.stats.frames < 1 or (r.stats.bytes > r.stats.frames * n if ext else r.stats.bytes != r.stats.frames * n):
        bad.append(f"the server received {r.stats.frames} request(s) of {r.stats.bytes} payload bytes in all"
                   + (f" (with {ext}: at most {n} each)" if ext else ""))
    if not t.sink and (rep.get("replies_verified") != r.stats.frames or rep.get("errors") != 0):
        bad.append(f"replies_verified {rep.get('replies_verified')}, errors {rep.get('errors')} "
                   f"({rep.get('error_details')})")
    if bad:
        raise CheckFailure(f"the client run with --payload {n} (the largest its codec carries), --connections 1, "
                           f"--requests 2:\n  expected exit status 0, every request received and its reply verified\n"
                           f"  actual   {'; '.join(bad)}\n--- client output ---\n{r.output[-1500:]}")


def wrong_replies(t, kind: str, fn, requirements: List[str], every: int = 13):
    """A protocol's client case (Protocol.client_cases): before every ``every``-th reply the checking server
    writes ``fn(reply)``, one frame that completes the same pending request as the reply (same key and
    payload) but is a wrong answer to it (a header field the protocol fixes differs). The client must take
    it as the reply, fail its verification (HAR-VERIFY-1: one error each, non-zero exit) and then find
    that the real reply completes nothing. Checks a client's header verification, which the generic
    corrupted run (a payload bit) does not reach."""
    from .netsuite import SkipCase
    if t.sink:
        raise SkipCase("receive mode has no replies to verify")
    if ((clean(t).report or {}).get("mode") or "") == "stream":
        raise SkipCase("stream mode has no pending requests")
    r = _cache(t, kind, lambda: run_client(t, strays=(every, fn)))
    rep = _need_report(r)
    s = r.stats
    if s.strays == 0:
        raise CheckFailure(f"the run was too short for the server to write a wrong reply (send at least {every} requests)")
    bad = []
    # each wrong reply completed its request and failed; the real reply after it completed nothing
    if rep.get("replies_verified") != s.replies - s.strays:
        bad.append(f"replies_verified: client says {rep.get('replies_verified')}, expected {s.replies - s.strays} "
                   f"({s.replies} real replies, {s.strays} of them preceded by a wrong reply that completed the request)")
    if not isinstance(rep.get("errors"), int) or rep["errors"] < s.strays:
        bad.append(f"errors: client says {rep.get('errors')}, expected at least {s.strays} (one per wrong reply)")
    if r.rc == 0:
        bad.append("exit status 0 although replies were wrong")
    if bad:
        raise CheckFailure(f"{kind}: before every {every}th reply a wrong reply with the same key and payload; the "
                           "client:\n  " + "\n  ".join(bad) + "\n--- client output ---\n" + r.output[-1500:],
                           requirements)


def all_cases(protocol: Optional[str] = None) -> List[ClientCase]:
    """The generic cases, then ``protocol``'s own (``Protocol.client_cases``: websocket's opening handshake,
    rpc's stray frames)."""
    own = []
    if protocol is not None:
        from . import protocols
        own = list(getattr(protocols.get(protocol), "client_cases", lambda: [])())
    return [
        ClientCase("well_formed_requests", ["HAR-CLI-1"], "Every frame the client sends is a well-formed request", c_well_formed),
        ClientCase("json_report", ["HAR-JSON-1"], "The JSON report has every contract key", c_json),
        ClientCase("counts_agree", ["HAR-COUNT-1"], "The client's counts equal the checking server's", c_counts),
        ClientCase("detects_corrupted_replies", ["HAR-VERIFY-1"], "Every 97th reply is corrupted: the client counts each", c_corrupted),
        ClientCase("detects_missing_replies", ["HAR-VERIFY-2"], "Every 101st request is not answered: the client reports it", c_dropped),
        ClientCase("detects_unasked_replies", ["HAR-VERIFY-3"], "Receive mode: every 97th request is answered "
                   "anyway: the client counts each reply as an error", c_unasked_replies),
        ClientCase("tcp_nodelay", ["HAR-NODELAY-1"], "The client's sockets have TCP_NODELAY set (SHOULD)", c_nodelay),
        ClientCase("payload_refused", ["HAR-CLI-2"], "A --payload above what the codec carries: a usage error before "
                   "connecting", c_payload_refused),
        ClientCase("largest_payload_accepted", ["HAR-CLI-2"], "A --payload of the largest the codec carries: "
                   "sent, answered and verified", c_largest_payload_accepted),
    ] + own
