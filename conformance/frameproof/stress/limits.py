"""The server-wide limits of the RES requirements (the spec's defaults, the generic fp-server
flags that set them) and the allowances the stress group grants on top of them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List

KiB, MiB = 1024, 1024 * 1024
# the small bounds the suite's own tests (CI) run the stress group with (1-2 s timeouts, an 8 MiB
# budget, 256 connections; servers run Protocol.stress_codec(), frames up to 1 MiB), at SMALL_SCALE of
# the scenarios' counts; the main job (frameproof matrix) runs it at the defaults and full scale
SMALL_LIMITS = ["--memory-budget", "8388608", "--idle-timeout-ms", "1000", "--frame-timeout-ms", "2000",
                "--write-timeout-ms", "1000", "--max-connections", "256"]
SMALL_SCALE = "0.1"
FLOOR = 64 * KiB  # a connection holding at most this is never closed for the budget (RES-2)
RSS_SLACK = 32 * MiB
GRACE_FACTOR, GRACE_S = 1.25, 1.0
CPU_SPIN = 0.25  # the server's CPU share (of one core) above its share before, while waiting for descriptors: spinning


# ------------------------------------------------------------------ the limits (spec defaults, generic flags)

@dataclass
class Limits:
    """The server-wide limits of the RES requirements: the spec's defaults, identical for every
    protocol and implementation, and the generic fp-server flags that set them."""
    memory_budget: int = 256 * MiB
    idle_timeout_ms: int = 30_000
    frame_timeout_ms: int = 10_000
    max_output_bytes: int = 1 * MiB
    write_timeout_ms: int = 10_000
    max_connections: int = 4096
    #: the suite's extra allowance on every timeout (seconds, not a server flag): ``--stress-grace-s``
    slack_s: float = GRACE_S

    FLAGS = (("memory_budget", "--memory-budget", "BYTES"), ("idle_timeout_ms", "--idle-timeout-ms", "MS"),
             ("frame_timeout_ms", "--frame-timeout-ms", "MS"), ("max_output_bytes", "--max-output-bytes", "BYTES"),
             ("write_timeout_ms", "--write-timeout-ms", "MS"), ("max_connections", "--max-connections", "N"))

    def server_flags(self) -> List[str]:
        """The flags of the values that differ from the spec's defaults (none: a server's defaults)."""
        d = Limits()
        out = []
        for attr, flag, _ in self.FLAGS:
            if getattr(self, attr) != getattr(d, attr):
                out += [flag, str(getattr(self, attr))]
        return out

    def grace(self, timeout_ms: int) -> float:
        return timeout_ms / 1000 * GRACE_FACTOR + self.slack_s


def _positive(text):
    import argparse
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {v}")
    return v


def add_limit_args(ap, what="the server's"):
    """The generic resource-limit flags (reference-impls/README.md, "Resource limits")."""
    d = Limits()
    for attr, flag, metavar in Limits.FLAGS:
        ap.add_argument(flag, dest=attr, type=_positive, default=None, metavar=metavar,
                        help=f"{what} {attr.replace('_', ' ')} (default {getattr(d, attr)})")


def limits_from_args(args) -> Limits:
    d = Limits()
    return Limits(**{a: (getattr(args, a, None) or getattr(d, a)) for a, _, _ in Limits.FLAGS})
