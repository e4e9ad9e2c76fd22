"""The `frameproof` command line."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__


def _pytest_args(args, extra):
    here = Path(__file__).resolve().parent
    base = [str(here / "run.fpsuite"), "-p", "frameproof.plugin", "-p", "no:cacheprovider",
            "-c", os.devnull, "--rootdir", str(here), "-q", "--no-header", "-rN",
            "-o", "console_output_style=classic"]
    if getattr(args, "junit", None):
        base += ["--junitxml", args.junit, "-o", "junit_family=xunit2", "-o", "junit_suite_name=frameproof"]
    for p in getattr(args, "protocol", None) or []:
        base += ["--fp-protocol", p]
    for s in getattr(args, "select", None) or []:
        base += ["--fp-select", s]
    for s in getattr(args, "deselect", None) or []:
        base += ["--fp-deselect", s]
    for r in getattr(args, "requirement", None) or []:
        base += ["--fp-requirement", r]
    if getattr(args, "level", None):
        base += ["--fp-level", args.level]
    return base + extra


EPILOG = """exit status:
  0  every test passed (expected failures from --xfail included)
  1  an unexpected failure, an expected failure that passed, or an --xfail entry that matches no test
  2  usage error (bad arguments, unknown protocol, a server command that never listened)
  3  the testee could not start (no hello answer), or a program a suite drives could not start
  5  nothing ran: no test was selected (--select, --requirement, --protocol matched nothing), or
     every selected test was skipped (`list` and `requirements` are exempt)
"""


LEVEL_HELP = ("whose rules a failure must break to count (spec/harness.md, 'Requirement sources'): spec (the "
              "default: every requirement) or rfc (only the RFC's MUSTs and upstream's behaviour; failures of "
              "the spec's own decisions and of RFC SHOULDs are listed apart, as 'stricter' / 'SHOULD', and "
              "reported as expected failures)")


def add_level_arg(parser):
    parser.add_argument("--level", default="spec", choices=["spec", "rfc"], help=LEVEL_HELP)


def _status(rc: int) -> int:
    """pytest's statuses as frameproof's (pytest: 2 interrupted, 3 internal, 4 usage, 5 no tests)."""
    return {0: 0, 1: 1, 3: 3, 4: 2, 5: 5}.get(int(rc), 1)


def cmd_run(args):
    import pytest
    extra = ["--fp-testee", args.testee, "--fp-profile", args.profile, "--fp-timeout", str(args.timeout)]
    if getattr(args, "no_shrink", False):
        extra.append("--fp-no-shrink")
    if getattr(args, "no_skip", False):
        extra.append("--fp-no-skip")
    if args.cwd:
        extra += ["--fp-cwd", args.cwd]
    if args.xfail:
        extra += ["--fp-xfail", args.xfail]
    if args.long_stream:
        extra += ["--fp-long-stream", args.long_stream]
    if args.json:
        extra += ["--fp-json", args.json]
    if args.name:
        extra += ["--fp-name", args.name]
    if args.verbose:
        extra += ["-v"]
    if args.exitfirst:
        extra += ["-x"]
    rc = pytest.main(_pytest_args(args, extra))
    tidy_junit(args)
    return _status(rc)


def tidy_junit(args):
    if getattr(args, "junit", None) and os.path.exists(args.junit):
        from .report import tidy_junit
        tidy_junit(args.junit)


def cmd_matrix(args):
    from .matrix import run_matrix
    return run_matrix(args.impl, build=not args.no_build, profile=args.profile, out_dir=args.out,
                      readme=args.update_readme, scale=args.scale, jobs=args.jobs, merge=args.merge)


def cmd_list(args):
    """Prints the tests and nothing else: JSON lines (name, requirements, level) or names only."""
    import contextlib
    import io
    import pytest
    from . import plugin
    extra = ["--fp-list", "-s"] + (["--fp-list-names"] if args.names else [])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # pytest's own lines ("no tests ran") are not the listing
        rc = pytest.main(_pytest_args(args, extra))
    if rc not in (0, 5):
        sys.stderr.write(out.getvalue())
        return _status(rc)
    sys.stdout.write("".join(line + "\n" for line in plugin.LISTED))
    return 0


def cmd_requirements(args):
    from .spec import requirements
    from .spec import layers_of
    wanted = set(args.protocol or ()) | {x for p in args.protocol or () for x in layers_of(p)}
    for r in requirements().values():
        if args.protocol and r.protocol not in wanted:
            continue
        print(f"{r.id:12} {r.level:6} {r.text}")
    return 0


def _stop_on_sigterm():
    """SIGTERM (a CI job's or a mutation tool's timeout, `kill`) ends a run as Ctrl-C does: the servers and
    clients it started (each in a session of its own, so a signal to frameproof's process group does not
    reach them) are stopped by the code that started them, instead of being left running. Seen: mutated
    servers spinning for an hour after cargo-mutants timed out the frameproof run that had started them."""
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    try:
        signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (frameproof called as a library): leave signals alone
        pass


def main(argv=None):
    _stop_on_sigterm()
    ap = argparse.ArgumentParser(prog="frameproof", description="Conformance suite for the frameproof wire protocols",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"frameproof {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run the codec conformance suite against a testee", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--testee", required=True, help='testee command, e.g. "target/release/fp-testee"')
    r.add_argument("--cwd", help="working directory for the testee")
    r.add_argument("--protocol", action="append", help="only this protocol (repeatable)")
    r.add_argument("--select", action="append", help="only tests whose name matches this glob (repeatable)")
    r.add_argument("--deselect", action="append", metavar="GLOB",
                   help="leave out the tests whose name matches this glob (repeatable; after --select)")
    r.add_argument("--requirement", action="append", metavar="ID",
                   help="only the tests that check this requirement, e.g. STD-LIM-1 (repeatable)")
    r.add_argument("--xfail", help="expected-failures file: one test name or glob a line")
    r.add_argument("--json", help="write a JSON report to this file")
    r.add_argument("--junit", help="write a JUnit XML report to this file")
    r.add_argument("--name", help="the implementation's name in the reports (default: the testee's hello, "
                                  "else the command)")
    r.add_argument("--profile", default="ci", choices=["ci", "fuzz", "smoke"],
                   help="Hypothesis profile: ci (derandomized, default), fuzz (long, random), smoke (few examples)")
    r.add_argument("--no-shrink", action="store_true",
                   help="report a property's first failing example as drawn, without shrinking it to a minimal one "
                        "(a verdict in seconds where shrinking a long stateful script takes minutes: for mutation "
                        "runs and checks that the suite bites; the message then shows the example unshrunk)")
    r.add_argument("--no-skip", action="store_true",
                   help="every `skipped` answer of the testee is a failure (requirement, expected an answer, actual "
                        "the skip and its reason, the example): for an implementation that supports every "
                        "configuration the suite draws, as the bundled reference implementations do; without it a "
                        "testee that refuses, say, every length-field header offset passes with skips. A feature the "
                        "testee's hello does not offer (e.g. discovery-etcd) still skips its tests")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds per testee answer (default 10)")
    r.add_argument("--long-stream", metavar="BYTES",
                   help="bytes the long-stream test passes through one decoder, e.g. 4.5G (default: 16M under "
                        "smoke, 64M under ci, 4.5G under fuzz; the main job passes 4.5G)")
    add_level_arg(r)
    r.add_argument("-v", "--verbose", action="store_true")
    r.add_argument("-x", "--exitfirst", action="store_true")
    r.set_defaults(fn=cmd_run)

    li = sub.add_parser("list", help="list the tests (JSON lines: name, requirements, level)")
    li.add_argument("--protocol", action="append")
    li.add_argument("--select", action="append", help="only cases whose name matches this glob (repeatable), e.g. '*over_limit*'")
    li.add_argument("--deselect", action="append", metavar="GLOB", help="leave out the names matching this glob (repeatable)")
    li.add_argument("--names", action="store_true", help="test names only, one a line")
    li.set_defaults(fn=cmd_list)

    rq = sub.add_parser("requirements", help="list the requirements read from spec/")
    rq.add_argument("--protocol", action="append")
    rq.set_defaults(fn=cmd_requirements)

    from . import net_cli
    net_cli.add_parsers(sub)
    import importlib
    for mod in ("fuzz_cli", "bench_cli", "report_cli"):  # subcommands that live in their own modules
        try:
            m = importlib.import_module(f".{mod}", __package__)
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{mod}":
                raise
            continue
        m.add_parsers(sub)
    from . import protocols
    for p in protocols.all_protocols():  # subcommands a protocol adds (Protocol.commands)
        for add in p.commands():
            add(sub)

    m = sub.add_parser("matrix", help="main job: build every bundled implementation and run all suites against it",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("--impl", action="append", help="only this implementation (repeatable): a bundled one's name, "
                                                   "or the path of an impl.json (one outside this repository)")
    m.add_argument("--no-build", action="store_true", help="use existing builds")
    m.add_argument("--profile", default="ci", choices=["ci", "fuzz", "smoke"],
                   help="Hypothesis profile of the codec suites (default ci)")
    m.add_argument("--scale", default="full", choices=["full", "small"],
                   help="full (the main job: the stress group at the spec's limits and full scale, every Autobahn "
                        "category, long interop runs) or small (CI: every path of full at small bounds)")
    m.add_argument("--out", help="report directory (default reports/)")
    m.add_argument("--jobs", type=int, default=4, metavar="N",
                   help="cells run at once (default 4; 1: one after the other, as a log to read top to bottom). "
                        "Most cells wait on the network or a timeout, so this divides the wall time; at full scale "
                        "the cells that keep a core busy for minutes (codec suites with the long stream, the "
                        "Autobahn testsuite) run in a lane of their own, two or half the cores at once, and the stress "
                        "group (its latency is a measurement) runs last, alone")
    m.add_argument("--update-readme", action="store_true", help="copy the matrix into README.md")
    m.add_argument("--merge", metavar="MATRIX_JSON",
                   help="add this run's columns (with --impl: a column added later) to an earlier run's matrix.json "
                        "of the same profile and scale, replacing columns of the same name, and pair this run's "
                        "programs with the earlier ones' for interop; the report and README say which run each "
                        "column came from")
    m.set_defaults(fn=cmd_matrix)

    args = ap.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
