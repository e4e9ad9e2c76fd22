"""`frameproof bench`: the benchmark runner (code in tools/bench/fpbench, see tools/bench/README.md).

The runner lives in the repository, not in the package: an installed wheel carries the suite, not
tools/. There the full subcommand is not registered; a stub says where the runner is instead."""
from __future__ import annotations

import argparse
import sys

from .paths import ROOT

BENCH_DIR = ROOT / "tools" / "bench"
MISSING = (f"frameproof bench: the benchmark runner is not here ({BENCH_DIR} has no fpbench): it lives in "
           "the frameproof repository (tools/bench), not in the installed package; run it from a checkout: "
           "bash tools/bench/run.sh")


def _fpbench():
    """fpbench.runner, or None when tools/bench is absent. Only the absence of the package
    ``fpbench`` itself counts as absent: any other import error inside it propagates."""
    if BENCH_DIR.is_dir() and str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    try:
        import fpbench.runner
    except ModuleNotFoundError as e:
        if e.name != "fpbench":
            raise
        return None
    return fpbench.runner


def add_parsers(sub):
    runner = _fpbench()
    if runner is None:
        # no option prefix: every argument (--quick, --help, ...) is taken as is, and the message shown
        b = sub.add_parser("bench", help="benchmark runner: only in a frameproof checkout (tools/bench)",
                           prefix_chars="\x00", add_help=False)
        b.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
        b.set_defaults(fn=cmd_missing)
        return
    b = sub.add_parser("bench", help="benchmark runner: validate the load clients, then servers x clients x "
                                     "scenarios; writes results/bench-<date>.{json,md,png}")
    runner.add_arguments(b)
    b.set_defaults(fn=cmd_bench)


def cmd_missing(args):
    print(MISSING, file=sys.stderr)
    return 2


def cmd_bench(args):
    try:
        return _fpbench().main(args)
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM during the namespace section
        print(f"frameproof bench: interrupted ({e or 'SIGINT'}); servers stopped, namespaces removed", file=sys.stderr)
        return 130
