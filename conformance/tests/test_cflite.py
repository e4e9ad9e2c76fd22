"""The ClusterFuzzLite/OSS-Fuzz build (.clusterfuzzlite/, conformance/FUZZING.md) outside a container.

* tools/cflite_corpus.py, the standard-library seed generator build.sh uses inside the build
  image, writes exactly the inputs of the suite's own `frameproof.fuzz_corpus.write_corpus`.
* tools/cflite_local.sh runs .clusterfuzzlite/build.sh with OSS-Fuzz-like variables (installing
  clang, nightly Rust and cargo-fuzz where missing, never skipping), every expected target lands in
  $OUT with its seed corpus and options, and runs its seeds clean (-runs=0). Build products are
  cached in reports/cflite/cache: about 2 s when warm, under a minute cold (2 shared cores).
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from frameproof import fuzz_corpus

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {"rust_decode": {0, 1, 2, 3}, "cpp_decode_fuzz": {0, 1}, "cpp_wire_fuzz": {2, 3}}
MAX_LEN = 8192 - 3  # FUZZ_MAX_LEN's default minus the layout's 3 bytes, as tools/fuzz.sh cuts the seeds


def _files(d: Path) -> dict:
    return {p.name: p.read_bytes() for p in d.iterdir()}


def test_light_corpus_generator_matches_the_suite(tmp_path):
    fuzz_corpus.write_corpus(tmp_path / "suite", max_len=MAX_LEN)
    suite = _files(tmp_path / "suite")
    subprocess.run([sys.executable, str(ROOT / "tools/cflite_corpus.py"), str(tmp_path / "light")], check=True,
                   capture_output=True)
    assert _files(tmp_path / "light") == suite
    assert {e[0] for e in suite.values()} == {0, 1, 2, 3}
    # a target's zip: just the inputs of its protocols
    for target, protos in TARGETS.items():
        z = tmp_path / f"{target}_seed_corpus.zip"
        subprocess.run([sys.executable, str(ROOT / "tools/cflite_corpus.py"), "--zip", str(z),
                        "--protocols", ",".join(map(str, sorted(protos)))], check=True, capture_output=True)
        with zipfile.ZipFile(z) as f:
            got = {n: f.read(n) for n in f.namelist()}
        assert got == {n: b for n, b in suite.items() if b[0] in protos}, target


def test_cflite_build_outside_a_container_runs_every_seed_clean():
    p = subprocess.run(["bash", str(ROOT / "tools/cflite_local.sh")], capture_output=True, text=True, timeout=1800)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    with tempfile.TemporaryDirectory() as d:
        fuzz_corpus.write_corpus(Path(d), max_len=MAX_LEN)
        suite = _files(Path(d))
    for target, protos in TARGETS.items():
        m = re.search(rf"^== {target}: clean, (\d+) seeds run once \(executed units (\d+)", out, re.M)
        assert m, f"{target} not reported clean:\n{out[-4000:]}"
        want = sum(1 for b in suite.values() if b[0] in protos)
        assert int(m.group(1)) == want, (target, m.group(1), want)
        assert int(m.group(2)) >= want, out  # libFuzzer ran each seed (plus its empty input)
