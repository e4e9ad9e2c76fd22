"""Mutation testing of the reference implementations with frameproof as the test.

A mutant is a small change to a protocol module (an operator swapped, a function body replaced by a
constant ...); it is *caught* when frameproof's suites fail against the implementation built from it,
*missed* when they pass. The mutants come from the well-kept tools of each language, which also do
the bookkeeping (sharding, resuming, timeouts):

- Rust: cargo-mutants over reference-impls/rust/codec/src/<protocol>/ (the protocol modules), the
  test being reference-impls/rust/testee/tests/frameproof_suite.rs: `frameproof run` against the
  mutated fp-testee (and, with --net, `frameproof net` against the mutated fp-server).
- Python: cosmic-ray over conformance/frameproof/protocols/<protocol>/reference.py, the test being
  `frameproof run` against `python -m frameproof.pytestee` importing the mutated copy (the suite
  itself imports the unmutated one, so a mutant cannot change both the test and the tested); with
  --net, `frameproof net` against the mutated pyserver and pyload, over the codec pass's survivors.

Commands (tools/mutation.sh passes its arguments here):
  run --lang rust|python [--protocol P ...] [--shard K/N] [--net [--again RE]] [--profile smoke]
      the whole run, resumable: rerun the same command to go on where it stopped
  sample          the fixed sample of tools/mutation/ci-sample.toml: every mutant must be caught
  report [--out results/mutation-DATE]
      score per protocol and per module from what the runs left in .mutation/, survivors with
      their triage from tools/mutation/triage.toml
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".mutation"
RUST_TARGET = WORK / "rust-target"  # the cargo builds of the mutation runs, a directory a run (rust_env)
RUST = ROOT / "reference-impls/rust"
VENV = ROOT / ".venv/bin"
HERE = Path(__file__).resolve().parent
PROFILE = "mutants"  # reference-impls/rust/Cargo.toml: the cargo profile of every build here
PROTOCOLS = {"standard": "standard", "length-field": "length_field", "rpc": "rpc", "websocket": "websocket"}


def sh(cmd: list[str], **kw) -> int:
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, **kw)


# ---- Rust: cargo-mutants -------------------------------------------------------------------------

def rust_args(proto: str, net: bool, files: list[str] | None = None, shuffle: bool = False) -> list[str]:
    mod = PROTOCOLS[proto]
    where = [a for f in files for a in ("--file", f"codec/src/{mod}/{f}")] if files else \
        ["--file", f"codec/src/{mod}/**", "--file", f"codec/src/{mod}.rs"]
    return ["cargo", "mutants", "--test-package", "fp-testee"] + where + [
        "--exclude", f"codec/src/{mod}/tests.rs",
        "--cargo-test-arg=--test", "--cargo-test-arg=frameproof_suite",
        "--timeout", "240", "--build-timeout", "900", "--shuffle" if shuffle else "--no-shuffle", "--jobs", "1",
        "--baseline", "skip", "--profile", PROFILE]


def rust_env(protos: list[str], net: bool, profile: str, run: str, steps: str | None = None) -> dict:
    # CARGO_TARGET_DIR: cargo-mutants builds each mutant in a copy of the tree without its target/; with
    # one target directory for the baseline and every run, a copy reuses the dependencies already built
    # (only the workspace's crates are compiled again): the first mutant's build took 17 s instead of 61 s
    # here. Not the tree's own target/: cargo keeps a workspace crate's source paths relative, so a mutant
    # built there from a copy whose files are newer than the tree's would pass for the tree's own build
    # (seen: the tree's fp-testee was the last mutant). The baseline runs from a fresh copy for that reason,
    # and each run (a protocol, a shard, the sample) has a directory of its own: two runs at once sharing
    # one would build each other's mutants into it, in either order.
    env = dict(os.environ, FRAMEPROOF_BIN=str(VENV / "frameproof"), FRAMEPROOF_PROTOCOLS=",".join(protos),
               FRAMEPROOF_PROFILE=profile, FRAMEPROOF_SCHEMAS=str(ROOT / "schemas"),
               CARGO_TARGET_DIR=str(RUST_TARGET / run))
    if net:  # fp-server and fp-load are built by the test itself (testee/tests/frameproof_suite.rs)
        env.update(FRAMEPROOF_NET="1", FRAMEPROOF_NET_TARGET_DIR=str(RUST_TARGET / (run + "-net-programs")),
                   FRAMEPROOF_CARGO_PROFILE=PROFILE, FRAMEPROOF_NET_STEPS=steps or "")
    return env


def rust_baseline(protos: list[str], net: bool, profile: str, run: str, steps: str | None = None) -> bool:
    """frameproof passes on the unmutated workspace. cargo-mutants' own baseline tests the mutated
    package (the codec crate), not --test-package, so it is skipped and done here instead."""
    pkgs = ["-p", "fp-testee"]
    # a copy with new modification times: cargo then builds the workspace's crates again, whatever mutant
    # the shared target directory (rust_env) was left holding
    tree = WORK / f"rust-baseline-tree-{run}"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(RUST, tree, ignore=shutil.ignore_patterns("target"), copy_function=shutil.copy)
    ok = sh(["cargo", "test", "--profile", PROFILE, *pkgs, "--test", "frameproof_suite"], cwd=tree,
            env=rust_env(protos, net, profile, run, steps)) == 0
    shutil.rmtree(tree, ignore_errors=True)
    if not ok:
        print(f"baseline: frameproof fails on the unmutated Rust code ({', '.join(protos)}): no mutant tested")
    return ok


def net_targets(runs: list[Path], again: str | None) -> list[str]:
    """The mutants a network pass tests: what the codec suite's runs missed (the fastest suite first, as the
    issue asks), each named exactly (cargo-mutants --re over its name, line and column included); with
    ``again`` (a regular expression), what every run so far, network passes included, missed and whose
    name matches it (after a suite gained cases)."""
    codec_runs = [d for d in runs if not d.name.startswith("net")]
    if again:
        return sorted(n for n, k in merged_outcomes(runs).items() if k == "missed" and re.search(again, n))
    # not again: what a network run over files (--files: the ones the codec suite cannot reach) has tested is not
    # tested twice (the network pass's own directory is written anew by each of its runs: not read here)
    done = merged_outcomes([d for d in runs if d.name.startswith("net-files-")])
    return sorted(n for n, k in merged_outcomes(codec_runs).items() if k == "missed" and n not in done)


def run_rust(protos: list[str], shard: str | None, net: bool, profile: str, again: str | None = None,
             files: list[str] | None = None, steps: str | None = None, only: str | None = None,
             shuffle: bool = False) -> int:
    rc = 0
    for proto in protos:
        seed_rust(proto)
        runs = sorted((WORK / "rust" / proto).glob("*")) if (WORK / "rust" / proto).exists() else []
        name = "net" if net else f"shard-{shard.replace('/', '-of-')}" if shard else "all"
        if files:  # a pass over these files only (the network pass beside the codec pass): a directory of its own
            name = ("net-files-" if net else "files-") + "-".join(Path(f).stem for f in files)
        if again:  # the network pass once more, in a directory of its own
            name = f"net-again-{sum(d.name.startswith('net-again-') for d in runs) + 1}"
        # its own target directory and baseline copy (rust_env); --again's one of its own too, so that it can run
        # beside the network pass (one directory for both built each other's mutants)
        run = f"{proto}-again" if again else f"{proto}-{name}"
        if not rust_baseline([proto], net, profile, run, steps):
            return 1
        select = []
        if net and not files and any(not d.name.startswith("net") for d in runs):
            missed = net_targets(runs, again)
            if not missed:
                print(f"{proto}: nothing missed{' matches ' + again if again else ' by the codec suite'}; no network run")
                continue
            select = [a for n in missed for a in ("--re", "^" + re.escape(n) + "$")]
        out = WORK / "rust" / proto / name
        out.mkdir(parents=True, exist_ok=True)
        (out / "steps.txt").write_text((steps or "all") + "\n")  # the network steps this run's suite ran (the report's)
        args = rust_args(proto, net, files, shuffle) + ["-o", str(out)] + (["--shard", shard] if shard else []) + select \
            + (["--re", only] if only else [])
        args += resume_args(out, bool(again))
        if not net:  # a codec pass tests only what no other codec pass of the protocol judged (a seed included)
            others = merged_outcomes([d for d in runs if d != out and not d.name.startswith("net")])
            args += [a for n in sorted(others) for a in ("--exclude-re", "^" + re.escape(n) + "$")]
        else:  # and a network pass only mutants that build (check_unviable)
            args += [a for n in sorted(check_unviable(proto, out, files, select, only, run))
                     for a in ("--exclude-re", "^" + re.escape(n) + "$")]
        r = sh(args, cwd=RUST, env=rust_env([proto], net, profile, run, steps))
        rc = rc or (r if r not in (0, 2, 3) else 0)  # 2: missed mutants, 3: timeouts: results, not errors
    return rc


OUTCOME_FILES = ("previously_caught", "caught", "missed", "timeout", "unviable")


def check_unviable(proto: str, out: Path, files, select: list[str], only, run: str) -> set[str]:
    """The mutants of a network pass's selection that do not build anywhere in the workspace (``cargo mutants
    --check``, about a second each), kept in ``out/check`` and read as unviable (rust_outcomes). cargo-mutants
    builds the codec crate for fp-testee only; code only fp-server or fp-load compiles (the load client's, the
    raw echo's) is built inside the network pass's test, whose failed build read as a caught mutant: 7 such in
    the 12-05f report."""
    mod = PROTOCOLS[proto]
    where = [a for f in files for a in ("--file", f"codec/src/{mod}/{f}")] if files else \
        ["--file", f"codec/src/{mod}/**", "--file", f"codec/src/{mod}.rs"]
    chk = out / "check"
    sh(["cargo", "mutants", "--check", *where, "--exclude", f"codec/src/{mod}/tests.rs", "--no-shuffle", "--jobs", "1",
        "--baseline", "skip", "-o", str(chk)] + select + (["--re", only] if only else []), cwd=RUST,
       env=dict(os.environ, FRAMEPROOF_SCHEMAS=str(ROOT / "schemas"), CARGO_TARGET_DIR=str(RUST_TARGET / (run + "-check"))))
    f = chk / "mutants.out" / "unviable.txt"
    return {ln.strip() for ln in f.read_text().splitlines() if ln.strip()} if f.exists() else set()


def committed_reports() -> list[Path]:
    """results/mutation-*.json, newest first (by the date each was made, then by name: 12-05f after 12-05e)."""
    def key(f: Path):
        try:
            return (json.loads(f.read_text()).get("generated", ""), f.stem)
        except ValueError:
            return ("", f.stem)
    return sorted((ROOT / "results").glob("mutation-*.json"), key=key, reverse=True)


def seed_rust(proto: str, source: Path | None = None) -> Path | None:
    """A fresh machine (CI, a new checkout) has no .mutation/: the outcome of each mutant is taken from the
    newest committed report that names every one (``mutants``) into run directories the tool reads like its
    own, so that a run goes on where the report's stopped and the report is made again from it. ``seed``
    holds each outcome the way the codec pass left it (a survivor as missed); ``net-files-seed`` the
    survivors a network pass had tested too (missed there), so that they count as tested and the network
    pass does not take them again; a survivor no network pass had reached stays untested. Nothing is done
    when the protocol has runs of its own."""
    base = WORK / "rust" / proto
    if base.exists() and any(base.iterdir()):
        return None
    for f in ([source] if source else committed_reports()):
        d = json.loads(f.read_text()).get("languages", {}).get("rust", {}).get(proto, {})
        ms = d.get("mutants")
        if not ms:
            continue
        codec, net = collections.defaultdict(list), []
        for n, k in sorted(ms.items()):
            codec["missed" if k in ("missed", "untested") else k].append(n)
            if k == "missed":
                net.append(n)
        for name, by in (("seed", codec), ("net-files-seed", {"missed": net})):
            out = base / name / "mutants.out"
            out.mkdir(parents=True, exist_ok=True)
            for k, names in by.items():
                (out / f"{k}.txt").write_text("".join(n + "\n" for n in names))
            (base / name / "seeded-from.txt").write_text(str(f.relative_to(ROOT)) + "\n")
        print(f"{proto}: outcomes of {len(ms)} mutants taken from {f.relative_to(ROOT)} (.mutation/ was empty)")
        return f
    return None


def rust_outcomes(out: Path) -> dict[str, str]:
    """name (line:col included: two mutants of one operator in one function differ only there) ->
    caught | missed | timeout | unviable, of one run directory: what its earlier invocations kept in
    history/ (archive_outcomes), then its last cargo-mutants output, the newest outcome of a mutant counting
    (previously_caught.txt: what an --iterate run skipped as caught before)."""
    res = {}
    hist = sorted((out / "history").glob("*"), key=lambda d: int(d.name)) if (out / "history").exists() else []
    # a network pass's check (check_unviable): what did not build, left out of its cargo-mutants run
    f = out / "check" / "mutants.out" / "unviable.txt"
    for line in f.read_text().splitlines() if f.exists() else ():
        if line.strip():
            res[line.strip()] = "unviable"
    for d in hist + [out / "mutants.out"]:
        for fname in OUTCOME_FILES:
            f = d / f"{fname}.txt"
            if f.exists():
                for line in f.read_text().splitlines():
                    if line.strip():
                        res[line.strip()] = "caught" if fname == "previously_caught" else fname
    return res


def resume_args(out: Path, again: bool = False) -> list[str]:
    """A run started again: its last outcomes archived (archive_outcomes), and cargo-mutants told to leave out
    every mutant an earlier invocation of this run tested, whatever its outcome (--again tests them anew in a
    directory of its own). cargo-mutants' --iterate would test again what was missed or timed out."""
    archive_outcomes(out)
    return [] if again else [a for n in sorted(rust_outcomes(out)) for a in ("--exclude-re", "^" + re.escape(n) + "$")]


def archive_outcomes(out: Path) -> None:
    """cargo-mutants moves its last output to mutants.out.old and drops the one before: the outcomes of
    every invocation are kept in history/N/ before the next one starts, so that a run stopped and started
    again several times loses nothing and tests nothing twice (run_rust excludes what history names)."""
    last = out / "mutants.out"
    if not any((last / f"{f}.txt").exists() for f in OUTCOME_FILES):
        return
    hist = out / "history"
    n = 1 + max((int(d.name) for d in hist.glob("*")), default=0) if hist.exists() else 1
    if n > 1 and all(((last / f"{f}.txt").read_text() if (last / f"{f}.txt").exists() else None) ==
                     ((hist / str(n - 1) / f"{f}.txt").read_text() if (hist / str(n - 1) / f"{f}.txt").exists()
                      else None) for f in OUTCOME_FILES):
        return  # archived already (no cargo-mutants ran since)
    (hist / str(n)).mkdir(parents=True)
    for f in OUTCOME_FILES:
        if (last / f"{f}.txt").exists():
            shutil.copy(last / f"{f}.txt", hist / str(n) / f"{f}.txt")


RANK = {"caught": 4, "timeout": 3, "missed": 2, "unviable": 1}


def merged_outcomes(outs) -> dict[str, str]:
    """Several runs of one protocol (shards, the codec suite then the network suite over its survivors):
    a mutant counts as caught when any run caught it, and unviable when a network pass's check found that it
    does not build in the whole workspace (check_unviable: a build only fp-testee's left it viable before)."""
    merged: dict[str, str] = {}
    checked = set()
    for out in outs:
        f = Path(out) / "check" / "mutants.out" / "unviable.txt"
        checked |= {ln.strip() for ln in f.read_text().splitlines() if ln.strip()} if f.exists() else set()
        for n, k in rust_outcomes(out).items():
            if RANK[k] > RANK.get(merged.get(n, ""), 0):
                merged[n] = k
    return {n: "unviable" if n in checked else k for n, k in merged.items()}


def strip_pos(name: str) -> str:
    """'codec/src/x.rs:12:9: replace ...' -> 'codec/src/x.rs: replace ...' (lines move; names stay)."""
    return re.sub(r"^([^:]+):\d+:\d+:", r"\1:", name)


# ---- Python: cosmic-ray --------------------------------------------------------------------------

def py_tree(name: str) -> Path:
    """The copy cosmic-ray mutates in place (never the working tree), made anew: one per protocol run (and one
    for the sample), so that two runs at once never share (or re-copy) the files the other mutates."""
    tree = WORK / "python" / f"tree-{name}"
    src = ROOT / "conformance/frameproof"
    dst = tree / "conformance/frameproof"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return tree


#: per protocol, the codec suite's tests that do not run the mutated module (reference.py) at all
PY_NOT_THE_MODULE = {"rpc": ("rpc/DISC-*",)}
#: per protocol, the server configurations the network pass runs besides the default (rpc: a server offering
#: one endpoint, as upstream's RpcServer and RpcStreamServer each do, spec/rpc.md §9a; websocket: deflate)
PY_NET_CODECS = {"rpc": ('{"protocol": "rpc", "rpc": {"endpoints": ["unary"]}}',
                         '{"protocol": "rpc", "rpc": {"endpoints": ["stream"]}}'),
                 # the permessage-deflate layer (spec/websocket-deflate.md) runs only where the codec says so, and
                 # the resource path and subprotocol checks (spec/websocket.md §13) only where it names them
                 "websocket": ('{"protocol": "websocket", "websocket": {"permessage_deflate": true}}',
                               '{"protocol": "websocket", "websocket": {"path": "/ws/echo", "subprotocol": "echo.v1"}}')}


WORKER_TREE = "@TREE@"  # py_test_command's tree for --jobs: the directory the command runs in


def py_test_command(tree: Path | str, proto: str, net: bool, profile: str) -> str:
    """The codec suite against the mutated pytestee; with ``net``, then the network and client suites
    against the mutated pyserver and pyload (the network pass over the codec pass's survivors: the codec
    suite runs first again, as it may have gained checks since, and takes seconds). ``tree`` WORKER_TREE:
    the copy the command runs in (each worker of --jobs mutates a copy of its own), put in by bash when it
    runs: the commands inside are split by frameproof (shlex), not by a shell."""
    mutated = f"env PYTHONPATH={tree}/conformance {VENV / 'python'}"
    cmd = (f"{VENV / 'frameproof'} run --protocol {proto} --profile {profile} -x --no-skip --timeout 5 "
           f"--testee '{mutated} -m frameproof.pytestee'")
    # the service registry's tests (rpc/DISC-*) check protocols/rpc/discovery*.py, not the mutated module,
    # and its live etcd cases hold 33 of the 37 s a run of the rpc suite takes: left out, a mutant of
    # reference.py is judged by the same tests in a ninth of the time
    cmd += "".join(f" --deselect '{g}'" for g in PY_NOT_THE_MODULE.get(proto, ()))
    if not net:
        return cmd
    cmd += (f" && {VENV / 'frameproof'} net --protocol {proto} -x "
            f"--server-cmd '{mutated} -m frameproof.pyserver --protocol {proto} --listen 127.0.0.1:0'")
    for codec in PY_NET_CODECS.get(proto, ()):
        q = shlex.quote(codec)
        cmd += (f" && {VENV / 'frameproof'} net --codec {q} -x --server-cmd "
                + shlex.quote(f"{mutated} -m frameproof.pyserver --codec {q} --listen 127.0.0.1:0"))
    # and the Python load client built on the mutated codec (its reply checks, e.g. reply_ok), under
    # the client suite against the checking server: a client that rejects good replies or accepts
    # bad ones fails HAR-VERIFY-*/HAR-COUNT-1
    cmd += (f" && {VENV / 'frameproof'} net --protocol {proto} -x --client \"{mutated} -m frameproof.pyload "
            f"--protocol {proto} --connect {{host}}:{{port}} --connections 2 --payload 24 --mode pipelined "
            f"--window 8 --requests 500 --timeout-ms 1000 --json {{json}}\"")
    # cosmic-ray runs its test command as shlex.split(command), without a shell: the `&&` chain needs one
    if tree == WORKER_TREE:
        return "bash -c " + shlex.quote('eval "${1//' + WORKER_TREE + '/$PWD}"') + " _ " + shlex.quote(cmd)
    return "bash -c " + shlex.quote(cmd)


def _digest(path: Path) -> str:
    return subprocess.run(["sha256sum", str(path)], capture_output=True, text=True).stdout.split()[0]


def _reopen_survivors(source: Path, session: Path) -> tuple[int, int]:
    """Deletes from ``session`` the results of ``source``'s survivors that a suite may catch (not code run
    only with a bug planted, not triaged equivalent), so that `cosmic-ray exec` tests them again:
    (reopened, survivors)."""
    triage = load_triage()
    missed = [m for m in py_outcomes(source) if m["outcome"] == "missed"]
    again = [(m["job_id"],) for m in missed if not m["planted_only"]
             and (triage_of(m["name"], triage, m["scope"]) or {}).get("verdict") != "equivalent"]
    db = sqlite3.connect(str(session))
    db.executemany("DELETE FROM work_results WHERE job_id = ?", again)
    db.commit()
    db.close()
    return len(again), len(missed)


def py_session(tree: Path, proto: str, net: bool, profile: str, again: bool = False,
               workers: list[str] | None = None) -> tuple[Path, Path]:
    """The codec pass's session (<proto>/session.sqlite: every mutant), or with ``net`` the network pass's
    (<proto>/net/session.sqlite: a copy of the codec pass's in which only its survivors have no result, so
    that `cosmic-ray exec` tests just those; remade when the codec pass's session is)."""
    base = WORK / "python" / proto
    d = base / "net" if net else base
    d.mkdir(parents=True, exist_ok=True)
    module = f"conformance/frameproof/protocols/{PROTOCOLS[proto]}/reference.py"
    cfg = d / "cosmic-ray.toml"
    # with workers (--jobs): cosmic-ray's http distributor hands each mutant to a worker running in a copy of its
    # own; its request gives up after aiohttp's 300 s, so a mutant's timeout stays below that (a hang is then a
    # timeout, not an abnormal end)
    cfg.write_text(
        "[cosmic-ray]\n"
        f"module-path = \"{module}\"\n"
        f"timeout = {(280.0 if workers else 600.0) if net else 120.0}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(py_test_command(WORKER_TREE if workers else tree, proto, net, profile))}\n"
        + ("[cosmic-ray.distributor]\nname = \"http\"\n[cosmic-ray.distributor.http]\n"
           f"worker-urls = {json.dumps(workers)}\n" if workers else "[cosmic-ray.distributor]\nname = \"local\"\n"))
    session, stamp = d / "session.sqlite", d / "source.sha"
    digest = _digest(ROOT / module)
    if net:
        codec, codec_stamp = base / "session.sqlite", base / "source.sha"
        if not codec.exists() or not codec_stamp.exists() or codec_stamp.read_text() != digest:
            raise SystemExit(f"python {proto}: the network pass tests the codec pass's survivors: run the codec "
                             f"pass first (tools/mutation.sh run --lang python --protocol {proto})")
        if not session.exists() or not stamp.exists() or stamp.read_text() != digest:
            # left as they were: a mutant that changes only code run with a bug planted (no suite can see
            # it), and one triaged as equivalent (tools/mutation/triage.toml: judged by reading the code)
            shutil.copyfile(codec, session)
            n, of = _reopen_survivors(codec, session)
            stamp.write_text(digest)
            print(f"python {proto}: network pass over {n} of the codec pass's {of} survivors", flush=True)
        elif again:  # the suites gained checks: what the network pass missed, once more
            n, of = _reopen_survivors(session, session)
            print(f"python {proto}: the network pass again over {n} of its {of} survivors", flush=True)
        return cfg, session
    if not session.exists() or not stamp.exists() or stamp.read_text() != digest:
        session.unlink(missing_ok=True)  # the module changed: its old mutants are gone
        subprocess.check_call([str(VENV / "cosmic-ray"), "init", str(cfg), str(session)], cwd=tree)
        stamp.write_text(digest)
    elif again:  # the codec suite gained checks: its survivors once more
        n, of = _reopen_survivors(session, session)
        print(f"python {proto}: the codec pass again over {n} of its {of} survivors", flush=True)
    return cfg, session


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_python(protos: list[str], net: bool, profile: str, again: bool = False, jobs: int = 1) -> int:
    """``jobs`` > 1: that many cosmic-ray http workers, each mutating a copy of its own (the network pass waits
    on its peers' timing far more than it computes: two or three at once on this 2-core machine)."""
    rc = 0
    for proto in protos:
        name = f"{proto}-net" if net else proto
        trees = [py_tree(name)] + [py_tree(f"{name}-{i}") for i in range(2, jobs + 1)]
        ports = [_free_port() for _ in trees] if jobs > 1 else []
        cfg, session = py_session(trees[0], proto, net, profile, again,
                                  [f"http://127.0.0.1:{p}" for p in ports] or None)
        # the baseline: the unmutated copy must pass, or every mutant would count as caught
        if sh(["bash", "-c", py_test_command(trees[0], proto, net, profile)], cwd=trees[0],
              stdout=subprocess.DEVNULL) != 0:
            print(f"baseline: frameproof fails on the unmutated Python {proto}: no mutant tested", flush=True)
            return 1
        workers = [subprocess.Popen([str(VENV / "cosmic-ray"), "http-worker", "--port", str(p)], cwd=t,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for t, p in zip(trees, ports)]
        try:
            if workers:
                time.sleep(2.0)  # the workers listening
            # exec does only the work items without a result: rerunning resumes
            rc = rc or sh([str(VENV / "cosmic-ray"), "exec", str(cfg), str(session)], cwd=trees[0])
        finally:
            for w in workers:
                w.terminate()
                w.wait(30)
    return rc


PLANTED_NAMES = {"M", "m", "mutant", "MUTANT", "fault"}
UNPLANTED = ""  # the switch's value when no bug is planted (frameproof.reference.MUTANT)


def _switch(node) -> bool:
    """`M == "name"` (or !=, in, ...): a comparison of the --mutant / --fault switch with names."""
    import ast
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return False
    sides = [node.left, *node.comparators]

    def planted(n):
        return isinstance(n, ast.Name) and n.id in PLANTED_NAMES or isinstance(n, ast.Attribute) and n.attr in PLANTED_NAMES
    # `M == "name"`, `M in ("a", "b")`, and `"name" in (fault, M)` (either switch names the bug)
    if any(planted(n) for n in sides) and any(isinstance(n, (ast.Constant, ast.Tuple)) for n in sides):
        return True
    return (isinstance(node.ops[0], ast.In) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
            and isinstance(node.comparators[0], ast.Tuple) and node.comparators[0].elts
            and all(planted(e) for e in node.comparators[0].elts))


def _only_when_planted(test) -> bool:
    """A condition true only with a bug planted: a switch naming it (==, in), or an `or` of such."""
    import ast
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return all(_only_when_planted(v) for v in test.values)
    return _switch(test) and isinstance(test.ops[0], (ast.Eq, ast.In))


def planted_analysis(module: Path) -> tuple[list[tuple], dict]:
    """Where a mutant cannot change the implementation as it runs with no bug planted:
    - spans that run only when a bug is planted: the body of `if M == "name":`, the other operands of an
      `and` holding such a switch, the first branch
      of `x if M == "name" else y`, a function named after a planted bug (allocate_declared,
      whose docstring names the fault "allocate-declared");
    - per line, the switch comparisons on it (operator name, constants): a comparison operator
      swapped there is equivalent when both operators give the same answer for UNPLANTED.
    Returns (spans as (row, col, end_row, end_col), {row: [(op, constant), ...]})."""
    import ast
    tree = ast.parse(module.read_text())
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    spans: list[tuple] = []
    switches: dict[int, list] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _only_when_planted(node.test):
            for b in node.body:
                spans.append((b.lineno, 0, b.end_lineno or b.lineno, 10 ** 6))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and any(map(_only_when_planted, node.values)):
            # `... and M == "name" and ...`: false unplanted whatever the other operands are
            for v in node.values:
                if not _only_when_planted(v):
                    spans.append((v.lineno, v.col_offset, v.end_lineno or v.lineno, v.end_col_offset or 10 ** 6))
        if isinstance(node, ast.IfExp) and _only_when_planted(node.test):
            b = node.body
            spans.append((b.lineno, b.col_offset, b.end_lineno or b.lineno, b.end_col_offset or 10 ** 6))
        if isinstance(node, ast.FunctionDef) and any(
                n == node.name.replace("_", "-") or f'"{node.name.replace("_", "-")}"' in n for n in names):
            spans.append((node.lineno, 0, node.end_lineno or node.lineno, 10 ** 6))
        if _switch(node):
            const = next(n for n in [node.left, *node.comparators] if isinstance(n, (ast.Constant, ast.Tuple)))
            if node.left is const and isinstance(node.ops[0], ast.In):  # "name" in (fault, M): no operator to swap
                continue
            if isinstance(const, ast.Constant):
                switches.setdefault(node.lineno, []).append((type(node.ops[0]).__name__, const.value))
    return spans, switches


_OPS = {"Eq": lambda a, b: a == b, "NotEq": lambda a, b: a != b, "Lt": lambda a, b: a < b,
        "LtE": lambda a, b: a <= b, "Gt": lambda a, b: a > b, "GtE": lambda a, b: a >= b,
        "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b}


def equivalent_unplanted(op_name: str, row: int, col: int, analysis) -> bool:
    spans, switches = analysis
    if any((r0, c0) <= (row, col) <= (r1, c1) for r0, c0, r1, c1 in spans):
        return True
    m = re.fullmatch(r"core/ReplaceComparisonOperator_(\w+?)_(\w+)", op_name)
    if not m or m.group(1) not in _OPS or m.group(2) not in _OPS:
        return False
    line = switches.get(row, [])
    # the swapped operator must be one of a switch's on this line, and give the same answer there
    hits = [c for op, c in line if op == m.group(1)]
    try:
        return bool(hits) and all(_OPS[m.group(1)](UNPLANTED, c) == _OPS[m.group(2)](UNPLANTED, c) for c in hits)
    except TypeError:
        return False


def session_source(session: Path, module: str) -> Path:
    """The module as ``session`` mutated it: the working tree's file while its digest is the session's stamp
    (source.sha); after an edit, the version in git history with that digest (kept under .mutation/sources/),
    so that a report names each mutant by the line it changed, not by whatever line has its number now (an
    edit of reference.py moved every later line, and the triage, matched on line text, found none of them)."""
    cur = ROOT / module
    stamp = session.parent / "source.sha"
    want = stamp.read_text().strip() if stamp.exists() else ""
    if not want or _digest(cur) == want:
        return cur
    kept = WORK / "sources" / f"{want}.py"
    if kept.exists():
        return kept
    import hashlib
    revs = subprocess.run(["git", "log", "--format=%H", "--", module], cwd=ROOT, capture_output=True, text=True).stdout
    for rev in revs.split():
        blob = subprocess.run(["git", "show", f"{rev}:{module}"], cwd=ROOT, capture_output=True).stdout
        if hashlib.sha256(blob).hexdigest() == want:
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(blob)
            return kept
    print(f"mutation report: {module} changed since {session} was made, and no version in git history has its "
          f"digest: its mutants are named by today's lines", file=sys.stderr)
    return cur


def py_outcomes(session: Path) -> list[dict]:
    """Every mutant of a cosmic-ray session: module, function, operator, line text, outcome."""
    out = []
    sources: dict[str, Path] = {}
    db = sqlite3.connect(str(session))
    rows = db.execute("SELECT m.module_path, m.operator_name, m.occurrence, m.start_pos_row, m.start_pos_col, "
                      "m.definition_name, m.job_id, "
                      "r.worker_outcome, r.test_outcome FROM mutation_specs m "
                      "LEFT JOIN work_results r ON r.job_id = m.job_id ORDER BY m.job_id").fetchall()
    planted: dict[str, tuple] = {}
    for module, op, occ, row, col, fn, job, worker, test in rows:
        worker, test = (worker or "").lower() or None, (test or "").lower()
        if module not in sources:
            sources[module] = session_source(session, module)
        src = sources[module]
        lines = src.read_text().splitlines()
        if module not in planted:
            planted[module] = planted_analysis(src)
        text = lines[row - 1].strip() if 0 < row <= len(lines) else ""
        if worker is None:
            kind = "untested"
        elif worker == "timeout":
            kind = "timeout"
        elif worker in ("exception", "abnormal") or test == "incompetent":
            kind = "unviable"
        else:
            kind = {"killed": "caught", "survived": "missed"}.get(test, "unviable")
        out.append({"job_id": job, "module": module, "function": fn or "", "scope": py_scope(module, row, src),
                    "operator": op,
                    "occurrence": occ, "line": row,
                    "text": text, "outcome": kind, "planted_only": equivalent_unplanted(op, row, col, planted[module]),
                    "name": f"{module}: {op} in {fn or '<module>'}: {text}"})
    return out


# ---- the fixed sample (CI) -----------------------------------------------------------------------

def sample(args) -> int:
    spec = tomllib.loads((HERE / "ci-sample.toml").read_text())
    results = []  # (lang, name, caught?, why)
    # Python: cosmic-ray applies one mutation in the copy and runs the test command; the copy is restored
    tree = py_tree("sample")
    passing: dict[str, bool] = {}
    for m in spec["python"] if args.lang in (None, "python") else ():
        proto = m["protocol"]
        if proto not in passing:  # the baseline: unmutated, frameproof passes (else nothing is shown)
            passing[proto] = subprocess.call(["bash", "-c", py_test_command(tree, proto, False, "smoke")],
                                             cwd=tree, stdout=subprocess.DEVNULL) == 0
        if not passing[proto]:
            results.append(("python", f"{proto} baseline", False, "frameproof fails on the unmutated copy"))
            continue
        module = f"conformance/frameproof/protocols/{PROTOCOLS[proto]}/reference.py"
        # the occurrence that lands on the named line text inside the named function
        cfg, session = py_session(tree, proto, False, "smoke")
        cands = [o for o in py_outcomes(session) if o["operator"] == m["operator"]
                 and o["function"] == m["function"] and o["text"] == m["text"]]
        if "nth" in m:  # the operator stands more than once on the line: the nth, left to right
            cands = sorted(cands, key=lambda o: o["occurrence"])[m["nth"]:m["nth"] + 1]
        name = f"python {proto}: {m['operator']} in {m['function']}: {m['text']}"
        if len(cands) != 1:
            results.append(("python", name, False, f"the sample names {len(cands)} mutants, not 1: pick again "
                                                    "(tools/mutation/ci-sample.toml)"))
            continue
        c = cands[0]
        t0 = time.monotonic()
        p = subprocess.run([str(VENV / "cosmic-ray"), "mutate-and-test", module, c["operator"], str(c["occurrence"]),
                            py_test_command(tree, proto, False, "smoke")],
                           cwd=tree, capture_output=True, text=True, timeout=600)
        shutil.copyfile(ROOT / module, tree / module)  # mutate-and-test restores it too; be sure
        outcome = ""
        try:
            outcome = json.loads(p.stdout.strip().splitlines()[-1]).get("test_outcome", "")
        except (ValueError, IndexError, AttributeError):
            pass
        results.append(("python", name, outcome == "killed",
                        f"{outcome or 'no result: ' + p.stderr[-300:]} in {time.monotonic() - t0:.0f} s"))
    # Rust: one cargo-mutants run over the sample's names (its baseline checks the unmutated tree passes)
    pats = spec["rust"] if args.lang in (None, "rust") else []
    out = WORK / "rust-sample"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    select = []
    for m in pats:
        select += ["--file", m["file"], "--re", m["re"]]
    listed = subprocess.run(["cargo", "mutants", "--list"] + select, cwd=RUST, capture_output=True,
                            text=True).stdout.split("\n")
    listed = [x for x in listed if x.strip()]
    for m in pats:
        hits = [x for x in listed if x.startswith(m["file"]) and re.search(m["re"], x)]
        if len(hits) != 1:
            results.append(("rust", m["re"], False, f"the sample names {len(hits)} mutants, not 1: pick again"))
    ok = pats and len(listed) == len(pats) and all(r[2] or r[0] != "rust" for r in results)
    if ok and not rust_baseline(list(PROTOCOLS), False, "smoke", "sample"):
        results.append(("rust", "baseline", False, "frameproof fails on the unmutated Rust code"))
        ok = False
    if ok:
        t0 = time.monotonic()
        sh(["cargo", "mutants", "--test-package", "fp-testee", "--cargo-test-arg=--test",
            "--cargo-test-arg=frameproof_suite", "--timeout", "240", "--build-timeout", "900", "--no-shuffle",
            "--jobs", "1", "--baseline", "skip", "--profile", PROFILE, "-o", str(out)] + select,
           cwd=RUST, env=rust_env(list(PROTOCOLS), False, "smoke", "sample"))
        got = rust_outcomes(out)
        for x in listed:
            kind = got.get(x.strip(), "not run")
            results.append(("rust", x, kind in ("caught", "timeout"), f"{kind} (whole run {time.monotonic() - t0:.0f} s)"))
    caught = sum(1 for r in results if r[2])
    for lang, name, ok, why in results:
        print(f"{'caught' if ok else 'MISSED'}  {lang}  {name}  [{why}]")
    print(f"mutation: {caught} passed, {len(results) - caught} failed")
    return 0 if results and caught == len(results) else 1


# ---- the report ----------------------------------------------------------------------------------

def load_triage() -> list[dict]:
    f = HERE / "triage.toml"
    return tomllib.loads(f.read_text()).get("survivor", []) if f.exists() else []


def triage_of(name: str, triage: list[dict], scope: str = "") -> dict | None:
    """The first entry whose ``match`` is a part of the survivor's name, or (an entry with ``scope``: a glob over
    a Python mutant's definition, e.g. "websocket/reference.py ServerOpening.*") whose scope matches."""
    import fnmatch
    name = strip_pos(name)  # the entries name no line numbers (lines move)
    for t in triage:
        if "match" in t and t["match"] in name:
            return t
        if "scope" in t and scope and fnmatch.fnmatch(f"{name.split(':')[0]} {scope}", "*" + t["scope"]):
            return t
    return None


def load_areas() -> list[dict]:
    return tomllib.loads((HERE / "areas.toml").read_text())["area"]


_SCOPES: dict[str, list] = {}


def py_scope(module: str, row: int, src: Path | None = None) -> str:
    """The definitions around line ``row`` of ``module`` (as in ``src``, the version a session mutated),
    outermost first: "Class.method", "function.inner", "<module>"."""
    import ast
    src = src or ROOT / module
    key = str(src)
    if key not in _SCOPES:
        spans = []
        def walk(node, prefix):
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{ch.name}"
                    spans.append((ch.lineno, ch.end_lineno, name))
                    walk(ch, name + ".")
        walk(ast.parse(src.read_text()), "")
        _SCOPES[key] = spans
    inside = [(b - a, n) for a, b, n in _SCOPES[key] if a <= row <= b]
    return min(inside)[1] if inside else "<module>"


def area_of(lang: str, m: dict, areas: list[dict]) -> str:
    """The first area whose pattern for ``lang`` is found in the mutant's name (Rust) or scope (Python)."""
    key = m["name"] if lang == "rust" else m.get("scope", "")
    for a in areas:
        if a.get(lang) and re.search(a[lang], key):
            return a["name"]
    return "other"


def rust_listed(proto: str) -> list[str]:
    """Every mutant cargo-mutants makes of the protocol's module now (`--list`), run or not."""
    mod = PROTOCOLS[proto]
    p = subprocess.run(["cargo", "mutants", "--list", "--file", f"codec/src/{mod}/**", "--file", f"codec/src/{mod}.rs",
                        "--exclude", f"codec/src/{mod}/tests.rs"], cwd=RUST, capture_output=True, text=True)
    return [ln.strip() for ln in p.stdout.splitlines() if ln.strip()] if p.returncode == 0 else []


def _net_pass_targets_only(runs: list[Path]) -> dict[str, str]:
    """merged_outcomes, but the network pass (``net``) counted only for what it was run for, the codec runs'
    survivors: cargo-mutants' --re picks a few more (seen: \"delete field\" mutants of other files), and a
    mutant another run already judged would otherwise take that pass's outcome (a timeout on a busy machine
    outranks the miss of the run meant for it)."""
    codec_missed = {n for n, k in merged_outcomes([d for d in runs if not d.name.startswith("net")]).items()
                    if k == "missed"}
    merged: dict[str, str] = {}
    for d in runs:
        for n, k in rust_outcomes(d).items():
            if d.name == "net" and n not in codec_missed:
                continue
            if RANK[k] > RANK.get(merged.get(n, ""), 0):
                merged[n] = k
    unviable = {n for n, k in merged_outcomes(runs).items() if k == "unviable"}  # a check's (merged_outcomes)
    return {n: "unviable" if n in unviable else k for n, k in merged.items()}


def rust_collected(runs: list[Path], listed: list[str]) -> dict[str, str]:
    """The merged outcomes of a protocol's runs, with ``untested`` for what no run has tested yet: a codec-suite
    survivor that no network run has tested (the network pass not run, or stopped, before it), and a mutant of
    ``listed`` no run reached (a run stopped part-way, or code added since). A run's mutant at a line that has
    moved since stands for a listed one of the same name (matched without line and column) that no run has
    tested at its new line; one with no such listed mutant left is dropped (tested again at its new line, or
    its code is gone). Without ``listed`` (cargo-mutants missing) every run's mutant counts."""
    merged = _net_pass_targets_only(runs)
    net = {n for n in merged if any(n in rust_outcomes(d) for d in runs if d.name.startswith("net"))}
    known = set(listed)
    need = collections.Counter(strip_pos(n) for n in listed if n not in merged)
    out = {}
    for n, k in merged.items():
        if listed and n not in known:
            if need[strip_pos(n)] <= 0:
                continue
            need[strip_pos(n)] -= 1
        out[n] = "untested" if k == "missed" and n not in net else k
    for n in listed:
        if n not in merged and need[strip_pos(n)] > 0:
            need[strip_pos(n)] -= 1
            out[n] = "untested"
    return out


def collect() -> dict:
    res: dict = {"rust": {}, "python": {}}
    for proto in PROTOCOLS:
        seed_rust(proto)
        runs = sorted((WORK / "rust" / proto).glob("*")) if (WORK / "rust" / proto).exists() else []
        merged = rust_collected(runs, rust_listed(proto)) if runs else {}
        if merged:
            res["rust"][proto] = [{"name": n, "module": n.split(":")[0], "outcome": k} for n, k in sorted(merged.items())]
        s = WORK / "python" / proto / "session.sqlite"
        if s.exists():
            res["python"][proto] = py_outcomes(s)
            n = WORK / "python" / proto / "net"
            if (n / "session.sqlite").exists() and (n / "source.sha").read_text() == (s.parent / "source.sha").read_text():
                # the network pass's outcome for each survivor of the codec pass it has tested
                for m, k in zip(res["python"][proto], py_outcomes(n / "session.sqlite")):
                    assert (m["operator"], m["line"], m["occurrence"]) == (k["operator"], k["line"], k["occurrence"])
                    if m["outcome"] == "missed" and k["outcome"] != "untested":
                        m["outcome"], m["pass"] = k["outcome"], "net"
    return res


def score(ms: list[dict], triage: list[dict]) -> dict:
    c = {k: 0 for k in ("caught", "missed", "timeout", "unviable", "untested", "equivalent", "removed")}
    for m in ms:
        k = m["outcome"]
        if k == "missed":
            t = triage_of(m["name"], triage, m.get("scope", ""))
            if t is None and m.get("planted_only"):
                t = {"verdict": "equivalent", "why": "no effect unless a deliberate bug is planted (--mutant/--fault): "
                                                     "code that runs only then, or the switch's own test answering "
                                                     "the same"}
            m["triage"] = t
            if t and t.get("verdict") in ("equivalent", "removed"):
                # removed: the mutated code is gone since the run (library API no program called), so the
                # mutant no longer exists; neither caught nor missed
                k = t["verdict"]
        c[k] += 1
    tested = c["caught"] + c["timeout"] + c["missed"]
    c["score"] = round(100.0 * (c["caught"] + c["timeout"]) / tested, 1) if tested else None
    return c


def carried(lang: str, have: set[str]) -> dict[str, dict]:
    """The sections of protocols no run here has outcomes for (a fresh machine: a Python session is not
    kept in the repository), as the newest committed report that has them gave them, marked with its name,
    so that a report made after a run of one protocol still shows every protocol."""
    out: dict[str, dict] = {}
    for f in committed_reports():
        for proto, d in json.loads(f.read_text()).get("languages", {}).get(lang, {}).items():
            if proto not in have and proto not in out:
                out[proto] = dict(d, carried_from=d.get("carried_from", str(f.relative_to(ROOT))))
    return {p: out[p] for p in PROTOCOLS if p in out}


def report(args) -> int:
    triage = load_triage()
    areas = load_areas()
    req = {a["name"]: a["requirements"] for a in areas}
    res = collect()
    lines = ["# Mutation testing with frameproof as the test", "",
             "Made by `bash tools/mutation.sh report` from the runs in `.mutation/` "
             "(see tools/mutation/run.py for how mutants are made and judged).",
             "Score = (caught + timed out) / (caught + timed out + missed), equivalent mutants left out, and so are "
             "removed ones (their code was deleted after the run: library API no program called); "
             "unviable mutants (they do not build or import) do not count.", ""]
    data = {"generated": time.strftime("%Y-%m-%d"), "languages": {}}
    for lang in ("rust", "python"):
        if not (res[lang] or carried(lang, set())) or (getattr(args, "lang", None) or lang) != lang:
            continue
        lines += [f"## {lang}", "", "| protocol | mutants | tested | caught | timeout | missed | equivalent | removed | "
                  "unviable | untested | score |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        data["languages"][lang] = {}
        for proto, ms in res[lang].items():
            c = score(ms, triage)
            tested = c["caught"] + c["timeout"] + c["missed"]
            lines.append(f"| {proto} | {len(ms)} | {tested} | {c['caught']} | {c['timeout']} | {c['missed']} | "
                         f"{c['equivalent']} | {c['removed']} | {c['unviable']} | {c['untested']} | "
                         f"{'' if c['score'] is None else str(c['score']) + ' %'} |")
            by_module: dict[str, dict] = {}
            for m in ms:
                key = m["module"] + (f" {m['function']}" if lang == "python" else "")
                by_module.setdefault(key, []).append(m)
            by_area: dict[str, list] = {a["name"]: [] for a in areas}
            for m in ms:
                by_area.setdefault(area_of(lang, m, areas), []).append(m)
            data["languages"][lang][proto] = {
                "totals": c,
                "by_area": {k: score(v, triage) for k, v in by_area.items() if v},
                "by_module": {k: score(v, triage) for k, v in sorted(by_module.items())},
                "survivors": [{"name": m["name"], "triage": m.get("triage")} for m in ms
                              if m["outcome"] == "missed"]}
            if lang == "rust":  # every mutant's outcome: what a fresh machine's run goes on from (seed_rust)
                data["languages"][lang][proto]["mutants"] = {m["name"]: m["outcome"] for m in ms}
        for proto, d in carried(lang, set(res[lang])).items():
            data["languages"][lang][proto] = d
            c = d["totals"]
            tested = c["caught"] + c["timeout"] + c["missed"]
            lines.append(f"| {proto} (from `{d['carried_from']}`) | {sum(c[k] for k in c if k != 'score')} | "
                         f"{tested} | {c['caught']} | {c['timeout']} | {c['missed']} | {c['equivalent']} | "
                         f"{c.get('removed', 0)} | {c['unviable']} | {c['untested']} | "
                         f"{'' if c['score'] is None else str(c['score']) + ' %'} |")
        lines.append("")
        if lang == "rust":  # which runs each row merges (the network pass tests the codec suite's survivors only)
            for proto in res[lang]:
                runs = []
                for out in sorted((WORK / "rust" / proto).glob("*")):
                    k = rust_outcomes(out)
                    steps = (out / "steps.txt").read_text().strip() if (out / "steps.txt").exists() else "all"
                    what = (f"outcomes taken from `{(out / 'seeded-from.txt').read_text().strip()}`"
                            if (out / "seeded-from.txt").exists() else
                            "network and client suites over the codec suite's survivors" if out.name == "net" else
                            "the network pass again over earlier survivors (--again)" if out.name.startswith("net-again")
                            else f"the network pass straight over files the codec suite cannot reach, steps {steps}"
                            if out.name.startswith("net-files-") else "codec suite")
                    runs.append(f"`{out.name}` ({what}): {len(k)} mutants, {sum(1 for v in k.values() if v == 'caught')} caught")
                lines.append(f"- {proto}: " + "; ".join(runs))
            lines.append("")
        if lang == "python":  # what the network pass (over the codec pass's survivors) added
            for proto, ms in res[lang].items():
                net = [m for m in ms if m.get("pass") == "net"]
                if net:
                    lines.append(f"- {proto}: the network and client suites (`net`, over the codec suite's survivors) "
                                 f"caught {sum(m['outcome'] == 'caught' for m in net)} that the codec suite missed")
            lines.append("")
        for proto, d in data["languages"][lang].items():
            lines += [f"### {lang} {proto}: by requirement area", "",
                      "| area | requirements | tested | caught | timeout | missed | equivalent | unviable | untested | score |",
                      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for name, c in d["by_area"].items():
                tested = c["caught"] + c["timeout"] + c["missed"]
                lines.append(f"| {name} | {req.get(name, 'none: code no area names')} | {tested} | {c['caught']} | "
                             f"{c['timeout']} | {c['missed']} | {c['equivalent']} | {c['unviable']} | {c['untested']} | "
                             f"{'' if c['score'] is None else str(c['score']) + ' %'} |")
            lines.append("")
        for proto, d in data["languages"][lang].items():
            if d["survivors"]:
                lines += [f"### {lang} {proto}: survivors", ""]
                for s in d["survivors"]:
                    t = s["triage"]
                    lines.append(f"- `{s['name']}`: " + (f"**{t['verdict']}**: {t['why']}" if t else "**not triaged**"))
                lines.append("")
    out = Path(args.out or ROOT / "results" / f"mutation-{data['generated']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {out}.md and {out}.json")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/mutation.sh", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--lang", choices=("rust", "python"), required=True)
    r.add_argument("--protocol", action="append", choices=list(PROTOCOLS))
    r.add_argument("--shard", help="K/N: the K-th of N shards (Rust; cargo-mutants --shard)")
    r.add_argument("--net", action="store_true", help="the network and client suites over the mutants the codec "
                   "suite's run missed (after that run; Python: into .mutation/python/P/net)")
    r.add_argument("--again", metavar="RE", help="with --net: the network pass again over what every run so far "
                   "missed (Rust: whose name matches RE, into .mutation/rust/P/net-again-N; Python: RE is not read, "
                   "the network session's survivors, or without --net the codec pass's, are tested again in place) "
                   "after a suite gained cases")
    r.add_argument("--files", help="Rust: only these files of the protocol's module (comma-separated, e.g. "
                   "client.rs,handshake.rs), into .mutation/rust/P/files-... (codec pass) or net-files-... (--net): "
                   "with --net, the network pass straight over files the codec suite cannot reach (it starts after "
                   "the handshake), beside a codec pass over the others; the network pass after that codec pass "
                   "skips what net-files tested")
    r.add_argument("--re", dest="only", metavar="RE", help="Rust, with --files: only the mutants whose names match RE "
                   "(cargo-mutants --re), e.g. code added after a run (the report counts it untested)")
    r.add_argument("--steps", help="Rust, with --net: only these steps of the network pass (comma-separated; "
                   "testee/tests/frameproof_suite.rs STEPS: codec, server, server-limit, server-deflate, server-endpoint, "
                   "client-deflate, client-endpoint, client, raw, load-counts, micro), for --files whose code only some programs run")
    r.add_argument("--shuffle", action="store_true", help="Rust: the mutants in a random order (cargo-mutants "
                   "--shuffle), so that a run stopped before its end has tested a random sample of them, not the "
                   "first files and lines")
    r.add_argument("--profile", default="smoke", choices=("smoke", "ci", "fuzz"))
    r.add_argument("--jobs", type=int, default=1, help="Python: mutants tested at once, each in a copy of its own "
                   "(cosmic-ray's http workers); the network pass mostly waits, so 2-3 pay on 2 cores")
    smp = sub.add_parser("sample")
    smp.add_argument("--lang", choices=("rust", "python"), help="only this language's part")
    rep = sub.add_parser("report")
    rep.add_argument("--out")
    rep.add_argument("--lang", choices=("rust", "python"), help="only this language's runs (default both)")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        protos = a.protocol or list(PROTOCOLS)
        if a.again and not a.net and a.lang == "rust":
            ap.error("--again goes with --net for Rust")
        if a.files and not (a.lang == "rust" and not a.again and len(protos) == 1):
            ap.error("--files goes with --lang rust and one --protocol")
        files = a.files.split(",") if a.files else None
        if a.steps and not (a.net and a.lang == "rust"):
            ap.error("--steps goes with --lang rust --net")
        if a.only and not a.files:
            ap.error("--re goes with --files")
        if a.shuffle and a.lang != "rust":
            ap.error("--shuffle goes with --lang rust")
        return run_rust(protos, a.shard, a.net, a.profile, a.again, files, a.steps, a.only, a.shuffle) \
            if a.lang == "rust" \
            else run_python(protos, a.net, a.profile, bool(a.again), max(1, a.jobs))
    return sample(a) if a.cmd == "sample" else report(a)


if __name__ == "__main__":
    sys.exit(main())
