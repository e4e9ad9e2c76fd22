#!/usr/bin/env bash
# Builds the release binaries fp-testee, fp-server, fp-load and fp-autobahn-client into
# target/release/.
# Needs only rustup/cargo (crates come from crates.io; protobuf is compiled by protox, so no
# protoc). Idempotent: a second run is a no-op build.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../tools/cargo_build.sh fp-testee fp-server fp-load fp-autobahn-client fp-microbench
echo "build.sh: built target/release/{fp-testee,fp-server,fp-load,fp-autobahn-client,fp-microbench}"
