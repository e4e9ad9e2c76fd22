"""`frameproof matrix`: the main job. Builds every bundled implementation
(reference-impls/*/impl.json), runs the codec suite against each testee, the network
suite against each echo server, the harness checks against each load client, and
every load client against every server (interop); prints a results matrix and writes
reports/matrix.json and reports/matrix.md.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from . import protocols as registry
from .paths import IMPL_DIR, ROOT
from .servers import start_server



def codec_args(codec) -> str:
    """The ``--codec JSON`` argument every reference program takes (reference-impls/README.md)."""
    return "--codec " + shlex.quote(json.dumps(codec.to_json(), separators=(",", ":")))


THIRD_PARTY_DIR = ROOT / "tools" / "third-party"


def load_impls(names=None) -> List[dict]:
    """The bundled implementations: reference-impls/*/impl.json, then the third-party wrappers
    (tools/third-party/*/impl.json, ``"third_party": true``, run with their expected-failure files:
    ``"xfail"`` by protocol for the codec suite, ``"xfail_net"`` by network profile label for the
    network suite). A wrapper may have a server and no testee (a library with no frame layer)."""
    out = []
    for f in sorted(IMPL_DIR.glob("*/impl.json")) + sorted(THIRD_PARTY_DIR.glob("*/impl.json")):
        d = json.loads(f.read_text())
        d["dir"] = str(f.parent)
        if names and d["name"] not in names:
            continue
        out.append(d)
    if names:
        missing = set(names) - {d["name"] for d in out}
        if missing:
            raise SystemExit(f"unknown implementation(s): {', '.join(sorted(missing))}")
    return out


def _cmd(impl, key) -> str:
    argv = list(impl[key])
    if not argv[0].startswith("/") and (Path(impl["dir"]) / argv[0]).exists():
        argv[0] = str(Path(impl["dir"]) / argv[0])
    elif len(argv) > 1 and (Path(impl["dir"]) / argv[1]).exists():
        argv[1] = str(Path(impl["dir"]) / argv[1])
    return " ".join(shlex.quote(a) for a in argv)


def _fp(args, log) -> (int, dict):
    """Runs the frameproof CLI in a subprocess; returns (exit status, JSON report)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "frameproof.cli"] + args + ["--json", path]
    with open(log, "a") as lf:
        lf.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
        lf.flush()
        rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        doc = None
    os.unlink(path)
    return rc, doc


def _cell(rc, doc) -> dict:
    if not doc:
        return {"ok": False, "text": f"error (exit {rc})", "totals": None}
    t = doc["totals"]
    ok = rc == 0 and t["failed"] == 0 and t["xpassed"] == 0
    text = f"{t['passed']}/{t['passed'] + t['failed'] + t['xfailed'] + t['xpassed']}"
    if t.get("skipped"):
        text += f" ({t['skipped']} skip)"
    if t["xfailed"]:
        text += f" ({t['xfailed']} xfail)"
    return {"ok": ok, "text": ("✓ " if ok else "✗ ") + text, "totals": t,
            "failed": sorted(r for r, v in doc["requirements"].items() if v["failed"] or v["xpassed"]),
            "requirements": doc["requirements"]}


def interop(client_impl, server_impl, protocol, log) -> dict:
    """One verified load run of client_impl against server_impl."""
    try:
        srv = start_server(f"{_cmd(server_impl, 'server')} --protocol {protocol} --listen 127.0.0.1:0")
    except RuntimeError as e:
        return {"ok": False, "text": "✗ server did not start", "detail": str(e)}
    fd, jpath = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = (f"{_cmd(client_impl, 'load')} --protocol {protocol} --connect {srv.addr} --connections 4 "
           f"--requests 20000 --payload 32 --mode pipelined --window 32 --json {jpath}")
    try:
        with open(log, "a") as lf:
            lf.write(f"$ {cmd}\n")
            lf.flush()
            rc = subprocess.call(shlex.split(cmd), stdout=lf, stderr=subprocess.STDOUT, timeout=120)
    except subprocess.TimeoutExpired:
        rc = -1
    finally:
        code, counters, _ = srv.stop()
    try:
        rep = json.loads(Path(jpath).read_text())
    except (OSError, ValueError):
        rep = None
    os.unlink(jpath)
    # the server counted the requests, plus the frames each connection ends with if it counts every frame
    sent = (rep or {}).get("requests_sent")
    counted = (sent, (sent or 0) + registry.get(protocol).load_goodbye_frames * 4)
    ok = rc == 0 and rep is not None and rep.get("errors") == 0 and rep.get("replies_verified") == 20000 \
        and counters is not None and counters.get("frames") in counted
    text = ("✓ " if ok else "✗ ") + (f"{rep['msgs_per_s'] / 1000:.0f}k msg/s" if rep else f"exit {rc}")
    return {"ok": ok, "text": text, "client_report": rep, "server_counters": counters, "client_exit": rc}


def update_readme(md: str, marker: str = "matrix"):
    """Replaces the README section between <!-- {marker}:begin --> and <!-- {marker}:end -->."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    b, e = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if b not in text or e not in text:
        raise SystemExit(f"README.md has no {b} … {e} section")
    head, rest = text.split(b, 1)
    _, tail = rest.split(e, 1)
    readme.write_text(head + b + "\n" + md.rstrip() + "\n" + e + tail, encoding="utf-8")


def run_matrix(names=None, build=True, profile="ci", out_dir=None, readme=False) -> int:
    impls = load_impls(names)
    out_dir = Path(out_dir or ROOT / "reports")
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "matrix.log"
    log.write_text("")
    results: Dict[str, dict] = {}
    t0 = time.time()
    for impl in impls:
        name = impl["name"]
        r = results[name] = {"build": None, "codec": {}, "net": {}, "client": {}}
        if build:
            print(f"[{name}] building …", flush=True)
            with open(log, "a") as lf:
                rc = subprocess.call(impl["build"], cwd=impl["dir"], stdout=lf, stderr=subprocess.STDOUT)
            r["build"] = rc
            if rc != 0:
                print(f"[{name}] build FAILED (exit {rc}); see {log}", flush=True)
                continue
        protos = [p for p in registry.names() if p in impl.get("protocols", registry.names())]
        for proto in protos if "testee" in impl else ():
            print(f"[{name}] codec suite, {proto} …", flush=True)
            xfail = (impl.get("xfail") or {}).get(proto)
            # an expected-failures file listing property tests holds for the profile it was measured with
            # (impl.json "profile"): a smaller example budget may miss the counterexample (an xpass)
            r["codec"][proto] = _cell(*_fp(["run", "--testee", _cmd(impl, "testee"), "--protocol", proto,
                                            "--profile", impl.get("profile", profile)] +
                                           (["--xfail", str(Path(impl["dir"]) / xfail)] if xfail else []), log))
        for proto in protos if "server" in impl else ():
            for label, codec in registry.get(proto).net_profiles():
                print(f"[{name}] network suite, {label} …", flush=True)
                server = f"{_cmd(impl, 'server')} {codec_args(codec)} --listen 127.0.0.1:0"
                xfail = (impl.get("xfail_net") or {}).get(label)
                r["net"][label] = _cell(*_fp(["net", "--codec", json.dumps(codec.to_json()), "--server-cmd", server,
                                              "--name", name] +
                                             (["--xfail", str(Path(impl["dir"]) / xfail)] if xfail else []), log))
        for proto in protos if "server" in impl and profile != "smoke" else ():
            # hostile peers at scale (*-RES-*): the whole group, the spec's default limits at full scale
            # (about 100 s a protocol, most of it the timeouts' 10-30 s). Not in CI's smoke profile, where
            # conformance/tests/test_stress.py runs it on the Python server at small bounds (SMALL_LIMITS)
            codec = registry.get(proto).stress_codec()
            label = f"{proto} stress"
            print(f"[{name}] stress group, {proto} …", flush=True)
            server = f"{_cmd(impl, 'server')} {codec_args(codec)} --listen 127.0.0.1:0"
            r["net"][label] = _cell(*_fp(["net", "--codec", json.dumps(codec.to_json()), "--stress",
                                          "--server-cmd", server], log))
        for proto in protos if "load" in impl else ():
            # the default run, then the protocol's own (call variants, streams): Protocol.load_client_profiles
            for label, args in (("", "--mode pipelined --window 16 --requests 4000"),) + \
                    tuple(registry.get(proto).load_client_profiles):
                key = f"{proto} {label}".strip()
                print(f"[{name}] load client checks, {key} …", flush=True)
                client = (f"{_cmd(impl, 'load')} --protocol {proto} --connect {{host}}:{{port}} --connections 4 "
                          f"--payload 32 {args} --timeout-ms 2000 --json {{json}}")
                r["client"][key] = _cell(*_fp(["net", "--protocol", proto, "--client", client], log))
        for proto in protos:  # the protocol's own extra suites (websocket: the Autobahn testsuite)
            for group, label, argv in registry.get(proto).matrix_suites(
                    impl, lambda key: _cmd(impl, key) if key in impl else None, profile):
                print(f"[{name}] {label} …", flush=True)
                r[group][label] = _cell(*_fp(argv, log))
    ok_impls = [i for i in impls if results[i["name"]]["build"] in (None, 0)]
    inter = {}
    for proto in registry.names():
        clients = [i for i in ok_impls if "load" in i and proto in i.get("protocols", registry.names())]
        servers = [i for i in ok_impls if "server" in i and proto in i.get("protocols", registry.names())]
        for c in clients:
            for s in servers:
                print(f"[interop] {c['name']} load client → {s['name']} server, {proto} …", flush=True)
                inter[f"{proto}:{c['name']}->{s['name']}"] = interop(c, s, proto, log)
    doc = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "duration_s": round(time.time() - t0, 1),
           "profile": profile, "implementations": [i["name"] for i in impls],
           "third_party": [i["name"] for i in impls if i.get("third_party")], "results": results, "interop": inter}
    (out_dir / "matrix.json").write_text(json.dumps(doc, indent=1))
    md = render(doc)
    (out_dir / "matrix.md").write_text(md)
    print()
    print(md)
    print(f"reports: {out_dir / 'matrix.json'}, {out_dir / 'matrix.md'}, log {log}")
    if readme:
        update_readme(f"_Generated by `frameproof matrix` on {doc['generated']} ({doc['duration_s']} s, "
                      f"profile {profile}) on a 2-core machine._\n\n" + md)
        print("README.md matrix section updated")
    bad = [k for k, v in _all_cells(doc) if not v["ok"]]
    if bad:
        print(f"FAILED: {', '.join(bad)}")
    return 1 if bad else 0


def _all_cells(doc):
    for name, r in doc["results"].items():
        if r["build"] not in (None, 0):
            yield f"{name} build", {"ok": False}
        for group in ("codec", "net", "client"):
            for label, cell in r[group].items():
                yield f"{name} {group} {label}", cell
    for k, v in doc["interop"].items():
        yield f"interop {k}", v


def render(doc) -> str:
    third = set(doc.get("third_party", []))
    names = [n for n in doc["implementations"] if n not in third] + [n for n in doc["implementations"] if n in third]
    heads = [f"{n} (third-party)" if n in third else n for n in names]
    lines = [f"| suite | {' | '.join(heads)} |", "|---|" + "---|" * len(names)]
    rows = []
    for group, title in (("codec", "codec"), ("net", "server"), ("client", "load client")):
        labels = []
        for n in names:
            for lab in doc["results"][n][group]:
                if lab not in labels:
                    labels.append(lab)
        for lab in labels:
            cells = []
            for n in names:
                r = doc["results"][n]
                if r["build"] not in (None, 0):
                    cells.append("✗ build failed")
                else:
                    c = r[group].get(lab)
                    cells.append(c["text"] if c else "—")
            rows.append(f"| {title}: {lab} | {' | '.join(cells)} |")
    lines += rows
    out = "\n".join(lines) + "\n"
    built = [n for n in names if doc["results"][n]["build"] in (None, 0)
             and any(k.endswith(f"->{n}") or f":{n}->" in k for k in doc["interop"])]
    for proto in registry.names() if built else ():
        if not any(k.startswith(f"{proto}:") for k in doc["interop"]):
            continue  # no implementation has both a client and a server for it yet
        out += f"\nInterop, {proto} (rows: load client, columns: server; 4 connections × 20000 verified requests, window 32)\n\n"
        out += f"| client \\ server | {' | '.join(built)} |\n|---|" + "---|" * len(built) + "\n"
        for c in [c for c in built if any(k.startswith(f"{proto}:{c}->") for k in doc["interop"])]:  # clients only
            out += f"| {c} | " + " | ".join(doc["interop"].get(f"{proto}:{c}->{s}", {"text": "—"})["text"] for s in built) + " |\n"
    fails = []
    for name, r in doc["results"].items():
        for group in ("codec", "net", "client"):
            for lab, cell in r[group].items():
                if cell.get("failed"):
                    fails.append(f"- {name} {group} {lab}: failing requirements {', '.join(cell['failed'])}")
    if fails:
        out += "\nFailures:\n" + "\n".join(fails) + "\n"
    if third:
        out += ("\nThird-party columns wrap established libraries nobody here wrote (tools/third-party/); "
                "their cells count expected failures (xfail) listed, with a reason each, in their expected-failure "
                "files: the real differences between those libraries and the spec.\n")
    return out
