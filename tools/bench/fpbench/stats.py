"""Small robust statistics for benchmark runs: median, quartiles, spread, and a distribution-free
confidence interval of the median (order statistics), used by the repeat check and the method study."""
from __future__ import annotations

import math
import statistics
from typing import List, Optional, Sequence

CI_LEVEL = 0.95


def quartiles(vals: Sequence[float]):
    """(q1, median, q3) by linear interpolation between order statistics (numpy's default)."""
    v = sorted(vals)
    n = len(v)

    def q(p):
        x = p * (n - 1)
        lo = math.floor(x)
        hi = min(lo + 1, n - 1)
        return v[lo] + (v[hi] - v[lo]) * (x - lo)
    return q(0.25), q(0.5), q(0.75)


def median_ci(vals: Sequence[float], level: float = CI_LEVEL):
    """A distribution-free confidence interval of the median: [x(k), x(n-k+1)] with the largest k
    whose coverage 1 - 2 P(Bin(n, 1/2) <= k-1) is at least ``level``; with too few values for
    ``level`` (n <= 5) it is [min, max] and the coverage says how much less it is (n = 5: 93.75 %).
    Returns (low, high, coverage)."""
    v = sorted(vals)
    n = len(v)
    if n == 0:
        return None, None, None
    if n == 1:
        return v[0], v[0], 0.0

    def cover(k):
        tail = sum(math.comb(n, i) for i in range(k)) / 2 ** n
        return 1 - 2 * tail
    k = 1
    while k + 1 <= n // 2 and cover(k + 1) >= level:
        k += 1
    return v[k - 1], v[n - k], round(cover(k), 4)


def summary(vals: Sequence[float], digits: int = 1) -> dict:
    """median, min, max, spread_pct = (max-min)/median, q1, q3, iqr_pct = (q3-q1)/median, the
    median's confidence interval (ci_low, ci_high, ci_coverage) and n."""
    vals = [x for x in vals if x is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "spread_pct": None, "q1": None, "q3": None,
                "iqr_pct": None, "ci_low": None, "ci_high": None, "ci_coverage": None, "n": 0}
    q1, med, q3 = quartiles(vals)
    lo, hi, cov = median_ci(vals)
    r = lambda x: round(x, digits)  # noqa: E731
    return {"median": r(med), "min": r(min(vals)), "max": r(max(vals)),
            "spread_pct": round(100 * (max(vals) - min(vals)) / med, 1) if med else None,
            "q1": r(q1), "q3": r(q3), "iqr_pct": round(100 * (q3 - q1) / med, 1) if med else None,
            "ci_low": r(lo), "ci_high": r(hi), "ci_coverage": cov, "n": len(vals)}


def overlap(a: dict, b: dict) -> Optional[bool]:
    """Do the medians' confidence intervals of two summaries overlap? None if either is empty."""
    if a.get("ci_low") is None or b.get("ci_low") is None:
        return None
    return a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"]


def rel_diff_pct(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """|a - b| / mean(a, b) in percent."""
    if not a or not b:
        return None
    return round(100 * abs(a - b) / ((a + b) / 2), 2)


def median(vals: List[float]) -> Optional[float]:
    return statistics.median(vals) if vals else None
