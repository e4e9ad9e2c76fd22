#!/usr/bin/env bash
# Mutation testing of the reference implementations with frameproof as the test (issue 26).
#   bash tools/mutation.sh run --lang rust [--protocol P] [--shard K/N] [--net]   # hours: resumable
#   bash tools/mutation.sh run --lang python [--protocol P] [--net]               # hours: resumable
#   bash tools/mutation.sh sample     # the fixed sample CI runs: every mutant must be caught
#   bash tools/mutation.sh report     # results/mutation-DATE.{md,json} from what the runs left in .mutation/
# Installs what it needs: cargo-mutants (crates.io) and cosmic-ray (PyPI), pinned. Needs the suite's
# venv (tools/bootstrap.sh) and, for Rust, cargo. Work files and outcomes are kept in .mutation/.
#   bash tools/mutation.sh cargo-tools  # only install cargo-mutants (tools/test.sh: while it bootstraps)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# cosmic-ray rewrites reference.py in a copy, often within the second and at the same size: a
# __pycache__ entry written for the original would then be run instead of the mutant
export PYTHONDONTWRITEBYTECODE=1
cargo_tools() {
  if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  if ! cargo mutants --version 2>/dev/null | grep -q '^cargo-mutants 27\.'; then
    cargo install --locked cargo-mutants@27.1.0
  fi
}
if [ "${1:-}" = cargo-tools ]; then
  cargo_tools
  exit
fi
[ -x .venv/bin/frameproof ] || bash tools/bootstrap.sh
if ! .venv/bin/python -c 'import cosmic_ray' 2>/dev/null; then
  .venv/bin/pip install -q 'cosmic-ray==8.7.0'
fi
[ "${1:-}" = report ] || cargo_tools
exec .venv/bin/python tools/mutation/run.py "$@"
