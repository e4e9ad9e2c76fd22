"""`frameproof net`: network conformance of a live echo server, or of a load client."""
from __future__ import annotations

import sys


def add_parsers(sub):
    import argparse
    from .cli import EPILOG
    n = sub.add_parser("net", help="network conformance: test a live echo server (--server/--server-cmd) "
                                   "or a load client (--client)", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    n.add_argument("--protocol", help="the protocol (default parameters); or give --codec")
    n.add_argument("--codec", help='codec JSON of the server / client under test (as the vectors write it), e.g. '
                                   '\'{"protocol": "length-field", "length_field": {"offset": 3, "size": 0}}\' (e.g.)')
    g = n.add_mutually_exclusive_group(required=True)
    g.add_argument("--server", help="HOST:PORT of a running echo server (127.0.0.1 or ::1)")
    g.add_argument("--server-cmd", help='start this server (it must print "LISTENING host:port"), test it, stop it')
    g.add_argument("--client", help='load client command; {host} {port} {json} are replaced, e.g. '
                                    '"fp-load --connect {host}:{port} --requests 2000 ... --json {json}"')
    n.add_argument("--server-pid", type=int, help="pid of the server under test (RSS checks)")
    n.add_argument("--contract", action="store_true",
                   help="with --server-cmd: the server is a program of the contract (reference-impls/README.md, "
                        "as the bundled fp-server): its --codec JSON is checked too, each legal spelling and each "
                        "refused value (HAR-CODEC-1); a load client (--client) is always checked")
    n.add_argument("--sink", action="store_true", help="with --client: the checking server only counts (receive mode)")
    n.add_argument("--cwd", help="working directory for --server-cmd / --client")
    n.add_argument("--name", help="name shown in the report")
    n.add_argument("--select", action="append", help="only cases whose name matches this glob (repeatable)")
    n.add_argument("--deselect", action="append", metavar="GLOB", help="leave out the cases matching this glob (repeatable)")
    n.add_argument("--requirement", action="append", metavar="ID",
                   help="only the cases that check this requirement, e.g. STD-ECHO-1 (repeatable)")
    n.add_argument("--xfail")
    n.add_argument("--json")
    n.add_argument("--junit")
    from .cli import add_level_arg
    add_level_arg(n)
    n.add_argument("-v", "--verbose", action="store_true")
    n.add_argument("-x", "--exitfirst", action="store_true",
                   help="stop at the first failure (as frameproof run -x; tools/mutation.sh: a mutant caught sooner)")
    st = n.add_argument_group("hostile peers at scale (--stress; the *-RES-* requirements)",
                              "The limit flags say how the server is configured; with --server-cmd those whose "
                              "values differ from the spec's defaults are appended to the command. 127.0.0.1/::1 "
                              "only. The JSON report (--json) has every scenario's verdict, healthy requests "
                              "served, their p99 and errors, and the server's peak RSS.")
    st.add_argument("--stress", action="store_true",
                    help="run the stress scenarios (frameproof.stress) instead of the network cases: many "
                         "slow, silent, never-reading, resetting peers, connection churn, the connection limit, "
                         "descriptor exhaustion, SIGSTOP/SIGCONT, each with healthy traffic measured alongside")
    st.add_argument("--stress-scale", type=float, default=1.0,
                    help="multiplies the scenarios' connection and cycle counts (default 1: e.g. 10,000 cycles)")
    st.add_argument("--stress-p99-ms", type=float, default=2000.0,
                    help="largest healthy p99 latency during a scenario (default 2000 ms)")
    st.add_argument("--stress-grace-s", type=float, default=1.0,
                    help="seconds allowed beyond timeout x 1.25 before a timeout counts as missed (default 1; "
                         "more on a loaded machine)")
    from .stress import add_limit_args
    add_limit_args(st, "the server's")
    n.set_defaults(fn=cmd_net)


def cmd_net(args):
    import pytest
    from .cli import _pytest_args
    from .servers import start_server
    import json
    from .oracle import Codec
    try:
        codec = Codec.from_json(json.loads(args.codec)) if args.codec else None
    except (ValueError, KeyError, TypeError) as e:
        print(f"frameproof net: --codec: {e}", file=sys.stderr)
        return 2
    if codec and args.protocol and args.protocol != codec.protocol:
        print(f"frameproof net: --protocol {args.protocol} but --codec names {codec.protocol}", file=sys.stderr)
        return 2
    if not codec and not args.protocol:
        print("frameproof net: give --protocol or --codec", file=sys.stderr)
        return 2
    args.protocol = [codec.protocol if codec else args.protocol]
    from . import protocols as registry
    if args.client and not registry.get(args.protocol[0]).load_client_checks:
        print(f"frameproof net: --client checks are not available for {args.protocol[0]} yet", file=sys.stderr)
        return 2
    extra = ["--fp-codec", json.dumps(codec.to_json())] if codec else []
    for opt, val in (("--fp-xfail", args.xfail), ("--fp-json", args.json), ("--fp-cwd", args.cwd),
                     ("--fp-net-name", args.name)):
        if val:
            extra += [opt, val]
    if args.verbose:
        extra.append("-v")
    if args.exitfirst:
        extra.append("-x")
    if args.stress:
        return cmd_stress(args, codec or registry.get(args.protocol[0]).codec())
    srv = None
    if args.client:
        extra += ["--fp-client", args.client] + (["--fp-client-sink"] if args.sink else [])
    elif args.server_cmd:
        try:
            srv = start_server(args.server_cmd, cwd=args.cwd)
        except RuntimeError as e:
            print(f"frameproof net: {e}", file=sys.stderr)
            return 2
        extra += ["--fp-net", srv.addr, "--fp-net-pid", str(srv.proc.pid), "--fp-net-cmd", args.server_cmd]
        if args.contract:
            extra.append("--fp-net-contract")
        if not args.name:
            extra += ["--fp-net-name", args.server_cmd]
    else:
        extra += ["--fp-net", args.server]
        if args.server_pid:
            extra += ["--fp-net-pid", str(args.server_pid)]
    try:
        from .cli import _status
        rc = _status(pytest.main(_pytest_args(args, extra)))
        from .cli import tidy_junit
        tidy_junit(args)
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


def cmd_stress(args, codec):
    """`frameproof net --stress`: the scenarios of frameproof.stress against one server. With
    --server-cmd the limit flags whose values differ from the spec's defaults are appended to the
    command (every fp-server takes them, reference-impls/README.md); with --server they say how the
    running server is configured."""
    from .netsuite import NetTarget
    from .servers import start_server
    from . import report, stress
    if args.client:
        print("frameproof net: --stress tests a server (--server or --server-cmd), not a --client", file=sys.stderr)
        return 2
    limits = stress.limits_from_args(args)
    limits.slack_s = args.stress_grace_s
    srv = None
    pid = args.server_pid
    name = args.name
    if args.server_cmd:
        cmd = " ".join([args.server_cmd] + limits.server_flags())
        try:
            srv = start_server(cmd, cwd=args.cwd)
        except RuntimeError as e:
            print(f"frameproof net: {e}", file=sys.stderr)
            return 2
        host, port, pid = srv.host, srv.port, srv.proc.pid
        name = name or cmd
    else:
        host, _, port = args.server.rpartition(":")
        host, port = host.strip("[]"), int(port)
    if host not in ("127.0.0.1", "::1", "localhost"):
        print(f"frameproof net: --stress talks to 127.0.0.1 or ::1 only, not {host}", file=sys.stderr)
        if srv:
            srv.stop()
        return 2
    t = NetTarget(host, port, codec, pid, codec.max_payload)
    rc = 0
    doc = None
    try:
        xfail = report.read_xfail(args.xfail) if args.xfail else []
        doc = stress.run(t, limits, args.stress_scale, args.select, args.stress_p99_ms, name or f"{host}:{port}",
                         xfail=xfail)
        rc = 0 if doc["passed"] else 1
        doc["level"] = args.level
        if args.level == "rfc" and rc == 1 and doc["levels"]["rfc"]["failed"] == 0 \
                and doc["totals"]["xpassed"] == 0 and doc["totals"]["failed"] and not doc.get("xfail_unmatched"):
            rc = 0  # every failed scenario breaks only the spec's own decisions (*-RES-* are all spec's)
        if not report.ran(doc) and rc == 0:
            print("frameproof net --stress: no scenario ran", file=sys.stderr)
            rc = report.EXIT_NOTHING_RAN
    finally:
        if srv:
            alive = srv.alive()
            code, counters, _ = srv.stop()
            if not alive:
                print(f"frameproof net: the server exited during the run (status {code})", file=sys.stderr)
                rc = 1
            else:
                print(f"server stopped with status {code}; counters: {counters}")
    if args.json and doc is not None:
        doc["exit_status"] = rc
        report.write(doc, args.json)
        print(f"JSON report: {args.json}")
    if args.junit and doc is not None:
        report.write_junit(args.junit, "frameproof-stress", doc["tests"], sum(x["duration"] for x in doc["tests"]))
    return rc
