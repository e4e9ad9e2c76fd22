"""A websocket echo server on `websockets` (PyPI), the third-party peer of `frameproof autobahn`.

    python echo_server.py --listen 127.0.0.1:0 [--max-size BYTES] [--compression]

It follows the echo-server contract of reference-impls/README.md where it applies: prints
``LISTENING host:port``, echoes every text and binary message with its opcode, and on SIGTERM/SIGINT
prints one JSON line of counters and exits 0. Configuration (said so in the README's results):
``max_size`` 64 MiB (websockets' default is 1 MiB, which fails Autobahn's 9.* by design) and no
permessage-deflate (frameproof's websocket spec declines every extension, WS-HS-5); both flags change that.
"""
import argparse
import asyncio
import json
import signal
import sys

import websockets
from websockets.asyncio.server import serve

STATS = {"connections": 0, "frames": 0, "bytes": 0, "protocol_errors": 0}


async def echo(ws):
    STATS["connections"] += 1
    try:
        async for msg in ws:
            STATS["frames"] += 1
            STATS["bytes"] += len(msg)
            await ws.send(msg)
    except websockets.ConnectionClosedError:
        STATS["protocol_errors"] += 1
    except websockets.ConnectionClosedOK:
        pass  # the peer closed while its echo was being written


async def main(args):
    host, _, port = args.listen.rpartition(":")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with serve(echo, host.strip("[]"), int(port), max_size=args.max_size,
                     compression="deflate" if args.compression else None) as server:
        h, p = server.sockets[0].getsockname()[:2]
        print(f"LISTENING {h}:{p}", flush=True)
        await stop.wait()
    print(json.dumps(STATS), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--max-size", type=int, default=64 * 1024 * 1024)
    ap.add_argument("--compression", action="store_true", help="offer permessage-deflate (off by default)")
    asyncio.run(main(ap.parse_args()))
    sys.exit(0)
