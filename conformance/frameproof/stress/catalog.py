"""The scenarios of the stress group, in the order they run."""
from __future__ import annotations

from typing import List

from .connections import s_connect_close, s_connection_limit, s_descriptors, s_resets
from .memory import s_maximal_frames
from .pause import s_pause
from .scenario import Scenario
from .timeouts import s_never_reading, s_open_idle, s_slow_loris


SCENARIOS: List[Scenario] = [
    Scenario("slow_loris", (4, 2), "Hundreds of connections dribble a frame one byte at a time; those that "
             "stop are closed after the frame timeout; healthy traffic goes on", s_slow_loris),
    Scenario("maximal_unfinished_frames", (1, 2), "Connections each hold a nearly maximal unfinished frame, "
             "together over three times the memory budget: RSS stays under the budget, holders of 64 KiB or less are "
             "served", s_maximal_frames),
    Scenario("open_and_idle", (3,), "Connections that never send, and connections silent after one request, "
             "are closed after the idle timeout", s_open_idle),
    Scenario("readers_that_never_read", (5, 1), "Peers pipeline requests and never read: output is bounded "
             "and they are closed after the write timeout", s_never_reading),
    Scenario("connect_close_10000", (6, 2), "10,000 connect/close cycles (resets, half frames, one request): "
             "no descriptor kept, service goes on", s_connect_close),
    Scenario("resets_mid_frame", (1, 2), "Connections reset (SO_LINGER 0) in the middle of a frame: "
             "descriptors and memory released", s_resets),
    Scenario("connection_limit", (6,), "Connections beyond --max-connections are accepted and closed at once; "
             "after some close, new ones are served", s_connection_limit, fresh_healthy=False),
    Scenario("descriptor_exhaustion", (7,), "RLIMIT_NOFILE lowered under the load: the server keeps serving, "
             "does not spin, accepts again once descriptors are free", s_descriptors, needs_pid=True,
             fresh_healthy=False),
    Scenario("sigstop_sigcont", (8,), "The server is stopped longer than its idle timeout while requests "
             "come, then continued: every reply exactly once, in order", s_pause, needs_pid=True,
             fresh_healthy=False),
]
