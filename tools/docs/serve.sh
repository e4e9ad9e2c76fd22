#!/usr/bin/env bash
# Builds the docs site (tools/docs/build.sh) and serves it on http://127.0.0.1:PORT/ (default 8000).
#   bash tools/docs/serve.sh [--no-build] [PORT]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=1
if [ "${1:-}" = "--no-build" ]; then build=0; shift; fi
port=${1:-${PORT:-8000}}
if [ "$build" = 1 ] || [ ! -f "$root/site/index.html" ]; then
  bash "$root/tools/docs/build.sh"
fi
echo "serving $root/site on http://127.0.0.1:$port/ (Ctrl-C to stop)"
exec "$root/.venv/bin/python" -m http.server "$port" --bind 127.0.0.1 --directory "$root/site"
