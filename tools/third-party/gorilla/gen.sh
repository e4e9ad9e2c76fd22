#!/usr/bin/env bash
# Regenerates internal/testeepb/testee.pb.go from schemas/testee.proto (only when the schema changes; the
# generated file is checked in). Needs protoc and protoc-gen-go v1.36.12
# (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12).
set -euo pipefail
cd "$(dirname "$0")"
PATH="$(go env GOPATH)/bin:$PATH"
protoc -I ../../../schemas --go_out=internal/testeepb --go_opt=paths=source_relative \
  --go_opt=Mtestee.proto=frameproof.local/third-party/gorilla/internal/testeepb testee.proto
