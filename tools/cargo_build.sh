#!/usr/bin/env bash
# Shared by the Rust build scripts: finds cargo (rustup's env if needed) and builds the release
# binaries of the package in the current directory, serialised through the machine's build lock.
#   bash tools/cargo_build.sh BIN...   (from the package's directory; checks each BIN was built)
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "build.sh: cargo not found; install Rust with rustup (https://rustup.rs)" >&2
  exit 1
fi
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/frameproof-build.lock)
"${lock[@]}" cargo build --release --locked --bins
for b in "$@"; do
  test -x "target/release/$b" || { echo "build.sh: target/release/$b missing" >&2; exit 1; }
done
