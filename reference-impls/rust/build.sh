#!/usr/bin/env bash
# Builds the release binaries fp-testee, fp-server, fp-load, fp-autobahn-client and fp-microbench
# into target/release/; where protoc is installed, fp-testee again with the etcd registry scripts
# (cargo feature discovery-etcd: etcd-client compiles etcd's .proto files with protoc).
# Needs only rustup/cargo (crates come from crates.io; protobuf is compiled by protox, so no
# protoc). Idempotent: a second run is a no-op build.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../tools/cargo_build.sh fp-testee fp-server fp-load fp-autobahn-client fp-microbench
echo "build.sh: built target/release/{fp-testee,fp-server,fp-load,fp-autobahn-client,fp-microbench}"
if command -v protoc >/dev/null 2>&1; then
  if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  fi
  lock=()
  command -v flock >/dev/null 2>&1 && lock=(flock /tmp/frameproof-build.lock)
  "${lock[@]}" cargo build --release --locked -p fp-testee --features discovery-etcd
  echo "build.sh: fp-testee with the etcd registry (feature discovery-etcd)"
else
  echo "build.sh: fp-testee without the etcd registry (feature discovery-etcd needs protoc: apt-get install protobuf-compiler)"
fi
