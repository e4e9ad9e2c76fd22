"""Runs the stress group against one server and writes its report (frameproof.report, kind
``stress``)."""
from __future__ import annotations

import fnmatch
import resource
import time
from typing import List, Optional

from .. import report
from ..checks import CheckFailure
from ..netsuite import NetTarget
from .catalog import SCENARIOS
from .healthy import Healthy, HealthyStats
from .limits import FLOOR, GRACE_FACTOR, Limits, MiB, RSS_SLACK
from .probes import RssMonitor, alive
from .scenario import Ctx, Scenario, SkipScenario, scenario_name, scenario_requirements


# ------------------------------------------------------------------ the run

def _raise_own_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    want = min(want, 65536)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass


def run(t: NetTarget, limits: Limits, scale: float = 1.0, select: Optional[List[str]] = None,
        p99_bound_ms: float = 2000.0, name: str = "", out=print, xfail: Optional[List[str]] = None) -> dict:
    """Runs the scenarios; returns the report (frameproof.report, kind ``stress``; ``passed``: no
    scenario failed unexpectedly, no expected failure passed, every `xfail` entry matched a scenario
    that ran). `xfail`: scenario names or globs expected to fail (a library without server-wide limits)."""
    _raise_own_nofile()
    protocol = t.codec.protocol
    rss = RssMonitor(t.pid)
    results = []
    out(f"frameproof net --stress: {name or f'{t.host}:{t.port}'} ({protocol}); limits: "
        + ", ".join(f"{a}={getattr(limits, a)}" for a, _, _ in Limits.FLAGS) + f"; scale {scale:g}")
    try:
        for sc in SCENARIOS:
            full = scenario_name(protocol, sc)
            if select and not any(fnmatch.fnmatchcase(full, g) or fnmatch.fnmatchcase(sc.name, g) for g in select):
                continue
            results.append(_run_one(t, limits, scale, rss, p99_bound_ms, sc, protocol, full))
            r = results[-1]
            out(f"  {r['verdict']:4} {r['name']}  [{', '.join(r['requirements'])}]  healthy {r['healthy_served']} "
                f"served, p99 {r['healthy_p99_ms']:.1f} ms, {r['healthy_errors']} errors; peak RSS "
                f"{_mib(r['peak_rss_kib'])} (before {_mib(r['rss_before_kib'])}); {r['duration_s']:.1f} s")
            for line in r["failures"]:
                out(f"       ✗ {line}")
            for line in r["notes"]:
                out(f"         {line}")
            if not alive(t.pid):
                out("  the server is gone: the remaining scenarios are not run")
                break
    finally:
        rss.stop()
    xfail = list(xfail or ())
    used = set()
    tests = []
    for r in results:
        status = {"ok": "passed", "FAIL": "failed", "skip": "skipped"}[r["verdict"]]
        entry = next((e for e in xfail if fnmatch.fnmatchcase(r["name"], e) or fnmatch.fnmatchcase(r["scenario"], e)),
                     None)
        if entry and status != "skipped":
            used.add(entry)
            status = "xfailed" if status == "failed" else "xpassed"
        msg = "\n".join(r["failures"] + r["notes"])
        if status == "xpassed":
            msg = f"expected to fail ({entry}), but passed\n" + msg
        tests.append(report.test(r["name"], r["requirements"], status, msg, r["duration_s"],
                                 broken=r["failed_requirements"], description=r["description"]))
    def names(e):  # the scenarios of this protocol an entry names
        return [sc for sc in SCENARIOS if fnmatch.fnmatchcase(scenario_name(protocol, sc), e)
                or fnmatch.fnmatchcase(sc.name, e)]
    ran = {r["scenario"] for r in results}
    # an entry is stale when it names no scenario, or names only scenarios that ran and did not fail
    # as it says; one naming only scenarios --select left out is not judged by this run
    unmatched = [e for e in xfail if e not in used and (not names(e) or any(sc.name in ran for sc in names(e)))]
    for e in unmatched:
        out(f"  expected-failure entry that matches no scenario run: {e}")
    for e in [e for e in xfail if e not in used and e not in unmatched]:
        out(f"  expected-failure entry not judged (its scenarios were not selected): {e}")
    tot = report.totals(tests)
    passed = not tot["failed"] and not tot["xpassed"] and not unmatched and alive(t.pid)
    served = sum(r["healthy_served"] for r in results)
    out(f"frameproof net --stress: {tot['passed']} passed, {tot['failed']} failed, {tot['skipped']} skipped"
        + (f", {tot['xfailed']} xfailed" if tot["xfailed"] else "") + (f", {tot['xpassed']} xpassed" if tot["xpassed"] else "")
        + f"; healthy requests served {served}, errors {sum(r['healthy_errors'] for r in results)}; "
        f"peak RSS {_mib(max([r['peak_rss_kib'] or 0 for r in results] or [0]))}")
    return report.make("stress", {"name": name or f"{t.host}:{t.port}"}, tests,
                       mode="stress", server=f"{t.host}:{t.port}", server_name=name, protocol=protocol,
                       codec=t.codec.to_json(), limits={a: getattr(limits, a) for a, _, _ in Limits.FLAGS},
                       allowances={"timeout_factor": GRACE_FACTOR, "timeout_extra_s": limits.slack_s,
                                   "rss_slack_bytes": RSS_SLACK, "per_connection_bytes": FLOOR,
                                   "healthy_p99_ms": p99_bound_ms},
                       scale=scale, scenarios=results, xfail_unmatched=unmatched, passed=passed)


def _mib(kib):
    return "?" if not kib else f"{kib / 1024:.1f} MiB"


def _run_one(t, limits, scale, rss, p99_bound_ms, sc: Scenario, protocol, full) -> dict:
    ctx = Ctx(t, limits, scale, rss, p99_bound_ms)
    rec = {"name": full, "scenario": sc.name, "requirements": scenario_requirements(protocol, sc),
           "description": sc.description}
    t0 = time.monotonic()
    before = rss.reset()
    skip = None
    st = HealthyStats()
    if sc.needs_pid and not t.pid:
        skip = "needs the server's pid (--server-cmd or --server-pid)"
    else:
        try:
            ctx.healthy = Healthy(t, fresh=sc.fresh_healthy).start()
            time.sleep(0.3)
            sc.run(ctx)
        except SkipScenario as e:
            skip = str(e)
        except (CheckFailure, OSError) as e:
            ctx.fail(f"the scenario could not go on: {e}")
        finally:
            if ctx.healthy:
                st = ctx.healthy.stop()
    peak = rss.peak_kib if t.pid else None
    if not skip:
        if st.errors:
            ctx.fail(f"{st.errors} healthy requests failed; first: {st.details[0] if st.details else '?'}", 2)
        if st.served == 0:
            ctx.fail("no healthy request was served during the scenario", 2)
        if ctx.p99_checked and st.p99_ms() > p99_bound_ms:
            ctx.fail(f"healthy p99 latency {st.p99_ms():.0f} ms, above {p99_bound_ms:g} ms", 2)
        if before and peak:
            bound_kib = (limits.memory_budget + RSS_SLACK + FLOOR * ctx.hostile_conns) // 1024
            if peak - before > bound_kib:
                ctx.fail(f"server RSS grew by {(peak - before) / 1024:.1f} MiB, above the budget "
                         f"{limits.memory_budget / MiB:.1f} MiB + {RSS_SLACK // MiB} MiB + 64 KiB × "
                         f"{ctx.hostile_conns} connections", 1)
        if not alive(t.pid):
            ctx.fail("the server process is gone")
    verdict = "skip" if skip else ("FAIL" if ctx.failures else "ok")
    prefix = rec["requirements"][0].rsplit("-", 1)[0]
    failed = []
    for res in ctx.failed_res:
        for rid in ([f"{prefix}-{res}"] if res else rec["requirements"]):
            if rid not in failed:
                failed.append(rid)
    rec.update({"verdict": verdict, "skip_reason": skip, "failures": ctx.failures, "failed_requirements": failed,
                "notes": ctx.notes,
                "healthy_served": st.served, "healthy_errors": st.errors, "healthy_p99_ms": round(st.p99_ms(), 3),
                "healthy_p99_checked": ctx.p99_checked, "rss_before_kib": before, "peak_rss_kib": peak,
                "hostile_connections": ctx.hostile_conns, "duration_s": round(time.monotonic() - t0, 3)})
    if skip:
        rec["notes"] = [f"skipped: {skip}"] + rec["notes"]
    return rec
