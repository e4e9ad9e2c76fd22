"""A websocket echo server on `websockets` (PyPI), the third-party peer of `frameproof autobahn`.

    python echo_server.py [--protocol websocket | --codec JSON] --listen 127.0.0.1:0 [--max-size BYTES] [--compression]

It follows the echo-server contract of reference-impls/README.md where it applies: prints
``LISTENING host:port``, echoes every text and binary message with its opcode, and on SIGTERM/SIGINT
prints one JSON line of counters and exits 0. Configuration (said so in the README's results):
``max_size`` 64 MiB (websockets' default is 1 MiB, which fails Autobahn's 9.* by design) and no
permessage-deflate (frameproof's websocket spec declines every extension, WS-HS-5); both flags change that,
and so does a ``--codec`` with ``"websocket": {"permessage_deflate": true}`` (spec/websocket-deflate.md).
Given ``--codec``/``--protocol`` (as ``frameproof net`` and the benchmark runner start an fp-server),
``max_size`` is the profile's frame limit (``limits.max_payload``, 10 MiB by default): websockets has one
size limit, on a whole message, so the message limit (``websocket.max_message``) cannot be expressed.
The subprotocol ``frameproof.echo`` is selected when offered, and a client offering none is accepted.
websockets' keepalive pings (every 20 s by default) are off unless ``--ping-interval`` is given: the echo
service answers what it receives and sends nothing of its own.
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
    except websockets.ConnectionClosedError as e:
        # a decoding error makes websockets send a close with its code (1002, 1007, 1009); a peer's TCP
        # close without a close frame (nothing sent) is an abnormal closure, not one (HAR-SRV-1)
        if e.sent is not None and e.sent.code != 1000:
            STATS["protocol_errors"] += 1
    except websockets.ConnectionClosedOK:
        pass  # the peer closed while its echo was being written


def select_subprotocol(_connection, offered):
    """WS-HS-6: ``frameproof.echo`` when the client offers it; none otherwise (websockets' default would
    refuse a client that offers no subprotocol once the server names one)."""
    return "frameproof.echo" if "frameproof.echo" in offered else None


def codec_max_size(text):
    """The frame limit of a ``--codec`` profile (spec/websocket.md: limits.max_payload, 10 MiB)."""
    codec = json.loads(text)
    if codec.get("protocol") != "websocket":
        raise SystemExit(f"usage error: protocol {codec.get('protocol')!r}: this server speaks websocket only")
    return int((codec.get("limits") or {}).get("max_payload") or 10 * 1024 * 1024)


def codec_deflate(text):
    """``websocket.permessage_deflate`` of a ``--codec`` profile (spec/websocket-deflate.md): websockets'
    own permessage-deflate, with its defaults, when true."""
    return bool((json.loads(text).get("websocket") or {}).get("permessage_deflate"))


async def main(args):
    host, _, port = args.listen.rpartition(":")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with serve(echo, host.strip("[]"), int(port), max_size=args.max_size,
                     compression="deflate" if args.compression else None,
                     select_subprotocol=select_subprotocol, ping_interval=args.ping_interval) as server:
        h, p = server.sockets[0].getsockname()[:2]
        print(f"LISTENING {h}:{p}", flush=True)
        await stop.wait()
    print(json.dumps(STATS), flush=True)


if __name__ == "__main__":
    class Parser(argparse.ArgumentParser):  # the contract's usage error (reference-impls/README.md)
        def error(self, message):
            sys.stderr.write(f"usage error: {message}\n")
            self.print_usage(sys.stderr)
            sys.exit(2)

    ap = Parser()
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--max-size", type=int, default=64 * 1024 * 1024)
    ap.add_argument("--compression", action="store_true", help="offer permessage-deflate (off by default)")
    ap.add_argument("--ping-interval", type=float, default=None,
                    help="websockets' keepalive pings every N seconds (default: off; the echo service sends "
                         "replies only, and frameproof's clients do not expect unsolicited pings)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--protocol", help="websocket (the fp-server contract's short form of --codec)")
    g.add_argument("--codec", help="a frameproof profile (JSON): its limits.max_payload becomes max_size")
    a = ap.parse_args()
    if a.protocol or a.codec:
        a.max_size = codec_max_size(a.codec or json.dumps({"protocol": a.protocol}))
        a.compression = a.compression or (a.codec is not None and codec_deflate(a.codec))
    asyncio.run(main(a))
    sys.exit(0)
