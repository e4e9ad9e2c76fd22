#!/usr/bin/env bash
# Builds bin/fp-gorilla-server (and bin/fp-gorilla-testee): frameproof wrappers around
# github.com/gorilla/websocket (Go module proxy, pinned by go.mod/go.sum). Needs Go 1.23+.
# Cached: `go build` rebuilds nothing when no source changed (a second run takes about a second).
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && PATH="/usr/local/go/bin:$PATH"; }
command -v go >/dev/null || { echo "build.sh: go not found (install Go 1.23+)" >&2; exit 1; }
go mod download
for cmd in cmd/*/; do
  name=$(basename "$cmd")
  flock /tmp/frameproof-build.lock go build -trimpath -o "bin/$name" "./$cmd"
  echo "build.sh: built $(pwd)/bin/$name"
done
