"""`frameproof bench`: the benchmark runner (code in tools/bench/fpbench, see tools/bench/README.md)."""
from __future__ import annotations

import sys

from .paths import ROOT


def _fpbench():
    p = str(ROOT / "tools" / "bench")
    if p not in sys.path:
        sys.path.insert(0, p)
    import fpbench.runner
    return fpbench.runner


def add_parsers(sub):
    """Registers `frameproof bench` only where the benchmark runner is (a repository checkout; an
    installed wheel carries the suite, not the benchmark tools)."""
    if not (ROOT / "tools" / "bench" / "fpbench").is_dir():
        return
    b = sub.add_parser("bench", help="benchmark runner: validate the load clients, then servers x clients x "
                                     "scenarios; writes results/bench-<date>.{json,md,png}")
    _fpbench().add_arguments(b)
    b.set_defaults(fn=cmd_bench)


def cmd_bench(args):
    try:
        return _fpbench().main(args)
    except KeyboardInterrupt as e:  # SIGINT, or SIGTERM during the namespace section
        print(f"frameproof bench: interrupted ({e or 'SIGINT'}); servers stopped, namespaces removed", file=sys.stderr)
        return 130
