#!/usr/bin/env bash
# Builds target/release/fp-tokio-util-testee: the frameproof testee around tokio-util's
# LengthDelimitedCodec. Needs only rustup/cargo (crates from crates.io, pinned by Cargo.lock;
# protobuf compiled by protox, so no protoc). Idempotent: a second run is a no-op build.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "build.sh: cargo not found; install Rust with rustup (https://rustup.rs)" >&2
  exit 1
fi
# Heavy builds on the shared machine are serialised through the same lock as reference-impls/*.
lock=()
if command -v flock >/dev/null 2>&1; then
  lock=(flock /tmp/frameproof-build.lock)
fi
"${lock[@]}" cargo build --release --locked --bins
test -x target/release/fp-tokio-util-testee || { echo "build.sh: target/release/fp-tokio-util-testee missing" >&2; exit 1; }
echo "build.sh: built $(pwd)/target/release/fp-tokio-util-testee"
