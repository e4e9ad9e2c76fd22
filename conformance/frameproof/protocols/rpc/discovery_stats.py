"""The random selectors' distributions (DISC-SEL-4/5): the chi-square statistic of the picks against
the expected counts over several seeds, and the same picks for the same seed."""
from __future__ import annotations

from ...checks import CheckFailure
from . import discovery_model as M
from .discovery_model import CODE_NAMES
from .discovery_pb import probe, run_script
from .discovery_scripts import A, REG, SEL, ep

DIST_SEEDS = (1, 2, 3, 4, 5)
DIST_LISTS = [  # (weights of the instances): n = 2, 3, 4 (one drained instance among them) and 8 eligible
    (1, 1), (5, 1, 1), (100, 0, 100, 100, 100), (1, 2, 3, 4, 5, 6, 7, 8),
]


def chi_square(counts: dict, expected: dict) -> float:
    return sum((counts.get(k, 0) - v) ** 2 / v for k, v in expected.items())


def distribution():
    def run(testee):
        probe(testee)
        failures = []
        broken = set()
        for weights in DIST_LISTS:
            ops = [REG(ep(A, f"i{k}", weight=w)) for k, w in enumerate(weights)]
            el = [(f"i{k}", w) for k, w in enumerate(weights) if w > 0]
            n = len(el)
            picks = 2000 * n
            for kind in M.RANDOM_SELECTORS:
                total_w = sum(w for _, w in el)
                expected = {i: picks * (w / total_w if kind == "weighted-random" else 1 / n) for i, w in el}
                script = ops + [SEL(s, A, kind, picks, seed=s) for s in DIST_SEEDS]
                results, _ = run_script(testee, script)
                # the first seed once more, in a fresh script: the same picks (DISC-SEL-5)
                again, _ = run_script(testee, script[:len(ops) + 1])
                bad_seeds = []
                for s, r, r2 in zip(DIST_SEEDS, results[len(ops):], again[len(ops):] + [None] * len(DIST_SEEDS)):
                    where = f"{kind} over weights {weights}, seed {s}, {picks} picks"
                    if r.code != M.OK or len(r.picks) != picks:
                        failures.append(f"{where}:\n  expected OK and {picks} picks\n  actual   "
                                        f"{CODE_NAMES[r.code] if r.code < 6 else r.code} and {len(r.picks)} picks")
                        broken.add("DISC-SEL-4")
                        continue
                    if r2 is not None and r.picks != r2.picks:
                        first = next(i for i, (x, y) in enumerate(zip(r.picks, r2.picks)) if x != y) \
                            if len(r.picks) == len(r2.picks) else 0
                        failures.append(f"{where}, run twice:\n  expected the same picks (DISC-SEL-5)\n  actual   "
                                        f"pick {first} differs: {r.picks[first]!r} then {r2.picks[first]!r}")
                        broken.add("DISC-SEL-5")
                    counts = {}
                    for p in r.picks:
                        counts[p] = counts.get(p, 0) + 1
                    drained = [p for p in counts if p not in expected]
                    if drained:
                        failures.append(f"{where}:\n  expected picks among the eligible {sorted(expected)}\n  actual   "
                                        f"also {drained} (weight 0 or unknown)")
                        broken.add("DISC-SEL-1")
                        continue
                    x2 = chi_square(counts, expected)
                    if x2 >= M.chi_square_limit(n - 1):
                        bad_seeds.append((s, x2, counts))
                if len(bad_seeds) > 1:
                    s, x2, counts = bad_seeds[0]
                    failures.append(
                        f"{kind} over weights {weights}, {picks} picks per seed: chi-square at or above "
                        f"{M.chi_square_limit(n - 1)} (p = 0.001, {n - 1} degrees of freedom) for seeds "
                        f"{[b[0] for b in bad_seeds]} (at most 1 of 5 allowed)\n"
                        f"  expected counts {{{', '.join(f'{k}: {v:.0f}' for k, v in expected.items())}}}\n"
                        f"  actual   counts {dict(sorted(counts.items()))} (seed {s}, chi-square {x2:.1f})")
                    broken.add("DISC-SEL-4")
        if failures:
            raise CheckFailure(f"{len(failures)} selector distribution checks failed; first: " + failures[0],
                               sorted(broken))
    return run
