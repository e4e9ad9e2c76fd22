#!/usr/bin/env bash
# Builds the libFuzzer targets of the C++ reference codec, self-contained (no CMake): clang++ with
# -fsanitize=fuzzer,address,undefined (+ libstdc++ bounds assertions) over the codec sources
# (src/codec.cpp and the protocol modules src/standard.cpp, src/length_field.cpp, src/rpc.cpp,
# src/websocket.cpp): decode_fuzz (standard, length-field) and, unless SOURCES is a file, wire_fuzz
# (rpc, websocket), both with the input layout of the Rust target and frameproof.fuzz
# (conformance/FUZZING.md; seeds: ./frameproof fuzz-corpus DIR).
#   build.sh [OUT_DIR] [SOURCES]   defaults: fuzz/build, the sources of this directory.
#     SOURCES a directory: a copy of this implementation (its include/ and src/) to build from,
#       e.g. with a planted bug in any of the files above (conformance/tests/test_fuzz.py);
#     SOURCES a file: used instead of src/codec.cpp (the other sources from here).
# Needs clang++ (clang-14), libFuzzer (libclang-rt-14-dev / libfuzzer-14-dev on Debian 12) and
# nlohmann-json3-dev.
# Prints the path of decode_fuzz on the last line (wire_fuzz is next to it).
#   build.sh --install-toolchain   installs clang-14 and libFuzzer with apt-get if missing, and exits
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--install-toolchain" ]; then
  missing=()
  for p in clang-14 libclang-rt-14-dev libfuzzer-14-dev nlohmann-json3-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
    "${sudo[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}"
  fi
  exit 0
fi
out=${1:-$here/build}
root=$here/..
srcs=("$root/src/codec.cpp" "$root/src/standard.cpp" "$root/src/length_field.cpp" "$root/src/rpc.cpp" "$root/src/websocket.cpp")
if [ -d "${2:-}" ]; then
  root=$(cd "$2" && pwd)
  srcs=("$root/src/codec.cpp" "$root/src/standard.cpp" "$root/src/length_field.cpp" "$root/src/rpc.cpp" "$root/src/websocket.cpp")
elif [ -n "${2:-}" ]; then
  srcs[0]=$2
fi
cxx=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}
mkdir -p "$out"
# heavy builds on the shared machine are serialised through one lock (after the up-to-date check)
lock=()
command -v flock >/dev/null && lock=(flock /tmp/frameproof-build.lock)
build_target() {  # NAME: fuzz/NAME.cpp -> $out/NAME, unless up to date
  local bin="$out/$1"
  if [ -x "$bin" ] && [ -z "$(find "${srcs[@]}" "$here/$1.cpp" "$root/include" "$here/build.sh" -newer "$bin" -print -quit)" ]; then
    return 0
  fi
  "${lock[@]}" "$cxx" -std=c++20 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GLIBCXX_ASSERTIONS \
    -I "$root/include" "$here/$1.cpp" "${srcs[@]}" -lcrypto -o "$bin.tmp" >&2
  mv "$bin.tmp" "$bin"
}
# wire_fuzz too from a SOURCES directory (a planted copy); not when SOURCES replaces codec.cpp only
{ [ -n "${2:-}" ] && [ ! -d "${2:-}" ]; } || build_target wire_fuzz
build_target decode_fuzz
echo "$out/decode_fuzz"
