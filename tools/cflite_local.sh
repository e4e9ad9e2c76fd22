#!/usr/bin/env bash
# The ClusterFuzzLite/OSS-Fuzz build (.clusterfuzzlite/build.sh) OUTSIDE a container, then every
# target over its own seed corpus once (conformance/FUZZING.md, "ClusterFuzzLite / OSS-Fuzz").
#
#   bash tools/cflite_local.sh [--keep]    (--keep: leave $OUT, printed at the end)
#
# Sets OSS-Fuzz-like variables (CC/CXX clang, CFLAGS/CXXFLAGS -fsanitize=address,fuzzer-no-link
# -g -O1, LIB_FUZZING_ENGINE=-fsanitize=fuzzer, SANITIZER=address, SRC a temporary directory
# holding a symlink `frameproof` to this checkout, OUT a temporary directory), runs build.sh, then
# for each expected target T: $OUT/T, T_seed_corpus.zip and T.options exist, and
# `T -runs=0 -max_len=<from T.options> <unzipped seeds>` (every seed once) exits 0.
# Installs what is missing, as tools/fuzz.sh and reference-impls/cpp/fuzz/build.sh do: clang-14 +
# libFuzzer + nlohmann-json (apt-get), the nightly Rust toolchain (rustup) and cargo-fuzz (cargo install).
# Build products are kept between runs in reports/cflite/cache ($WORK: the C++ objects;
# CARGO_TARGET_DIR: the Rust build, apart from tools/fuzz.sh's reference-impls/rust/fuzz/target),
# so a warm run relinks and reruns only. Exit status: 0 clean, 1 a target missing or failing,
# 2 a toolchain could not be set up or the build failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
keep=0
[ "${1:-}" = "--keep" ] && keep=1
TARGETS=(rust_decode cpp_decode_fuzz cpp_wire_fuzz)
t0=$(date +%s)

# ---- toolchains
bash "$root/reference-impls/cpp/fuzz/build.sh" --install-toolchain >&2 || { echo "cflite_local: could not install clang/libFuzzer" >&2; exit 2; }
cc=$(command -v clang || command -v clang-14) && cxx=$(command -v clang++ || command -v clang++-14) \
  || { echo "cflite_local: no clang" >&2; exit 2; }
export PATH=$HOME/.cargo/bin:$PATH
command -v rustup >/dev/null || { echo "cflite_local: no rustup (needed for the nightly toolchain of cargo fuzz)" >&2; exit 2; }
rustup run nightly rustc --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal >&2 \
  || { echo "cflite_local: could not install the nightly Rust toolchain" >&2; exit 2; }
cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked >&2 \
  || { echo "cflite_local: could not install cargo-fuzz" >&2; exit 2; }

# ---- OSS-Fuzz-like environment
cache=$root/reports/cflite/cache
mkdir -p "$cache/work" "$cache/cargo-target"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cflite.XXXXXX")
[ "$keep" = 1 ] || trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/out" "$tmp/seeds"
ln -s "$root" "$tmp/src/frameproof"
export CC=$cc CXX=$cxx
export CFLAGS="-fsanitize=address,fuzzer-no-link -g -O1 -fno-omit-frame-pointer"
export CXXFLAGS="$CFLAGS"
export LIB_FUZZING_ENGINE=-fsanitize=fuzzer SANITIZER=address FUZZING_ENGINE=libfuzzer ARCHITECTURE=x86_64
export SRC=$tmp/src OUT=$tmp/out WORK=$cache/work
export CARGO_TARGET_DIR=$cache/cargo-target RUSTUP_TOOLCHAIN=nightly

# ---- build (one build at a time in the shared cache; heavy builds serialised as fuzz/build.sh does)
lock=()
command -v flock >/dev/null && lock=(flock "$cache/.lock" flock /tmp/frameproof-build.lock)
echo "== .clusterfuzzlite/build.sh (SRC=$SRC OUT=$OUT, CC=$CC)"
if ! (cd "$SRC/frameproof" && "${lock[@]}" bash "$root/.clusterfuzzlite/build.sh") >"$tmp/build.log" 2>&1; then
  tail -30 "$tmp/build.log" | sed 's/^/   /'
  echo "cflite_local: build.sh FAILED"
  exit 2
fi
grep '^cflite build' "$tmp/build.log" | sed 's/^/   /'
t1=$(date +%s)
echo "   build: $((t1 - t0)) s"

# ---- every target over its seeds once
fail=0
for t in "${TARGETS[@]}"; do
  bin=$OUT/$t zip=$OUT/${t}_seed_corpus.zip opts=$OUT/$t.options
  for f in "$bin" "$zip" "$opts"; do
    [ -e "$f" ] || { echo "== $t: MISSING $f"; fail=1; continue 2; }
  done
  d=$tmp/seeds/$t
  python3 -m zipfile -e "$zip" "$d"
  n=$(find "$d" -type f | wc -l)
  max_len=$(sed -n 's/^max_len *= *//p' "$opts")
  ts=$(date +%s)
  "$bin" -runs=0 -max_len="$max_len" -print_final_stats=1 "$d" >"$tmp/$t.log" 2>&1
  rc=$?
  units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t.log")
  if [ "$rc" -ne 0 ] || [ "$n" -eq 0 ]; then
    echo "== $t: FAILED (exit status $rc, $n seeds); tail of its log:"
    tail -25 "$tmp/$t.log" | sed 's/^/   /'
    fail=1
  else
    echo "== $t: clean, $n seeds run once (executed units ${units:-?}, max_len $max_len, $(( $(date +%s) - ts )) s)"
  fi
done
echo "cflite_local: total $(( $(date +%s) - t0 )) s$([ "$keep" = 1 ] && echo ", OUT kept in $OUT")"
[ "$fail" = 0 ] && echo "cflite_local: every target built and ran its seed corpus clean"
exit "$fail"
