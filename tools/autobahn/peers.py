"""Runs the Autobahn testsuite (`frameproof autobahn`, categories 1-7, 9, 10, wstest and kosoku)
against every websocket peer this checkout has, as server and as client, and writes one summary:

* the Python reference (frameproof.pyserver with a 64 MiB frame limit, and
  frameproof.protocols.websocket.autobahn_client);
* every reference implementation whose impl.json lists "websocket" (its "server" with the same
  limit, and its "autobahn_client" when it has one);
* the third-party peers under tools/third-party/: every impl.json listing "websocket" (its "server",
  "autobahn_client", and "xfail_autobahn": {"server": FILE, "client": FILE}): gorilla, ws,
  websockets (PyPI), each with its expected-failures files.

    .venv/bin/python tools/autobahn/peers.py [--quick] [--driver wstest|kosoku|both] [--only NAME] [--out DIR]

Writes DIR/<peer>-<side>.json (frameproof autobahn's JSON report) and DIR/summary.{md,json}
(default DIR: reports/autobahn). Exit status 0 when every run exited 0.
"""
import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
LIMIT_CODEC = json.dumps({"protocol": "websocket", "limits": {"max_payload": 64 * 1024 * 1024}})


def _argv_cmd(d: Path, argv) -> str:
    """An impl.json command (relative to its directory) as one shell-quoted string."""
    return " ".join(shlex.quote(str(d / a) if i == 0 and (d / a).exists() else a) for i, a in enumerate(argv))


def _from_impl(impl_json: Path, kind: str):
    impl = json.loads(impl_json.read_text())
    if "websocket" not in impl.get("protocols", []):
        return None
    d = impl_json.parent
    xf = impl.get("xfail_autobahn") or {}
    return {"name": impl["name"], "kind": kind, "cwd": str(d), "requires": impl.get("requires", []),
            # third-party wrappers build in seconds (cached); reference implementations are built by the matrix
            "build": [str(a) for a in impl["build"]] if kind == "third-party" and impl.get("build") else None,
            "server": _argv_cmd(d, impl["server"]) + f" --codec {shlex.quote(LIMIT_CODEC)} --listen 127.0.0.1:0"
            if impl.get("server") else None,
            "client": _argv_cmd(d, impl["autobahn_client"]) if impl.get("autobahn_client") else None,
            "xfail": {side: str(d / f) for side, f in xf.items()}}


def peers():
    """Every websocket peer: the Python reference, reference-impls/*/impl.json and
    tools/third-party/*/impl.json listing websocket ("server", "autobahn_client", "xfail_autobahn":
    {"server": FILE, "client": FILE})."""
    out = [{"name": "python", "kind": "reference", "requires": [], "build": None,
            "server": f"{PY} -m frameproof.pyserver --codec {shlex.quote(LIMIT_CODEC)} --listen 127.0.0.1:0",
            "client": f"{PY} -m frameproof.protocols.websocket.autobahn_client", "xfail": {}, "cwd": str(ROOT)}]
    for kind, base in (("reference", ROOT / "reference-impls"), ("third-party", ROOT / "tools" / "third-party")):
        for impl_json in sorted(base.glob("*/impl.json")):
            p = _from_impl(impl_json, kind)
            if p:
                out.append(p)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="leave out 9.* (passed to frameproof autobahn)")
    ap.add_argument("--driver", default="both", choices=["wstest", "kosoku", "both"])
    ap.add_argument("--only", action="append", help="only this peer (repeatable)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "autobahn"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, failed = [], 0
    for p in peers():
        if args.only and p["name"] not in args.only:
            continue
        missing = [t for t in p["requires"] if not shutil.which(t)]
        if missing:
            print(f"{p['name']}: needs {', '.join(missing)}: not run")
            rows.append({"peer": p["name"], "kind": p["kind"], "side": "-", "error": f"needs {', '.join(missing)}"})
            failed += 1
            continue
        if p.get("build"):
            b = subprocess.run(p["build"], capture_output=True, text=True, cwd=p["cwd"])
            if b.returncode:
                print(f"{p['name']}: build failed:\n{b.stderr[-1500:]}")
                failed += 1
                rows.append({"peer": p["name"], "kind": p["kind"], "side": "-", "error": "build failed"})
                continue
        for side in ("server", "client"):
            cmd = p[side]
            if not cmd:
                rows.append({"peer": p["name"], "kind": p["kind"], "side": side, "error": "not implemented"})
                continue
            rep = out / f"{p['name']}-{side}.json"
            argv = [PY, "-m", "frameproof.cli", "autobahn", f"--{side}-cmd", cmd, "--agent", f"{p['name']}-{side}",
                    "--driver", args.driver, "--json", str(rep), "--junit", str(out / f"{p['name']}-{side}.xml"),
                    "--outdir", str(out / f"{p['name']}-{side}"), "--cwd", p["cwd"]]
            if args.quick:
                argv.append("--quick")
            if p["xfail"].get(side):
                argv += ["--xfail", p["xfail"][side]]
            t0 = time.monotonic()
            print(f"== {p['name']} {side}: {' '.join(shlex.quote(a) for a in argv[3:])}", flush=True)
            r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
            tail = [ln for ln in r.stdout.splitlines() if ln.startswith(("autobahn:", "wstest vs", "UNEXPECTED"))]
            print("\n".join(tail[-4:]) or r.stderr[-1500:], flush=True)
            row = {"peer": p["name"], "kind": p["kind"], "side": side, "exit": r.returncode,
                   "duration_s": round(time.monotonic() - t0, 1), "report": str(rep)}
            if rep.exists():
                doc = json.loads(rep.read_text())
                for d in doc["drivers"]:
                    ts = [t for t in doc["tests"] if t["driver"] == d]
                    row[d] = {v: sum(t["verdict"] == v for t in ts) for v in
                              ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED")}
                    row[d]["cases"] = len(ts)
                    row[d]["xfailed"] = sum(t["status"] == "xfailed" for t in ts)
                    row[d]["failed_cases"] = [t["case"] for t in ts if t["verdict"] == "FAILED"]
                    row[d]["non_ok_cases"] = [f"{t['case']} {t['behavior']}/{t['behavior_close']}" for t in ts
                                              if t["verdict"] in ("NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED")]
                row["disagreements"] = doc["disagreements"]
                row["notes"] = doc["notes"]
                row["unexpected"] = doc["unexpected"]
            failed += r.returncode != 0
            rows.append(row)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    md = [f"Autobahn testsuite (wstest 25.10.1, kosoku 0.1.0), categories 1-7, 9, 10"
          f"{' without 9.* (--quick)' if args.quick else ''}; {time.strftime('%Y-%m-%d')}; "
          "`.venv/bin/python tools/autobahn/peers.py`\n",
          "| peer | side | driver | cases | OK | NON-STRICT | INFORMATIONAL | FAILED (expected) | exit |",
          "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            md.append(f"| {row['peer']} ({row['kind']}) | {row['side']} | - | - | - | - | - | - | {row['error']} |")
            continue
        for d in ("wstest", "kosoku"):
            if d in row:
                c = row[d]
                md.append(f"| {row['peer']} ({row['kind']}) | {row['side']} | {d} | {c['cases']} | {c['OK']} | "
                          f"{c['NON-STRICT']} | {c['INFORMATIONAL']} | {c['FAILED']} ({c['xfailed']}) | {row['exit']} |")
    md.append("")
    for row in rows:
        if "error" in row:
            continue
        for d in ("wstest", "kosoku"):
            if d in row and (row[d]["failed_cases"] or row[d]["non_ok_cases"]):
                md.append(f"* {row['peer']} {row['side']}, {d}: FAILED {', '.join(row[d]['failed_cases']) or 'none'}; "
                          f"allowed: {', '.join(row[d]['non_ok_cases']) or 'none'}")
        if row.get("disagreements"):
            md.append(f"* {row['peer']} {row['side']}: wstest and kosoku disagree on " + ", ".join(
                f"{x['case']} ({x['wstest']} vs {x['kosoku']})" for x in row["disagreements"]))
    (out / "summary.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"summary: {out / 'summary.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
