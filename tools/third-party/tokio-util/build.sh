#!/usr/bin/env bash
# Builds target/release/fp-tokio-util-testee: the frameproof testee around tokio-util's
# LengthDelimitedCodec. Needs only rustup/cargo (crates from crates.io, pinned by Cargo.lock;
# protobuf compiled by protox, so no protoc). Idempotent: a second run is a no-op build.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../cargo_build.sh fp-tokio-util-testee
echo "build.sh: built $(pwd)/target/release/fp-tokio-util-testee"
