"""`frameproof net`: network conformance of a live echo server, or of a load client."""
from __future__ import annotations

import sys


def add_parsers(sub):
    n = sub.add_parser("net", help="network conformance: test a live echo server (--server/--server-cmd) "
                                   "or a load client (--client)")
    n.add_argument("--protocol", required=True, choices=["standard", "length-field"])
    g = n.add_mutually_exclusive_group(required=True)
    g.add_argument("--server", help="HOST:PORT of a running echo server (127.0.0.1 or ::1)")
    g.add_argument("--server-cmd", help='start this server (it must print "LISTENING host:port"), test it, stop it')
    g.add_argument("--client", help='load client command; {host} {port} {json} are replaced, e.g. '
                                    '"fp-load --connect {host}:{port} --requests 2000 ... --json {json}"')
    n.add_argument("--server-pid", type=int, help="pid of the server under test (RSS checks)")
    n.add_argument("--sink", action="store_true", help="with --client: the checking server only counts (receive mode)")
    n.add_argument("--cwd", help="working directory for --server-cmd / --client")
    n.add_argument("--lf-offset", type=int, default=0)
    n.add_argument("--lf-size", type=int, default=2)
    n.add_argument("--max-payload", type=int, default=0, help="the server's maximum payload (default: spec default)")
    n.add_argument("--name", help="name shown in the report")
    n.add_argument("--select", action="append")
    n.add_argument("--xfail")
    n.add_argument("--json")
    n.add_argument("--junit")
    n.add_argument("-v", "--verbose", action="store_true")
    n.set_defaults(fn=cmd_net)


def cmd_net(args):
    import pytest
    from .cli import _pytest_args
    from .servers import start_server
    args.protocol_list = args.protocol
    proto = args.protocol
    args.protocol = [proto]
    extra = ["--fp-lf-offset", str(args.lf_offset), "--fp-lf-size", str(args.lf_size),
             "--fp-max-payload", str(args.max_payload)]
    for opt, val in (("--fp-xfail", args.xfail), ("--fp-json", args.json), ("--fp-cwd", args.cwd),
                     ("--fp-net-name", args.name)):
        if val:
            extra += [opt, val]
    if args.verbose:
        extra.append("-v")
    srv = None
    if args.client:
        extra += ["--fp-client", args.client] + (["--fp-client-sink"] if args.sink else [])
    elif args.server_cmd:
        try:
            srv = start_server(args.server_cmd, cwd=args.cwd)
        except RuntimeError as e:
            print(f"frameproof net: {e}", file=sys.stderr)
            return 2
        extra += ["--fp-net", srv.addr, "--fp-net-pid", str(srv.proc.pid)]
        if not args.name:
            extra += ["--fp-net-name", args.server_cmd]
    else:
        extra += ["--fp-net", args.server]
        if args.server_pid:
            extra += ["--fp-net-pid", str(args.server_pid)]
    try:
        rc = int(pytest.main(_pytest_args(args, extra)))
    finally:
        if srv:
            alive = srv.alive()
            code, counters, _ = srv.stop()
            if not alive:
                print(f"frameproof net: the server exited during the run (status {code})", file=sys.stderr)
                rc = rc or 1
            else:
                print(f"server stopped with status {code}; counters: {counters}")
    return rc
