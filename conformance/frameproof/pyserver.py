"""A small asyncio echo server for every registered protocol, used three ways:

* the *checking server* behind ``frameproof net --client``: it validates every frame a
  client sends (HAR-*, with the protocol's ``client_request_check``), counts what it saw,
  and can corrupt or drop replies on purpose to prove that a load client verifies them;
* a correct Python echo server for the project's own tests of ``frameproof net``;
* with ``--fault``, deliberately broken servers that ``frameproof net`` must catch.

Run: python -m frameproof.pyserver (--protocol NAME | --codec JSON) --listen 127.0.0.1:0 [--fault NAME]
      [--endpoints unary|stream|both] [--service NAME] [--method NAME] (rpc) [--memory-budget BYTES] [--idle-timeout-ms MS] [--frame-timeout-ms MS] [--max-output-bytes BYTES]
      [--write-timeout-ms MS] [--max-connections N]
The resource limits (*-RES-*) are the spec's, with its defaults. It prints ``LISTENING host:port`` and, on SIGTERM/SIGINT, one JSON line of counters.
"""
from __future__ import annotations

import asyncio
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import termios
import time
from dataclasses import dataclass, field
from typing import Optional

from . import protocols
from .oracle import Codec
from .reference import CodecError
from .stress import FLOOR, Limits, add_limit_args, limits_from_args

# Faults that break no one requirement: they probe the suite's reports (tests of the suite).
PROBES = ("stops-reading",)


def faults() -> dict:
    """Every protocol's deliberately broken servers: name -> the requirement it breaks."""
    out = {}
    for p in protocols.all_protocols():
        out.update(p.server_faults)
        out.update(getattr(p, "opt_in_server_faults", {}))
    return out


@dataclass
class Stats:
    connections: int = 0
    frames: int = 0  # requests received
    bytes: int = 0  # payload bytes received
    replies: int = 0  # replies written
    protocol_errors: int = 0
    client_errors: int = 0  # frames that break the client-side rules (HAR-CLI-1)
    corrupted: int = 0  # replies corrupted on purpose
    dropped: int = 0  # requests not answered on purpose
    strays: int = 0  # frames written on purpose before a reply, answering nothing (rpc: RPC-MATCH-2, -4)
    extended: int = 0  # connections whose opening agreed on an extension (websocket: permessage-deflate)
    #: a protocol's own counts of what a client under test sent, by name (websocket: the --variant prose
    #: messages sent compressed or not on connections that agreed on permessage-deflate, HAR-CLI-3)
    observed: dict = field(default_factory=dict)
    unasked: int = 0  # replies written in receive mode on purpose (HAR-VERIFY-3: each an error to the client)
    error_details: list = field(default_factory=list)
    refused: int = 0  # connections beyond --max-connections, accepted and closed at once (RES-6)
    accept_errors: int = 0  # accepts that failed for want of descriptors (RES-7)
    closed_for: dict = field(default_factory=lambda: {"budget": 0, "idle": 0, "handshake": 0, "frame": 0,
                                                       "write": 0})  # connections closed for a limit

    def note(self, msg):
        self.client_errors += 1
        if len(self.error_details) < 10:
            self.error_details.append(msg)


#: checking a client with an extension that compresses (permessage-deflate): every PLAIN_EVERY-th reply is sent
#: uncompressed (RFC 7692 §6: a sender may send any message so, WSD-FRM-1)
PLAIN_EVERY = 5


# Deliberately broken servers for the resource limits (every protocol alike): name -> the RES
# requirement number it breaks (the protocol's prefix goes in front: STD-RES-1, WS-RES-1, ...).
RES_FAULTS = {
    "no-memory-budget": 1,  # buffers every unfinished frame, whatever the total
    "budget-closes-everyone": 2,  # over the budget, closes every connection holding anything, small ones too
    "no-idle-timeout": 3,  # keeps silent connections forever
    "no-frame-timeout": 4,  # keeps a connection stuck in the middle of a frame forever
    "unbounded-output": 5,  # keeps reading and queueing replies for a peer that never reads
    "no-connection-limit": 6,  # accepts every connection
    "spins-at-emfile": 7,  # retries accept in a busy loop when out of descriptors
    "pause-drops-connections": 8,  # after a scheduling gap, closes connections as timed out without reading
}
EXHAUSTED = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class EchoConn(asyncio.Protocol):
    """One connection of the echo server: the protocol's opening handshake, then frames through the
    reference decoder and the protocol's replier; what it holds is accounted for the RES limits."""

    def __init__(self, srv: "EchoServer"):
        self.srv = srv
        self.tr = None
        self.closing = False
        self.why = ""
        self.dec = self.replier = self.opening = None  # set once the transport is made
        self.held = self.last_out = 0

    # -- asyncio callbacks
    def connection_made(self, tr):
        srv, st = self.srv, self.srv.stats
        self.tr = tr
        st.connections += 1
        self.no = st.connections
        now = time.monotonic()
        self.accepted = self.last_rx = self.out_progress = now
        self.last_out = 0
        self.received = 0
        self.held = 0
        self.dec = srv.decoder()
        self.check = srv.proto.client_request_check(srv.client_variant)
        self.replier = srv.proto.echo_replier(srv.codec, srv.fault)
        self.opening = srv.proto.server_opening(srv.codec, srv.fault)
        if srv.check and hasattr(self.opening, "ask_client_reset"):  # a client under test: a parameter it must
            self.opening.ask_client_reset = self.no % 2 == 0  # follow though it did not offer it (WSD-NEG-5)
        if srv.fault != "unbounded-output":
            tr.set_write_buffer_limits(high=srv.limits.max_output_bytes)
        else:
            tr.set_write_buffer_limits(high=2 ** 40)
        if srv.stopping:
            tr.abort()

    def connection_lost(self, exc):
        end = getattr(self.check, "at_end", None) if self.srv.check else None  # a client's rule for its end
        bad = end() if end is not None else None
        if bad:
            self.srv.stats.note(f"connection {self.no}: {bad}")
        self.closing = True
        self.srv._forget(self)
        self.dec = self.replier = self.opening = None

    def pause_writing(self):  # pending output reached --max-output-bytes (RES-5): stop reading
        if self.tr and not self.closing:
            self.tr.pause_reading()

    def resume_writing(self):
        if self.tr and not self.closing and not getattr(self, "stuck", False):
            self.tr.resume_reading()

    def eof_received(self):
        if self.opening is not None or self.dec is None:
            return False
        try:
            self.dec.finish()
        except CodecError:
            pass  # a partial frame at EOF is discarded (truncation)
        if self.srv.fault == "ignore-half-close":
            return True  # the bug: keeps the connection open and silent
        self.closing = True
        self.srv._account(self)
        return False  # the transport closes once the replies are written

    def data_received(self, data):
        if self.closing or self.dec is None:
            return
        srv, st = self.srv, self.srv.stats
        self.last_rx = time.monotonic()
        self.received += len(data)
        if srv.fault == "stops-reading" and self.received >= 65536:
            self.stuck = True
            self.tr.pause_reading()  # the bug: never reads again
        if self.opening is not None:  # the protocol's opening handshake, before any frame
            reply, rest = self.opening.feed(data)
            if reply:
                self.tr.write(reply)
            if rest is None:
                srv._account(self)
                return
            if not self.opening.ok:
                self.close("handshake refused")
                return
            if getattr(self.opening, "extension", None) is not None:  # an extension the opening agreed on
                self.dec, self.replier = srv.proto.extension_session(srv.codec, self.opening.extension, srv.fault)
                srv.stats.extended += 1
                agreed = getattr(self.check, "extended", None)  # a client's rules for the extension's traffic
                if srv.check and agreed is not None:
                    agreed(self.opening.extension, srv.stats.observed)
            self.opening, data = None, rest
            if not data:
                srv._account(self)
                return
        if srv.fault == "allocate-declared":
            hog = srv.proto.reference.allocate_declared(data)  # the bug: trusts the header
            srv._hog = hog if hog is not None else getattr(srv, "_hog", None)
        err = None
        try:
            frames = self.dec.feed(data)
        except CodecError as e:
            frames, err = e.frames, e
        batch = []
        for frame in frames:
            if srv.proto.counted(frame):  # requests, not the traffic around them (stream set-up, close)
                st.frames += 1
                st.bytes += len(frame.payload)
            if srv.check:
                bad = self.check(frame)
                if bad:
                    st.note(f"connection {self.no}: {bad}")
            if srv.sink:
                if not (srv.reply_every and srv.proto.counted(frame) and st.frames % srv.reply_every == 0):
                    continue
                st.unasked += 1  # answered although the client expects no reply (reply_every)
            # a replier that compresses (permessage-deflate) must drop or corrupt a reply before it
            # compresses it: arm it for the next counted reply; checking a client, every PLAIN_EVERY-th reply
            # goes uncompressed, which a sender may do with any message (WSD-FRM-1): the client must take both
            echo = getattr(self.replier, "echo", None)
            pre = echo is not None and hasattr(echo, "next_reply")
            if pre:
                nxt = srv._seen + 1
                echo.next_reply = "drop" if srv.drop_every and nxt % srv.drop_every == 0 else \
                    "corrupt" if srv.corrupt_every and nxt % srv.corrupt_every == 0 else \
                    "plain" if srv.check and nxt % PLAIN_EVERY == 0 else None
            try:
                reply = self.replier(frame)
            except CodecError as e:  # the endpoint closes the connection on this frame
                err = e
                break
            if reply is None:
                continue  # the protocol answers nothing to this frame
            if not srv.proto.counted(reply):
                batch.append(srv.ref.encode(srv.codec, reply, 2 ** 31 - 1))
                continue
            st.replies += 1
            srv._seen += 1
            if srv.fault == "drop-every-100th" and srv._seen % 100 == 0:
                st.replies -= 1
                continue
            if srv.drop_every and srv._seen % srv.drop_every == 0:
                st.dropped += 1
                st.replies -= 1
                continue
            if pre:
                if echo.done == "corrupt":
                    st.corrupted += 1
                echo.done = None
            elif srv.corrupt_every and srv._seen % srv.corrupt_every == 0 and reply.payload:
                reply = srv.proto.corrupt_reply(reply, st.corrupted)  # a payload bit, or a header field
                st.corrupted += 1
            if srv.strays and srv._seen % srv.strays[0] == 0:  # (every, fn(reply) -> frames written before it)
                stray = srv.strays[1](reply)
                st.strays += len(stray)
                batch += [srv.ref.encode(srv.codec, f, 2 ** 31 - 1) for f in stray]
            batch.append(srv.ref.encode(srv.codec, reply, 2 ** 31 - 1))
        # an error's traceback keeps this frame, and its locals, until the cycle collector runs: the echo
        # (and a message it is assembling) must not outlive the connection's close through it (RES-*)
        echo = None
        if srv.fault == "reverse-order":
            batch.reverse()
        if batch:
            self.tr.write(b"".join(batch))
        if err is not None:
            if not getattr(err, "clean", False):
                st.protocol_errors += 1
            closing = srv.proto.closing_bytes(srv.codec, err, srv.fault)
            if closing:
                self.tr.write(closing)
            if srv.fault == "crash-on-oversize" and err.requirement.endswith("LIM-1"):
                os._exit(70)
            if srv.fault == "keep-open-on-error":
                self.dec = srv.decoder()  # the bug: resynchronise and carry on
            else:
                self.close(f"protocol error {err.requirement}")
                return
        srv._account(self)

    # -- accounting and closing
    def holding_input(self) -> int:
        """Bytes held for what is unfinished: a partial handshake, frame or message (RES-1)."""
        if self.dec is None:
            return 0
        if self.opening is not None:
            return len(getattr(self.opening, "buf", b""))
        return self.srv.proto.held_bytes(self.dec, self.replier)

    def pending_output(self) -> int:
        if self.srv.fault == "unbounded-output":
            return 0  # the bug: output is neither bounded nor counted
        return self.tr.get_write_buffer_size() if self.tr else 0

    def close(self, why, abort=False):
        if self.tr is None or (self.closing and not abort):
            return
        self.closing = True
        self.why = why
        if abort:
            self.tr.abort()
        else:
            self.tr.close()  # after the pending replies are written

    def waiting_bytes(self) -> int:
        """Bytes the kernel holds for us, not read yet (RES-8: never close those for a timeout)."""
        try:
            sock = self.tr.get_extra_info("socket")
            return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        except (OSError, AttributeError, ValueError):
            return 0


class EchoServer:
    def __init__(self, codec: Codec, sink=False, fault="", check=False, corrupt_every=0, drop_every=0,
                 limits: Optional[Limits] = None, strays=None, client_variant=None, reply_every=0):
        self.codec = codec
        self.proto = codec.spec
        self.ref = self.proto.reference
        self.sink = sink
        self.fault = fault
        self.check = check
        self.corrupt_every = corrupt_every
        self.drop_every = drop_every
        self.strays = strays
        #: in receive mode (sink), every reply_every-th request is answered all the same: checking a client,
        #: which must count each such reply as an error (HAR-VERIFY-3)
        self.reply_every = reply_every
        self.client_variant = client_variant  # the --variant the load client under test was run with (check)
        self.limits = limits or Limits()
        self.stats = Stats()
        self.conns = set()
        self.total_held = 0
        self.stopping = False
        self.lsock = None
        self.loop = None
        self._accepting = False
        self._retry = None
        self._sweeper = None
        self._seen = 0

    def decoder(self):
        return self.ref.decoder(self.codec)

    async def start(self, host, port):
        self.loop = asyncio.get_running_loop()
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        ls = socket.socket(fam, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port))
        ls.listen(1024)
        ls.setblocking(False)
        self.lsock = ls
        self._accept_on()
        self._sweeper = self.loop.create_task(self._sweep())
        return ls.getsockname()[:2]

    # -- accepting (RES-6, RES-7)
    def _accept_on(self):
        if not self._accepting and not self.stopping and self.lsock is not None:
            self.loop.add_reader(self.lsock.fileno(), self._on_accept)
            self._accepting = True

    def _accept_off(self):
        if self._accepting:
            self.loop.remove_reader(self.lsock.fileno())
            self._accepting = False

    def _on_accept(self):
        st = self.stats
        for _ in range(64):
            try:
                sock, _addr = self.lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in EXHAUSTED:
                    st.accept_errors += 1
                    if self.fault == "spins-at-emfile":
                        return  # the bug: stays registered; the pending connection wakes the loop at once, again
                    self._accept_off()  # keep serving; retry after a pause or when a connection closes
                    if self._retry is None:
                        self._retry = self.loop.call_later(0.25, self._retry_accept)
                return  # ECONNABORTED and the like: the peer is gone already
            if len(self.conns) >= self.limits.max_connections and self.fault != "no-connection-limit":
                st.refused += 1
                sock.close()  # accepted and closed at once (RES-6)
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = EchoConn(self)
            self.conns.add(conn)
            self.loop.create_task(self._attach(conn, sock))

    async def _attach(self, conn, sock):
        try:
            await self.loop.connect_accepted_socket(lambda: conn, sock)
        except OSError:
            self._forget(conn)
            sock.close()

    def _retry_accept(self):
        self._retry = None
        self._accept_on()

    def _forget(self, conn):
        if conn in self.conns:
            self.conns.discard(conn)
            self.total_held -= conn.held
            conn.held = 0
            if not self._accepting and self._retry is not None:  # a descriptor is free again
                self._retry.cancel()
                self._retry = None
                self._accept_on()

    # -- the memory budget (RES-1, RES-2)
    def _account(self, conn):
        new = conn.holding_input() + conn.pending_output()
        self.total_held += new - conn.held
        conn.held = new
        if self.total_held <= self.limits.memory_budget or self.fault == "no-memory-budget":
            return
        for c in self.conns:  # the output drains on its own: recount before closing anyone
            c.held = 0 if c.closing else c.holding_input() + c.pending_output()
        self.total_held = sum(c.held for c in self.conns)
        if self.fault == "budget-closes-everyone":  # the bug: the healthy holders go too
            for c in list(self.conns):
                if c.held and not c.closing:
                    self.stats.closed_for["budget"] += 1
                    c.close("memory budget", abort=True)
            return
        while self.total_held > self.limits.memory_budget:
            big = max((c for c in self.conns if not c.closing), key=lambda c: c.held, default=None)
            if big is None or big.held <= FLOOR:
                break  # never close a connection holding 64 KiB or less for the budget
            self.stats.closed_for["budget"] += 1
            self.total_held -= big.held
            big.held = 0
            big.close("memory budget", abort=True)
            big.dec = None  # release its buffers now

    # -- timeouts (RES-3, RES-4, RES-5, RES-8)
    async def _sweep(self):
        lim = self.limits
        every = min(1.0, max(0.02, min(lim.idle_timeout_ms, lim.frame_timeout_ms, lim.write_timeout_ms) / 10000))
        last = time.monotonic()
        while not self.stopping:
            await asyncio.sleep(every)
            now = time.monotonic()
            gap, last = now - last, now
            if gap > max(1.0, 5 * every):
                if self.fault == "pause-drops-connections":
                    for c in list(self.conns):  # the bug: the pause is taken for the peers' silence
                        c.close("timed out after a pause", abort=True)
                    continue
                # the server itself did not run (stopped, or starved of CPU): that time is no peer's silence, and
                # a reply it owed may not be written yet (the likely cause, not reproduced, of a CI failure of
                # sigstop_sigcont: a healthy request unanswered after the SIGCONT)
                for c in self.conns:
                    c.accepted += gap - every
                    c.last_rx += gap - every
                    c.out_progress += gap - every
            for c in list(self.conns):
                if c.tr is None:
                    continue
                if c.closing:  # closing after its last replies: those too must make progress
                    self._check_output(c, now)
                    continue
                self._check_timeouts(c, now)

    def _check_output(self, c, now) -> int:
        """The write timeout (RES-5): pending output that makes no progress that long is dropped with
        its connection. Returns the pending output (-1: the connection was closed)."""
        out = c.pending_output()
        if out:
            if out < c.last_out:
                c.out_progress = now
            c.last_out = out
            if now - c.out_progress > self.limits.write_timeout_ms / 1000 and self.fault != "unbounded-output":
                self.stats.closed_for["write"] += 1
                c.close("write timeout", abort=True)
                return -1
        else:
            c.last_out, c.out_progress = 0, now
        return out

    def _check_timeouts(self, c, now):
        lim, fault, closed = self.limits, self.fault, self.stats.closed_for
        out = self._check_output(c, now)
        if out < 0:
            return
        # planted (ws-handshake-from-last-byte): the opening timed from its last byte, not the accept (RES-3)
        since = c.last_rx if fault == "ws-handshake-from-last-byte" else c.accepted
        if c.opening is not None and now - since > lim.idle_timeout_ms / 1000 and fault != "no-idle-timeout":
            if not c.waiting_bytes():
                closed["handshake"] += 1
                c.close("handshake timeout", abort=True)
            return
        silent = now - c.last_rx
        if c.holding_input():
            if silent > lim.frame_timeout_ms / 1000 and fault != "no-frame-timeout" and not c.waiting_bytes():
                closed["frame"] += 1
                c.close("frame timeout", abort=True)
        elif not out and silent > lim.idle_timeout_ms / 1000 and fault != "no-idle-timeout" \
                and not c.waiting_bytes():
            closed["idle"] += 1
            c.close("idle timeout")

    async def stop(self):
        self.stopping = True
        if self.loop is None:
            return
        self._accept_off()
        if self._retry is not None:
            self._retry.cancel()
        if self.lsock is not None:
            self.lsock.close()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for c in list(self.conns):
            if c.tr is not None:
                c.tr.abort()
        await asyncio.sleep(0)


class ServerThread:
    """Runs an EchoServer on its own event loop in a thread (for in-process use)."""

    def __init__(self, server: EchoServer, host="127.0.0.1", port=0):
        import threading
        self.server = server
        self.loop = asyncio.new_event_loop()
        self.addr = None
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.addr = self.loop.run_until_complete(server.start(host, port))
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(10)

    def close(self):
        fut = asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop)
        try:
            fut.result(5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def codec_arg(args, parser) -> Codec:
    """--codec JSON or --protocol NAME (exactly one), as every program of the contract takes it."""
    if bool(args.codec) == bool(args.protocol):
        parser.error("give exactly one of --codec JSON and --protocol NAME")
    if args.protocol:
        try:
            return protocols.get(args.protocol).codec()
        except KeyError as e:
            parser.error(str(e))
    try:
        return Codec.from_json(json.loads(args.codec))
    except (ValueError, KeyError, TypeError) as e:
        if getattr(args, "fault", "") == "codec-json-lenient":  # planted: what it cannot read, it leaves at defaults
            return protocols.get(json.loads(args.codec).get("protocol", "")).codec()
        parser.error(f"--codec: {e}")


def add_codec_args(ap):
    ap.add_argument("--protocol", help=f"one of: {', '.join(protocols.names())} (default parameters)")
    ap.add_argument("--codec", help='codec JSON, e.g. \'{"protocol": "length-field", "length_field": {"size": 4}}\'')


def _fixed_mmap_threshold():
    """RES-1 holds for the process's RSS, not only for what it buffers: glibc raises its mmap
    threshold each time a large buffer is freed, after which large buffers come from the heap and
    their memory is not given back when a connection is closed. A fixed threshold (128 KiB) keeps
    every large frame buffer in its own mapping, returned to the system when it is freed."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        M_MMAP_THRESHOLD = -3
        libc.mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to do


def _raise_nofile(connections: int):
    """Descriptors for --max-connections (RES-6): the soft RLIMIT_NOFILE up to the hard one. Below it,
    accepting fails (RES-7) before the connection limit is reached."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
        except (ValueError, OSError):
            pass


def main(argv=None):
    from .usage import ContractParser
    ap = ContractParser(prog="python -m frameproof.pyserver")
    add_codec_args(ap)
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--sink", action="store_true")
    ap.add_argument("--fault", choices=sorted(faults()) + sorted(RES_FAULTS) + list(PROBES), default="")
    rpc = ap.add_argument_group("rpc: the echo service's shape (spec/rpc.md §9a; also the codec JSON's rpc object)")
    rpc.add_argument("--endpoints", choices=("unary", "stream", "both"),
                     help="the endpoints served on this port: unary (like galay-rpc's RpcServer), stream (like "
                          "its RpcStreamServer) or both, the first frame picking one (RPC-ECHO-7; the default)")
    rpc.add_argument("--service", help="the echo handler's service name (default frameproof.Echo)")
    rpc.add_argument("--method", help="the echo handler's method name (default echo)")
    add_limit_args(ap, "")
    args = ap.parse_args(argv)
    codec = codec_arg(args, ap)
    if getattr(codec, "role", "server") != "server":  # a server is the server whatever role its codec JSON names,
        import dataclasses  # as the oracle's serve and the other fp-servers (HAR-CODEC-1, codec_json_read)
        codec = dataclasses.replace(codec, role="server")
    shape = {k: v for k, v in (("endpoints", args.endpoints), ("service", args.service), ("method", args.method)) if v}
    if shape:  # parameters of the protocol's codec JSON object (only rpc has them)
        d = codec.to_json()
        d.setdefault(codec.protocol, {}).update(shape)
        try:
            codec = Codec.from_json(d)
        except (ValueError, KeyError, TypeError) as e:
            ap.error(f"--{', --'.join(shape)}: not a parameter of {codec.protocol}'s echo service, for rpc only ({e})")
    limits = limits_from_args(args)
    largest = codec.spec.largest_unit(codec)
    if limits.memory_budget < largest:
        ap.error(f"--memory-budget {limits.memory_budget} is below the largest frame or message the server "
                 f"accepts ({largest}; {codec.spec.name} RES-1)")
    host, _, port = args.listen.rpartition(":")
    _raise_nofile(limits.max_connections)
    _fixed_mmap_threshold()
    srv = EchoServer(codec, args.sink, args.fault, limits=limits)

    async def run():
        h, p = await srv.start(host.strip("[]"), int(port))
        print(f"LISTENING {h}:{p}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await srv.stop()

    asyncio.run(run())
    s = srv.stats
    print(json.dumps({"connections": s.connections, "frames": s.frames, "bytes": s.bytes,
                      "protocol_errors": s.protocol_errors}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
