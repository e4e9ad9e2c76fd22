"""The Python reference Autobahn client (the contract's ``fp-autobahn-client``,
reference-impls/README.md): the Autobahn testsuite's client protocol against its
``fuzzingserver``, over the Python websocket reference codec in the client role.

    python -m frameproof.protocols.websocket.autobahn_client --connect HOST:PORT --agent NAME [--cases all|N]
                                                             [--mutant NAME]

``GET /getCaseCount`` (one text message: the count), then for each case
``GET /runCase?case=I&agent=NAME``, echoing every text and binary message (same opcode, same
payload, one masked FIN frame with a fresh random key, WS-MASK-3/4) until the server closes, then
``GET /updateReports?agent=NAME``. Pings are answered (WS-PING-1), a close frame is answered with
the same code (WS-CLOSE-5) and the client then waits for the server to close TCP; a protocol error
sends the close code of WS-ERR-1. No message size limit below 64 MiB.
Exit status 0 when every case ran (Autobahn's verdicts are read by ``frameproof autobahn``), 1 if a
case could not run (connection refused, handshake refused, no end within --case-timeout), 2 usage.
"""
from __future__ import annotations

import argparse
import base64
import os
import socket
import sys
import time
from urllib.parse import quote

from ...oracle import Frame
from ...reference import CodecError
from . import reference
from .frames import BINARY, CLOSE, TEXT, WsHeader
from .oracle import WsCodec

LIMIT = 64 * 1024 * 1024
MAX_HEAD = 65536


class HandshakeError(Exception):
    pass


def _masked(f: Frame) -> Frame:
    return Frame(0, 0, f.payload, WsHeader(True, 0, f.header.opcode, True, os.urandom(4)))


class ClientSession:
    """The client side of one connection after the opening handshake: ``feed(bytes) -> bytes``
    to write. ``collect`` keeps data messages instead of echoing them (for /getCaseCount)."""

    def __init__(self, collect=False, limit=LIMIT):
        self.codec = WsCodec("websocket", limit, "client", limit)
        self.dec = reference.WsDecoder(self.codec)
        self.echo = reference.Echo()
        self.collect = collect
        self.messages = []
        self.closing = False  # a close frame was sent: only the server's EOF (or its close) is awaited
        self.error = None

    def _enc(self, f: Frame) -> bytes:
        return reference.encode(self.codec, _masked(f), 2 ** 63)

    def feed(self, data: bytes) -> bytes:
        if self.closing:
            return b""
        err = None
        try:
            frames = self.dec.feed(data)
        except CodecError as e:
            frames, err = e.frames, e
        out = bytearray()
        for f in frames:
            try:
                r = self.echo(f)
            except reference.Goodbye as g:
                out += self._enc(g.reply)
                self.closing = True
                return bytes(out)
            if r is None:
                continue
            if self.collect and r.header.opcode in (TEXT, BINARY):
                self.messages.append(r.payload)
                continue
            out += self._enc(r)
        if err is not None:
            self.error = err
            self.closing = True
            c = reference.closing_frame(err)
            if c is not None:
                out += self._enc(c)
        return bytes(out)


def handshake(sock: socket.socket, host: str, port: int, path: str, deadline: float) -> bytes:
    """The client side of the opening handshake (WS-HS-*); returns bytes read past the head."""
    key = base64.b64encode(os.urandom(16)).decode()
    hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"User-Agent: frameproof-autobahn-client\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD:
            raise HandshakeError("response head over 64 KiB")
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        ch = sock.recv(65536)
        if not ch:
            raise HandshakeError(f"connection closed during the handshake (got {buf[:200]!r})")
        buf += ch
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or parts[1] != "101":
        raise HandshakeError(f"status line {lines[0]!r}, expected 101")
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("upgrade", "").lower() != "websocket":
        raise HandshakeError(f"Upgrade: {hdrs.get('upgrade')!r}")
    if hdrs.get("sec-websocket-accept") != reference.accept_for(key):
        raise HandshakeError(f"Sec-WebSocket-Accept {hdrs.get('sec-websocket-accept')!r}, expected "
                             f"{reference.accept_for(key)!r}")
    if hdrs.get("sec-websocket-extensions"):
        raise HandshakeError(f"the server named an extension nobody offered: {hdrs['sec-websocket-extensions']!r}")
    return rest


def session(host: str, port: int, path: str, timeout: float, collect=False) -> ClientSession:
    """One connection: handshake, then read/answer until the server closes TCP (or the deadline)."""
    deadline = time.monotonic() + timeout
    s = ClientSession(collect)
    with socket.create_connection((host, port), timeout=min(timeout, 10)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = handshake(sock, host, port, path, deadline)
        closing_since = None
        while True:
            if data:
                out = s.feed(data)
                if out:
                    sock.settimeout(max(0.01, deadline - time.monotonic()))
                    sock.sendall(out)
            now = time.monotonic()
            if s.closing and closing_since is None:
                closing_since = now
            # after our close the server closes TCP (WS-CLOSE-5: the server closes first); 5 s at most
            wait_until = min(deadline, closing_since + 5) if closing_since is not None else deadline
            if now >= wait_until:
                if closing_since is None:
                    raise TimeoutError(f"{path}: the server did not end the connection within {timeout:g} s")
                break
            sock.settimeout(max(0.01, wait_until - now))
            try:
                data = sock.recv(1 << 20)
            except socket.timeout:
                continue
            except ConnectionResetError:
                break
            if not data:
                try:
                    s.dec.finish()
                except CodecError:
                    pass  # the server went away inside a frame
                break
    return s


def run(host: str, port: int, agent: str, cases: str, timeout: float, log=print) -> int:
    try:
        cs = session(host, port, "/getCaseCount", 30, collect=True)
        count = int(cs.messages[0].decode())
    except (OSError, HandshakeError, ValueError, IndexError, TimeoutError) as e:
        log(f"autobahn client: /getCaseCount failed: {e}")
        return 1
    n = count if cases == "all" else min(count, int(cases))
    log(f"autobahn client: {count} cases offered, running {n} as agent {agent!r}")
    failed = 0
    a = quote(agent, safe="")
    t0 = time.monotonic()
    for i in range(1, n + 1):
        try:
            session(host, port, f"/runCase?case={i}&agent={a}", timeout)
        except (OSError, HandshakeError, TimeoutError) as e:
            failed += 1
            log(f"autobahn client: case {i} did not run to its end: {e}")
    try:
        session(host, port, f"/updateReports?agent={a}", 60)
    except (OSError, HandshakeError, TimeoutError) as e:
        log(f"autobahn client: /updateReports failed: {e}")
        return 1
    log(f"autobahn client: {n - failed} of {n} cases ran in {time.monotonic() - t0:.1f} s")
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m frameproof.protocols.websocket.autobahn_client",
                                 description="Autobahn testsuite client over the Python websocket reference codec")
    ap.add_argument("--connect", required=True, help="HOST:PORT of wstest -m fuzzingserver")
    ap.add_argument("--agent", required=True, help="agent name in Autobahn's reports")
    ap.add_argument("--cases", default="all", help="all (default) or N: only the first N cases")
    ap.add_argument("--case-timeout", type=float, default=120.0, help="seconds per case (default 120)")
    ap.add_argument("--mutant", default="", help="switch on one deliberate bug of the reference codec "
                                                 "(the websocket protocol's mutants, for the suite's own tests)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0) and 2
    if args.cases != "all" and not args.cases.isdigit():
        print("usage error: --cases must be 'all' or a number", file=sys.stderr)
        return 2
    if args.mutant:
        from ... import reference as R
        from . import PROTOCOL
        if args.mutant not in PROTOCOL.mutants:
            print(f"usage error: --mutant must be one of {', '.join(sorted(PROTOCOL.mutants))}", file=sys.stderr)
            return 2
        R.MUTANT = args.mutant
    host, _, port = args.connect.rpartition(":")
    if not port.isdigit():
        print("usage error: --connect HOST:PORT", file=sys.stderr)
        return 2
    return run(host.strip("[]"), int(port), args.agent, args.cases, args.case_timeout,
               lambda s: print(s, flush=True))


if __name__ == "__main__":
    sys.exit(main())
