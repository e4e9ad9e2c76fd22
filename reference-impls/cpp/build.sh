#!/usr/bin/env bash
# Builds the release binaries fp-testee, fp-server, fp-load (and fp-tests, fp-bench) into build/.
# Installs the Debian packages it needs if they are missing. Idempotent: a second run is a
# no-op build.
set -euo pipefail
cd "$(dirname "$0")"
pkgs=(protobuf-compiler libprotobuf-dev libgtest-dev libbenchmark-dev librapidcheck-dev nlohmann-json3-dev libssl-dev zlib1g-dev libcurl4-openssl-dev ninja-build cmake g++)
missing=()
for p in "${pkgs[@]}"; do
  # installed, not merely known (a removed package keeps a "deinstall" status entry)
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "build.sh: installing ${missing[*]}" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y "${missing[@]}"
fi
# Heavy builds on the shared machine are serialised through one lock.
lock=()
if command -v flock >/dev/null 2>&1; then
  lock=(flock /tmp/frameproof-build.lock)
fi
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
"${lock[@]}" cmake --build build -j2
for b in fp-testee fp-server fp-load fp-autobahn-client; do
  test -x "build/$b" || { echo "build.sh: build/$b missing" >&2; exit 1; }
done
echo "build.sh: built build/{fp-testee,fp-server,fp-load,fp-autobahn-client}"
