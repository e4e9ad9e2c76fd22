#!/usr/bin/env bash
# Builds the libFuzzer target(s) of the Rust reference codec on the STABLE toolchain:
# libfuzzer-sys links libFuzzer, and rustc's SanitizerCoverage pass (-Cpasses=sancov-module)
# gives libFuzzer its coverage feedback, like cargo-fuzz does with --sanitizer none.
# (AddressSanitizer/LeakSanitizer need nightly -Zsanitizer; the codec is safe Rust.)
#   build.sh [CRATE_DIR]   (default: this directory; the tests build a patched copy too, with
#                          FUZZ_BIN naming its binary so that it does not replace `decode`)
# Prints the path of the binary on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
crate=${1:-$here}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares \
 -Cdebug-assertions -Coverflow-checks -Ccodegen-units=1"
cd "$crate"
# an explicit --target keeps RUSTFLAGS (the coverage instrumentation) off build scripts
triple=$(rustc -vV | sed -n 's/^host: //p')
bin=${FUZZ_BIN:-decode}
out="$CARGO_TARGET_DIR/$triple/release/$bin"
# up to date (no newer source, manifest or script): skip cargo, and the lock below
if [ -x "$out" ] && [ -z "$(find "$crate/fuzz_targets" "$crate/Cargo.toml" "$crate/Cargo.lock" "$crate/../codec/src" "$crate/../codec/Cargo.toml" \
      "$crate/build.sh" -newer "$out" -print -quit)" ]; then
  echo "$out"
  exit 0
fi
lock=()
command -v flock >/dev/null && lock=(flock /tmp/frameproof-build.lock)
"${lock[@]}" cargo build --release --target "$triple" --bin "$bin" --quiet >&2
echo "$out"
