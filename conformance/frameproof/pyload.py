"""A small Python load client following the contract in reference-impls/README.md.

It exists to test ``frameproof net --client`` itself: run correctly it must pass, and
with ``--fault`` it miscounts or skips verification, which the checker must catch.
(The reference load clients are the Rust, C++ and C# ``fp-load`` programs.)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import time

from .pyserver import add_codec_args, codec_arg
from .reference import CodecError

FAULTS = {"miscount": "HAR-COUNT-1", "no-verify": "HAR-VERIFY-1", "hangs-on-missing": "HAR-VERIFY-2",
          "bad-sequence": "HAR-CLI-1", "no-json-keys": "HAR-JSON-1", "nagle": "HAR-NODELAY-1"}


def payload_for(index: int, size: int) -> bytes:
    seed = index.to_bytes(8, "little")
    return (seed * (size // 8 + 1))[:size]


class Stats:
    def __init__(self):
        self.sent = self.received = self.verified = self.errors = 0
        self.details = []
        self.lat = []

    def error(self, msg):
        self.errors += 1
        if len(self.details) < 10:
            self.details.append(msg)


async def connection(args, k, count, stats, index0, deadline):
    host, _, port = args.connect.rpartition(":")
    host = host.strip("[]")
    # TCP_NODELAY is set before connecting, so no observer ever sees the socket without it
    raw = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0 if args.fault == "nagle" else 1)
    raw.setblocking(False)
    await asyncio.get_running_loop().sock_connect(raw, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=raw)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0 if args.fault == "nagle" else 1)
    codec = args.codec_obj
    ref = codec.spec.reference
    dec = ref.decoder(codec.with_limit(0))
    m = ref.ClientMatcher(codec)
    window = 1 if args.mode == "per-packet" else max(1, min(args.window, m.bound))
    sent = 0
    done = asyncio.Event()

    def encode(i):
        """(key, payload, bytes) of request i; the bad-sequence fault breaks the protocol's allocation."""
        p = payload_for(i, args.payload)
        key, frame = m.next_request(p, check_pending=False)
        if args.fault == "bad-sequence":
            frame = codec.spec.net_request(7, p)
        return key, p, ref.encode(codec, frame)

    if args.mode == "receive":
        while sent < count and time.monotonic() < deadline:
            n = min(256, count - sent)
            buf = bytearray()
            for j in range(n):
                key, _, b = encode(index0 + sent + j)
                m.sent(key, None, one_way=True)
                buf += b
            writer.write(bytes(buf))
            await writer.drain()
            sent += n
            stats.sent += n
        writer.close()
        return

    async def reader_task():
        while True:
            try:
                data = await asyncio.wait_for(reader.read(65536), timeout=args.timeout_ms / 1000)
            except asyncio.TimeoutError:
                return
            if not data:
                return
            try:
                frames = dec.feed(data)
            except CodecError as e:
                stats.error(f"connection {k}: malformed reply ({e.requirement})")
                return
            now = time.monotonic()
            for frame in frames:
                stats.received += 1
                ent = m.take(frame)
                if not ent:
                    stats.error(f"connection {k}: unmatched reply")
                    continue
                t0, expect = ent
                stats.lat.append((now - t0) * 1e6)
                if args.fault == "no-verify" or (frame.payload == expect and m.reply_ok(frame)):
                    stats.verified += 1
                else:
                    stats.error(f"connection {k}: reply payload differs from its request")
                if not m.entries() and sent >= count:
                    done.set()
                    return
                refill.set()

    refill = asyncio.Event()
    rt = asyncio.ensure_future(reader_task())
    while sent < count and time.monotonic() < deadline and not rt.done():
        while len(m.entries()) < window and sent < count:
            key, p, b = encode(index0 + sent)
            m.sent(key, (time.monotonic(), p))
            writer.write(b)
            sent += 1
            stats.sent += 1
        await writer.drain()
        refill.clear()
        if len(m.entries()) >= window:
            try:
                await asyncio.wait_for(refill.wait(), timeout=args.timeout_ms / 1000)
            except asyncio.TimeoutError:
                if args.fault == "hangs-on-missing":
                    await asyncio.sleep(3600)
                break
    if m.entries() and not rt.done():
        try:
            await asyncio.wait_for(done.wait(), timeout=args.timeout_ms / 1000)
        except asyncio.TimeoutError:
            if args.fault == "hangs-on-missing":
                await asyncio.sleep(3600)
    rt.cancel()
    writer.close()


async def run(args):
    stats = Stats()
    total = args.requests if args.requests else 10 ** 12
    deadline = time.monotonic() + (args.duration if args.duration else 3600)
    per = [total // args.connections + (1 if i < total % args.connections else 0) for i in range(args.connections)]
    starts = [sum(per[:i]) for i in range(args.connections)]
    t0 = time.monotonic()
    await asyncio.gather(*(connection(args, k, per[k], stats, starts[k], deadline) for k in range(args.connections)))
    return stats, time.monotonic() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frameproof.pyload")
    add_codec_args(ap)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--requests", type=int, default=0)
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--payload", type=int, default=32)
    ap.add_argument("--mode", choices=["per-packet", "pipelined", "receive"], default="per-packet")
    ap.add_argument("--window", type=int, default=1)
    ap.add_argument("--timeout-ms", type=int, default=2000)
    ap.add_argument("--json")
    ap.add_argument("--fault", choices=sorted(FAULTS), default="")
    args = ap.parse_args(argv)
    args.codec_obj = codec_arg(args, ap)
    if not args.requests and not args.duration:
        ap.error("--requests or --duration is required")
    stats, dur = asyncio.run(run(args))
    lat = sorted(stats.lat)

    def pct(q):
        return round(lat[min(len(lat) - 1, int(len(lat) * q))], 1) if lat else 0

    rep = {"implementation": "python", "protocol": args.codec_obj.protocol, "codec": args.codec_obj.to_json(),
           "mode": args.mode,
           "connections": args.connections, "window": args.window, "payload": args.payload,
           "requests_sent": stats.sent + (1 if args.fault == "miscount" else 0),
           "replies_received": stats.received, "replies_verified": stats.verified,
           "errors": stats.errors, "error_details": stats.details, "duration_s": round(dur, 6),
           "msgs_per_s": round((stats.verified if args.mode != "receive" else stats.sent) / dur, 1) if dur else 0,
           "mb_per_s": round(stats.verified * args.payload / dur / 1e6, 3) if dur else 0,
           "latency_us": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "p999": pct(0.999), "max": round(lat[-1], 1) if lat else 0}}
    if args.fault == "no-json-keys":
        del rep["latency_us"], rep["replies_verified"]
    print(f"{args.codec_obj.protocol} {args.mode}: sent {rep['requests_sent']}, received {stats.received}, "
          f"verified {stats.verified}, errors {stats.errors}, {rep['msgs_per_s']} msg/s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rep, f)
    ok = stats.errors == 0 and (args.mode == "receive" or stats.received == stats.sent)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
