"""`frameproof net --stress`: hostile peers at scale against a live echo server (the *-RES-*
requirements, "Resource limits of the echo service" in every protocol's spec).

Each scenario runs hostile connections by the hundred while healthy traffic flows alongside (a few
long-lived connections doing one verified request at a time, and a fresh connection now and then);
it reports the healthy requests served, their p99 latency and errors, the server's peak RSS, and a
verdict per scenario against the RES requirements it checks. Everything talks to 127.0.0.1/::1 only
and every loop is bounded in count and in time. Protocol bytes come from the Protocol hooks
(``net_request``, ``oversize_header``, ``net_handshake`` through ``netsuite.Conn``).

What the suite allows on top of the spec's values (stated here, reported with every run):

* a timeout is met when the server closes the connection within ``timeout * 1.25 + 1 s`` (the 1 s
  is ``--stress-grace-s``: more on a loaded machine);
* the server's RSS may exceed its RSS before the scenario by at most the memory budget plus
  ``RSS_SLACK`` plus 64 KiB per hostile connection (the per-connection read buffer the spec allows);
* healthy requests: none may fail, and their p99 latency must stay below ``--stress-p99-ms``
  (default 2000 ms; the pause scenario reports it only: its requests wait out the pause on purpose).

The package, one module a job: ``limits`` (the spec's limits, the flags, the allowances), ``probes``
(measuring the server), ``peers`` (hostile sockets), ``healthy`` (the traffic measured alongside),
``scenario`` (what scenarios share), the scenario families ``timeouts``, ``memory``, ``connections``,
``pause``, their ``catalog``, and the ``runner``.
"""
from .catalog import SCENARIOS
from .limits import FLOOR, SMALL_LIMITS, SMALL_SCALE, Limits, add_limit_args, limits_from_args
from .runner import run
from .scenario import Scenario, scenario_name, scenario_requirements

__all__ = ["FLOOR", "SCENARIOS", "SMALL_LIMITS", "SMALL_SCALE", "Limits", "Scenario", "add_limit_args",
           "limits_from_args", "run", "scenario_name", "scenario_requirements"]
