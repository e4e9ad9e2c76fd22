#!/usr/bin/env bash
# Builds the docs site (tools/docs/build.sh) and serves it on http://127.0.0.1:${PORT:-8000}/
#   bash tools/docs/serve.sh [PORT]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
port=${1:-${PORT:-8000}}
bash "$root/tools/docs/build.sh"
echo "serving $root/site on http://127.0.0.1:$port/ (Ctrl-C to stop)"
exec "$root/.venv/bin/python" -m http.server "$port" --bind 127.0.0.1 --directory "$root/site"
