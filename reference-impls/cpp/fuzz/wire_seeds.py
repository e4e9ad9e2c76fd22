"""Seed corpus of the wire_fuzz target (rpc, websocket) from the decode vectors, in its own input
layout (wire_fuzz.cpp): run with the suite's Python from the repository root,
    .venv/bin/python reference-impls/cpp/fuzz/wire_seeds.py OUT_DIR
Each decode vector whose limits are in the target's table is written twice: whole and in small
chunks. Prints the number of entries."""
import sys
from pathlib import Path

from frameproof.vectors import load

LIMITS = [0, 16, 64, 100, 1024, 65535, 70000, 1]


def entries():
    for proto, pid in (("rpc", 0), ("websocket", 1)):
        for v in load(proto):
            if v.kind != "decode":
                continue
            c = v.codec
            limit = c.max_payload
            msg = getattr(c, "max_message", 0)
            if limit not in LIMITS or msg not in LIMITS:
                continue
            role = 1 if getattr(c, "role", "server") == "client" else 0
            cfg = LIMITS.index(msg) << 5 | LIMITS.index(limit) << 2 | role << 1 | pid
            for ctl in (0, 5):
                yield f"{proto}-{v.id}-{ctl}", bytes([cfg, ctl]) + v.data[:4096]


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, data in entries():
        (out / name).write_bytes(data)
        n += 1
    print(n)


if __name__ == "__main__":
    main()
