"""The network cases that start a server process of their own from the command under test
(``frameproof net --server-cmd``): the counters it prints when stopped (HAR-SRV-1) and the usage
errors it must refuse to start with (HAR-SRV-2, and a protocol's RES-1 for the memory budget).

Against a running server (``--server HOST:PORT``) they skip: there is no command to start."""
from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import time
from typing import List

from ..checks import CheckFailure
from ..loadside import payload_for
from .conn import Conn, check_replies, request
from .target import NetCase, NetTarget, SkipCase

USAGE_TIMEOUT = 15.0


def _own_server(t: NetTarget):
    from ..servers import start_server
    if not t.server_cmd:
        raise SkipCase("needs the server's command (frameproof net --server-cmd), not a running server")
    try:
        return start_server(t.server_cmd, cwd=t.cwd)
    except RuntimeError as e:  # e.g. the command binds a fixed port the server under test holds
        raise SkipCase(f"a second server could not start from the command: {e}")


def own_server_with(t: NetTarget, flags: str, requirement: str):
    """(server, target) of a server started for a case from the command under test with ``flags`` added (a
    memory budget, timeouts): a command that cannot start so fails ``requirement``, whose flags they are."""
    if not t.server_cmd:
        raise SkipCase("needs the server's command (frameproof net --server-cmd), not a running server")
    return own_server_cmd(t, f"{t.server_cmd} {flags}", requirement, f"the server started with {flags} "
                          f"({requirement}'s flags)")


def own_server_cmd(t: NetTarget, cmd: str, requirement: str, what: str, codec=None):
    """(server, target) of a server a case starts from ``cmd`` (the command under test, changed), ``codec`` the
    target's if given: a server that does not listen fails ``requirement``."""
    from ..servers import start_server
    try:
        srv = start_server(cmd, cwd=t.cwd)
    except RuntimeError as e:
        raise CheckFailure(f"{what}:\n  expected it to listen\n  actual   {e}", [requirement])
    return srv, dataclasses.replace(t, host=srv.host, port=srv.port, pid=srv.proc.pid, codec=codec or t.codec)


def command_with_codec(cmd: str, codec_json: dict) -> str:
    """``cmd``, a program of the contract, given ``codec_json`` for its codec: the value of its ``--codec``
    replaced, or its ``--protocol NAME`` replaced by ``--codec JSON`` (reference-impls/README.md: every
    server and load client takes one of the two). SkipCase for a command with neither."""
    words = shlex.split(cmd)
    j = json.dumps(codec_json, separators=(",", ":"))
    for flag in ("--codec", "--protocol"):
        for i, w in enumerate(words):
            if w == flag and i + 1 < len(words):
                return shlex.join(words[:i] + ["--codec", j] + words[i + 2:])
            if w.startswith(flag + "="):
                return shlex.join(words[:i] + ["--codec", j] + words[i + 1:])
    raise SkipCase("the command gives its program no --codec or --protocol (the contract's flags, "
                   "reference-impls/README.md): the case cannot give it another codec")


def refused_cmd(words: list, cwd, what: str, requirements: list):
    """The program of ``words`` (a server or a load client) refuses to start: exit status 2, a stderr line
    starting ``usage error:``, no LISTENING line, within USAGE_TIMEOUT (HAR-SRV-2's usage error)."""
    try:
        p = subprocess.run(words, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=USAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CheckFailure(f"{what}:\n  expected exit status 2 (usage error)\n"
                           f"  actual   still running after {USAGE_TIMEOUT:g} s", requirements)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    usage = any(line.startswith("usage error:") for line in err.splitlines())
    if p.returncode != 2 or "LISTENING" in out or not usage:
        raise CheckFailure(f"{what}:\n"
                           f"  expected exit status 2, a stderr line starting 'usage error:', no LISTENING line\n"
                           f"  actual   status {p.returncode}, stdout {out.strip()[:120]!r}, stderr {err.strip()[:200]!r}",
                           requirements)


def _payload_sizes(t: NetTarget) -> List[int]:
    """Payload sizes: empty, one byte, the byte edges of the length fields (websocket's 125/126/127,
    a u16's 65535/65536), each once, below the limit with room for a request's own fields (rpc's
    names); the largest frame has a case of its own (largest_allowed_frame)."""
    sizes = [0, 1, 125, 126, 127, 255, 256, 4096, 65535, 65536]
    room = min(1024, t.limit // 2)
    return [n for n in sizes if n <= t.limit - room]


SETTLE_S = 0.3  # counters_on_stop: the last connection's end reaches the server's counters before SIGTERM


def c_counters_on_stop(t: NetTarget):
    """Three connections with known frames (payloads over the whole range), the last ended the protocol's
    orderly way where it has one (websocket's close handshake: no protocol error), one connection closed
    for a decoding error where the framing can declare an oversize frame; then SIGTERM: the JSON
    line's counts equal what was sent."""
    from ..protocols import get
    srv = _own_server(t)
    sent_frames = sent_bytes = conns = 0
    errors = goodbyes = 0
    bye = t.spec.net_goodbye()
    try:
        own = dataclasses.replace(t, host=srv.host, port=srv.port, pid=srv.proc.pid)
        sizes = _payload_sizes(t)
        for k in range(3):
            reqs = [request(own, (k * 64 + i) % 250 + 1, payload_for(k * 100 + i, n))
                    for i, n in enumerate(sizes[k::3] * (k + 1))]
            c = Conn(own)
            conns += 1
            try:  # a request, then its reply: a server may stop reading while a large reply is unsent (RES-5)
                for i, r in enumerate(reqs):
                    c.send(c.frame(r))
                    check_replies(own, [r], c.read_frames(1), f"connection {k}, request {i} of the server started "
                                  f"for this case: ")
                if k == 2 and bye is not None:
                    _goodbye(own, c, bye, f"connection {k} of the server started for this case")
                    goodbyes = 1
            finally:
                c.close()
            sent_frames += len(reqs)
            sent_bytes += sum(len(r.payload) for r in reqs)
        if t.limit < t.codec.capacity:
            c = Conn(own)
            conns += 1
            try:
                c.send(t.spec.oversize_header(t.codec, t.limit + 1) + b"x" * 16)
                c.expect_closed(what=" after a header declaring max+1 bytes")
            finally:
                c.close()
            errors = 1
    finally:
        # a server may count a connection's end just after closing it (websocketpp's wrapper counts a protocol
        # error in its close handler, which runs after the socket is shut: on a busy machine SIGTERM came
        # first and the count read 0); the counts are of what was sent, not of how fast they are kept
        time.sleep(SETTLE_S)
        stopped = srv.stop()
    g = get(t.codec.protocol).load_goodbye_frames  # frames a connection may end with (websocket's close)
    # a goodbye frame may be counted as a frame (websocket's close: its 2-byte code as payload), not as an error
    frames_ok = sorted({sent_frames, sent_frames + goodbyes, sent_frames + g * conns})
    bytes_ok = sorted({sent_bytes, sent_bytes + 2 * goodbyes, sent_bytes + 2 * g * conns})
    check_counters(stopped, {"connections": [conns], "frames": frames_ok, "bytes": bytes_ok, "protocol_errors": [errors]},
                   f"{conns} connections, {sent_frames} requests of {sent_bytes} payload bytes (sizes {sizes}), "
                   f"{goodbyes} ended with the protocol's goodbye, {errors} connection(s) closed for a decoding error")


def _goodbye(t: NetTarget, c: Conn, bye, what: str):
    """``c`` ended the protocol's orderly way: ``bye`` sent, a goodbye frame back, then the server's close."""
    c.send(c.frame(bye))
    got = c.read_frames(1)
    if len(got) != 1 or not t.spec.net_is_goodbye(got[0]):
        raise CheckFailure(f"{what}, ended with the protocol's goodbye ({bye.short()}):\n  expected a goodbye frame "
                           f"back, then the server's close\n  actual   {[f.short() for f in got]}")
    c.expect_closed(what=" after the goodbye")


def check_counters(stopped, want: dict, what: str):
    """HAR-SRV-1: ``stopped`` (a server's ``stop()``: status, counters, output) exited 0 with a JSON line of
    counters, each of ``want``'s keys one of its allowed values; ``what``: what the case sent."""
    code, counters, out = stopped
    if code != 0 or counters is None:
        raise CheckFailure("a server stopped with SIGTERM:\n  expected exit status 0 and one JSON line of counters\n"
                           f"  actual   status {code}, {'no JSON line' if counters is None else counters}; output: "
                           f"{out.strip()[-300:]!r}")
    bad = {k: counters.get(k) for k, ok in want.items() if counters.get(k) not in ok}
    if bad:
        raise CheckFailure(
            f"the counters printed on SIGTERM after {what}:\n"
            f"  expected {', '.join(f'{k} ' + ' or '.join(map(str, v)) for k, v in want.items())}\n"
            f"  actual   {', '.join(f'{k} {v}' for k, v in bad.items())} (all: {counters})")


def _refused(t: NetTarget, flags: str, what: str):
    refused_cmd(shlex.split(t.server_cmd) + shlex.split(flags), t.cwd, f"the server started with {flags} ({what})", [])


def c_usage_errors(t: NetTarget):
    """Flags the server must refuse before it listens: a memory budget one byte below the largest
    payload it accepts, a limit of 0, a limit that is not an integer."""
    if not t.server_cmd:
        raise SkipCase("needs the server's command (frameproof net --server-cmd), not a running server")
    _refused(t, f"--memory-budget {t.limit - 1}", f"a memory budget below the largest payload, {t.limit} bytes")
    _refused(t, "--max-connections 0", "a connection limit of 0")
    _refused(t, "--idle-timeout-ms 1.5", "a timeout that is not an integer")


def process_cases(res_1: str) -> List[NetCase]:
    """The two cases, with the protocol's memory-budget requirement (``res_1``: STD-RES-1 ...)."""
    return [
        NetCase("counters_on_stop", ["HAR-SRV-1"], "A server started for the case counts the connections, frames, "
                "payload bytes and decoding errors it saw, and prints them on SIGTERM", c_counters_on_stop),
        NetCase("usage_errors_refused", ["HAR-SRV-2", res_1], "A memory budget below the largest frame, a limit of 0 "
                "or a non-integer limit: exit status 2 before listening", c_usage_errors),
    ]
