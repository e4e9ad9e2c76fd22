#!/usr/bin/env bash
# The main job: on a fresh machine, install what the suite needs, build every bundled
# reference implementation (each build.sh installs its own toolchain packages), and run
# the conformance suites against all of them, printing the results matrix.
# Reports: reports/matrix.md, reports/matrix.json (per-test detail in reports/matrix.log).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
unset PYTHONDONTWRITEBYTECODE  # keep compiled bytecode: see tools/test.sh
bash "$root/tools/bootstrap.sh"
exec "$root/frameproof" matrix "$@"
