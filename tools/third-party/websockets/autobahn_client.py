"""An Autobahn testsuite client on `websockets` (PyPI), the third-party peer of
`frameproof autobahn --client-cmd`; the contract's fp-autobahn-client (reference-impls/README.md):

    python autobahn_client.py --connect HOST:PORT --agent NAME [--cases all|N]

/getCaseCount, then /runCase?case=I&agent=NAME for each case echoing every message (websockets
answers pings and the close handshake itself), then /updateReports. Configuration as the echo
server: max_size 64 MiB, no permessage-deflate. Exit 0 when every case ran to its end.
"""
import argparse
import asyncio
import sys
from urllib.parse import quote

import websockets
from websockets.asyncio.client import connect

LIMIT = 64 * 1024 * 1024


async def run(base, agent, cases, timeout):
    async with connect(f"{base}/getCaseCount", max_size=LIMIT, compression=None) as ws:
        count = int(await ws.recv())
    n = count if cases == "all" else min(count, int(cases))
    a = quote(agent, safe="")
    failed = 0
    for i in range(1, n + 1):
        try:
            async with asyncio.timeout(timeout):
                async with connect(f"{base}/runCase?case={i}&agent={a}", max_size=LIMIT, compression=None) as ws:
                    async for msg in ws:
                        await ws.send(msg)
        except websockets.ConnectionClosed:
            pass  # the case ended with a protocol error or an unclean close: Autobahn judges it
        except (OSError, TimeoutError, websockets.InvalidHandshake) as e:
            failed += 1
            print(f"case {i} did not run to its end: {e!r}", flush=True)
    async with connect(f"{base}/updateReports?agent={a}", max_size=LIMIT, compression=None) as ws:
        try:
            await ws.recv()
        except websockets.ConnectionClosed:
            pass
    print(f"websockets {websockets.__version__} autobahn client: {n - failed} of {n} cases ran", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--connect", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--cases", default="all")
    ap.add_argument("--case-timeout", type=float, default=120.0)
    args = ap.parse_args()
    sys.exit(asyncio.run(run(f"ws://{args.connect}", args.agent, args.cases, args.case_timeout)))
