"""`frameproof bench`: validate the load clients, calibrate, run the matrix, write
results/bench-<date>.json, .md and .png charts."""
from __future__ import annotations

import datetime
import os
import shlex
import sys
import time
from pathlib import Path

from frameproof import protocols as registry
from frameproof.paths import ROOT

from . import allocations, core, instructions, netns, quiet, report, scaling, soak, study
from .core import Scenario, log

FULL_CONC = [1, 4, 16, 64, 256, 1024]
QUICK_CONC = [1, 16, 256]


def add_arguments(b):
    b.add_argument("--quick", action="store_true", help="about a minute: fewer concurrency levels, short runs")
    b.add_argument("--smoke", action="store_true", help="seconds: one scenario per mode, for the project's tests")
    b.add_argument("--out", help="directory for bench-<date>.{json,md} and charts (default results/)")
    b.add_argument("--name", help="file stem instead of bench-<date>")
    b.add_argument("--runs", type=int, help="runs per figure (default 11, quick 5)")
    b.add_argument("--duration", type=float, help="seconds per run (default 0.3, quick 0.2)")
    b.add_argument("--concurrency", help="comma-separated connection counts (default 1,4,16,64,256,1024)")
    b.add_argument("--servers", help="only these servers (comma-separated: rust,csharp,cpp,raw,tokio-lf)")
    b.add_argument("--protocols", help="only these protocols (comma-separated; default every registered one)")
    b.add_argument("--groups", help="only the scenarios of these groups (comma-separated: concurrency, payload, "
                                   "receive-batched, receive-blast, cross-client, or a protocol's own, e.g. deflate)")
    b.add_argument("--clients", help="only these load clients (comma-separated; the first is the primary client)")
    b.add_argument("--client", action="append", default=[], metavar="NAME=CMD",
                   help="an extra load client following the fp-load contract (validated, then used like the others)")
    b.add_argument("--validate-only", action="store_true", help="only run the harness validation; exit 1 if it fails")
    b.add_argument("--no-netns", action="store_true", help="skip the packets-per-recv / namespace section")
    b.add_argument("--no-alloc", action="store_true", help="skip the allocation figures")
    b.add_argument("--render", metavar="JSON", help="only rewrite the Markdown and charts of an existing results file")
    b.add_argument("--soak", type=float, metavar="MINUTES",
                   help="load under faults (issue 17): per server and protocol, MINUTES of verified echo while the "
                        "stress group runs against the same server; writes soak-<date>.{json,md}. Off by default")
    b.add_argument("--instructions", action="store_true",
                   help="only the instruction counts (callgrind): Ir per echoed message of every native server; "
                        "writes instructions-<date>.{json,md} (also part of the full run)")
    b.add_argument("--no-instructions", action="store_true", help="full run without the instruction counts")
    b.add_argument("--scaling", action="store_true",
                   help="only the scaling table: every server at --threads 1 and 2, its load client on the other CPU "
                        "and on the same one; writes scaling-<date>.{json,md}")
    b.add_argument("--instructions-messages", type=int, metavar="N",
                   help="echoes per counted window (N and 2N; default 20000, quick 5000)")
    b.add_argument("--method-study", action="store_true",
                   help="only the timing-method study (pinning, run length, runs, order; two blocks each): "
                        "writes method-study-<date>.{json,md}")
    b.add_argument("--study-durations", help="run lengths of the method study (default 0.3,1,3; the middle one is "
                                             "the baseline)")
    b.add_argument("--study-runs", help="run counts of the method study (default 5,11)")
    b.add_argument("--study-base-pin", default="same-core",
                   help="the pinning of the method study's run-length and order arms (default same-core, the chosen one; "
                        "the first studies used unpinned)")
    b.add_argument("--study-pins", help="pinning arms of the method study (default unpinned,split,same-core)")
    b.add_argument("--pin", choices=sorted(core.PINS), default="same-core",
                   help="CPU pinning of servers and load clients in the matrix (default same-core: both on one CPU, "
                        "the most repeatable in the method study; split: server on one, client on another; none)")
    b.add_argument("--pin-cpu", type=int, help="the CPU of --pin same-core/split (default: the idlest CPU in the "
                                               "quiet-machine sample taken just before)")
    b.add_argument("--repeat-check", action="store_true",
                   help="run the matrix twice back to back; per row: do the two medians' 95%% intervals overlap?")
    b.add_argument("--allow-noisy", action="store_true",
                   help="write where asked even when the quiet-machine check fails (the files still say NOISY)")
    b.add_argument("--noisy-out", help="where a run on a busy machine writes (default reports/bench)")
    b.add_argument("--quiet-seconds", type=float, help="length of each quiet-machine sample (default 3; smoke 1)")


def quiet_before(args) -> dict:
    secs = args.quiet_seconds if args.quiet_seconds is not None else (1.0 if args.smoke else 3.0)
    log(f"== quiet-machine check ({secs:g} s)")
    return quiet.sample(secs)


def quiet_after(args, before: dict) -> dict:
    secs = args.quiet_seconds if args.quiet_seconds is not None else (1.0 if args.smoke else 3.0)
    q = quiet.judge(before, quiet.sample(secs))
    q["allowed"] = not q["ok"] and args.allow_noisy
    log("== quiet-machine check: " + ("quiet" if q["ok"] else "NOISY: " + "; ".join(q["reasons"])))
    return q


def destination(args, q: dict, name: str) -> Path:
    """The file stem to write: --out/--name (default results/<name>) on a quiet machine or with
    --allow-noisy; otherwise --noisy-out (default reports/bench) and a name starting NOISY-."""
    stem = args.name or name
    if q.get("ok") or args.allow_noisy:
        d = Path(args.out or ROOT / "results")
    else:
        d = Path(args.noisy_out or ROOT / "reports" / "bench")
        stem = "NOISY-" + stem
        log(f"bench: the machine is busy: not writing to {args.out or ROOT / 'results'}; writing {d / stem}.* "
            "(--allow-noisy to override)")
    d.mkdir(parents=True, exist_ok=True)
    return d / stem


def _command() -> str:
    argv = sys.argv[2:] if len(sys.argv) > 1 and sys.argv[1] == "bench" else sys.argv[1:]
    return os.environ.get("FPBENCH_COMMAND", "frameproof bench " + " ".join(shlex.quote(a) for a in argv)).strip()


def _protocols(args) -> list:
    """--protocols (checked against the registry), or every registered protocol."""
    if not args.protocols:
        return registry.names()
    want = args.protocols.split(",")
    unknown = [p for p in want if p not in registry.names()]
    if unknown:
        raise SystemExit(f"bench: --protocols: not registered: {', '.join(unknown)} ({', '.join(registry.names())})")
    return want


def serving(servers, protocols) -> list:
    """The servers of at least one of these protocols: one of none of them is not run, so it need not be
    built (bench --protocols standard on a checkout whose websocket peers are still building)."""
    want = set(protocols)
    return [s for s in servers if want & set(s.protocols)]


def _floats(text, default):
    return tuple(float(x) for x in text.split(",")) if text else default


def main_study(args, servers, clients) -> int:
    """--method-study: the Rust server against the raw echo, the Rust load client."""
    t0 = time.monotonic()
    by = {s.name: s for s in servers}
    client = next((c for c in clients if c.name == "rust"), None)
    if "rust" not in by or "raw" not in by or client is None or not all(p.available() for p in (by["rust"], by["raw"], client)):
        print("bench: the method study needs the Rust fp-server, fp-raw-echo and fp-load (tools/bench/run.sh builds them)",
              file=sys.stderr)
        return 2
    proto = _protocols(args)[0]
    val = core.validate([client], [proto])
    if not all(v["ok"] for v in val):
        log("bench: the load client failed validation; no study was run")
        return 1
    before = quiet_before(args)
    machine = core.machine(0.25)
    durs = _floats(args.study_durations, (0.05, 0.1, 0.2) if args.smoke else (0.3, 1.0, 3.0))
    runs = tuple(int(x) for x in _floats(args.study_runs, (2, 3) if args.smoke else (5, 11)))
    pins = args.study_pins.split(",") if args.study_pins else None
    base = sorted(durs)[len(durs) // 2]
    log(f"== method study: {proto}, durations {durs} (baseline {base:g} s), runs {runs}")
    st = study.run([by["rust"], by["raw"]], client, proto, durs, runs, base, pins,
                   warmup=0.05 if args.smoke else 0.2, base_pin=args.study_base_pin)
    q = quiet_after(args, before)
    machine["loadavg_end"] = list(os.getloadavg())
    doc = {"schema": "frameproof-method-study/1", "date": study.stamp(), "command": _command(), "machine": machine,
           "quiet": q, "validation": val, "study": st, "elapsed_s": round(time.monotonic() - t0, 1)}
    stem = destination(args, q, f"method-study-{doc['date']}")
    study.write(doc, stem)
    problems = study.check(doc)
    log(f"== wrote {stem}.json and {stem}.md in {doc['elapsed_s']} s" + (f"; problems: {problems}" if problems else ""))
    return 1 if problems else 0


def main_instructions(args, servers, clients) -> int:
    """--instructions: only the callgrind section."""
    t0 = time.monotonic()
    client = next((c for c in clients if c.name == "rust"), None) or instructions.default_client()
    if not client.available():
        print("bench: the instruction counts need the Rust fp-load (tools/bench/run.sh builds it)", file=sys.stderr)
        return 2
    before = quiet_before(args)
    machine = core.machine(0.25)
    n = args.instructions_messages or (500 if args.smoke else 5000 if args.quick else 20000)
    core.set_pin(args.pin, args.pin_cpu if args.pin_cpu is not None else quiet.idlest_cpu(before))  # the ns timings
    log(f"== instructions per echoed message (callgrind, N = {n} and {2 * n})")
    ins = instructions.run(servers, client, n, timing_runs=1 if args.smoke else 3,
                           timing_duration=0.1 if args.smoke else 0.3, protocols=_protocols(args))
    q = quiet_after(args, before)
    machine["loadavg_end"] = list(os.getloadavg())
    doc = {"schema": "frameproof-instructions/1", "date": datetime.date.today().isoformat(), "command": _command(),
           "machine": machine, "quiet": q, "instructions": ins, "pin": dict(core.PIN),
           "elapsed_s": round(time.monotonic() - t0, 1)}
    stem = destination(args, q, f"instructions-{doc['date']}")
    core.write_json(f"{stem}.json", doc)
    md = [f"# frameproof instruction counts {doc['date']}", "", f"Command: `{doc['command']}`  ",
          f"Machine: {machine.get('cpu_model')}, {machine.get('cpus')} CPUs  ",
          f"Load average: start {', '.join(f'{x:.2f}' for x in machine['loadavg_start'])}; end "
          f"{', '.join(f'{x:.2f}' for x in machine['loadavg_end'])}  "] + quiet.banner(q) + [""] + instructions.markdown(ins)
    Path(f"{stem}.md").write_text("\n".join(md), encoding="utf-8")
    problems = report.check_instructions(ins)
    log(f"== wrote {stem}.json and {stem}.md in {doc['elapsed_s']} s" + (f"; problems: {problems}" if problems else ""))
    return 1 if problems else 0


def main_scaling(args, servers, clients) -> int:
    """--scaling: worker threads and placement (fpbench.scaling)."""
    t0 = time.monotonic()
    client = next((c for c in clients if c.name == "rust"), clients[0])
    before = quiet_before(args)
    machine = core.machine(0.25)
    runs = args.runs or (2 if args.smoke else 5)
    duration = args.duration or (0.1 if args.smoke else 1.0)  # 1 s: ~100 ticks of /proc CPU time a run
    protos = _protocols(args)
    log(f"== scaling: {len(protos)} protocols, placements split and same-core, --threads 1 and 2")
    sc = scaling.run(servers, client, protos, runs, duration, quiet.idlest_cpu(before))
    q = quiet_after(args, before)
    machine["loadavg_end"] = list(os.getloadavg())
    doc = {"schema": "frameproof-scaling/1", "date": datetime.date.today().isoformat(), "command": _command(),
           "machine": machine, "quiet": q, "scaling": sc, "elapsed_s": round(time.monotonic() - t0, 1)}
    stem = destination(args, q, args.name or f"scaling-{doc['date']}")
    core.write_json(f"{stem}.json", doc)
    md = [f"# frameproof scaling {doc['date']}", "", f"Command: `{doc['command']}`  ",
          f"Machine: {machine.get('cpu_model')}, {machine.get('cpus')} CPUs  "] + quiet.banner(q) + [""] + \
        scaling.markdown(sc)
    Path(f"{stem}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    log(f"== wrote {stem}.json and {stem}.md in {doc['elapsed_s']} s: {'every row OK' if sc['ok'] else 'FAILED rows'}")
    return 0 if sc["ok"] else 1


def main_soak(args, servers, clients) -> int:
    """--soak MINUTES: verified echo under the stress group (fpbench.soak)."""
    t0 = time.monotonic()
    client = next((c for c in clients if c.name == "rust"), clients[0])
    machine = core.machine(0.25)
    doc = {"schema": "frameproof-soak/1", "date": datetime.date.today().isoformat(), "command": _command(),
           "machine": machine, "soak": soak.run(servers, client, _protocols(args), args.soak)}
    doc["elapsed_s"] = round(time.monotonic() - t0, 1)
    stem = Path(args.out or ROOT / "results") / (args.name or f"soak-{doc['date']}")
    stem.parent.mkdir(parents=True, exist_ok=True)
    core.write_json(f"{stem}.json", doc)
    md = [f"# frameproof soak {doc['date']}", "", f"Command: `{doc['command']}`  ",
          f"Load average at start: {', '.join(f'{x:.2f}' for x in machine['loadavg_start'])}", ""] + soak.markdown(doc["soak"])
    Path(f"{stem}.md").write_text("\n".join(md), encoding="utf-8")
    log(f"== wrote {stem}.json and {stem}.md in {doc['elapsed_s']} s: {'every row OK' if doc['soak']['ok'] else 'FAILED rows'}")
    return 0 if doc["soak"]["ok"] else 1


def main(args) -> int:
    t_start = time.monotonic()
    if args.render:
        problems = report.render(args.render)
        log(f"bench: rendered {args.render}" + (f"; schema problems: {problems}" if problems else ""))
        return 1 if problems else 0
    extra = {}
    for c in args.client:
        if "=" not in c:
            print(f"bench: --client wants NAME=CMD, got {c!r}", file=sys.stderr)
            return 2
        k, v = c.split("=", 1)
        extra[k.strip()] = v.strip()
    servers, clients, benches = core.servers_and_clients(extra)
    if args.servers:
        want = args.servers.split(",")
        servers = [s for s in servers if s.name in want]
    if args.clients:
        want = args.clients.split(",")
        clients = sorted([c for c in clients if c.name in want], key=lambda c: want.index(c.name))
    if args.protocols and not args.validate_only:
        servers = serving(servers, _protocols(args))
    skipped = []
    if not args.validate_only and not (args.servers or args.clients):
        # An implementation that is not built here (e.g. no Mono) is left out and listed, not fatal.
        for p in [p for p in servers + clients if p.kind == "reference" and not p.available()]:
            skipped.append(f"{p.name}: {' '.join(p.argv)} not built")
        servers = [p for p in servers if p.kind != "reference" or p.available()]
        clients = [p for p in clients if p.kind != "reference" or p.available()]
    missing = [p.name for p in (clients if args.validate_only else servers + clients) if not p.available()]
    if missing:
        print(f"bench: not built: {', '.join(missing)} (run tools/bench/run.sh, which builds them)", file=sys.stderr)
        return 2
    if not clients:
        print("bench: no load client selected", file=sys.stderr)
        return 2
    if args.method_study:
        return main_study(args, servers, clients)
    if args.instructions:
        return main_instructions(args, servers, clients)
    if args.soak:
        return main_soak(args, servers, clients)
    if args.scaling:
        return main_scaling(args, servers, clients)
    date = datetime.date.today().isoformat()
    for c in clients:
        core.probe_modes(c)
    log(f"== harness validation ({len(clients)} clients)")
    val = core.validate(clients, _protocols(args))
    if not all(v["ok"] for v in val):
        log("bench: harness validation FAILED; no benchmark was run. A load client whose counts disagree with "
            "the checking server, or that does not verify replies, cannot produce figures.")
        return 1
    if args.validate_only:
        log("bench: every load client passed validation")
        return 0

    smoke, quick = args.smoke, args.quick or args.smoke
    runs = args.runs or (2 if smoke else 5 if quick else 11)  # 11: the method study (README, "How we measure")
    duration = args.duration or (0.1 if smoke else 0.2 if quick else 0.3)
    conc = [int(x) for x in args.concurrency.split(",")] if args.concurrency else ([4] if smoke else QUICK_CONC if quick else FULL_CONC)
    payloads = [32, 1024] if smoke else [32, 1024, core.KIB64]
    scenarios, cross = [], []
    for p in _protocols(args):
        w = registry.get(p).pipeline_window
        for c in conc:
            scenarios.append(Scenario(p, "per-packet", 32, c, 1, "concurrency"))
            scenarios.append(Scenario(p, "pipelined", 32, c, w, "concurrency"))
            # the seeds' batched echo (a batch of N, await all N), beside the sliding window
            scenarios.append(Scenario(p, "batched", 32, c, core.default_batch(p), "concurrency"))
        pc = 4
        for size in payloads[1:]:
            scenarios.append(Scenario(p, "per-packet", size, pc, 1, "payload"))
            scenarios.append(Scenario(p, "pipelined", size, pc, w if size <= 1024 else 16, "payload"))
        rc = [c for c in conc if c in (1, 16, 256)] or conc[:1] if not quick else [16] if 16 in conc else conc[:1]
        for c in rc:
            scenarios.append(Scenario(p, "receive", 32, c, 256, "receive-batched"))
            if any(x.name == "rust-blast" for x in clients):
                scenarios.append(Scenario(p, "receive", 32, c, 1, "receive-blast"))
        own = registry.get(p).bench_scenarios(quick)  # the protocol's own (the seed's tables on their shape)
        if smoke:  # seconds: the first and the last, on 4 connections
            own = [dict(d, connections=min(d["connections"], 4)) for d in own[:1] + own[-1:]] if own else []
        for d in own:
            scenarios.append(Scenario(p, d["mode"], d["payload"], d["connections"], d["window"], d["group"],
                                      tuple(d["args"]), d["seed"], d.get("codec"), d.get("tag", ""),
                                      tuple(d.get("needs", ()))))
        if not quick:
            cross.append(Scenario(p, "pipelined", 32, 16, w, "cross-client"))
            cross.append(Scenario(p, "per-packet", 32, 16, 1, "cross-client"))
    if args.groups:
        want = set(args.groups.split(","))
        scenarios = [sc for sc in scenarios if sc.group in want]
        cross = [sc for sc in cross if sc.group in want]
        if not scenarios and not cross:
            print(f"bench: --groups {args.groups}: no scenario of the protocols asked for is in these groups",
                  file=sys.stderr)
            return 2
    refs = [c for c in clients if c.kind in ("reference", "extra") and "pipelined" in c.modes]
    if args.clients:
        primary = refs[0] if refs else clients[0]
    else:  # the Rust client by default: the lightest on a shared machine
        primary = next((c for c in refs if c.name == "rust"), refs[0] if refs else clients[0])
    ordered = [primary] + [c for c in clients if c is not primary]
    if "batched" not in primary.modes:
        skipped.append(f"batched echo (seed-shaped): the primary load client {primary.name} has no --mode batched yet "
                       "(reference-impls/README.md, fp-load; tools/bench/README.md, 'What each implementation must provide')")
    before = quiet_before(args)
    machine = core.machine(0.25 if quick else 0.5)
    log(f"== calibration: {machine.get('calibration')}")
    core.set_pin(args.pin, args.pin_cpu if args.pin_cpu is not None else quiet.idlest_cpu(before))
    log(f"== matrix: {len(scenarios)} scenarios x {len(servers)} servers, {runs} runs of {duration} s; "
        f"primary client {primary.name}" + ("; twice (--repeat-check)" if args.repeat_check else ""))
    pool = core.ServerPool()
    try:
        rows = core.run_matrix(scenarios, servers, ordered, runs, duration, pool, cross)
        repeat = None
        if args.repeat_check:
            log("== matrix again, back to back (--repeat-check)")
            rows2 = core.run_matrix(scenarios, servers, ordered, runs, duration, pool, cross)
            repeat = core.repeat_check(rows, rows2)
            log(f"== repeat check: {repeat['overlapping']} of {repeat['compared']} rows have overlapping intervals")
    finally:
        pool.stop_all()
    if not any(s.name == "cpp" for s in servers):
        skipped.append("cpp: the C++ reference implementation has not landed (no reference-impls/cpp/impl.json)")
    pr = None
    if not args.no_netns:
        log("== packets per recv(): loopback and network namespaces")
        pr = netns.run(servers, clients, 0.5 if quick else 1.0, quick)
    else:
        skipped.append("packets-per-recv / namespace section (--no-netns)")
    al = {}
    if not args.no_alloc:
        log("== allocations")
        al = allocations.allocations(benches, quick, servers)
    ins = None
    if not (args.no_instructions or smoke):
        n = args.instructions_messages or (5000 if quick else 20000)
        log(f"== instructions per echoed message (callgrind, N = {n} and {2 * n})")
        ins = instructions.run(servers, instructions.default_client(), n, timing_runs=1 if quick else 3,
                               protocols=_protocols(args))
    else:
        skipped.append("instruction counts (" + ("--smoke" if smoke else "--no-instructions") + ")")
    q = quiet_after(args, before)
    machine["loadavg_end"] = list(os.getloadavg())
    la = sorted(r["loadavg_1m"] for r in rows if "loadavg_1m" in r)
    if la:
        machine["loadavg_during"] = {"min": la[0], "median": la[len(la) // 2], "max": la[-1],
                                     "samples": len(la), "what": "1-minute load average after each matrix figure"}
    stem = destination(args, q, f"bench-{date}")
    doc = {
        "schema": core.SCHEMA, "date": date, "command": _command(),
        "machine": machine, "quiet": q,
        "settings": {"quick": quick, "smoke": smoke, "runs": runs, "duration_s": duration, "concurrency": conc,
                     "concurrency_not_run": [c for c in FULL_CONC if c not in conc], "payloads": payloads,
                     "primary_client": primary.name, "windows": core.pipeline_windows(),
                     "batches": {p: core.default_batch(p) for p in _protocols(args)},
                     "pin": {"name": args.pin, "server": core.PIN["server"], "client": core.PIN["client"]},
                     "warmup": "one unrecorded run of min(0.2 s, --duration) per server and configuration",
                     "order": "interleaved: run k visits every server of the scenario, order rotated with k",
                     "elapsed_s": None},
        "validation": val,
        "servers": [{"name": s.name, "kind": s.kind, "command": " ".join(s.argv), "protocols": list(s.protocols)} for s in servers],
        "clients": [{"name": c.name, "kind": c.kind, "command": " ".join(c.argv), "modes": list(c.modes)} for c in ordered],
        "results": rows, "server_checks": pool.checks, "packets_per_recv": pr, "allocations": al,
        "outputs": {}, "skipped": skipped,
    }
    if repeat is not None:
        doc["repeat_check"] = repeat
    if ins is not None:
        doc["instructions"] = ins
    pngs = report.charts(doc, stem)
    # file names, relative to the results file (the directory is where the JSON is)
    doc["outputs"] = {"json": f"{stem.name}.json", "markdown": f"{stem.name}.md", "charts": [Path(p).name for p in pngs]}
    doc["settings"]["elapsed_s"] = round(time.monotonic() - t_start, 1)
    Path(f"{stem}.md").write_text(report.markdown(doc, pngs), encoding="utf-8")
    core.write_json(f"{stem}.json", doc)
    problems = report.check_schema(doc) + (report.check_instructions(ins) if ins else [])
    failed = [r for r in rows if not r["ok"]]
    log(f"== wrote {stem}.json, {stem}.md, {len(pngs)} chart(s) in {doc['settings']['elapsed_s']} s"
        + (f"; {len(failed)} figure(s) had failed runs" if failed else ""))
    if problems:
        log("bench: results do not match the schema: " + "; ".join(problems[:10]))
        return 1
    return 0
