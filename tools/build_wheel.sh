#!/usr/bin/env bash
# Builds the frameproof wheel that needs only Python: the package with its generated Kaitai oracle
# and testee bindings (conformance/frameproof/_generated, made by tools/gen.sh) and a copy of the
# specs, schemas and vectors under frameproof/_data. No Java is needed to install or run it.
#   bash tools/build_wheel.sh [OUT_DIR]      (default dist/); prints the wheel's path last
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/dist}")
cd "$root"
bash tools/bootstrap.sh >&2   # the venv, and the generated code the wheel carries
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp conformance/pyproject.toml "$stage/"
cp -r conformance/frameproof "$stage/frameproof"
find "$stage/frameproof" -name __pycache__ -prune -exec rm -rf {} +
data="$stage/frameproof/_data"
mkdir -p "$data/conformance"
cp -r spec "$data/spec"
mkdir -p "$data/schemas" && cp schemas/*.ksy schemas/*.proto "$data/schemas/"
cp -r conformance/vectors "$data/conformance/vectors"
mkdir -p "$out"
.venv/bin/pip wheel -q --no-deps --no-build-isolation -w "$out" "$stage" >&2
ls -t "$out"/frameproof-*.whl | head -1
