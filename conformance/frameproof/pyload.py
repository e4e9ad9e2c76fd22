"""A small Python load client following the contract in reference-impls/README.md.

It exists to test ``frameproof net --client`` itself: run correctly it must pass, and
with ``--fault`` it miscounts or skips verification, which the checker must catch.
(The reference load clients are the Rust, C++ and C# ``fp-load`` programs.)
"""
from __future__ import annotations

import asyncio
import json
import socket
import sys
import time

from .loadside import payload_for  # noqa: F401  (the contract's payload, re-exported)
from .pyserver import add_codec_args, codec_arg
from .reference import CodecError

FAULTS = {"miscount": "HAR-COUNT-1", "no-verify": "HAR-VERIFY-1", "hangs-on-missing": "HAR-VERIFY-2",
          "bad-sequence": "HAR-CLI-1", "no-json-keys": "HAR-JSON-1", "nagle": "HAR-NODELAY-1",
          "unchecked-payload": "HAR-CLI-2"}
#: planted bugs of receive mode (--mode receive against a sink): the run that shows them is of that mode
RECEIVE_FAULTS = {"receive-ignores-replies": "HAR-VERIFY-3"}


def faults() -> dict:
    """Every planted bug: the generic ones above and each protocol's own (``Protocol.load_faults``)."""
    from . import protocols
    out = dict(FAULTS, **RECEIVE_FAULTS)
    for p in protocols.all_protocols():
        out.update(getattr(p, "load_faults", {}))
    return out


class Stats:
    def __init__(self):
        self.sent = self.received = self.verified = self.errors = self.streams = 0
        self.details = []
        self.lat = []

    def error(self, msg):
        self.errors += 1
        if len(self.details) < 10:
            self.details.append(msg)


async def open_connection(args, side):
    host, _, port = args.connect.rpartition(":")
    host = host.strip("[]")
    # TCP_NODELAY is set before connecting, so no observer ever sees the socket without it
    raw = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0 if args.fault == "nagle" else 1)
    raw.setblocking(False)
    await asyncio.get_running_loop().sock_connect(raw, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=raw)
    opening = side.opening(host)
    rest = b""
    if opening:  # the protocol's opening handshake (websocket)
        writer.write(opening)
        await writer.drain()
        rest = None
        while rest is None:
            data = await asyncio.wait_for(reader.read(65536), timeout=args.timeout_ms / 1000)
            if not data:
                raise ValueError("the server closed during the opening handshake")
            rest = side.opened(data)
    return reader, writer, rest


async def connection(args, k, count, stats, index0, deadline):
    side = args.codec_obj.spec.load_side(args.codec_obj, args.variant)
    side.fault = args.fault  # a protocol's own planted bug (its load_faults), if any
    try:
        reader, writer, rest = await open_connection(args, side)
    except (OSError, ValueError, asyncio.TimeoutError) as e:
        stats.error(f"connection {k}: {e}")
        return
    dec = side.decoder()
    try:
        if args.mode == "stream":
            await streams(args, k, count, stats, index0, deadline, side, reader, writer, dec, rest)
        elif args.mode == "batched":
            await batches(args, k, count, stats, index0, deadline, side, reader, writer, dec, rest)
        else:
            await requests(args, k, count, stats, index0, deadline, side, reader, writer, dec, rest)
    finally:
        bye = b"" if getattr(side, "bye_sent", False) else side.goodbye()
        try:
            if bye:
                writer.write(bye)
                await writer.drain()
                await asyncio.wait_for(reader.read(65536), timeout=min(1.0, args.timeout_ms / 1000))
        except (OSError, asyncio.TimeoutError):
            pass
        writer.close()


def _encoder(args, side):
    def encode(i):
        """(key, payload, bytes) of request i; the bad-sequence fault breaks the protocol's allocation."""
        p = side.payload(i, args.payload)
        key, frame = side.request(p)
        if args.fault == "bad-sequence":
            frame = args.codec_obj.spec.net_request(7, p)
        return key, p, side.encode(frame)
    return encode


async def batches(args, k, count, stats, index0, deadline, side, reader, writer, dec, rest):
    """--mode batched (NewLife X's batched echo benchmark): write a batch of --batch N requests at once, await all
    N replies (each verified), then the next batch; the last batch may be smaller. A batch whose
    replies do not all arrive within --timeout-ms ends the connection (reported as an error)."""
    encode = _encoder(args, side)
    n = max(1, min(args.batch, side.bound))
    frames = _Frames(reader, dec, rest, args.timeout_ms / 1000)
    sent = 0
    while sent < count and time.monotonic() < deadline:
        m = min(n, count - sent)
        buf = bytearray()
        t0 = time.monotonic()
        for j in range(m):
            key, p, b = encode(index0 + sent + j)
            side.sent(key, (t0, p))
            buf += b
        writer.write(bytes(buf))
        await writer.drain()
        sent += m
        stats.sent += m
        got = 0
        while got < m:
            try:
                f = await frames.next()
            except (asyncio.TimeoutError, EOFError, CodecError) as e:
                if args.fault == "hangs-on-missing":
                    await asyncio.sleep(3600)
                stats.error(f"connection {k}: batch of {m}: {m - got} replies missing "
                            f"({type(e).__name__}: {e or 'no reply within the timeout'})")
                return
            if not side.counted(f):
                continue
            ent = side.take(f)
            if not ent and side.stray(f):
                continue  # answers nothing and is no error (rpc: an unmatched RESPONSE, RPC-MATCH-2)
            stats.received += 1
            if not ent:
                # completes no request of the batch: waiting on counts it would leave one reply unread,
                # answered in the next batch instead (HAR-VERIFY-1, client case wrong_kind_replies_fail)
                stats.error(f"connection {k}: unmatched reply")
                continue
            got += 1
            t_sent, expect = ent
            stats.lat.append((time.monotonic() - t_sent) * 1e6)
            if args.fault == "no-verify" or side.reply_ok(f, expect):
                stats.verified += 1
            else:
                stats.error(f"connection {k}: reply differs from its request ({f.header or 'payload'})")


async def unasked(args, k, stats, side, reader, writer, dec, rest):
    """Receive mode's end: the goodbye written and the writing side shut, every frame until the server
    closes (at most the timeout) is read; a reply is none the client asked for, each one an error
    (HAR-VERIFY-3)."""
    bye = side.goodbye()
    side.bye_sent = True
    if bye:
        writer.write(bye)
    writer.write_eof()
    await writer.drain()
    data = rest or b""
    deadline = time.monotonic() + args.timeout_ms / 1000
    while True:
        try:
            frames = dec.feed(data) if data else []
        except CodecError as e:
            stats.error(f"connection {k}: the server's bytes do not decode: {e}")
            return
        for f in frames:
            if side.counted(f) and args.fault != "receive-ignores-replies":
                stats.received += 1
                stats.error(f"connection {k}: unexpected reply in receive mode ({f.header or 'payload'})")
        try:
            data = await asyncio.wait_for(reader.read(65536), timeout=max(0.0, deadline - time.monotonic()))
        except (asyncio.TimeoutError, OSError):
            return
        if not data:
            return


async def requests(args, k, count, stats, index0, deadline, side, reader, writer, dec, rest):
    window = 1 if args.mode == "per-packet" else max(1, min(args.window, side.bound))
    sent = 0
    done = asyncio.Event()
    encode = _encoder(args, side)

    if args.mode == "receive":
        while sent < count and time.monotonic() < deadline:
            n = min(256, count - sent)
            buf = bytearray()
            for j in range(n):
                key, _, b = encode(index0 + sent + j)
                side.sent(key, None, one_way=True)
                buf += b
            writer.write(bytes(buf))
            await writer.drain()
            sent += n
            stats.sent += n
        await unasked(args, k, stats, side, reader, writer, dec, rest)
        return

    async def reader_task():
        data = rest
        while True:
            if not data:
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
            data = b""
            now = time.monotonic()
            for frame in frames:
                if not side.counted(frame):
                    continue
                ent = side.take(frame)
                if not ent and side.stray(frame):
                    continue  # answers nothing and is no error (rpc: an unmatched RESPONSE, RPC-MATCH-2)
                stats.received += 1
                if not ent:
                    stats.error(f"connection {k}: unmatched reply")
                    continue
                t0, expect = ent
                stats.lat.append((now - t0) * 1e6)
                if args.fault == "no-verify" or side.reply_ok(frame, expect):
                    stats.verified += 1
                else:
                    stats.error(f"connection {k}: reply differs from its request ({frame.header or 'payload'})")
                if not side.entries() and (sent >= count or stopped):
                    done.set()
                    refill.set()
                    return
                refill.set()

    refill = asyncio.Event()
    stopped = False  # the writer is done (count reached or --duration over): the last reply ends the run
    rt = asyncio.ensure_future(reader_task())
    while sent < count and time.monotonic() < deadline and not rt.done():
        while len(side.entries()) < window and sent < count:
            key, p, b = encode(index0 + sent)
            side.sent(key, (time.monotonic(), p))
            writer.write(b)
            sent += 1
            stats.sent += 1
        await writer.drain()
        refill.clear()
        if len(side.entries()) >= window:
            try:
                await asyncio.wait_for(refill.wait(), timeout=args.timeout_ms / 1000)
            except asyncio.TimeoutError:
                if args.fault == "hangs-on-missing":
                    await asyncio.sleep(3600)
                break
    stopped = True  # read by reader_task: with --duration, count is never reached
    if side.entries() and not rt.done():
        try:
            await asyncio.wait_for(done.wait(), timeout=args.timeout_ms / 1000)
        except asyncio.TimeoutError:
            if args.fault == "hangs-on-missing":
                await asyncio.sleep(3600)
    rt.cancel()
    await asyncio.gather(rt, return_exceptions=True)  # its read() must end before the goodbye reads


class _Frames:
    """Frames of one connection, read on demand (stream mode is strictly request/answer)."""

    def __init__(self, reader, dec, rest, timeout):
        self.reader, self.dec, self.timeout = reader, dec, timeout
        self.queue = list(dec.feed(rest)) if rest else []

    async def next(self):
        while not self.queue:
            data = await asyncio.wait_for(self.reader.read(65536), timeout=self.timeout)
            if not data:
                raise EOFError("the server closed the connection")
            self.queue += self.dec.feed(data)
        return self.queue.pop(0)


async def streams(args, k, count, stats, index0, deadline, side, reader, writer, dec, rest):
    """--mode stream: streams one after another, each INIT -> ACK, DATA echoes with at most
    --window unanswered, END -> END; every echo verified (same id, same payload, in order)."""
    frames = _Frames(reader, dec, rest, args.timeout_ms / 1000)
    index = index0 * args.frames_per_stream
    try:
        for _ in range(count):
            if time.monotonic() >= deadline:
                break
            if args.fault == "bad-sequence":
                side.stream_open()  # the bug: skips an id (RPC-ID-1)
            sid, init = side.stream_open()
            writer.write(side.encode(init))
            await writer.drain()
            kind, rid = side.stream_kind(await frames.next())
            if kind != "ack" or rid != sid:
                stats.error(f"connection {k}: stream {sid}: expected STREAM_INIT_ACK with its id, got {kind} id {rid}")
                return
            inflight, sent, ok = [], 0, True
            while sent < args.frames_per_stream or inflight:
                while sent < args.frames_per_stream and len(inflight) < args.window:
                    p = side.payload(index, args.payload)
                    index += 1
                    writer.write(side.encode(side.stream_data(sid, p)))
                    inflight.append((time.monotonic(), p))
                    sent += 1
                    stats.sent += 1
                await writer.drain()
                f = await frames.next()
                kind, rid = side.stream_kind(f)
                if kind != "data":
                    stats.error(f"connection {k}: stream {sid}: expected a DATA echo, got {kind} id {rid}")
                    return
                stats.received += 1
                t0, expect = inflight.pop(0)
                stats.lat.append((time.monotonic() - t0) * 1e6)
                if args.fault == "no-verify" or (rid == sid and f.payload == expect):
                    stats.verified += 1
                else:
                    ok = False
                    stats.error(f"connection {k}: stream {sid}: DATA echo differs (id {rid}, "
                                f"{len(f.payload)} bytes)")
            writer.write(side.encode(side.stream_end(sid)))
            await writer.drain()
            kind, rid = side.stream_kind(await frames.next())
            if kind != "end" or rid != sid:
                stats.error(f"connection {k}: stream {sid}: expected STREAM_END, got {kind} id {rid}")
                return
            if ok:
                stats.streams += 1
    except (asyncio.TimeoutError, EOFError, CodecError) as e:
        if args.fault == "hangs-on-missing":
            await asyncio.sleep(3600)
        stats.error(f"connection {k}: {type(e).__name__}: {e or 'no answer within the timeout'}")


def payload_refusal(args) -> str:
    """Why the protocol's encoder refuses a request of ``--payload`` bytes ("" when it does not): checked
    before connecting, so that such a payload is a usage error (HAR-CLI-2), not a failure mid-run."""
    c = args.codec_obj
    most = c.spec.largest_load_payload(c)  # one bound in every mode (rpc: a call's, names included)
    if args.payload > most:  # websocket's client side encodes any size: its limit is the codec's
        return f"above the largest payload a request of the codec carries, {most} bytes"
    side = c.spec.load_side(c, args.variant)  # a fresh one, discarded
    p = bytes(max(args.payload, 0))  # only its length matters to the encoder
    try:
        if args.mode == "stream":
            sid, _ = side.stream_open()
            side.encode(side.stream_data(sid, p))
        else:
            side.encode(side.request(p)[1])
    except (CodecError, ValueError, OverflowError) as e:
        return str(e) or type(e).__name__
    return ""


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
    from .usage import ContractParser
    ap = ContractParser(prog="python -m frameproof.pyload")
    add_codec_args(ap)
    ap.add_argument("--connect", required=True)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--requests", type=int, default=0)
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--payload", type=int, default=32)
    ap.add_argument("--mode", choices=["per-packet", "pipelined", "batched", "receive", "stream"], default="per-packet")
    ap.add_argument("--window", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None,
                    help="batched mode: requests per batch (default: the protocol's default batch)")
    ap.add_argument("--variant", default=None, help="the protocol's request variant (default: its first)")
    ap.add_argument("--frames-per-stream", type=int, default=16)
    ap.add_argument("--timeout-ms", type=int, default=2000)
    ap.add_argument("--json")
    ap.add_argument("--fault", choices=sorted(faults()), default="")
    args = ap.parse_args(argv)
    args.codec_obj = codec_arg(args, ap)
    if not args.requests and not args.duration:
        ap.error("--requests or --duration is required")
    proto = args.codec_obj.spec
    args.variant = args.variant or proto.load_variants[0]
    if args.variant not in proto.load_variants:
        ap.error(f"--variant {args.variant}: {proto.name} has the variants {', '.join(proto.load_variants)}")
    if args.mode == "stream" and not proto.load_streams:
        ap.error(f"--mode stream: {proto.name} has no streams")
    if args.batch is not None and args.mode != "batched":
        ap.error("--batch: only in batched mode")
    if args.mode == "batched":
        if args.window is not None:
            ap.error("--window: batched mode takes --batch N")
        # the protocol's default batch (NewLife X's benchmark: 255 concurrent requests standard, 128 length-field): the
        # protocol's default_batch, or its pipeline_window where it declares none
        args.batch = args.batch or proto.default_batch or proto.pipeline_window
        bound = proto.load_side(args.codec_obj, args.variant).bound
        if not 1 <= args.batch <= bound:
            ap.error(f"--batch {args.batch}: 1..{bound} for {proto.name} (requests that may be pending at once)")
        args.window = args.batch  # the report's "window": requests in flight per connection
    elif args.window is None:
        args.window = {"pipelined": 32, "receive": 256}.get(args.mode, 1)
    elif args.mode == "per-packet" and args.window != 1:
        ap.error("--window: per-packet mode has one request in flight (window 1)")
    if args.payload < 0:
        ap.error("--payload must be at least 0")
    why = "" if args.fault == "unchecked-payload" else payload_refusal(args)  # the planted bug skips the check
    if why:
        ap.error(f"--payload {args.payload}: the encoder refuses it: {why}")
    stats, dur = asyncio.run(run(args))
    lat = sorted(stats.lat)

    def pct(q):
        return round(lat[min(len(lat) - 1, int(len(lat) * q))], 1) if lat else 0

    rep = {"implementation": "python", "protocol": args.codec_obj.protocol, "codec": args.codec_obj.to_json(),
           "mode": args.mode, "variant": args.variant,
           "connections": args.connections, "window": args.window, "payload": args.payload,
           "requests_sent": stats.sent + (1 if args.fault == "miscount" else 0),
           "replies_received": stats.received, "replies_verified": stats.verified,
           "errors": stats.errors, "error_details": stats.details, "duration_s": round(dur, 6),
           "msgs_per_s": round((stats.verified if args.mode != "receive" else stats.sent) / dur, 1) if dur else 0,
           "mb_per_s": round(stats.verified * args.payload / dur / 1e6, 3) if dur else 0,
           "streams_completed": stats.streams,
           "streams_per_s": round(stats.streams / dur, 1) if dur else 0,
           "latency_us": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "p999": pct(0.999), "max": round(lat[-1], 1) if lat else 0}}
    if args.fault == "no-json-keys":
        del rep["latency_us"], rep["replies_verified"]
    print(f"{args.codec_obj.protocol} {args.mode}: sent {rep['requests_sent']}, received {stats.received}, "
          f"verified {stats.verified}, errors {stats.errors}, {rep['msgs_per_s']} msg/s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rep, f)
    ok = stats.errors == 0 and (args.mode == "receive" or stats.received == stats.sent)
    if args.mode == "stream" and args.requests:
        ok = ok and stats.streams == args.requests
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
