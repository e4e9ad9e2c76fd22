#!/usr/bin/env bash
# Fuzzing, for as long as you like (CI runs the short fixed-seed version inside tools/test.sh:
# conformance/tests/test_fuzz.py). See conformance/FUZZING.md.
#
#   bash tools/fuzz.sh [--seconds N] [--seed S] [--only differential|rust|cpp] [--build]
#
#  1. differential: `frameproof fuzz` over every built testee (Python, Rust, C#, C++) and the
#     oracle, N seconds, --keep-going; reproducers in reports/fuzz/differential/<protocol>/.
#  2. rust: the libFuzzer target of the Rust decoders, N seconds, corpus kept in
#     reports/fuzz/rust/corpus (grows from run to run), crashes in reports/fuzz/rust/artifacts.
#  3. cpp: the same for the C++ decoders (ASan + UBSan + LeakSanitizer): decode_fuzz (standard,
#     length-field; reports/fuzz/cpp) and wire_fuzz (rpc, websocket, a layout of its own;
#     reports/fuzz/cpp-wire, the same seeds), N seconds each.
# Seed corpora come from the test vectors. --build builds the reference testees first.
# FUZZ_MAX_LEN (default 8192): libFuzzer's -max_len, also the cut of the seed inputs.
# Exit status 1 if anything was found (the reproducers and the commands to turn a libFuzzer
# artifact into a vector are printed), 0 if not.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=60 seed=0 only="" build=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --build) build=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bash tools/bootstrap.sh >/dev/null || exit 2
py=.venv/bin/python
out=reports/fuzz
mkdir -p "$out"
found=0
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

if want differential; then
  echo "== differential fuzzing: $seconds s, seed $seed"
  if [ "$build" = 1 ]; then
    for d in reference-impls/*/; do
      [ -f "$d/impl.json" ] && (cd "$d" && bash build.sh >/dev/null 2>&1) || echo "   (build of $d failed)"
    done
  fi
  mapfile -t testees < <($py - <<'PY'
import json, shlex, shutil
from pathlib import Path
print(".venv/bin/python -m frameproof.pytestee")
for f in sorted(Path("reference-impls").glob("*/impl.json")):
    argv = json.loads(f.read_text()).get("testee")
    if not argv:
        continue
    argv = [str(f.parent / a) if (f.parent / a).exists() else a for a in argv]
    if not (Path(argv[-1]).exists() and (shutil.which(argv[0]) or Path(argv[0]).exists())):
        import sys
        print(f"   not built, left out: {f.parent.name} ({' '.join(argv)})", file=sys.stderr)
        continue
    print(shlex.join(argv))
PY
)
  args=()
  for t in "${testees[@]}"; do args+=(--testee "$t"); echo "   testee: $t"; done
  $py -m frameproof.cli fuzz "${args[@]}" --seconds "$seconds" --seed "$seed" --keep-going \
      --out "$out/differential" --json "$out/differential.json"
  rc=$?
  [ "$rc" -eq 1 ] && found=1
  [ "$rc" -gt 1 ] && { echo "differential fuzzing could not run (status $rc)"; found=1; }
fi

libfuzz() {  # name binary [seed dir]
  local name=$1 bin=$2 d=$out/$1 seeds=${3:-$out/seeds}
  mkdir -p "$d/corpus" "$d/artifacts"
  echo "== coverage-guided fuzzing ($name): $seconds s, libFuzzer seed $((seed + 1))"
  touch "$d/.start"
  "$bin" -seed=$((seed + 1)) -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len="${FUZZ_MAX_LEN:-8192}" -print_final_stats=1 -artifact_prefix="$d/artifacts/" \
    "$d/corpus" "$seeds" >"$d/libfuzzer.log" 2>&1
  local rc=$?
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$d/libfuzzer.log" | sed 's/^/   /'
  if [ "$rc" -ne 0 ]; then
    found=1
    echo "   FOUND (exit status $rc): tail of $d/libfuzzer.log:"
    grep -E -A1 'panicked|INVARIANT|ERROR|Assertion|runtime error' "$d/libfuzzer.log" | head -6 | sed 's/^/     /'
    for a in $(find "$d/artifacts" -type f -newer "$d/.start"); do
      echo "   artifact $a; reproduce: $bin $a"
      echo "   as a vector: ./frameproof fuzz-vector $a --found-by $name --out $out/$name/vectors"
    done
  fi
}

if want rust || want cpp; then
  rm -rf "$out/seeds"
  # FUZZ_MAX_LEN=80000 lets whole 64 KiB extended frames in (slower executions)
  $py -m frameproof.cli fuzz-corpus "$out/seeds" --max-len $(( ${FUZZ_MAX_LEN:-8192} - 3 )) >/dev/null
fi
if want rust; then
  if command -v cargo >/dev/null; then
    if bin=$(bash reference-impls/rust/fuzz/build.sh); then
      libfuzz rust "$(echo "$bin" | tail -1)"
    else
      echo "rust: fuzz target build FAILED"; found=1
    fi
  else
    echo "!!! rust: cargo not found, Rust coverage-guided fuzzing NOT RUN"
  fi
fi
if want cpp; then
  if [ -f reference-impls/cpp/src/codec.cpp ] && { command -v clang++-14 || command -v clang++; } >/dev/null; then
    if bin=$(bash reference-impls/cpp/fuzz/build.sh); then
      bin=$(echo "$bin" | tail -1)
      libfuzz cpp "$bin"
      # the same seeds: every target reads the same input layout and ignores other protocols' inputs
      libfuzz cpp-wire "$(dirname "$bin")/wire_fuzz"
    else
      echo "cpp: fuzz target build FAILED (clang++ with libFuzzer: apt-get install clang-14 libfuzzer-14-dev)"; found=1
    fi
  else
    echo "!!! cpp: clang++ or reference-impls/cpp/src/codec.cpp missing, C++ coverage-guided fuzzing NOT RUN"
  fi
fi
if [ "$found" = 1 ]; then
  echo "fuzz.sh: something was found (see above and conformance/FUZZING.md)"
  exit 1
fi
echo "fuzz.sh: nothing found"
