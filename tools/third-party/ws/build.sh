#!/usr/bin/env bash
# Installs the ws package and protobufjs (npm, pinned by package-lock.json) into node_modules/ for server.js and
# testee.js, the frameproof wrappers around it. Needs Node 18+ and npm. Cached: npm runs only when
# node_modules is missing or older than package-lock.json (a second run takes well under a second).
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "build.sh: node not found (install Node 18+)" >&2; exit 1; }
if [ ! -f node_modules/.fp-installed ] || [ package-lock.json -nt node_modules/.fp-installed ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules/.fp-installed
fi
node -e 'const ws = require("ws"); require("protobufjs"); if (!ws.WebSocketServer || !ws.Sender) process.exit(1)'
echo "build.sh: ws $(node -p 'require("ws/package.json").version') in $(pwd)/node_modules"
