#!/usr/bin/env bash
# Builds the TypeScript testee kit: dist/main.js (needs Node.js 18+ and npm; packages come from
# the npm registry, pinned by package-lock.json). Run it with: node dist/main.js
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npx --no-install tsc -p .
echo "built $(pwd)/dist/main.js"
