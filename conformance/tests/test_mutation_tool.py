"""tools/mutation/run.py's reading of cargo-mutants' outputs (the report's Rust scores)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "mutation"))
import run  # noqa: E402

A = "codec/src/x.rs:10:5: replace + with * in f"
B = "codec/src/x.rs:12:9: replace + with * in f"  # the same name but for its position
C = "codec/src/x.rs:20:1: replace g -> u64 with 0"
D = "codec/src/x.rs:30:1: replace h -> u64 with 1"


def _out(d: Path, **kinds):
    (d / "mutants.out").mkdir(parents=True)
    for kind, names in kinds.items():
        (d / "mutants.out" / f"{kind}.txt").write_text("".join(n + "\n" for n in names))
    return d


def test_a_survivor_of_the_codec_suite_caught_by_the_network_suite_counts_as_caught(tmp_path):
    codec = _out(tmp_path / "all", caught=[A], missed=[B, C], unviable=[D])
    net = _out(tmp_path / "net", caught=[B], missed=[C])
    assert run.merged_outcomes([codec]) == {A: "caught", B: "missed", C: "missed", D: "unviable"}
    # two mutants of one operator in one function stay two (their names differ only in line and column)
    assert run.merged_outcomes([codec, net]) == {A: "caught", B: "caught", C: "missed", D: "unviable"}
    assert run.merged_outcomes([net, codec]) == run.merged_outcomes([codec, net])
    # an --iterate run lists what it skipped as caught before in previously_caught.txt
    again = _out(tmp_path / "again", previously_caught=[A], missed=[C])
    assert run.rust_outcomes(again) == {A: "caught", C: "missed"}


def test_network_pass_targets_the_codec_suites_survivors_and_again_what_every_run_missed(tmp_path):
    codec = _out(tmp_path / "all", caught=[A], missed=[B, C, D])
    net = _out(tmp_path / "net", caught=[B], missed=[C, D])
    # the first network pass: the codec runs' survivors only (a net directory is not a codec run)
    assert run.net_targets([codec, net], None) == sorted([B, C, D])
    # --again RE: what every run missed (B was caught by the network pass), filtered by RE
    assert run.net_targets([codec, net], "replace") == sorted([C, D])
    assert run.net_targets([codec, net], r"replace h\b") == [D]
    again = _out(tmp_path / "net-again-1", caught=[D])
    assert run.net_targets([codec, net, again], "replace") == [C]
    # a network pass over files the codec suite cannot reach (--files, beside the codec pass): what it tested,
    # caught or not, the network pass after the codec pass leaves out
    files = _out(tmp_path / "net-files-client", caught=[B], missed=[C])
    assert run.net_targets([codec, files], None) == [D]
    assert run.net_targets([codec, files, net], None) == [D]


def test_files_limits_a_rust_pass_to_those_files_of_the_protocols_module():
    args = run.rust_args("websocket", True, ["client.rs", "handshake.rs"])
    files = [args[i + 1] for i, a in enumerate(args) if a == "--file"]
    assert files == ["codec/src/websocket/client.rs", "codec/src/websocket/handshake.rs"]
    whole = run.rust_args("websocket", False)
    assert [whole[i + 1] for i, a in enumerate(whole) if a == "--file"] == ["codec/src/websocket/**",
                                                                              "codec/src/websocket.rs"]


def test_triage_entries_match_without_line_numbers():
    triage = [{"match": "codec/src/x.rs: replace g -> u64 with 0", "verdict": "equivalent", "why": "w"}]
    assert run.triage_of(C, triage)["verdict"] == "equivalent"
    assert run.triage_of(D, triage) is None
    # a group by a Python mutant's definition
    group = [{"scope": "websocket/reference.py ServerOpening.*", "verdict": "gap", "why": "w"}]
    name = "conformance/frameproof/protocols/websocket/reference.py: core/AddNot in answer: if x:"
    assert run.triage_of(name, group, "ServerOpening.answer")["why"] == "w"
    assert run.triage_of(name, group, "WsDecoder._scan") is None
    assert run.triage_of(name.replace("websocket", "rpc"), group, "ServerOpening.answer") is None
    ms = [{"name": C, "outcome": "missed"}, {"name": D, "outcome": "missed"}, {"name": A, "outcome": "caught"}]
    c = run.score(ms, triage)
    assert (c["caught"], c["missed"], c["equivalent"], c["score"]) == (1, 1, 1, 50.0)


def test_every_mutant_of_the_committed_reports_has_a_requirement_area():
    """tools/mutation/areas.toml: each mutant of a report falls in a named area (none in "other"), and the
    areas place the code where its requirements are (a decoder's mutant under decoding, a session's under
    the echo server, a constant outside any function under the constants)."""
    import json
    areas = run.load_areas()
    seen = 0
    for f in sorted((ROOT / "results").glob("mutation-*.json")):
        for lang, protos in json.loads(f.read_text())["languages"].items():
            for proto, d in protos.items():
                if "by_area" in d:
                    seen += 1
                    assert "other" not in d["by_area"], (f.name, lang, proto, d["by_area"]["other"])
    assert seen or not list((ROOT / "results").glob("mutation-*.json")), "no committed report has areas"
    rust = {
        "codec/src/standard.rs:160:34: replace + with * in <impl FrameDecoder for StandardDecoder>::decode": "decoding",
        "codec/src/rpc/session.rs:40:9: replace == with != in ServerSession::feed": "echo server: sessions, replies, fast paths",
        "codec/src/standard/protocol.rs:16:54: replace | with ^": "protocol constants",
        "codec/src/length_field/protocol.rs:116:13: delete match arm (0, LengthSize::U8) in <impl Protocol for LengthField>::walker": "benchmark baselines",
        "codec/src/rpc/client.rs:19:9: replace RpcClient<T>::next_id -> u32 with 1": "load client: requests, replies, matching",
        "codec/src/websocket/handshake.rs:50:9: replace && with || in parse_request": "opening handshake",
    }
    for name, want in rust.items():
        assert run.area_of("rust", {"name": name}, areas) == want, name
    assert run.area_of("python", {"scope": "RpcDecoder._scan"}, areas) == "decoding"
    assert run.area_of("python", {"scope": "unary_endpoint.reply"}, areas) == "echo server: sessions, replies, fast paths"
    assert run.area_of("python", {"scope": "<module>"}, areas) == "protocol constants"
    assert run.py_scope("conformance/frameproof/protocols/rpc/reference.py", 1) == "<module>"


def test_code_that_runs_only_with_a_planted_bug_is_recognised(tmp_path):
    """A Python mutant there cannot change the unplanted implementation: the body of `if M == "x":`, of
    `if M == "x" or fault == "y":`, the first branch of `a if "x" in (fault, R.MUTANT) else b`; not the body of
    `if M != "x":` (which runs unplanted) nor the condition `n > 3` beside a switch."""
    src = tmp_path / "m.py"
    src.write_text(
        "def f(n, fault, M, R):\n"                                        # 1
        "    if M == 'x':\n"                                              # 2
        "        n += 1\n"                                                # 3
        "    if M == 'x' or fault == 'y':\n"                              # 4
        "        n += 2\n"                                                # 5
        "    r = n & 7 if 'z' in (fault, R.MUTANT) else n\n"              # 6
        "    if M != 'x':\n"                                              # 7
        "        n += 3\n"                                                # 8
        "    if n > 3 and M != 'w':\n"                                    # 9
        "        n += 4\n"                                                # 10
        "    s = n < 4 or fault == 'q' and n != 1\n"                      # 11
        "    return r, s\n")
    a = run.planted_analysis(src)
    inside = lambda row, col=8: run.equivalent_unplanted("core/NumberReplacer", row, col, a)  # noqa: E731
    assert inside(3) and inside(5) and inside(6, 9)
    assert not inside(6, 30) and not inside(8) and not inside(10) and not inside(9)
    # `and` beside a switch that names a bug: its other operands matter only with that bug planted
    assert inside(11, 35) and not inside(11, 8)


def _py_session(path: Path, rows):
    """A cosmic-ray session (its three tables) with (job, row, test_outcome) results on rpc's reference.py."""
    import sqlite3
    db = sqlite3.connect(str(path))
    db.executescript("CREATE TABLE work_items (job_id VARCHAR PRIMARY KEY);"
                     "CREATE TABLE mutation_specs (module_path VARCHAR, operator_name VARCHAR, operator_args JSON, "
                     "occurrence INTEGER, start_pos_row INTEGER, start_pos_col INTEGER, end_pos_row INTEGER, "
                     "end_pos_col INTEGER, definition_name VARCHAR, job_id VARCHAR PRIMARY KEY);"
                     "CREATE TABLE work_results (worker_outcome VARCHAR, output TEXT, test_outcome VARCHAR, diff TEXT, "
                     "job_id VARCHAR PRIMARY KEY);")
    for job, row, outcome in rows:
        db.execute("INSERT INTO work_items VALUES (?)", (job,))
        db.execute("INSERT INTO mutation_specs VALUES (?, 'core/AddNot', '{}', 0, ?, 4, ?, 10, 'f', ?)",
                   ("conformance/frameproof/protocols/rpc/reference.py", row, row, job))
        if outcome:
            db.execute("INSERT INTO work_results VALUES ('NORMAL', '', ?, '', ?)", (outcome, job))
    db.commit()
    db.close()


def test_python_network_pass_tests_the_codec_passs_survivors_only_and_its_catches_count(tmp_path, monkeypatch):
    import sqlite3
    monkeypatch.setattr(run, "WORK", tmp_path)
    module = ROOT / "conformance/frameproof/protocols/rpc/reference.py"
    lines = module.read_text().splitlines()
    row = next(i for i, t in enumerate(lines, 1) if "def reply_ok" in t) + 1  # code every run reaches
    base = tmp_path / "python" / "rpc"
    base.mkdir(parents=True)
    # without the codec pass, no network pass
    try:
        run.py_session(tmp_path / "tree", "rpc", True, "smoke")
        raise AssertionError("a network pass started without the codec pass's session")
    except SystemExit as e:
        assert "run the codec pass first" in str(e)
    _py_session(base / "session.sqlite", [("a", row, "KILLED"), ("b", row, "SURVIVED"), ("c", row, "SURVIVED"),
                                          ("d", row, None)])
    (base / "source.sha").write_text(run._digest(module))
    cfg, session = run.py_session(tmp_path / "tree", "rpc", True, "smoke")
    assert session == base / "net" / "session.sqlite" and "frameproof net" in cfg.read_text()
    db = sqlite3.connect(str(session))
    # exec would test exactly the survivors (b, c) and d, which the codec pass has not reached yet
    assert dict(db.execute("SELECT job_id, test_outcome FROM work_results")) == {"a": "KILLED"}
    db.execute("INSERT INTO work_results VALUES ('NORMAL', '', 'KILLED', '', 'b')")
    db.commit()
    db.close()
    got = [m["outcome"] for m in run.collect()["python"]["rpc"]]
    assert got == ["caught", "caught", "missed", "untested"]  # b caught by the network pass
    # a second call keeps the network pass's results (resumable); a changed module remakes it
    run.py_session(tmp_path / "tree", "rpc", True, "smoke")
    assert sqlite3.connect(str(session)).execute("SELECT count(*) FROM work_results").fetchone() == (2,)
    (base / "net" / "source.sha").write_text("made from another version of the module")
    assert run.collect()["python"]["rpc"][1]["outcome"] == "missed"  # a stale network pass is not read


def test_a_workers_test_command_runs_the_copy_it_is_started_in(tmp_path):
    """--jobs N: one test command for every cosmic-ray http worker, each in a copy of its own; the command's
    inner commands (split by frameproof with shlex, no shell) must name the worker's copy, not a template."""
    import shlex
    import subprocess
    argv = shlex.split(run.py_test_command(run.WORKER_TREE, "websocket", True, "smoke"))
    assert argv[:2] == ["bash", "-c"]
    # the command as bash runs it, with `echo` in front: what it would execute, in a worker's directory
    shown = subprocess.run(["bash", "-c", argv[2].replace("eval", "echo", 1)] + argv[3:], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert run.WORKER_TREE not in shown
    # the pytestee, a pyserver for the default codec and one for each of PY_NET_CODECS, the pyload
    assert shown.count(f"PYTHONPATH={tmp_path}/conformance") == 3 + len(run.PY_NET_CODECS["websocket"])
    assert "PYTHONPATH=" + str(run.WORK) not in shown


def test_steps_reach_the_rust_suite_through_its_environment():
    """--steps: the network pass's steps the Rust suite runs (FRAMEPROOF_NET_STEPS, read by
    testee/tests/frameproof_suite.rs, whose STEPS lists every name run.py's help names)."""
    env = run.rust_env(["websocket"], True, "smoke", "x", "client,client-deflate")
    assert env["FRAMEPROOF_NET_STEPS"] == "client,client-deflate"
    assert run.rust_env(["websocket"], True, "smoke", "x")["FRAMEPROOF_NET_STEPS"] == ""  # all of them
    suite = (ROOT / "reference-impls/rust/testee/tests/frameproof_suite.rs").read_text()
    steps = suite.split("const STEPS: &[&str] = &[", 1)[1].split("];", 1)[0]
    names = [s.strip().strip('"') for s in steps.split(",") if s.strip()]
    assert names == ["codec", "server", "server-limit", "server-deflate", "server-endpoint", "client-deflate", "client-endpoint", "client", "raw",
                     "load-counts", "micro"]
    assert all(f'step("{n}")' in suite for n in names if n not in ("server-deflate", "server-endpoint"))
    assert '(!net || step("codec"))' in suite  # the codec pass (no FRAMEPROOF_NET) always runs the codec suite
    assert '("server-deflate", WS_DEFLATE), ("server-endpoint", WS_ENDPOINT)' in suite


def test_what_no_run_has_tested_is_untested_not_missed(tmp_path):
    """The report's Rust rows: a codec-suite survivor no network run has reached yet is untested (not missed),
    and so is a listed mutant no run reached; a run's mutant whose line has moved since matches its listed name."""
    E_ = "codec/src/x.rs:40:1: replace k -> u64 with 0"
    codec = _out(tmp_path / "files-x", caught=[A], missed=[B, C, D])
    net = _out(tmp_path / "net", caught=[B], missed=[C])
    moved = "codec/src/x.rs:31:1: replace h -> u64 with 1"  # D, two lines further down now
    got = run.rust_collected([codec, net], [A, B, C, moved, E_])
    assert got == {A: "caught", B: "caught", C: "missed", D: "untested", E_: "untested"}
    assert run.rust_collected([codec], [A, B, C, D]) == {A: "caught", B: "untested", C: "untested", D: "untested"}


def test_the_network_pass_counts_only_for_the_codec_suites_survivors(tmp_path):
    """cargo-mutants' --re over-selects a few mutants of other files; the network pass's outcome for one (a
    timeout on a busy machine) must not overrule the run that was meant for it."""
    codec = _out(tmp_path / "files-x", caught=[A], missed=[B])
    files = _out(tmp_path / "net-files-client", missed=[C])
    net = _out(tmp_path / "net", caught=[B], timeout=[C])
    assert run.rust_collected([codec, files, net], [A, B, C]) == {A: "caught", B: "caught", C: "missed"}


def test_a_mutant_tested_again_at_its_new_line_counts_once(tmp_path):
    """Code moved by three lines and its mutants run again (--files --re): the old run's names at the old lines
    are not counted beside the new ones."""
    old = "codec/src/x.rs:10:5: replace + with * in f"
    new = "codec/src/x.rs:13:5: replace + with * in f"
    first = _out(tmp_path / "all", caught=[old, C])
    again = _out(tmp_path / "net-files-x", caught=[new])
    assert run.rust_collected([first, again], [new, C]) == {new: "caught", C: "caught"}
    assert run.rust_collected([first], [new, C]) == {old: "caught", C: "caught"}  # moved, not run again


def test_a_run_started_again_keeps_every_invocations_outcomes_and_tests_none_twice(tmp_path):
    """cargo-mutants keeps one earlier output (mutants.out.old): a run stopped and started three times lost
    its first invocation's outcomes, and --iterate tested its missed mutants again. resume_args archives each
    invocation's outcomes in history/N and excludes every mutant they name."""
    run_dir = _out(tmp_path / "net", caught=[A], missed=[B])
    args = run.resume_args(run_dir)
    assert sorted(args[1::2]) == sorted("^" + run.re.escape(n) + "$" for n in (A, B))
    assert set(args[0::2]) == {"--exclude-re"}
    # the next invocation: cargo-mutants moves mutants.out aside and writes a new one
    import shutil
    shutil.rmtree(run_dir / "mutants.out")
    _out(run_dir, caught=[C], timeout=[D])
    assert run.rust_outcomes(run_dir) == {A: "caught", B: "missed", C: "caught", D: "timeout"}
    args = run.resume_args(run_dir)
    assert len(args) == 8 and sorted((run_dir / "history").iterdir()) == [run_dir / "history" / "1",
                                                                           run_dir / "history" / "2"]
    # a later outcome of a mutant counts (B tested again after a suite gained a case)
    shutil.rmtree(run_dir / "mutants.out")
    _out(run_dir, caught=[B])
    assert run.rust_outcomes(run_dir)[B] == "caught"
    run.resume_args(run_dir)
    run.resume_args(run_dir)  # started again before cargo-mutants wrote anything: archived once
    shutil.rmtree(run_dir / "mutants.out")
    (run_dir / "mutants.out").mkdir()
    run.resume_args(run_dir)  # an invocation that ended before its first outcome adds nothing
    assert len(list((run_dir / "history").iterdir())) == 3
    assert run.resume_args(run_dir, again=True) == []


def test_a_python_session_reads_the_version_it_mutated_after_an_edit(tmp_path, monkeypatch):
    # a module in a git repository, a session stamped with its digest, then an edit that moves its lines
    import subprocess
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    mod = repo / "pkg" / "m.py"
    mod.write_text("def f(x):\n    return x + 1\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    monkeypatch.setattr(run, "ROOT", repo)
    monkeypatch.setattr(run, "WORK", tmp_path / "work")
    session = tmp_path / "work" / "python" / "p" / "session.sqlite"
    session.parent.mkdir(parents=True)
    (session.parent / "source.sha").write_text(run._digest(mod))
    assert run.session_source(session, "pkg/m.py") == mod  # unchanged: the working tree's file
    mod.write_text("# a new first line\ndef f(x):\n    return x + 1\n")
    old = run.session_source(session, "pkg/m.py")
    assert old != mod and old.read_text().splitlines()[1] == "    return x + 1"
    assert run.py_scope("pkg/m.py", 2, old) == "f"  # the definitions of that version, not today's
    assert run.session_source(session, "pkg/m.py") == old  # kept under WORK/sources


def test_a_fresh_machine_goes_on_from_the_committed_report(tmp_path, monkeypatch):
    """seed_rust: .mutation/ empty (a new checkout), the newest report naming every mutant's outcome gives
    them back as run directories, read as the runs that made it: a survivor the network pass tested stays
    missed and is not its target again; one it had not reached is untested and is its target; a protocol
    with runs of its own is left alone."""
    monkeypatch.setattr(run, "WORK", tmp_path / ".mutation")
    rep = tmp_path / "results" / "mutation-2026-12-06.json"
    rep.parent.mkdir()
    rep.write_text(json.dumps({"generated": "2026-12-06", "languages": {"rust": {"websocket": {"mutants": {
        A: "caught", B: "missed", C: "untested", D: "unviable"}}}}}))
    monkeypatch.setattr(run, "ROOT", tmp_path)
    assert run.seed_rust("websocket") == rep
    runs = sorted((tmp_path / ".mutation" / "rust" / "websocket").glob("*"))
    assert [d.name for d in runs] == ["net-files-seed", "seed"]
    assert run.rust_collected(runs, [A, B, C, D]) == {A: "caught", B: "missed", C: "untested", D: "unviable"}
    assert run.net_targets(runs, None) == [C]
    assert run.seed_rust("websocket") is None  # runs of its own now: nothing taken again
    # the report carries the sections of protocols no run here has (a Python session is not kept)
    assert set(run.carried("rust", {"websocket"})) == set()
    assert run.carried("rust", set())["websocket"]["carried_from"] == "results/mutation-2026-12-06.json"


def test_a_mutant_the_network_pass_check_finds_unviable_is_unviable(tmp_path):
    """check_unviable: a codec-suite survivor (or a mutant an earlier network pass counted caught because its
    build inside the test failed) that does not build in the whole workspace counts as unviable."""
    codec = _out(tmp_path / "all", caught=[A, C], missed=[B, D])
    net = _out(tmp_path / "net", caught=[D])
    (net / "check" / "mutants.out").mkdir(parents=True)
    (net / "check" / "mutants.out" / "unviable.txt").write_text(f"{B}\n{C}\n")
    assert run.rust_outcomes(net) == {B: "unviable", C: "unviable", D: "caught"}
    assert run.merged_outcomes([codec, net]) == {A: "caught", B: "unviable", C: "unviable", D: "caught"}
    assert run.rust_collected([codec, net], [A, B, C, D]) == {A: "caught", B: "unviable", C: "unviable", D: "caught"}
