"""`frameproof fuzz`: differential fuzzing of testees against each other and the oracle, and
`frameproof fuzz-corpus`: the seed corpus of the coverage-guided (libFuzzer) targets."""
from __future__ import annotations

import sys
from pathlib import Path


def add_parsers(sub):
    import argparse
    from .cli import EPILOG
    f = sub.add_parser("fuzz", help="differential fuzzing: the same generated streams in the same chunks to every "
                                    "testee and the oracle; a disagreement becomes a minimized vector file",
                       epilog=EPILOG + "  (fuzz: 2 when no testee could take part)\n",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    f.add_argument("--testee", action="append", required=True,
                   help='testee command (repeatable), e.g. "reference-impls/rust/target/release/fp-testee"')
    f.add_argument("--seconds", type=float, default=10.0, help="time budget (default 10; 0 = no time limit)")
    f.add_argument("--examples", type=int, help="example budget (fixed count: reproducible whatever the speed)")
    f.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0): same seed, same examples")
    f.add_argument("--protocol", action="append", help="only this protocol (repeatable; default: every registered one)")
    f.add_argument("--out", default="reports/fuzz", help="where reproducer vectors are written (default reports/fuzz)")
    f.add_argument("--keep-going", action="store_true",
                   help="after a disagreement, drop the testees that disagreed and go on (one reproducer per testee)")
    f.add_argument("--timeout", type=float, default=5.0, help="seconds per testee answer (default 5)")
    f.add_argument("--shrink-seconds", type=float, help="time allowed for minimizing a reproducer")
    f.add_argument("--cwd", help="working directory for the testees")
    f.add_argument("--json", help="write the report as JSON to this file")
    f.set_defaults(fn=cmd_fuzz)

    v = sub.add_parser("fuzz-vector", help="turn a libFuzzer input (crash/leak/invariant artifact) into a decode "
                                           "vector file, with the oracle's expectation")
    v.add_argument("input", nargs="+", help="artifact file(s) written by a libFuzzer target")
    v.add_argument("--found-by", default="libFuzzer target", help="name recorded in the description")
    v.add_argument("--testee", action="append", default=[], help="also run these testees on it (repeatable)")
    v.add_argument("--out", default="reports/fuzz", help="output directory (default reports/fuzz)")
    v.set_defaults(fn=cmd_vector)

    c = sub.add_parser("fuzz-corpus", help="write the libFuzzer seed corpus (from the decode vectors) to a directory")
    c.add_argument("dir")
    c.add_argument("--max-len", type=int, default=4096)
    c.set_defaults(fn=cmd_corpus)


def cmd_fuzz(args):
    from .fuzz import fuzz
    if args.examples is None and not args.seconds:
        print("frameproof fuzz: give --seconds or --examples", file=sys.stderr)
        return 2
    report = fuzz(args.testee, seconds=args.seconds or None, examples=args.examples, seed=args.seed,
                  protocols=args.protocol or (), out_dir=Path(args.out),
                  keep_going=args.keep_going, timeout=args.timeout, cwd=args.cwd,
                  shrink_seconds=args.shrink_seconds, log=lambda s: print(s + "\n", flush=True))
    for name, why in report.skipped_testees.items():
        print(f"skipped testee {name}: {why}")
    for f in report.findings:
        for t in f.testees:
            print(f"FOUND {t}: first failing example #{report.found_at_example.get(t)} after "
                  f"{report.found_after.get(t, 0):.2f} s")
    for p in report.vector_files:
        print(f"reproducer: {p}  (to keep it: paste the line in {p.with_suffix('').with_suffix('.gen_vectors.py')} "
              f"into tools/gen_vectors.py and regenerate)")
    print(f"fuzz: {report.examples} examples in {report.seconds:.1f} s, seed {report.seed}, "
          f"{len(report.findings)} disagreement(s)")
    if args.json:
        from .report import write
        write(report.to_json(), args.json)
    if report.skipped_testees and len(report.skipped_testees) == len(set(args.testee)):
        return 2
    if report.findings:
        return 1
    if not report.examples:
        from .report import EXIT_NOTHING_RAN
        print("fuzz: no example ran", file=sys.stderr)
        return EXIT_NOTHING_RAN
    return 0


def cmd_corpus(args):
    from .fuzz_corpus import write_corpus
    n = write_corpus(Path(args.dir), args.max_len)
    print(f"{n} seed inputs in {args.dir}")
    return 0


def cmd_vector(args):
    from .fuzz_corpus import finding_from_input
    for path in args.input:
        entry = Path(path).read_bytes()
        if len(entry) < 2:
            print(f"{path}: too short to be an input of the frameproof targets", file=sys.stderr)
            return 2
        f = finding_from_input(entry, args.found_by, args.testee)
        print(f.summary())
        out = f.write(Path(args.out))
        print(f"vector: {out}\ngen_vectors.py line: {out.with_suffix('').with_suffix('.gen_vectors.py')}")
    return 0
