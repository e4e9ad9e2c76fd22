#!/usr/bin/env bash
# Builds bin/fp-gorilla-server (and bin/fp-gorilla-testee once it exists): frameproof wrappers around
# github.com/gorilla/websocket (Go module proxy, pinned by go.mod/go.sum). Needs Go 1.23+.
# Cached: a binary newer than every source is left alone (no build lock taken); otherwise `go build`
# under the shared build lock (its own cache makes a rebuild take seconds).
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && PATH="/usr/local/go/bin:$PATH"; }
command -v go >/dev/null || { echo "build.sh: go not found (install Go 1.23+)" >&2; exit 1; }
for cmd in cmd/*/; do
  name=$(basename "$cmd")
  if [ -x "bin/$name" ] && [ -z "$(find cmd internal go.mod go.sum -newer "bin/$name" -print -quit)" ]; then
    echo "build.sh: bin/$name is up to date"
    continue
  fi
  go mod download
  flock /tmp/frameproof-build.lock go build -trimpath -o "bin/$name" "./$cmd"
  echo "build.sh: built $(pwd)/bin/$name"
done
