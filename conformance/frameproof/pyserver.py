"""A small asyncio echo server for both protocols, used three ways:

* the *checking server* behind ``frameproof net --client``: it validates every frame a
  client sends (HAR-*), counts what it saw, and can corrupt or drop replies on purpose
  to prove that a load client verifies them;
* a correct Python echo server for the project's own tests of ``frameproof net``;
* with ``--fault``, deliberately broken servers that ``frameproof net`` must catch.

Run: python -m frameproof.pyserver --protocol standard --listen 127.0.0.1:0 [--fault NAME]
It prints ``LISTENING host:port`` and, on SIGTERM/SIGINT, one JSON line of counters.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import sys
from dataclasses import asdict, dataclass, field
from typing import Optional

from .pytestee import codec as C

FAULTS = {
    # name: requirement a correct server keeps and this one breaks
    "drop-every-100th": "STD-ECHO-1",
    "crash-on-oversize": "STD-ECHO-4",
    "reverse-order": "LF-ECHO-1",
    "keep-open-on-error": "STD-ECHO-4",
    "ignore-half-close": "STD-ECHO-5",
    "reply-to-one-way": "STD-ECHO-2",
    "allocate-declared": "STD-LIM-3",
}


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
    def __init__(self, protocol, lf_offset=0, lf_size=2, max_payload=0, sink=False, fault="",
                 check=False, corrupt_every=0, drop_every=0):
        self.protocol = protocol
        self.lf = (lf_offset, lf_size)
        self.max_payload = max_payload
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
        if self.protocol == "standard":
            return C.StandardDecoder(self.max_payload)
        return C.LengthFieldDecoder(self.lf[0], self.lf[1], self.max_payload)

    def encode_reply(self, flag, seq, payload):
        if self.protocol == "standard":
            return C.encode_standard(0x80 | (flag & 0x3F), seq, payload, 2 ** 31 - 1)
        return C.encode_length_field(payload, self.lf[0], self.lf[1], 2 ** 31 - 1)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._tasks.add(asyncio.current_task())
        st = self.stats
        st.connections += 1
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        dec = self.decoder()
        expect_seq = 1
        n_conn = 0
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    try:
                        dec.finish()
                    except C.CodecError:
                        pass  # a partial frame at EOF is discarded (STD-STR-3)
                    if self.fault == "ignore-half-close":
                        await asyncio.sleep(3600)
                    break
                at = data.find(b"\xff\xff", 2)
                if self.fault == "allocate-declared" and self.protocol == "standard" and 0 < at <= len(data) - 6:
                    declared = int.from_bytes(data[at + 2:at + 6], "little") & 0x7FFFFFFF
                    self._hog = bytearray(min(declared, 512 * 1024 * 1024))  # the bug: trusts the header
                    for i in range(0, len(self._hog), 4096):
                        self._hog[i] = 1
                err = None
                try:
                    frames = dec.feed(data)
                except C.CodecError as e:
                    frames, err = e.frames, e
                out = bytearray()
                batch = []
                for flag, seq, payload in frames:
                    st.frames += 1
                    st.bytes += len(payload)
                    n_conn += 1
                    if self.check and self.protocol == "standard":
                        if flag & 0x80:
                            st.note(f"connection {st.connections}: frame {n_conn} has the reply bit set (flag 0x{flag:02X})")
                        elif seq != expect_seq:
                            st.note(f"connection {st.connections}: request {n_conn} has sequence {seq}, "
                                    f"STD-SEQ-1 expects {expect_seq}")
                        expect_seq = (seq + 1) & 0xFF
                    if self.sink:
                        continue
                    if self.protocol == "standard" and flag & 0xC0 and self.fault != "reply-to-one-way":
                        continue  # one-way or reply: no answer (STD-ECHO-2)
                    self._seen += 1
                    if self.fault == "drop-every-100th" and self._seen % 100 == 0:
                        continue
                    if self.drop_every and self._seen % self.drop_every == 0:
                        st.dropped += 1
                        continue
                    if self.corrupt_every and self._seen % self.corrupt_every == 0 and payload:
                        payload = bytes([payload[0] ^ 0xFF]) + payload[1:]
                        st.corrupted += 1
                    batch.append(self.encode_reply(flag, seq, payload))
                if self.fault == "reverse-order":
                    batch.reverse()
                for b in batch:
                    out += b
                st.replies += len(batch)
                if out:
                    writer.write(bytes(out))
                    await writer.drain()
                if err is not None:
                    st.protocol_errors += 1
                    if self.fault == "crash-on-oversize" and err.requirement.endswith("LIM-1"):
                        import os
                        os._exit(70)
                    if self.fault == "keep-open-on-error":
                        dec = self.decoder()  # the bug: resynchronise and carry on
                        continue
                    break
        except (ConnectionResetError, BrokenPipeError):
            pass
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frameproof.pyserver")
    ap.add_argument("--protocol", required=True, choices=["standard", "length-field"])
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--lf-offset", type=int, default=0)
    ap.add_argument("--lf-size", type=int, default=2)
    ap.add_argument("--max-payload", type=int, default=0)
    ap.add_argument("--sink", action="store_true")
    ap.add_argument("--fault", choices=sorted(FAULTS), default="")
    args = ap.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    srv = EchoServer(args.protocol, args.lf_offset, args.lf_size, args.max_payload, args.sink, args.fault)

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
