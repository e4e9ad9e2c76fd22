#!/usr/bin/env bash
# Builds the libFuzzer target of the C++ reference codec, self-contained (no CMake): clang++ with
# -fsanitize=fuzzer,address,undefined (+ libstdc++ bounds assertions) over src/codec.cpp and
# decode_fuzz.cpp.
#   build.sh [OUT_DIR] [CODEC_SRC]   (defaults: fuzz/build, ../src/codec.cpp; the tests pass a
#                                     patched copy of codec.cpp to plant a bug)
# Needs clang++ (clang-14) and libFuzzer (libclang-rt-14-dev / libfuzzer-14-dev on Debian 12).
# Prints the path of the binary on the last line.
#   build.sh --install-toolchain   installs clang-14 and libFuzzer with apt-get if missing, and exits
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--install-toolchain" ]; then
  missing=()
  for p in clang-14 libclang-rt-14-dev libfuzzer-14-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
    "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
  fi
  exit 0
fi
out=${1:-$here/build}
src=${2:-$here/../src/codec.cpp}
cxx=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}
mkdir -p "$out"
bin="$out/decode_fuzz"
if [ -x "$bin" ] && [ -z "$(find "$src" "$here/decode_fuzz.cpp" "$here/../include" "$here/build.sh" -newer "$bin" -print -quit)" ]; then
  echo "$bin"  # up to date
  exit 0
fi
# heavy builds on the shared machine are serialised through one lock (after the up-to-date check)
lock=()
command -v flock >/dev/null && lock=(flock /tmp/frameproof-build.lock)
"${lock[@]}" "$cxx" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GLIBCXX_ASSERTIONS \
  -I "$here/../include" "$here/decode_fuzz.cpp" "$src" -o "$bin.tmp" >&2
mv "$bin.tmp" "$bin"
echo "$bin"
