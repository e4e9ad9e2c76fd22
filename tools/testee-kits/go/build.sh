#!/usr/bin/env bash
# Builds the Go testee kit: ./testee (needs Go 1.23+; modules come from the Go module proxy).
set -euo pipefail
cd "$(dirname "$0")"
go mod download
go vet ./...
go build -o testee .
echo "built $(pwd)/testee"
