#!/usr/bin/env bash
# Builds target/release/fp-tungstenite-server (frameproof's echo-server contract around tokio-tungstenite) and
# target/release/fp-tungstenite-autobahn-client (the Autobahn client protocol on its client side).
# Needs only rustup/cargo (crates from crates.io, pinned by Cargo.lock). Idempotent: a second run is a
# no-op build.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../cargo_build.sh fp-tungstenite-server fp-tungstenite-autobahn-client
echo "build.sh: built $(pwd)/target/release/fp-tungstenite-server and fp-tungstenite-autobahn-client"
