"""`frameproof bench --method-study`: how to time echo servers on a small shared machine,
decided from measurements rather than assumed.

With the Rust fp-server and the raw echo (the ceiling every server is divided by) and the Rust
load client, for per-packet C=1 and pipelined C=16 (the protocol's seed window), it measures
*arms* that each change one factor from a baseline (``--study-base-pin``, default same-core since the
first studies chose it; 1 s runs, 11 runs, interleaved):

- pinning: unpinned / split (server on core 0, client on core 1, ``taskset``) / same core (both on 0);
- run length: 0.3 s, 1 s, 3 s;
- runs: 5 and 11 (the 5 are the first 5 of the 11 of the same arm);
- order: interleaved (run k visits both servers, order rotated with k) / blocked (all runs of
  one server, then all of the other).

Every arm runs as two blocks back to back. Per arm, server and block: median, IQR, spread and the
median's 95 % interval; per arm and block: the server/raw ratio (median of the per-run ratios) and
how much the two blocks' ratios differ (the repeatability of the ratio, the figure the benchmark
publishes), and whether the two blocks' medians' intervals overlap.
"""
from __future__ import annotations

import datetime
import os
import time
from pathlib import Path
from typing import Dict, List, Optional

from frameproof import protocols as registry
from frameproof.paths import ROOT
from frameproof.servers import start_server

from . import core, quiet, stats
from .core import Program, Scenario, codec_argv, log, run_client_once, sent, server_check, tally

PINS = {"unpinned": (None, None), "split": (["taskset", "-c", "0"], ["taskset", "-c", "1"]),
        "same-core": (["taskset", "-c", "0"], ["taskset", "-c", "0"])}


def plan(durations=(0.3, 1.0, 3.0), runs=(5, 11), base_duration=1.0, base_pin="unpinned") -> List[dict]:
    """The arms: one factor changed at a time from the baseline (base_pin, base_duration, max(runs),
    interleaved). Every arm is measured with max(runs) runs per block; the smaller run counts are the
    first runs of the same blocks."""
    arms = []
    for pin in PINS:
        arms.append({"pin": pin, "duration": base_duration, "order": "interleaved"})
    for d in durations:
        if d != base_duration:
            arms.append({"pin": base_pin, "duration": d, "order": "interleaved"})
    arms.append({"pin": base_pin, "duration": base_duration, "order": "blocked"})
    for a in arms:
        a["runs"] = max(runs)
        a["name"] = f"{a['pin']}, {a['duration']:g} s, {a['order']}"
    return arms


def _block(servers: Dict[str, object], client: Program, s: Scenario, arm: dict, cwrap) -> Dict[str, list]:
    """One block: arm['runs'] runs of every server in the arm's order; returns per server the runs."""
    names = list(servers)
    out = {n: [] for n in names}
    n = arm["runs"]
    if arm["order"] == "interleaved":
        seq = [(names[(k + i) % len(names)], k) for k in range(n) for i in range(len(names))]
    else:
        seq = [(name, k) for name in names for k in range(n)]
    for name, _ in seq:
        r = run_client_once(client, s, servers[name]["rs"].addr, arm["duration"], wrap=cwrap)
        sent(servers[name], client, r)
        out[name].append({"ok": r.get("ok"), "msgs_per_s": r.get("msgs_per_s"), "t": round(time.monotonic(), 3),
                          **({"output": r.get("output", "")[:300]} if not r.get("ok") else {})})
    return out


def _analyse(block_runs: List[Dict[str, list]], runs_list, primary: str, base: str) -> dict:
    """Statistics of an arm's two blocks, for each run count (first k runs of each block)."""
    res = {}
    for k in runs_list:
        per = {"blocks": []}
        for b in block_runs:
            blk = {}
            for name, rr in b.items():
                vals = [r["msgs_per_s"] for r in rr[:k] if r.get("ok") and r.get("msgs_per_s")]
                blk[name] = stats.summary(vals)
            pairs = [a["msgs_per_s"] / c["msgs_per_s"] for a, c in zip(b[primary][:k], b[base][:k])
                     if a.get("ok") and c.get("ok") and a.get("msgs_per_s") and c.get("msgs_per_s")]
            blk["ratio"] = stats.summary(pairs, digits=3)
            per["blocks"].append(blk)
        if len(per["blocks"]) == 2:
            b1, b2 = per["blocks"]
            per["ratio_block_diff_pct"] = stats.rel_diff_pct(b1["ratio"]["median"], b2["ratio"]["median"])
            per["median_block_diff_pct"] = {n: stats.rel_diff_pct(b1[n]["median"], b2[n]["median"]) for n in (primary, base)}
            per["intervals_overlap"] = {n: stats.overlap(b1[n], b2[n]) for n in (primary, base)}
            per["ratio_intervals_overlap"] = stats.overlap(b1["ratio"], b2["ratio"])
        res[str(k)] = per
    return res


def run(servers: List[Program], client: Program, protocol: Optional[str] = None, durations=(0.3, 1.0, 3.0),
        runs=(5, 11), base_duration=1.0, pins=None, scenarios=None, warmup=0.2, base_pin="unpinned") -> dict:
    protocol = protocol or registry.names()[0]
    w = registry.get(protocol).pipeline_window
    scen = scenarios or [Scenario(protocol, "per-packet", 32, 1, 1, "method-study"),
                         Scenario(protocol, "pipelined", 32, 16, w, "method-study")]
    arms = [a for a in plan(durations, runs, base_duration, base_pin) if not pins or a["pin"] in pins]
    by = {s.name: s for s in servers}
    primary, base = servers[0].name, servers[1].name
    out = {"protocol": protocol, "servers": [primary, base], "client": client.name, "base_pin": base_pin,
           "design": __doc__.strip().split("\n\n", 1)[1], "runs": list(runs), "durations": list(durations),
           "arms": [], "server_checks": []}
    total = len(arms) * len(scen)
    i = 0
    for s in scen:
        for arm in arms:
            i += 1
            swrap, cwrap = PINS[arm["pin"]]
            up = {}
            try:
                for name in (primary, base):
                    cmd = " ".join(swrap or []) + " " + by[name].cmd(codec_argv(s.codec) + ["--listen", "127.0.0.1:0"])
                    up[name] = {**tally(name, cmd.strip(), s.codec.protocol), "rs": start_server(cmd.strip(), cwd=str(ROOT))}
                for name in up:  # warm-up, not counted
                    r = run_client_once(client, s, up[name]["rs"].addr, warmup, wrap=cwrap)
                    sent(up[name], client, r)
                la0 = os.getloadavg()[0]
                blocks = [_block(up, client, s, arm, cwrap) for _ in range(2)]
                la1 = os.getloadavg()[0]
            finally:
                for name, e in up.items():
                    code, counters, _ = e["rs"].stop()
                    out["server_checks"].append(server_check(e, code, counters))
            a = {"scenario": s.to_json(), "key": s.key, **arm, "loadavg_1m": [round(la0, 2), round(la1, 2)],
                 "stats": _analyse(blocks, runs, primary, base), "raw_runs": blocks}
            out["arms"].append(a)
            st = a["stats"][str(max(runs))]
            b1, b2 = st["blocks"]
            log(f"  [{i:2}/{total}] {s.mode:10} C={s.connections:<3} {arm['name']:32} "
                f"{primary} {b1[primary]['median'] or 0:>11,.0f} / {b2[primary]['median'] or 0:>11,.0f} msg/s "
                f"(IQR {b1[primary]['iqr_pct']}%/{b2[primary]['iqr_pct']}%, spread {b1[primary]['spread_pct']}%/"
                f"{b2[primary]['spread_pct']}%), ratio {b1['ratio']['median']} / "
                f"{b2['ratio']['median']} (blocks differ {st.get('ratio_block_diff_pct')}%)")
    out["ranking"] = ranking(out)
    return out


def ranking(study: dict) -> List[dict]:
    """Per scenario, the arms ordered by how repeatable the published figure (the server/raw ratio)
    is across the two blocks, then by the IQR of the ratio; with the largest run count."""
    out = []
    for key in dict.fromkeys(a["key"] for a in study["arms"]):
        arms = [a for a in study["arms"] if a["key"] == key]
        rows = []
        for a in arms:
            for k, st in a["stats"].items():
                b1, b2 = st["blocks"]
                iqr = [b["ratio"]["iqr_pct"] for b in (b1, b2) if b["ratio"]["iqr_pct"] is not None]
                rows.append({"arm": a["name"], "runs": int(k), "cost_s": round(2 * 2 * int(k) * a["duration"], 1),
                             "ratio": [b1["ratio"]["median"], b2["ratio"]["median"]],
                             "ratio_block_diff_pct": st.get("ratio_block_diff_pct"),
                             "ratio_iqr_pct": max(iqr) if iqr else None,
                             "server_iqr_pct": max(b[study["servers"][0]]["iqr_pct"] or 0 for b in (b1, b2)),
                             "server_spread_pct": max(b[study["servers"][0]]["spread_pct"] or 0 for b in (b1, b2)),
                             "base_iqr_pct": max(b[study["servers"][1]]["iqr_pct"] or 0 for b in (b1, b2)),
                             "throughput": [b1[study["servers"][0]]["median"], b2[study["servers"][0]]["median"]],
                             "medians_overlap": st.get("intervals_overlap", {}).get(study["servers"][0])})
        rows.sort(key=lambda r: (r["ratio_block_diff_pct"] if r["ratio_block_diff_pct"] is not None else 1e9,
                                 r["ratio_iqr_pct"] if r["ratio_iqr_pct"] is not None else 1e9))
        out.append({"key": key, "arms": rows})
    return out


def markdown(doc: dict) -> str:
    st = doc["study"]
    L = [f"# frameproof benchmark method study {doc['date']}", "",
         f"Command: `{doc['command']}`  ",
         f"Machine: {doc['machine'].get('cpu_model')}, {doc['machine'].get('cpus')} CPUs, Linux {doc['machine'].get('kernel')}  ",
         f"Load average: start {', '.join(f'{x:.2f}' for x in doc['machine']['loadavg_start'])}; end "
         f"{', '.join(f'{x:.2f}' for x in doc['machine']['loadavg_end'])}  "]
    L += quiet.banner(doc.get("quiet") or {})
    L += ["", "## Design", "", st["design"], "",
          f"Servers: `{st['servers'][0]}` and `{st['servers'][1]}` (the ratio is {st['servers'][0]}/{st['servers'][1]}); "
          f"load client `{st['client']}`; protocol `{st['protocol']}`, 32 B. This study: run lengths "
          f"{', '.join(f'{d:g} s' for d in st['durations'])}, runs {' and '.join(map(str, st['runs']))}.", ""]
    for rk in st["ranking"]:
        L += [f"## {rk['key']}", "",
              "Arms ordered by the repeatability of the ratio between the two back-to-back blocks.", "",
              f"| arm | runs | cost (s) | {st['servers'][0]} msg/s block 1 / 2 | {st['servers'][0]} IQR / spread | "
              f"{st['servers'][1]} IQR | ratio block 1 / 2 | ratio blocks differ | ratio IQR | medians' 95% intervals overlap |",
              "|---|---:|---:|---|---:|---:|---|---:|---:|---|"]
        for r in rk["arms"]:
            t = " / ".join(f"{x:,.0f}" if x else "–" for x in r["throughput"])
            ra = " / ".join(f"{x:.3f}" if x else "–" for x in r["ratio"])
            L.append(f"| {r['arm']} | {r['runs']} | {r['cost_s']} | {t} | {r['server_iqr_pct']}% / {r['server_spread_pct']}% | "
                     f"{r['base_iqr_pct']}% | {ra} | "
                     f"{'–' if r['ratio_block_diff_pct'] is None else str(r['ratio_block_diff_pct']) + '%'} | "
                     f"{'–' if r['ratio_iqr_pct'] is None else str(r['ratio_iqr_pct']) + '%'} | "
                     f"{ {True: 'yes', False: 'no', None: '–'}[r['medians_overlap']]} |")
        L.append("")
    L += ["## Load average per arm", "", "| scenario | arm | 1-min load average before / after |", "|---|---|---|"]
    for a in st["arms"]:
        L.append(f"| {a['key']} | {a['name']} | {a['loadavg_1m'][0]} / {a['loadavg_1m'][1]} |")
    bad = [c for c in st["server_checks"] if not c["ok"]]
    L += ["", f"Server counters vs client counts: {len(st['server_checks']) - len(bad)} of {len(st['server_checks'])} "
              "server processes counted exactly the frames the clients sent.", ""]
    return "\n".join(L)


def write(doc: dict, stem: Path) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    core.write_json(f"{stem}.json", doc)
    Path(f"{stem}.md").write_text(markdown(doc), encoding="utf-8")


def check(doc: dict) -> List[str]:
    """Problems with a method-study document (empty = well-formed)."""
    bad = []
    for k in ("schema", "date", "command", "machine", "quiet", "study"):
        if k not in doc:
            bad.append(f"$.{k}: missing")
    st = doc.get("study") or {}
    if not st.get("arms"):
        bad.append("$.study.arms: empty")
    for i, a in enumerate(st.get("arms", [])):
        for k in ("scenario", "pin", "duration", "order", "runs", "stats", "loadavg_1m"):
            if k not in a:
                bad.append(f"$.study.arms[{i}].{k}: missing")
        for k, s in (a.get("stats") or {}).items():
            if len(s.get("blocks", [])) != 2:
                bad.append(f"$.study.arms[{i}].stats.{k}: needs two blocks")
            for b in s.get("blocks", []):
                for name in st.get("servers", []) + ["ratio"]:
                    if name not in b or "median" not in b[name] or "iqr_pct" not in b[name]:
                        bad.append(f"$.study.arms[{i}].stats.{k}: {name} lacks median/iqr")
    if not st.get("ranking"):
        bad.append("$.study.ranking: empty")
    return bad


def stamp() -> str:
    return datetime.date.today().isoformat()
