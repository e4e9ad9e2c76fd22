#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build of every native libFuzzer target of frameproof
# (conformance/FUZZING.md, "ClusterFuzzLite / OSS-Fuzz"). Runs in the image of ./Dockerfile, and
# outside any container through tools/cflite_local.sh (which sets the same variables).
# Uses the OSS-Fuzz conventions: $CC $CXX $CFLAGS $CXXFLAGS $LIB_FUZZING_ENGINE $SANITIZER $SRC $OUT
# (and $WORK for intermediate files). Writes to $OUT, for each target T:
#   T                   the fuzzer
#   T_seed_corpus.zip   its seeds: the decode vectors in the targets' input layout
#                       (tools/cflite_corpus.py, the same bytes as `./frameproof fuzz-corpus`),
#                       only the protocols T decodes
#   T.options           -max_len = FUZZ_MAX_LEN (default 8192, as tools/fuzz.sh)
#
# Targets, and what each one crashes on besides sanitizer reports (the invariants are the ones in
# the sources' header comments and conformance/FUZZING.md; every one aborts the run):
#   rust_decode      reference-impls/rust/fuzz/fuzz_targets/decode.rs, all four protocols
#                    (cargo fuzz build -O; ASan when SANITIZER=address): panics, overflow checks,
#                    debug assertions, OOM, and the invariants (assert!): 1. chunked decode ==
#                    whole decode, through feed() and through buffer_mut()+decode(); 2. every
#                    delivered frame re-encodes to the bytes it came from (decode/encode round
#                    trip) and the error sits where the frames end; 3. no payload (websocket: no
#                    message) above the limit, every error names a requirement of its protocol,
#                    websocket text messages are UTF-8, nothing is read after a close frame.
#   cpp_decode_fuzz  reference-impls/cpp/fuzz/decode_fuzz.cpp, standard + length-field: the
#                    sanitizers, libc++/libstdc++ hardening assertions, and invariants 1-3
#                    ("INVARIANT VIOLATED", abort()).
#   cpp_wire_fuzz    reference-impls/cpp/fuzz/wire_fuzz.cpp, rpc + websocket: the same, plus
#                    websocket control-frame and masking rules and UTF-8 text messages.
# No target compares against another implementation or the Python oracle (that is the
# differential fuzzer, `frameproof fuzz`, which needs the suite and is not run here).
set -o pipefail
src=$SRC/frameproof
work=${WORK:-$(mktemp -d)}
max_len=${FUZZ_MAX_LEN:-8192}
py=$(command -v python3 || command -v python)
mkdir -p "$OUT" "$work/cflite-obj"

options() {  # TARGET
  printf '[libfuzzer]\nmax_len = %s\n' "$max_len" >"$OUT/$1.options"
}
seeds() {  # TARGET CORPUS_IDS
  rm -f "$OUT/$1_seed_corpus.zip"
  n=$("$py" "$src/tools/cflite_corpus.py" --vectors "$src/conformance/vectors" --max-len $((max_len - 3)) \
      --protocols "$2" --zip "$OUT/$1_seed_corpus.zip")
  echo "cflite build: $1: $n seeds" >&2
}

# ---- C++: the codec sources once, both targets linked from the same objects
cpp=$src/reference-impls/cpp
# -D_GLIBCXX_ASSERTIONS: libstdc++ bounds checks (as fuzz/build.sh); OSS-Fuzz links libc++
# (-stdlib=libc++ in CXXFLAGS), whose equivalent is the hardening mode
cxxflags=($CXXFLAGS -std=c++20 -D_GLIBCXX_ASSERTIONS -D_LIBCPP_HARDENING_MODE=_LIBCPP_HARDENING_MODE_EXTENSIVE
          -I "$cpp/include")
objs=()
newest_header=$(ls -t "$cpp"/include/frameproof/*.hpp | head -1)
compile() {  # SOURCE -> its object in $work (recompiled only if the source, a header or the flags changed)
  local o=$work/cflite-obj/$(basename "$1" .cpp).o
  local cmd="$CXX ${cxxflags[*]} -c $1"
  cmd=${cmd//$src/<src>}  # $SRC may be another temporary directory each time (tools/cflite_local.sh)
  if [ -f "$o" ] && [ "$o" -nt "$1" ] && [ "$o" -nt "$newest_header" ] && [ "$(cat "$o.cmd" 2>/dev/null)" = "$cmd" ]; then
    objs+=("$o")
    return
  fi
  $CXX "${cxxflags[@]}" -c "$1" -o "$o.tmp"
  mv "$o.tmp" "$o"
  echo "$cmd" >"$o.cmd"
  objs+=("$o")
}
for f in codec standard length_field rpc websocket; do compile "$cpp/src/$f.cpp"; done
codec_objs=("${objs[@]}")
for t in decode_fuzz wire_fuzz; do
  objs=()
  compile "$cpp/fuzz/$t.cpp"
  # $LIB_FUZZING_ENGINE unquoted: it may hold flags (-fsanitize=fuzzer) or a path
  $CXX "${cxxflags[@]}" "${objs[@]}" "${codec_objs[@]}" $LIB_FUZZING_ENGINE -o "$OUT/cpp_$t"
  options "cpp_$t"
done
seeds cpp_decode_fuzz 0,1
seeds cpp_wire_fuzz 2,3

# ---- Rust: OSS-Fuzz's convention, cargo fuzz build -O (nightly toolchain, cargo-fuzz on PATH)
cd "$src/reference-impls/rust"
rust_san=address
[ "$SANITIZER" = address ] || rust_san=none  # Rust has no UBSan; a plain libFuzzer binary then
# CFLAGS/CXXFLAGS are for the C++ above: here they would reach the cc build of libFuzzer inside
# libfuzzer-sys (instrumenting libFuzzer itself, and -stdlib=libc++ under OSS-Fuzz); left out
env -u CFLAGS -u CXXFLAGS cargo fuzz build -O --sanitizer "$rust_san"
rust_target=${CARGO_TARGET_DIR:-fuzz/target}
cp "$rust_target/x86_64-unknown-linux-gnu/release/decode" "$OUT/rust_decode"
options rust_decode
seeds rust_decode 0,1,2,3
echo "cflite build: done: $(cd "$OUT" && ls | grep -v -e '\.zip$' -e '\.options$' | tr '\n' ' ')" >&2
