#!/usr/bin/env bash
# Sets up everything the Python suite needs on a fresh machine: a venv in .venv with the
# `frameproof` package (editable), then the generated oracle/bindings (tools/gen.sh).
# Idempotent and quick when already done.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.frameproof-installed
if [ ! -f "$stamp" ] || [ conformance/pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e "conformance[dev]"
  touch "$stamp"
fi
# etcd (Debian's etcd-server) for rpc's service-discovery checks on a real store (spec/discovery.md
# §8); the suite starts its own on 127.0.0.1 and skips those checks, saying so, where there is none
if ! command -v etcd >/dev/null && command -v apt-get >/dev/null; then
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server etcd-client; } >&2 \
    || echo "bootstrap: could not install etcd-server; the etcd checks will be skipped" >&2
fi
gen=conformance/frameproof/_generated
if [ ! -f "$gen/testee_pb2.py" ] || [ -n "$(find schemas -newer "$gen/testee_pb2.py" -print -quit)" ]; then
  bash tools/gen.sh
fi
# the package's bytecode, once, where the environment lets Python keep it (tools/test.sh)
[ -n "${PYTHONDONTWRITEBYTECODE:-}" ] || .venv/bin/python -m compileall -q conformance/frameproof >/dev/null || true
