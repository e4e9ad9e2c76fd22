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
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -D_GLIBCXX_ASSERTIONS -I "$root/include")
targets=(decode_fuzz)
# wire_fuzz too from a SOURCES directory (a planted copy); not when SOURCES replaces codec.cpp only
{ [ -n "${2:-}" ] && [ ! -d "${2:-}" ]; } || targets=(wire_fuzz decode_fuzz)
stale=()
for t in "${targets[@]}"; do
  bin=$out/$t
  if [ ! -x "$bin" ] || [ -n "$(find "${srcs[@]}" "$here/$t.cpp" "$root/include" "$here/build.sh" -newer "$bin" -print -quit)" ]; then
    stale+=("$t")
  fi
done
if [ "${#stale[@]}" -gt 0 ]; then
  # heavy builds on the shared machine are serialised through one lock (after the up-to-date check)
  if command -v flock >/dev/null; then exec 9>>/tmp/frameproof-build.lock; flock 9; fi
  # the codec's sources compiled once for both targets, two at a time (each target used to compile
  # all five itself, one after the other: 92 s here for the two); an object is remade when its
  # source, a header or this script is newer, or when it came from another source path
  mkdir -p "$out/obj"
  objs=() pids=()
  for s in "${srcs[@]}"; do
    o=$out/obj/$(basename "$s" .cpp).o
    objs+=("$o")
    if [ -f "$o" ] && [ "$(cat "$o.src" 2>/dev/null)" = "$s" ] \
       && [ -z "$(find "$s" "$root/include" "$here/build.sh" -newer "$o" -print -quit)" ]; then
      continue
    fi
    { "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$s" -o "$o.tmp" >&2 && mv "$o.tmp" "$o" && echo "$s" >"$o.src"; } &
    pids+=($!)
    if [ "${#pids[@]}" -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  for t in "${stale[@]}"; do
    { "$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/$t.cpp" "${objs[@]}" -lcrypto -o "$out/$t.tmp" >&2 && mv "$out/$t.tmp" "$out/$t"; } &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
fi
echo "$out/decode_fuzz"
