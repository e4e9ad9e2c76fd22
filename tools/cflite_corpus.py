#!/usr/bin/env python3
"""Seed corpus of the native libFuzzer targets from the decode vectors, with the standard library only.

The same inputs, byte for byte and under the same file names, as ``./frameproof fuzz-corpus DIR``
(frameproof.fuzz_corpus.write_corpus); conformance/tests/test_cflite.py checks that they agree.
Why a copy: importing frameproof.fuzz_corpus pulls in the whole suite (hypothesis, the protobuf
testee bindings and the Kaitai oracle, which tools/gen.sh generates with java + maven), far too much
for the ClusterFuzzLite/OSS-Fuzz build image, whose python3 has nothing installed. Input layout:
conformance/FUZZING.md (byte 0 the protocol's corpus_id, byte 1 limit index << 5 | the protocol's
bits, byte 2 chunking, then the stream). A protocol added to the suite needs its entry in CODECS
below (the test fails until it has one).

  cflite_corpus.py [--vectors DIR] [--max-len N] [--protocols 0,1] (--zip OUT.zip | OUT_DIR)
"""
from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

# frameproof.fuzz_corpus.LIMITS and frameproof.protocols.length_field.CORPUS_PROFILES
LIMITS = [0, 16, 64, 100, 1024, 65535, 70000, 1]
PROFILES = [(0, 2), (0, -2), (0, 4), (0, -4), (0, 1), (0, 0), (2, 2), (4, -4),
            (1, 1), (3, 0), (1, -4), (5, 0), (1, 2), (2, -2), (7, 4), (0, 0)]


def _max_payload(c: dict) -> int:
    return int((c.get("limits") or {}).get("max_payload", 0))


def _standard(c: dict):
    return 0, _max_payload(c), 0


def _length_field(c: dict):
    lf = c.get("length_field") or {}
    prof = (int(lf.get("offset", 0)), int(lf.get("size", 2)))
    return 1, _max_payload(c), PROFILES.index(prof) if prof in PROFILES else None


def _rpc(c: dict):
    return 2, int((c.get("rpc") or {}).get("max_body", 0)), 0


def _websocket(c: dict):
    w = c.get("websocket") or {}
    role, mm = w.get("role", "server"), int(w.get("max_message", 0))
    if mm not in LIMITS or role not in ("server", "client"):
        return 3, _max_payload(c), None
    return 3, _max_payload(c), (role == "client") | LIMITS.index(mm) << 1


# protocol name -> codec JSON -> (corpus_id, limit, the protocol's bits of byte 1 or None)
CODECS = {"standard": _standard, "length-field": _length_field, "rpc": _rpc, "websocket": _websocket}


def parse_bytes(v) -> bytes:  # frameproof.vectors.parse_bytes
    if v is None:
        return b""
    if isinstance(v, str):
        return bytes.fromhex(v)
    out = bytearray()
    for part in v:
        out += bytes.fromhex(part) if isinstance(part, str) else bytes.fromhex(part["repeat"]) * int(part["count"])
    return bytes(out)


def entries(vector_dir: Path, max_len: int, protocols=None):
    """(file name, input) for every decode vector (y/n/i), whole (byte 2 = 0) and chunked (0x35)."""
    for pdir in sorted(p for p in vector_dir.iterdir() if p.is_dir()):
        proto = pdir.name
        if proto not in CODECS:
            raise SystemExit(f"cflite_corpus.py: no corpus layout for protocol {proto!r} (add it to CODECS)")
        for path in sorted(pdir.glob("*.json")):
            raw = json.loads(path.read_text(encoding="utf-8"))
            vid = raw["id"]
            if raw.get("kind", "decode") != "decode" or vid.split("_", 1)[0] not in ("y", "n", "i"):
                continue
            codec = raw.get("codec", {"protocol": proto})
            pid, limit, bits = CODECS[codec["protocol"]](codec)
            if limit not in LIMITS or bits is None or (protocols is not None and pid not in protocols):
                continue
            data = parse_bytes(raw.get("bytes"))[:max_len]
            for ctl in (0, 0x35):
                yield f"{proto}-{vid}-{ctl:02x}", bytes([pid, LIMITS.index(limit) << 5 | bits, ctl]) + data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="directory to write the inputs to")
    ap.add_argument("--zip", help="write a flat zip (OSS-Fuzz's <target>_seed_corpus.zip) instead")
    ap.add_argument("--vectors", default=str(Path(__file__).resolve().parents[1] / "conformance" / "vectors"))
    ap.add_argument("--max-len", type=int, default=8189, help="cut of each stream (default 8189: "
                    "FUZZ_MAX_LEN 8192 minus the 3 bytes of layout)")
    ap.add_argument("--protocols", help="only these corpus ids, e.g. 0,1 (default: all)")
    a = ap.parse_args(argv)
    if bool(a.out) == bool(a.zip):
        ap.error("give an output directory or --zip FILE")
    protos = None if a.protocols is None else {int(x) for x in a.protocols.split(",") if x}
    found = list(entries(Path(a.vectors), a.max_len, protos))
    if a.zip:
        Path(a.zip).parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(a.zip, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in found:
                z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)  # fixed dates: reproducible
    else:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, data in found:
            (out / name).write_bytes(data)
    print(len(found))
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
