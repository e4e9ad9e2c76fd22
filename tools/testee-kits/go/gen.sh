#!/usr/bin/env bash
# Regenerates testeepb/testee.pb.go from the suite's schema (only needed when the schema changes;
# the generated file is checked in). Needs protoc (apt-get install -y protobuf-compiler) and
# protoc-gen-go (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12).
set -euo pipefail
cd "$(dirname "$0")"
proto_dir=${PROTO_DIR:-../../../schemas}
PATH="$(go env GOPATH)/bin:$PATH"
protoc -I "$proto_dir" \
  --go_out=testeepb --go_opt=paths=source_relative \
  --go_opt=Mtestee.proto=example.com/frameproof-testee/testeepb \
  testee.proto
