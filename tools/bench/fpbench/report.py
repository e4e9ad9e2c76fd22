"""Markdown table, PNG charts and the JSON schema check of a results file."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import List

from frameproof import protocols as registry


def _mismatch(c) -> str:
    """One server whose counters differ: what it counted, what the clients sent, the difference and its
    connections (a run from before the goodbye frames were counted shows a difference of one close frame
    a connection there)."""
    n = c.get("counters") or {}
    frames, sent = n.get("frames"), c["client_requests_sent"]
    exp = c.get("expected_frames", sent)
    diff = f", {frames - exp:+,}" if isinstance(frames, int) else ""
    return (f"{c['server']}: {frames if frames is not None else 'no'} frames counted, {exp:,} expected "
            f"({sent:,} requests){diff}, {n.get('connections', '?')} connections, "
            f"{n.get('protocol_errors', '?')} protocol errors")


def protocols_of(doc: dict) -> List[str]:
    """The protocols a results document has figures for: the registered ones in registry order,
    then any other (a results file written when another protocol was registered)."""
    seen = [r["scenario"]["protocol"] for r in doc.get("results", [])] + [v["protocol"] for v in doc.get("validation", [])]
    return [p for p in registry.names() if p in seen] + [p for p in dict.fromkeys(seen) if p not in registry.names()]


def seed_peaks(protocols: List[str]) -> list:
    """The seeds' published peaks (Protocol.upstream_figures["peaks"]): (protocol, mode, msg/s, where)."""
    return [(p, m, v, at) for p in protocols if p in registry.names()
            for m, v, at in registry.get(p).upstream_figures.get("peaks", [])]


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float) and v < 10:
        return f"{v:.2f}{unit}"
    return f"{v:,.0f}{unit}"


def _cell(r) -> str:
    if not r:
        return "–"
    m = r.get("msgs_per_s") or {}
    if not m.get("median"):
        return "FAILED"
    s = f"{m['median'] / 1000:,.1f}k ±{m['spread_pct']:.0f}%"
    if r.get("ratio_to_raw") is not None and r["server"] != "raw":
        s += f" ({r['ratio_to_raw']:.2f})"
    if not r.get("ok"):
        s += " ⚠"
    return s


def _label(sc: dict) -> str:
    label = f"{sc['mode']} {sc['payload']} B, C={sc['connections']}" + (
        "" if sc["mode"] == "per-packet" else f", N={sc['window']}" if sc["mode"] == "batched" else f", W={sc['window']}")
    return label + "".join(f" {a}" for a in sc.get("args", [])) + (f" [{sc['tag']}]" if sc.get("tag") else "")


def cpu_section(rows: List[dict], servers: List[str], doc: dict) -> List[str]:
    """The headline: CPU per verified message, server and load client (fpbench/cpu.py), and the
    server's as a multiple of raw's (same scenario, same client)."""
    if not any(r.get("cpu_ns_per_msg") for r in rows):
        return []
    L = ["", "## CPU per message (ns), server and load client", "",
         "Cells: the server's CPU time per verified message (user + system, every thread, from /proc/<pid>/stat "
         "over the client's run), then `·` the load client's (getrusage), medians of the runs; in parentheses the "
         "server's as a multiple of the floor's (`floor`: one thread of C over epoll doing what raw does, its header walk or, for rpc and websocket, "
         "its reply rewriters, tools/bench/floor) where the protocol has one, else of `raw`'s. Whichever side spends more per message limited the run; unlike msg/s, "
         "these figures do not depend on how the two shared the CPUs.", ""]
    for proto in protocols_of(doc):
        sv = [s for s in servers if any(r["server"] == s and r["scenario"]["protocol"] == proto
                                        and r.get("cpu_ns_per_msg") for r in rows)]
        if not sv:
            continue
        L += [f"### {proto}", "", "| scenario | client | " + " | ".join(sv) + " |", "|---|---|" + "---|" * len(sv)]
        keys = []
        for r in rows:
            if r["scenario"]["protocol"] == proto and (r["key"], r["client"]) not in keys:
                keys.append((r["key"], r["client"]))
        for k, cl in keys:
            by = {r["server"]: r.get("cpu_ns_per_msg") or {} for r in rows if r["key"] == k and r["client"] == cl}
            base = "floor" if (by.get("floor") or {}).get("server") else "raw"
            raw = (by.get(base) or {}).get("server", {}).get("total")
            cells = []
            for s in sv:
                c = by.get(s) or {}
                srv, cli = (c.get("server") or {}).get("total"), (c.get("client") or {}).get("total")
                cell = f"{fmt(srv)} · {fmt(cli)}" if srv is not None else "–"
                if srv is not None and raw and s != base:
                    cell += f" ({srv / raw:.2f}× {base})"
                cells.append(cell)
            sc = next(r["scenario"] for r in rows if r["key"] == k)
            L.append(f"| {_label(sc)} | {cl} | " + " | ".join(cells) + " |")
        L.append("")
    return L


def markdown(doc: dict, charts: List[str]) -> str:
    m = doc["machine"]
    cal = m.get("calibration", {})
    L = [f"# frameproof benchmark {doc['date']}", "",
         f"Command: `{doc['command']}`{' (quick mode)' if doc['settings']['quick'] else ''}  ",
         f"Machine: {m.get('cpu_model')}, {m.get('cpus')} CPUs, {m.get('mem_gib')} GiB, Linux {m.get('kernel')}  ",
         f"Calibration: memcpy {cal.get('memcpy_gb_per_s', '?')} GB/s, loopback TCP one stream "
         f"{cal.get('loopback_tcp_gbit_per_s', '?')} Gbit/s ({cal.get('loopback_tcp_gb_per_s', '?')} GB/s)  ",
         f"Load average: start {', '.join(f'{x:.2f}' for x in m['loadavg_start'])}; end "
         f"{', '.join(f'{x:.2f}' for x in m.get('loadavg_end', []))}"
         + (f"; during the matrix (1-min, after each figure) min {m['loadavg_during']['min']:.2f}, median "
            f"{m['loadavg_during']['median']:.2f}, max {m['loadavg_during']['max']:.2f}" if m.get("loadavg_during") else "") + "  ",
         ]
    from . import instructions, quiet
    L += quiet.banner(doc.get("quiet") or {})
    worst = max(list(m.get("loadavg_start", [])) + list(m.get("loadavg_end", []))
                + [(m.get("loadavg_during") or {}).get("max", 0)] or [0])
    if m.get("cpus") and worst > 2 * m["cpus"]:
        # the load average counts runnable threads, the benchmark's own too (1024 connections on a
        # thread-per-connection server); whether other work ran is the quiet check's verdict above
        who = ("the benchmark's own threads (the quiet check found no other busy process)"
               if (doc.get("quiet") or {}).get("ok") else "other work")
        L += ["", f"> ⚠ The load average reached {worst:.1f} on {m['cpus']} CPUs, from {who}: "
                  "absolute msg/s figures at high concurrency are depressed and noisy (see each spread); the ratios to "
                  "the raw echo come from runs taken back to back and are the more robust figures."]
    pin = (doc["settings"].get("pin") or {}).get("name")
    if pin:
        L += ["", f"Pinning: `{pin}` (server {' '.join(doc['settings']['pin']['server'] or ['unpinned'])}, load client "
                  f"{' '.join(doc['settings']['pin']['client'] or ['unpinned'])}); runs interleaved, one warm-up run per "
                  "server; why: tools/bench/README.md, \"How we measure\"."]
    L += ["", f"> {m.get('note')} Each figure is the median of {doc['settings']['runs']} runs of "
             f"{doc['settings']['duration_s']} s, ± the spread (max−min)/median. msg/s counts *verified* replies "
             "(receive mode: frames sent and counted by the server).", ""]
    L += summary(doc)
    v = doc["validation"]
    L += ["## Harness validation", "",
          "Every load client was run against frameproof's checking server (`frameproof net --client` checks: "
          "JSON keys, well-formed requests, counts equal the checker's, corrupted replies detected).", "",
          "| client | protocol | mode | result | client sent / checker frames |", "|---|---|---|---|---|"]
    for r in v:
        c = r.get("counts") or {}
        L.append(f"| {r['client']} | {r['protocol']} | {r['mode']} | {'✓' if r['ok'] else '✗ ' + '; '.join(k for k, x in r['checks'].items() if x != 'pass')} "
                 f"| {(c.get('client') or {}).get('requests_sent')} / {(c.get('checker') or {}).get('frames')} |")
    rows = doc["results"]
    servers = [s["name"] for s in doc["servers"]]
    L += cpu_section(rows, servers, doc)
    L += ["", "## Throughput (msg/s) and fraction of the raw-echo ceiling", "",
          "Cells: median msg/s ± spread, and in parentheses the server's fraction of `raw` (the no-codec echo, "
          "same scenario, same load client). `raw` = fp-raw-echo (read → turn each request header into its reply's "
          "in place with the protocol's header walker → write the same bytes); `tokio-lf` = tokio-util `LengthDelimitedCodec` echo. "
          f"Load client: `{doc['settings']['primary_client']}` unless stated.", ""]
    for proto in protocols_of(doc):
        sv = [s for s in servers if any(r["server"] == s and r["scenario"]["protocol"] == proto for r in rows)]
        if not sv:
            continue
        L += [f"### {proto}", "", "| scenario | client | " + " | ".join(sv) + " |", "|---|---|" + "---|" * len(sv)]
        keys, seeds = [], []
        for r in rows:
            if r["scenario"]["protocol"] == proto and (r["key"], r["client"]) not in keys:
                keys.append((r["key"], r["client"]))
        for k, cl in keys:
            sc = next(r["scenario"] for r in rows if r["key"] == k)
            label = _label(sc)
            cells = [_cell(next((r for r in rows if r["key"] == k and r["client"] == cl and r["server"] == s), None)) for s in sv]
            L.append(f"| {label} | {cl} | " + " | ".join(cells) + " |")
            if sc.get("seed"):
                seeds.append(f"| {label} | {fmt(sc['seed']['msgs_per_s'])} | {sc['seed']['what']} |")
        L.append("")
        if seeds:  # the seed's own figures for the rows shaped like its tables (another machine, another client)
            L += [f"The seed's figures for the {proto} rows shaped like its tables (msg/s; stream rows: DATA frames/s). "
                  "Different machine (the seed's), different load client (upstream's, which verifies no payload), "
                  "so compare shapes and ratios, not absolute figures:", "",
                  "| scenario | seed msg/s | source |", "|---|---|---|"] + list(dict.fromkeys(seeds)) + [""]
    ran = doc["settings"]["concurrency"]
    L += [f"Concurrency levels that ran: {', '.join(map(str, ran))}"
          + (f"; not run: {', '.join(map(str, doc['settings']['concurrency_not_run']))}" if doc['settings'].get('concurrency_not_run') else "")
          + ".", ""]
    bad = [c for c in doc.get("server_checks", []) if not c["ok"]]
    L += [f"Server counters vs client counts: {len(doc.get('server_checks', [])) - len(bad)} of "
          f"{len(doc.get('server_checks', []))} server processes counted exactly the frames the clients sent "
          "(their requests; with each connection's goodbye frames, websocket's close frame, for a server that counts "
          "every frame it receives)."
          + ("" if not bad else " Mismatches: " + "; ".join(_mismatch(c) for c in bad)), ""]
    rc = doc.get("repeat_check")
    if rc:
        L += repeat_markdown(rc)
    if doc.get("instructions"):
        L += instructions.markdown(doc["instructions"])
    pr = doc.get("packets_per_recv")
    if pr:
        L += ["## Packets per recv() — loopback vs network namespaces", "", pr["method"] + ".  ", "Claim: " + pr["claim"] + ".", ""]
        if pr.get("topology"):
            t = pr["topology"]
            L.append(f"Topology: server namespace `{t['server_ns']}`, client namespaces {', '.join('`%s`' % c for c in t['client_ns'])}; veths {', '.join(t['addresses'])}.")
            L.append("")
        for lk in pr.get("links", []):
            if not lk["applied"]:
                L.append(f"- link `{lk['link']}` **not run**: {lk['error']}")
        if pr.get("skipped"):
            L.append(f"- namespaces not run: {pr['skipped']}")
        L += ["", "| link | scenario | server | C | frames/s | frames/recv | bytes/recv | ≥12/recv and ≥1M/s |", "|---|---|---|---:|---:|---:|---:|---|"]
        for r in pr["rows"]:
            L.append(f"| {r['link']} | {r['scenario']} | {r['server']} | {r['connections']} | {fmt(r['frames_per_s'])} | "
                     f"{fmt(r['frames_per_recv'])} | {fmt(r['bytes_per_recv'])} | {'yes' if r['claim_holds'] else 'no'}{'' if r['ok'] else ' ⚠ failed'} |")
        L.append("")
    al = doc.get("allocations", {})
    if al:
        L += ["## Allocations per operation", ""]
        seeds = al.get("seeds_newlife", {})
        L += ["| source | scenario | allocations/op | bytes/op |", "|---|---|---:|---:|"]
        for s in seeds.get("results", []):
            L.append(f"| NewLife (seed 000) | {s['protocol']} {s['mode']} C={s['concurrency']} | – | {s['bytes_per_op']:,} |")
        for r in (al.get("rust") or {}).get("results", []):
            L.append(f"| rust (counting allocator) | {r['protocol']} {r['mode']} {r['payload']} B, W={r['window']} | {r['allocs_per_op']:.3f} | {r['bytes_per_op']:.1f} |")
        for r in (al.get("csharp") or {}).get("results", []):
            if r["payload"] > 32 and not any(w in r["name"] for w in ("echo", "match", "completion", "Completion")):
                continue  # the full list is in the JSON
            L.append(f"| csharp (fp-bench, GC.GetAllocatedBytesForCurrentThread) | {r['name']} {r['payload']} B | – | {r['allocated_bytes_per_op']:.1f} |")
        for k, d in al.items():
            if k == "servers_under_load":
                continue
            if isinstance(d, dict) and d.get("error"):
                L.append(f"| {k} | not measured: {d['error']} | | |")
        L += ["", "Rust and C# count one in-process request/reply round trip through the library (client encode+match, "
                  "server decode+reply, client decode+verify) or a codec operation; the seeds' figure is BenchmarkDotNet's "
                  "Allocated for a full network echo op, so the comparison is per codec path, not per socket call.", ""]
        su = al.get("servers_under_load") or {}
        if su.get("rows"):
            L += ["Whole server processes under load (native servers only): " + su["method"] + ".", "",
                  "| server | protocol | mode | frames | allocations/frame | bytes/frame | allocations/connection | bytes/connection |",
                  "|---|---|---|---:|---:|---:|---:|---:|"]
            for r in su["rows"]:
                if "allocs_per_frame" not in r:
                    L.append(f"| {r['server']} | {r['protocol']} | {r.get('mode', '')} | not measured: {r.get('error', 'failed')} | | | | |")
                    continue
                L.append(f"| {r['server']} | {r['protocol']} | {r['mode']} C=16{'' if r['mode'] == 'per-packet' else ', W=' + str(r['window'])} | "
                         f"{r['frames']:,} | {r['allocs_per_frame']:.5f} | {r['bytes_per_frame']:.2f} | {r['allocs_per_connection']} | "
                         f"{r['bytes_per_connection']:,} |")
            L.append("")
        elif su.get("error"):
            L += [f"Server processes under load: not measured ({su['error']}).", ""]
    if doc.get("skipped"):
        L += ["## Not run", ""] + [f"- {s}" for s in doc["skipped"]] + [""]
    if charts:
        L += ["## Charts", ""] + [f"![{Path(c).stem}]({Path(c).name})" for c in charts] + [""]
    return "\n".join(L)


def repeat_summary(rc: dict) -> List[str]:
    """How far apart the two runs are, beside the interval test: the medians' differences, which way
    they go, and how well the ratios to the raw echo repeat."""
    rows = [r for r in rc["rows"] if r.get("median_diff_pct") is not None]
    if not rows:
        return []
    d = sorted(abs(r["median_diff_pct"]) for r in rows)
    b_faster = sum(1 for r in rows if (r["b"].get("median") or 0) > (r["a"].get("median") or 0))
    rr = sorted(abs(a - b) for a, b in (r["ratio_to_raw"] for r in rows) if a is not None and b is not None)
    L = [f"The medians of the two runs differ by {d[len(d) // 2]:g}% (median of the rows; 90th percentile "
         f"{d[int(0.9 * (len(d) - 1))]:g}%, largest {d[-1]:g}%); {sum(1 for x in d if x <= 5)} of {len(d)} rows within 5%, "
         f"{sum(1 for x in d if x <= 10)} within 10%. Run B was faster in {b_faster} of {len(d)} rows."]
    if rr:
        L[0] += (f" The fraction of the raw echo (each server's msg/s over raw's in the same scenario, same run) repeats "
                 f"closer: it differs by {rr[len(rr) // 2]:.3f} (median), within 0.03 in {sum(1 for x in rr if x <= 0.03)} "
                 f"of {len(rr)} rows and within 0.05 in {sum(1 for x in rr if x <= 0.05)}.")
    return L + [""]


def repeat_markdown(rc: dict) -> List[str]:
    """The repeat check row by row: both medians with their 95 % intervals, and whether they overlap."""
    L = ["## Repeat check: the matrix twice, back to back", "",
         f"{rc['what'][0].upper() + rc['what'][1:]} **{rc['overlapping']} of {rc['compared']} rows overlap.**", ""]
    if rc.get("ratio_compared"):
        L += [f"{rc['ratio_what'][0].upper() + rc['ratio_what'][1:]}: **{rc['ratio_overlapping']} of "
              f"{rc['ratio_compared']} rows overlap.**", ""]
    L += repeat_summary(rc)
    L += ["| scenario | server | client | run A: median [95% interval] | run B: median [95% interval] | medians differ | overlap "
          "| fraction of raw A [95% interval] | B [95% interval] | overlap |",
          "|---|---|---|---|---|---:|---|---|---|---|"]

    def iv(x):
        if not x.get("median"):
            return "–"
        return f"{x['median']:,.0f} [{x['ci_low']:,.0f}–{x['ci_high']:,.0f}]"
    def ivr(x):
        if not x or x.get("median") is None:
            return "–"
        return f"{x['median']:.3f} [{x['ci_low']:.3f}–{x['ci_high']:.3f}]"
    yes = {True: 'yes', False: '**no**', None: '–'}
    for r in rc["rows"]:
        if "ratio_a" in r:
            rat = f"{ivr(r['ratio_a'])} | {ivr(r['ratio_b'])} | {yes[r['ratio_overlap']]}"
        else:  # a results file from before the ratio intervals: the two medians only
            rat = " / ".join("–" if x is None else f"{x:.2f}" for x in r["ratio_to_raw"]) + " | | –"
        L.append(f"| {r['key']} ({r['group']}) | {r['server']} | {r['client']} | {iv(r['a'])} | {iv(r['b'])} | "
                 f"{'–' if r['median_diff_pct'] is None else str(r['median_diff_pct']) + '%'} | {yes[r['overlap']]} | {rat} |")
    cov = sorted({x["a"]["ci_coverage"] for x in rc["rows"] if x["a"].get("ci_coverage") is not None})
    L += ["", f"Interval: order statistics of the runs (coverage {', '.join(f'{c:.1%}' for c in cov) or '–'}; with 5 runs the "
              "interval is min–max, 93.75 %).", ""]
    return L


def check_instructions(ins: dict) -> List[str]:
    """Problems with an instructions section (empty = well-formed)."""
    bad = []
    if not isinstance(ins, dict):
        return ["instructions: not an object"]
    for k in ("method", "messages", "agree_within_pct", "rows", "not_measured", "timing"):
        if k not in ins:
            bad.append(f"instructions.{k}: missing")
    if ins.get("error"):
        return bad
    for i, r in enumerate(ins.get("rows", [])):
        for k in ("server", "protocol", "ok"):
            if k not in r:
                bad.append(f"instructions.rows[{i}].{k}: missing")
        if r.get("ok"):
            for k in ("scenario", "counts", "ir_per_msg", "agreement_pct", "agree", "marginal_ir_per_msg", "ratio_to_raw"):
                if k not in r:
                    bad.append(f"instructions.rows[{i}].{k}: missing")
            if not isinstance(r.get("ir_per_msg"), (int, float)) or r["ir_per_msg"] <= 0:
                bad.append(f"instructions.rows[{i}].ir_per_msg: not a positive number")
            if len(r.get("counts", [])) != 2:
                bad.append(f"instructions.rows[{i}].counts: needs N and 2N")
    return bad


def summary(doc: dict) -> List[str]:
    rows = [r for r in doc["results"] if r["client"] == doc["settings"]["primary_client"] and r.get("ok")]
    L = ["## Summary", ""]
    # fraction of the ceiling per server, echo scenarios
    L += ["| server | protocol | echo scenarios | fraction of raw: median (min–max) |", "|---|---|---:|---|"]
    for srv in [s["name"] for s in doc["servers"] if s["name"] != "raw"]:
        for p in protocols_of(doc):
            rs = [r["ratio_to_raw"] for r in rows if r["server"] == srv and r["scenario"]["protocol"] == p
                  and r["scenario"]["mode"] != "receive" and r.get("ratio_to_raw")]
            if rs:
                rs.sort()
                med = rs[len(rs) // 2] if len(rs) % 2 else (rs[len(rs) // 2 - 1] + rs[len(rs) // 2]) / 2
                L.append(f"| {srv} | {p} | {len(rs)} | {med:.2f} ({rs[0]:.2f}–{rs[-1]:.2f}) |")
    L += ["", "Peak verified msg/s at 32 B (any concurrency) beside the seeds' NewLife peaks (i9-10900K, 20 threads, "
          "Windows, loopback; this machine: see above):", "",
          "| protocol | mode | NewLife (seed) | " + " | ".join(s["name"] for s in doc["servers"]) + " |",
          "|---|---|---:|" + "---:|" * len(doc["servers"])]
    peaks = []
    for p, m, seed, at in seed_peaks(protocols_of(doc)):
        peaks.append((p, m, seed, at))
        # the seed's 批量 figure is a batched echo (WhenAll of a batch): beside our batched rows too
        if m == "pipelined" and any(r["scenario"]["mode"] == "batched" and r["scenario"]["protocol"] == p for r in rows):
            peaks.append((p, "batched", seed, at + "; the seed's 批量, same figure"))
    for p, m, seed, at in peaks:
        cells = []
        for s in doc["servers"]:
            rs = [r for r in rows if r["server"] == s["name"] and r["scenario"]["protocol"] == p
                  and r["scenario"]["mode"] == m and r["scenario"]["payload"] == 32 and r["msgs_per_s"].get("median")]
            if not rs:
                cells.append("–")
                continue
            b = max(rs, key=lambda r: r["msgs_per_s"]["median"])
            cells.append(f"{b['msgs_per_s']['median'] / 1000:,.0f}k (C={b['scenario']['connections']})")
        L.append(f"| {p} | {m} | {seed / 1000:,.0f}k ({at}) | " + " | ".join(cells) + " |")
    L += ["", "Not like for like: NewLife's batched echo completes a Task per message and awaits the oldest slot "
          "(research/newlife.md §5.2–5.3), its clients use Nagle; fp-load writes a window in one batch and verifies every "
          "payload. The seeds' machine has 10 cores for client and server, this one 2 shared cores."]
    pr = (doc.get("packets_per_recv") or {}).get("rows") or []
    blast = [r for r in pr if "receive, " in r["scenario"] and r.get("ok")]
    if blast:
        one = [r for r in blast if "one write per frame" in r["scenario"]]
        twelve = [r for r in blast if "12 frames per write" in r["scenario"]]
        L += [""]
        if one:
            b = max(one, key=lambda r: r["frames_per_s"] or 0)
            L.append(f"Seeds' claim (seed 001: ~12 packets per recv() would give millions of packets/s). With one write() per "
                     f"32 B frame, as in the seeds, {sum(1 for r in one if (r['frames_per_recv'] or 0) >= 12)} of {len(one)} rows "
                     f"reach ≥ 12 frames per recv(); the best rate is {b['frames_per_s']:,.0f} frames/s ({b['link']}, {b['server']}, "
                     f"{b['frames_per_recv']} frames/recv); "
                     + (f"rows with both ≥ 12 frames/recv and ≥ 1 M frames/s: {', '.join(r['link'] + '/' + r['server'] for r in one if r['claim_holds'])}."
                        if any(r["claim_holds"] for r in one) else
                        "no row reaches 1 M frames/s: the sender's one syscall per frame, on the same shared cores, is the limit."))
        if twelve:
            hold = [r for r in twelve if r["claim_holds"]]
            b = max(twelve, key=lambda r: r["frames_per_s"] or 0)
            L.append(f"With 12 frames per write (so each recv() returns ≥ 12 frames, the claim's premise) the servers reach up to "
                     f"{b['frames_per_s']:,.0f} frames/s ({b['link']}, {b['server']}, {b['frames_per_recv']} frames/recv); "
                     + (f"≥ 1 M frames/s in {len(hold)} of {len(twelve)} rows ({', '.join(r['link'] + '/' + r['server'] for r in hold)}): "
                        "the claim's arithmetic holds on this machine even with client and server sharing 2 cores."
                        if hold else "below 1 M frames/s in every row: not confirmed on this machine."))
        L.append("Delay rows need `sch_netem`; where the kernel lacks it they are listed as not run above the table.")
    L.append("")
    return L


def render(path: str) -> List[str]:
    """Rewrites the Markdown and charts of an existing results JSON."""
    import json
    from . import core
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    stem = Path(path).with_suffix("")
    pngs = charts(doc, stem)
    doc["outputs"] = {"json": Path(path).name, "markdown": f"{stem.name}.md", "charts": [Path(p).name for p in pngs]}
    Path(f"{stem}.md").write_text(markdown(doc, pngs), encoding="utf-8")
    core.write_json(path, doc)
    return check_schema(doc)


def ensure_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        pass
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "matplotlib"], capture_output=True, text=True)
    if r.returncode != 0:
        print("bench: matplotlib is missing and could not be installed:", r.stderr[-300:], file=sys.stderr)
        return False
    return True


def charts(doc: dict, stem: Path) -> List[str]:
    if not ensure_matplotlib():
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    rows = [r for r in doc["results"] if r["client"] == doc["settings"]["primary_client"]]
    # 1. msg/s vs concurrency, per protocol and mode
    protocols = protocols_of(doc)
    modes = ["per-packet", "pipelined"] + (["batched"] if any(r["scenario"]["mode"] == "batched" for r in rows) else [])
    combos = [(p, m) for p in protocols for m in modes]
    fig, axes = plt.subplots(max(1, len(protocols)), len(modes), figsize=(6 * len(modes), 4 * max(1, len(protocols))),
                             squeeze=False)
    for ax, (p, m) in zip(axes.flat, combos):
        for srv in sorted({r["server"] for r in rows}):
            pts = sorted((r["scenario"]["connections"], r["msgs_per_s"]) for r in rows
                         if r["server"] == srv and r["scenario"]["protocol"] == p and r["scenario"]["mode"] == m
                         and r["scenario"]["payload"] == 32 and r["scenario"]["group"] == "concurrency"
                         and r["msgs_per_s"].get("median"))
            if not pts:
                continue
            xs = [x for x, _ in pts]
            ys = [s["median"] for _, s in pts]
            lo = [s["median"] - s["min"] for _, s in pts]
            hi = [s["max"] - s["median"] for _, s in pts]
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=srv)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{p}, {m} echo, 32 B")
        ax.set_xlabel("connections")
        ax.set_ylabel("verified msg/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"frameproof echo throughput ({doc['date']}, median and min–max of {doc['settings']['runs']} runs)")
    fig.tight_layout()
    f = f"{stem}-throughput.png"
    fig.savefig(f, dpi=90)
    plt.close(fig)
    out.append(f)
    # 2. fraction of the raw ceiling: one heatmap per protocol, servers x scenarios
    rr = [r for r in rows if r["server"] != "raw" and r.get("ratio_to_raw")]
    if rr:
        import numpy as np
        protos = [p for p in protocols if any(r["scenario"]["protocol"] == p for r in rr)]
        fig, axes = plt.subplots(len(protos), 1, figsize=(16, 2.2 + 1.6 * len(protos)), squeeze=False)
        for ax, p in zip(axes[:, 0], protos):
            pr_ = [r for r in rr if r["scenario"]["protocol"] == p]
            cols = []
            for r in pr_:
                sc = r["scenario"]
                lab = f"{ {'per-packet': 'per-pkt', 'pipelined': 'pipe', 'receive': 'recv', 'batched': 'batch'}.get(sc['mode'], sc['mode'])} {sc['payload'] if sc['payload'] < 1024 else str(sc['payload'] // 1024) + 'K'} c{sc['connections']}" \
                    + (" w1" if sc["mode"] == "receive" and sc["window"] == 1 else "")
                if lab not in cols:
                    cols.append(lab)
            srvs = sorted({r["server"] for r in pr_})
            m = np.full((len(srvs), len(cols)), np.nan)
            for r in pr_:
                sc = r["scenario"]
                lab = f"{ {'per-packet': 'per-pkt', 'pipelined': 'pipe', 'receive': 'recv', 'batched': 'batch'}.get(sc['mode'], sc['mode'])} {sc['payload'] if sc['payload'] < 1024 else str(sc['payload'] // 1024) + 'K'} c{sc['connections']}" \
                    + (" w1" if sc["mode"] == "receive" and sc["window"] == 1 else "")
                m[srvs.index(r["server"]), cols.index(lab)] = r["ratio_to_raw"]
            im = ax.imshow(m, cmap="RdYlGn", vmin=0.3, vmax=1.1, aspect="auto")
            for i in range(len(srvs)):
                for j in range(len(cols)):
                    if not np.isnan(m[i, j]):
                        ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=6)
            ax.set_yticks(range(len(srvs)))
            ax.set_yticklabels(srvs)
            ax.set_xticks(range(len(cols)))
            ax.set_xticklabels(cols, rotation=60, ha="right", fontsize=7)
            ax.set_title(f"{p}: msg/s as a fraction of the raw echo (same scenario, same client; median of paired runs)", fontsize=9)
            fig.colorbar(im, ax=ax, fraction=0.02)
        fig.tight_layout()
        f = f"{stem}-ratio.png"
        fig.savefig(f, dpi=90)
        plt.close(fig)
        out.append(f)
    # 3. packets per recv
    pr = (doc.get("packets_per_recv") or {}).get("rows") or []
    if pr:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 5))
        short = {"one write per frame": "1 write/frame", "12 frames per write": "12 frames/write",
                 "per-packet echo": "per-packet"}

        def brief(label):
            w = re.search(r"pipelined echo, window (\d+)", label)
            return f"pipelined W{w.group(1)}" if w else next((v for k, v in short.items() if k in label), label[:14])
        labels = [f"{r['link'].replace('veth + ', '')} | {brief(r['scenario'])} | {r['server']}" for r in pr]
        a1.barh(range(len(pr)), [r["frames_per_recv"] or 0 for r in pr], color="tab:blue")
        a1.axvline(12, color="r", lw=1, ls="--", label="seed claim: 12")
        a1.set_yticks(range(len(pr)))
        a1.set_yticklabels(labels, fontsize=6)
        a1.set_xscale("symlog")
        a1.set_xlabel("frames per recv()")
        a1.legend(fontsize=8)
        a2.barh(range(len(pr)), [r["frames_per_s"] or 0 for r in pr], color="tab:green")
        a2.axvline(1e6, color="r", lw=1, ls="--", label="1 M frames/s")
        a2.set_yticks(range(len(pr)))
        a2.set_yticklabels([])
        a2.set_xlabel("frames/s counted by the server")
        a2.legend(fontsize=8)
        fig.suptitle("Packets per recv() and throughput: loopback vs network namespaces")
        fig.tight_layout()
        f = f"{stem}-recv.png"
        fig.savefig(f, dpi=90)
        plt.close(fig)
        out.append(f)
    return out


SCHEMA_FILE = Path(__file__).resolve().parents[1] / "results.schema.json"
_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
          "integer": int, "number": (int, float)}


def _validate(v, sch, path, bad):
    """The subset of JSON Schema that results.schema.json and microbench.schema.json use: type, enum,
    required, properties, additionalProperties: false, items, minimum, exclusiveMinimum, minLength
    (jsonschema is not a dependency of the suite)."""
    t = sch.get("type")
    if t:
        ts = t if isinstance(t, list) else [t]
        ok = any(isinstance(v, _TYPES[x]) and not (x in ("integer", "number") and isinstance(v, bool)) for x in ts)
        if not ok:
            bad.append(f"{path}: expected {t}, got {type(v).__name__}")
            return
    if "enum" in sch and v not in sch["enum"]:
        bad.append(f"{path}: {v!r} not in {sch['enum']}")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in sch and v < sch["minimum"]:
            bad.append(f"{path}: {v!r} < {sch['minimum']}")
        if "exclusiveMinimum" in sch and v <= sch["exclusiveMinimum"]:
            bad.append(f"{path}: {v!r} <= {sch['exclusiveMinimum']}")
    if isinstance(v, str) and len(v) < sch.get("minLength", 0):
        bad.append(f"{path}: shorter than {sch['minLength']}")
    if isinstance(v, dict):
        for k in sch.get("required", []):
            if k not in v:
                bad.append(f"{path}.{k}: missing")
        if sch.get("additionalProperties") is False:
            bad += [f"{path}.{k}: not in the schema" for k in v if k not in sch.get("properties", {})]
        for k, sub in sch.get("properties", {}).items():
            if k in v:
                _validate(v[k], sub, f"{path}.{k}", bad)
    if isinstance(v, list) and "items" in sch:
        for i, x in enumerate(v):
            _validate(x, sch["items"], f"{path}[{i}]", bad)


def check_schema(doc: dict) -> List[str]:
    """Problems with a results document against tools/bench/results.schema.json (empty = well-formed),
    and protocol names that are not registered (frameproof.protocols; the schema lists none)."""
    import json
    bad: List[str] = []
    _validate(doc, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), "$", bad)
    known = registry.names()
    where = [(f"$.validation[{i}].protocol", v.get("protocol")) for i, v in enumerate(doc.get("validation") or [])
             if isinstance(v, dict)]
    where += [(f"$.results[{i}].scenario.protocol", (r.get("scenario") or {}).get("protocol"))
              for i, r in enumerate(doc.get("results") or []) if isinstance(r, dict)]
    bad += [f"{path}: {p!r} is not a registered protocol ({', '.join(known)})" for path, p in where
            if isinstance(p, str) and p not in known]
    return bad
