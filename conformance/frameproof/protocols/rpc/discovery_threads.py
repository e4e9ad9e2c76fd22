"""The threads phase (DISC-THREAD-1/2): threads register, discover and deregister on one registry,
then share one round-robin selector."""
from __future__ import annotations

from .discovery_compare import check_script
from .discovery_pb import probe
from .discovery_scripts import DISC, REG, WATCH, ep


def threads():
    def run(testee):
        probe(testee)
        pre = [REG(ep("svc.t0", "p0")), WATCH("svc.t0")]
        for threads_, rounds, picks in ((4, 200, 150), (8, 50, 25)):
            # 4 threads x 100 even rounds = 400 instances; 4 x 150 = 600 picks is not a multiple: the
            # total is checked; 8 x 25 even rounds = 200 instances, 8 x 25 picks = 1 each
            check_script(testee, pre + [{"concurrent": {"service": f"svc.c{threads_}", "threads": threads_,
                                                        "rounds": rounds, "picks": picks}}, DISC("svc.t0")],
                         f"{threads_} threads x {rounds} rounds, then {picks} round-robin picks each: ")
    return run
