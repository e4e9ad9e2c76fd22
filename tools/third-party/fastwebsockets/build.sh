#!/usr/bin/env bash
# Builds target/release/fp-fastwebsockets-server (frameproof's echo-server contract around fastwebsockets) and
# target/release/fp-fastwebsockets-autobahn-client (the Autobahn client protocol on its client side), over
# hyper 1 and tokio. Needs only rustup/cargo (crates from crates.io, pinned by Cargo.lock).
# Idempotent: a second run is a no-op build.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../cargo_build.sh fp-fastwebsockets-server fp-fastwebsockets-autobahn-client
echo "build.sh: built $(pwd)/target/release/fp-fastwebsockets-server and fp-fastwebsockets-autobahn-client"
