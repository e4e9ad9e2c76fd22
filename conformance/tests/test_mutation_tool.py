"""tools/mutation/run.py's reading of cargo-mutants' outputs (the report's Rust scores)."""
from __future__ import annotations

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


def test_triage_entries_match_without_line_numbers():
    triage = [{"match": "codec/src/x.rs: replace g -> u64 with 0", "verdict": "equivalent", "why": "w"}]
    assert run.triage_of(C, triage)["verdict"] == "equivalent"
    assert run.triage_of(D, triage) is None
    ms = [{"name": C, "outcome": "missed"}, {"name": D, "outcome": "missed"}, {"name": A, "outcome": "caught"}]
    c = run.score(ms, triage)
    assert (c["caught"], c["missed"], c["equivalent"], c["score"]) == (1, 1, 1, 50.0)
