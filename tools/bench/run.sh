#!/usr/bin/env bash
# The benchmark runner, one command: builds what it runs (Rust workspace incl. the baselines,
# C#), makes sure matplotlib is in the venv, then `frameproof bench "$@"`, which validates every
# load client, runs the matrix and writes results/bench-<date>.{json,md} and PNG charts.
#   bash tools/bench/run.sh            # full run (about an hour: 660 figures; --protocols/--concurrency narrow it)
#   bash tools/bench/run.sh --quick    # ~1 min
# Needs root for the network-namespace section (skipped otherwise, or with --no-netns).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
py=.venv/bin/python
[ -x "$py" ] || bash tools/bootstrap.sh
if [ "${FPBENCH_NO_BUILD:-}" != 1 ]; then
  bash reference-impls/rust/build.sh >/dev/null
  [ -f reference-impls/csharp/impl.json ] && { bash reference-impls/csharp/build.sh >/dev/null || echo "run.sh: C# build failed; its programs are skipped if missing" >&2; }
  [ -f reference-impls/cpp/impl.json ] && { bash reference-impls/cpp/build.sh >/dev/null || echo "run.sh: C++ build failed" >&2; }
  bash tools/bench/floor/build.sh >/dev/null || echo "run.sh: the floor (tools/bench/floor) did not build; its rows are skipped" >&2
fi
"$py" -c 'import matplotlib' 2>/dev/null || "$py" -m pip install -q matplotlib
export FPBENCH_COMMAND="bash tools/bench/run.sh $*"
exec "$py" -m frameproof.cli bench "$@"
