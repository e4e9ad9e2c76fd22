#!/usr/bin/env bash
# Builds build/fp-beast-server (frameproof's echo-server contract around Boost.Beast's WebSocket stream) and
# build/fp-beast-autobahn-client (the Autobahn client protocol on the stream's client role)
# (Debian libboost-dev: Beast and Asio, header-only; Beast's permessage-deflate is its own zlib port;
# nlohmann-json3-dev reads --codec). Installs the packages when missing and apt-get is there. Idempotent: the
# compiler runs only when the source is newer than the binary.
set -euo pipefail
cd "$(dirname "$0")"
pkgs=(g++ libboost-dev nlohmann-json3-dev)
missing=()
for p in "${pkgs[@]}"; do
  # installed, not merely known (a removed package keeps a "deinstall" status entry)
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null || { echo "build.sh: missing ${missing[*]} and no apt-get" >&2; exit 1; }
  echo "build.sh: installing ${missing[*]}" >&2
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}" ||
    { "${sudo[@]}" apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q "${missing[@]}"; }
fi
mkdir -p build
for name in fp-beast-server fp-beast-autobahn-client; do
  out=build/$name
  if [ ! -x "$out" ] || [ "$name.cpp" -nt "$out" ] || [ build.sh -nt "$out" ] ||
     [ ../common/autobahn_client_args.hpp -nt "$out" ]; then
    g++ -std=c++17 -O2 -g -Wall -Wextra -o "$out.tmp" "$name.cpp" -pthread
    mv "$out.tmp" "$out"
  fi
  echo "build.sh: built $(pwd)/$out (Boost $(dpkg-query -W -f='${Version}' libboost-dev))"
done
