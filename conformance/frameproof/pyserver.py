"""A small asyncio echo server for every registered protocol, used three ways:

* the *checking server* behind ``frameproof net --client``: it validates every frame a
  client sends (HAR-*, with the protocol's ``client_request_check``), counts what it saw,
  and can corrupt or drop replies on purpose to prove that a load client verifies them;
* a correct Python echo server for the project's own tests of ``frameproof net``;
* with ``--fault``, deliberately broken servers that ``frameproof net`` must catch.

Run: python -m frameproof.pyserver (--protocol NAME | --codec JSON) --listen 127.0.0.1:0 [--fault NAME]
It prints ``LISTENING host:port`` and, on SIGTERM/SIGINT, one JSON line of counters.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from typing import Optional

from . import protocols
from .oracle import Codec
from .reference import CodecError

# Faults that break no one requirement: they probe the suite's reports (tests of the suite).
PROBES = ("stops-reading",)


def faults() -> dict:
    """Every protocol's deliberately broken servers: name -> the requirement it breaks."""
    out = {}
    for p in protocols.all_protocols():
        out.update(p.server_faults)
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
    error_details: list = field(default_factory=list)

    def note(self, msg):
        self.client_errors += 1
        if len(self.error_details) < 10:
            self.error_details.append(msg)


class EchoServer:
    def __init__(self, codec: Codec, sink=False, fault="", check=False, corrupt_every=0, drop_every=0):
        self.codec = codec
        self.proto = codec.spec
        self.ref = self.proto.reference
        self.sink = sink
        self.fault = fault
        self.check = check
        self.corrupt_every = corrupt_every
        self.drop_every = drop_every
        self.stats = Stats()
        self.server: Optional[asyncio.base_events.Server] = None
        self._seen = 0
        self._tasks = set()

    def decoder(self):
        return self.ref.decoder(self.codec)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._tasks.add(asyncio.current_task())
        st = self.stats
        st.connections += 1
        conn_no = st.connections
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        dec = self.decoder()
        check = self.proto.client_request_check()
        replier = self.proto.echo_replier(self.codec, self.fault)
        try:
            received = 0
            opening = self.proto.server_opening(self.codec, self.fault)
            pending = b""
            while opening is not None:  # the protocol's opening handshake, before any frame
                data = await reader.read(65536)
                if not data:
                    return
                reply, rest = opening.feed(data)
                if reply:
                    writer.write(reply)
                    await writer.drain()
                if rest is not None:
                    if not opening.ok:
                        return
                    pending, opening = rest, None
            while True:
                if self.fault == "stops-reading" and received >= 65536:
                    await asyncio.sleep(3600)  # the bug: never reads again
                data, pending = (pending, b"") if pending else (await reader.read(65536), b"")
                received += len(data)
                if not data:
                    try:
                        dec.finish()
                    except CodecError:
                        pass  # a partial frame at EOF is discarded (truncation)
                    if self.fault == "ignore-half-close":
                        await asyncio.sleep(3600)
                    break
                if self.fault == "allocate-declared":
                    hog = self.proto.reference.allocate_declared(data)  # the bug: trusts the header
                    self._hog = hog if hog is not None else getattr(self, "_hog", None)
                err = None
                try:
                    frames = dec.feed(data)
                except CodecError as e:
                    frames, err = e.frames, e
                batch = []
                for frame in frames:
                    if self.proto.counted(frame):  # requests, not the traffic around them (stream set-up, close)
                        st.frames += 1
                        st.bytes += len(frame.payload)
                    if self.check:
                        bad = check(frame)
                        if bad:
                            st.note(f"connection {conn_no}: {bad}")
                    if self.sink:
                        continue
                    try:
                        reply = replier(frame)
                    except CodecError as e:  # the endpoint closes the connection on this frame
                        err = e
                        break
                    if reply is None:
                        continue  # the protocol answers nothing to this frame
                    if not self.proto.counted(reply):
                        batch.append(self.ref.encode(self.codec, reply, 2 ** 31 - 1))
                        continue
                    st.replies += 1
                    self._seen += 1
                    if self.fault == "drop-every-100th" and self._seen % 100 == 0:
                        st.replies -= 1
                        continue
                    if self.drop_every and self._seen % self.drop_every == 0:
                        st.dropped += 1
                        st.replies -= 1
                        continue
                    if self.corrupt_every and self._seen % self.corrupt_every == 0 and reply.payload:
                        from dataclasses import replace
                        # bit 0 only: text stays valid UTF-8, so the client sees a wrong payload, not a broken stream
                        reply = replace(reply, payload=bytes([reply.payload[0] ^ 0x01]) + reply.payload[1:])
                        st.corrupted += 1
                    batch.append(self.ref.encode(self.codec, reply, 2 ** 31 - 1))
                if self.fault == "reverse-order":
                    batch.reverse()
                if batch:
                    writer.write(b"".join(batch))
                    await writer.drain()
                if err is not None:
                    if not getattr(err, "clean", False):
                        st.protocol_errors += 1
                    closing = self.proto.closing_bytes(self.codec, err, self.fault)
                    if closing:
                        writer.write(closing)
                        await writer.drain()
                    if self.fault == "crash-on-oversize" and err.requirement.endswith("LIM-1"):
                        os._exit(70)
                    if self.fault == "keep-open-on-error":
                        dec = self.decoder()  # the bug: resynchronise and carry on
                        continue
                    break
        except (ConnectionResetError, BrokenPipeError, asyncio.CancelledError):
            pass  # peer gone, or the server is stopping
        finally:
            try:
                writer.close()
            except Exception:
                pass
            self._tasks.discard(asyncio.current_task())

    async def start(self, host, port):
        self.server = await asyncio.start_server(self.handle, host, port, limit=1 << 20)
        return self.server.sockets[0].getsockname()[:2]

    async def stop(self):
        if self.server:
            self.server.close()
            for t in list(self._tasks):
                t.cancel()
            await self.server.wait_closed()


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
        parser.error(f"--codec: {e}")


def add_codec_args(ap):
    ap.add_argument("--protocol", help=f"one of: {', '.join(protocols.names())} (default parameters)")
    ap.add_argument("--codec", help='codec JSON, e.g. \'{"protocol": "length-field", "length_field": {"size": 4}}\'')


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frameproof.pyserver")
    add_codec_args(ap)
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--sink", action="store_true")
    ap.add_argument("--fault", choices=sorted(faults()) + list(PROBES), default="")
    args = ap.parse_args(argv)
    codec = codec_arg(args, ap)
    host, _, port = args.listen.rpartition(":")
    srv = EchoServer(codec, args.sink, args.fault)

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
