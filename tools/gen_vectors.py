#!/usr/bin/env python3
"""Writes conformance/vectors/<protocol>/*.json from each registered protocol's declarations
(conformance/frameproof/protocols/<name>/vectors_gen.py; helpers in frameproof.vectorgen).

Every vector states its expectation by hand; the generator refuses to write a vector on which
the Kaitai-based oracle disagrees. Re-run after editing:

    .venv/bin/python tools/gen_vectors.py [--check] [--protocol NAME]

--check writes nothing and fails if a file on disk differs from what would be written.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "conformance"))

from frameproof.vectorgen import VECTORS, Codec, F, add_decode, add_encode, add_match, collect  # noqa: E402,F401
from frameproof.oracle import Error, Frame  # noqa: E402,F401

OUT = ROOT / "conformance" / "vectors"
collect()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--protocol", action="append", help="only this protocol (repeatable)")
    args = ap.parse_args()
    bad = 0
    for proto, vecs in VECTORS.items():
        if args.protocol and proto not in args.protocol:
            continue
        ids = [v["id"] for v in vecs]
        assert len(ids) == len(set(ids)), f"duplicate ids in {proto}"
        d = OUT / proto
        texts = {v["id"]: json.dumps(v, indent=1, ensure_ascii=False) + "\n" for v in vecs}
        if args.check:
            on_disk = {p.stem: p.read_text(encoding="utf-8") for p in d.glob("*.json")}
            for k in sorted(set(texts) | set(on_disk)):
                if texts.get(k) != on_disk.get(k):
                    print(f"differs: {proto}/{k}.json")
                    bad += 1
            continue
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        for k, t in texts.items():
            (d / f"{k}.json").write_text(t, encoding="utf-8")
        print(f"{proto}: {len(vecs)} vectors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
