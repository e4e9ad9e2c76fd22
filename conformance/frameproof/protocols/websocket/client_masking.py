"""WS-MASK-5 on the client side: a fresh masking key for every frame a client sends (RFC 6455 §5.3, §10.3).

Whether keys come from a strong source of entropy cannot be seen on the wire; that they are fresh can. The
checking server of ``frameproof net --client`` (``Protocol.client_request_check``) watches each connection's
keys: n keys drawn at random from 2^32 values repeat about n(n-1)/2^33 times (0.0001 for a thousand frames),
so a connection whose keys repeat more than ``allowed(n)`` (3 plus ten times that) was not given a fresh key
per frame: a constant key, a counter that stopped, a random buffer read at one place. The first
``TRACKED`` frames of a connection are watched (a set of that many keys at most)."""
from __future__ import annotations

from typing import Optional

TRACKED = 1 << 16
#: frames after which two byte positions equal in every key so far tell a key drawn from fewer than 2^32 values
#: (random keys: 6 pairs x 256^-64)
PATTERN_FRAMES = 64
PAIRS = [(i, j) for i in range(4) for j in range(i + 1, 4)]


def allowed(n: int) -> float:
    """Repeats tolerated among ``n`` random 32-bit keys: 3 above ten times the expected number (a fresh key
    per frame fails this about once in 10^7 connections of a thousand frames; a repeated key every frame)."""
    return 3 + 10 * n * (n - 1) / 2 / 2 ** 32


class KeyWatch:
    """One connection's masking keys: ``watch(frame_number, key)`` returns a message (once) when they
    repeat more than chance allows."""

    def __init__(self):
        self.seen = {}  # key -> the first frame that carried it
        self.n = self.repeats = 0
        self.example = None
        self.reported = False
        self.same = set(PAIRS)  # byte positions equal in every key so far

    def watch(self, key: bytes) -> Optional[str]:
        self.n += 1
        if self.n > TRACKED or self.reported:
            return None
        if self.same:
            self.same = {(i, j) for i, j in self.same if key[i] == key[j]}
            if self.same and self.n == PATTERN_FRAMES:
                self.reported = True
                i, j = min(self.same)
                return (f"WS-MASK-5: the masking keys are not drawn from the 2^32 values: in each of the first {self.n} "
                        f"frames byte {j} of the key equals byte {i} (e.g. {bytes(key).hex()})")
        first = self.seen.setdefault(bytes(key), self.n)
        if first != self.n:
            self.repeats += 1
            self.example = self.example or (first, self.n, bytes(key))
        if self.repeats > allowed(self.n):
            self.reported = True
            a, b, k = self.example
            return (f"WS-MASK-5: the masking keys repeat: {self.repeats} of the first {self.n} frames reuse an "
                    f"earlier frame's key (chance allows {allowed(self.n):.0f}); frame {b} has frame {a}'s key "
                    f"{k.hex()}")
        return None


def c_fresh_keys(t):
    """The clean run's frames (the generic cases' cached run): no connection's keys repeated beyond chance."""
    from ...checks import CheckFailure
    from ...clientsuite import clean
    r = clean(t)
    if r.stats.frames < 64:
        raise CheckFailure(f"the client sent {r.stats.frames} frames: too few to compare masking keys (64 at least)"
                           f"\n--- client output ---\n{r.output}")
    bad = [d for d in r.stats.error_details if "WS-MASK-5" in d]
    if bad:
        raise CheckFailure(f"expected a fresh masking key for every frame (RFC 6455 §5.3)\n  actual   {bad[0]}")


def client_cases():
    from ...clientsuite import ClientCase
    return [ClientCase("fresh_masking_keys", ["WS-MASK-5"], "Every frame the client sends has a fresh masking key: "
                       "a connection's keys repeat no more than random 32-bit keys would", c_fresh_keys)]
