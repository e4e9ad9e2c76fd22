#!/usr/bin/env bash
# Builds the release binaries fp-testee, fp-server and fp-load into target/release/.
# Needs only rustup/cargo (crates come from crates.io; protobuf is compiled by protox, so no
# protoc). Idempotent: a second run is a no-op build.
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
# Heavy builds on the shared machine are serialised through one lock.
lock=()
if command -v flock >/dev/null 2>&1; then
  lock=(flock /tmp/frameproof-build.lock)
fi
"${lock[@]}" cargo build --release --locked --bins
for b in fp-testee fp-server fp-load; do
  test -x "target/release/$b" || { echo "build.sh: target/release/$b missing" >&2; exit 1; }
done
echo "build.sh: built target/release/{fp-testee,fp-server,fp-load}"
