#!/usr/bin/env bash
# Builds fp-discovery with its etcd-backed registry (feature "etcd": etcd-client compiles etcd's
# .proto files, so it needs protoc) and runs all its tests, the etcd ones included: each starts its
# own etcd (Debian's etcd-server) on 127.0.0.1 with a temporary data dir and kills it at the end.
# Installs etcd-server and protobuf-compiler with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v protoc >/dev/null || need+=(protobuf-compiler)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/frameproof-build.lock)
"${lock[@]}" cargo test --locked --release -p fp-discovery --features etcd
