#!/usr/bin/env bash
# The project's tests, on a fresh machine (CI runs this through .ci/run):
#  1. build every bundled implementation (reference-impls/* first; tools/third-party/* beside step 2,
#     waited for before step 4), so that every test that needs a program finds it;
#  2. the Python suite's own tests (the suite bites, runner robustness, spec coverage, vectors vs the
#     Kaitai oracle, network suite vs broken servers/clients, the main job's report reading);
#  3. each reference implementation's unit tests (reference-impls/*/test.sh), beside steps 4 and 5;
#  4. the main job's every path at small scale: `frameproof matrix --scale small` (the stress group,
#     Autobahn as server and client, load clients, interop, third-party columns);
#  5. the fixed mutation sample (tools/mutation.sh sample): mutants of the Rust and Python reference
#     codecs that frameproof must catch.
# A skipped test fails the run unless .ci/allowed-skips names it with a reason.
# Ends with one line "N passed, N failed, N skipped"; exit 0 only if nothing failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p reports
# Python's compiled bytecode is kept (__pycache__, git-ignored): a machine that sets
# PYTHONDONTWRITEBYTECODE (this one does) otherwise compiles the frameproof package again in every
# process the tests start (testees, servers, load clients: thousands): 0.8 s a start instead of 0.4.
# tools/mutation.sh sets it again for the mutated copies, which must never run stale bytecode.
unset PYTHONDONTWRITEBYTECODE
# step 5's tool, compiled while the bootstrap mostly downloads (tools/mutation.sh installs it itself
# if this fails, e.g. before rustup is there). Measured on this machine: running step 3 beside
# step 2 instead is slower, since the C++ tests hold the shared build lock that step 2's fuzz builds
# wait on.
bash tools/mutation.sh cargo-tools >reports/cargo-tools.log 2>&1 &
tools_pid=$!
bash tools/bootstrap.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }
passed=0; failed=0
add() { passed=$((passed + $1)); failed=$((failed + $2)); }
last_counts() {  # the last "N passed, N failed" line of a log -> "P F"
  grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$1" | tail -1 | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2 \3/'
}
skips=reports/skipped.txt  # every skip of every step: "<test> <tab> <reason>"
: >"$skips"
declare -A built
times=()  # "step seconds", printed before the last line: where CI's time goes
mark=$SECONDS
took() { times+=("$1 $((SECONDS - mark)) s"); mark=$SECONDS; }
echo "== 1. build every bundled implementation"
build_one() {  # DIR LOG: builds DIR, writes "rc seconds" to LOG.rc
  local t=$SECONDS
  (cd "$1" && bash build.sh) >"$2" 2>&1
  echo "$? $((SECONDS - t))" >"$2.rc"
}
build_report() {  # DIR LOG: what step 1 prints for a build, and its count
  local rc secs
  read -r rc secs <"$2.rc" 2>/dev/null || { rc=255; secs='?'; }
  if [ "$rc" = 0 ]; then
    echo "built $1 ($secs s)"; built[$1]=1; add 1 0
  else
    tail -30 "$2"; echo "$1: build FAILED"; add 0 1
  fi
}
tpbuild=$(mktemp -d)
for dir in reference-impls/*/; do
  [ -f "$dir/impl.json" ] || continue
  build_one "$dir" "$tpbuild/ref.log"; build_report "$dir" "$tpbuild/ref.log"
done
# The third-party wrappers are built beside step 2, one after another, and waited for before step 4
# (the first to run them; step 2's tests that use one run its idempotent build.sh themselves, under the
# same build lock). Measured on this machine: the builds keep both cores busy, step 2 leaves about a
# fifth of them idle (network waits, timeouts), and the wrappers' builds took 205 s when run first.
tpdirs=()
for dir in tools/third-party/*/; do [ -f "$dir/impl.json" ] && tpdirs+=("$dir"); done
(
  for i in "${!tpdirs[@]}"; do build_one "${tpdirs[$i]}" "$tpbuild/tp$i.log"; done
) &
tp_pid=$!
took "builds (reference implementations)"
echo "== 2. suite tests (pytest)"
.venv/bin/python -m pytest conformance/tests -q -n 2 --dist worksteal -p no:cacheprovider --junitxml=reports/suite-tests.xml
rc=$?
read -r p f < <(.venv/bin/python - "$skips" <<'PY'
import sys
import xml.etree.ElementTree as ET
try:
    r = ET.parse("reports/suite-tests.xml").getroot()
    s = r if r.tag == "testsuite" else r.find("testsuite")
    t, fl, er, sk = (int(s.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
    with open(sys.argv[1], "a") as out:
        for tc in s.iter("testcase"):
            el = tc.find("skipped")
            if el is not None:
                name = tc.get("classname", "").replace(".", "/") + ".py::" + tc.get("name", "")
                msg = (el.get("message") or "").replace("\n", " ")
                out.write(f"suite: {name}\t{msg}\n")
    print(t - fl - er - sk, fl + er)
except Exception as e:
    print(f"cannot read reports/suite-tests.xml: {e}", file=sys.stderr)
    print(0, 1)
PY
)
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
add "$p" "$f"
took "suite tests"
# Steps 3 and 4 run side by side (CI's time: the C++ sanitizer build and the matrix's network waits
# overlap); step 3's logs are read when step 4 ends. Nothing in step 3 rewrites a program
# step 4 runs: each build.sh there finds its outputs up to date (C# renames a new one into place).
unit=$(mktemp -d)
unit_pids=()
for dir in reference-impls/*/; do  # each implementation's tests beside the others' (their heavy builds take the build lock)
  [ -f "$dir/impl.json" ] || continue
  name=$(basename "$dir")
  if [ -z "${built[$dir]:-}" ]; then echo "$name: not built, its tests cannot run" >"$unit/$name.log"; echo 255 >"$unit/$name.rc"; continue; fi
  (
    t=$SECONDS
    (cd "$dir" && bash test.sh) >"$unit/$name.log" 2>&1
    echo $? >"$unit/$name.rc"
    echo $((SECONDS - t)) >"$unit/$name.seconds"
  ) &
  unit_pids+=($!)
done
# (step 3 is read after step 4, below)
wait "$tp_pid"
echo "== 1. (beside step 2) the third-party wrappers"
for i in "${!tpdirs[@]}"; do build_report "${tpdirs[$i]}" "$tpbuild/tp$i.log"; done
rm -rf "$tpbuild"
took "rest of the third-party builds"
echo "== 4. the main job's every path at small scale (frameproof matrix --scale small)"
./frameproof matrix --no-build --profile smoke --scale small --out reports/ci-matrix --jobs 4
rc=$?
read -r p f < <(.venv/bin/python - <<'PY'
import json
from frameproof.matrix import _all_cells
try:
    d = json.load(open("reports/ci-matrix/matrix.json"))
    cells = [c for _, c in _all_cells(d)]
    # frameproof report's pages (reports/ci-matrix/html): one an implementation, each with its badges
    from pathlib import Path
    from frameproof.report_html import slug
    html = Path("reports/ci-matrix/html")
    missing = [n for n in d["implementations"] if not (html / f"{slug(n)}.html").exists()
               or not list(html.glob(f"{slug(n)}-*.svg"))]
    if missing:
        import sys
        print(f"test.sh: no HTML page or badge for {missing} in {html}", file=sys.stderr)
    print(sum(1 for c in cells if c["ok"]), sum(1 for c in cells if not c["ok"]) + len(missing))
except Exception:
    print(0, 1)
PY
)
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
add "$p" "$f"
took "matrix (small)"
# step 5 runs before step 3's logs are read: the C++ unit tests (sanitizers) outlast the matrix
echo "== 5. the fixed mutation sample (tools/mutation/ci-sample.toml): frameproof must catch every mutant"
log=reports/mutation-sample.log  # kept: what a MISSED line's run printed
wait "$tools_pid"
bash tools/mutation.sh sample 2>&1 | tee "$log" | grep -E '^(caught|MISSED|mutation:)'
read -r p f <<<"$(last_counts "$log")"
[ -z "${p:-}" ] && { p=0; f=1; }
add "$p" "$f"
if [ "$f" -ne 0 ]; then  # the failing run's own words (a baseline's failed requirement, a build error)
  echo "-- $log, the lines before each failure:"
  grep -n -B12 -E '^(MISSED|baseline:)|FAILED|^error' "$log" | tail -60
fi
took "mutation sample"
for pid in "${unit_pids[@]}"; do wait "$pid"; done
took "rest of step 3"
for dir in reference-impls/*/; do
  [ -f "$dir/impl.json" ] || continue
  name=$(basename "$dir")
  echo "== 3. $name: unit tests (ran beside steps 4 and 5, $(cat "$unit/$name.seconds" 2>/dev/null || echo '?') s)"
  log=$unit/$name.log
  rc=$(cat "$unit/$name.rc" 2>/dev/null || echo 255)
  tail -5 "$log"
  # a test.sh names each test it skips on a line "SKIPPED <test>: <reason>"
  awk -v n="$name" '/^SKIPPED / { i = index($0, ": "); print n ": " substr($0, 9, i - 9) "\t" substr($0, i + 2) }' "$log" >>"$skips"
  counts=$(last_counts "$log")
  if [ -z "$counts" ]; then counts="0 1"; fi
  read -r p f <<<"$counts"
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  add "$p" "$f"
  times+=("$name tests $(cat "$unit/$name.seconds" 2>/dev/null || echo '?') s (beside steps 4 and 5)")
done
rm -rf "$unit"
echo "== skipped tests (allowed only where .ci/allowed-skips names them)"
read -r allowed unlisted < <(.venv/bin/python tools/check_skips.py .ci/allowed-skips "$skips")
failed=$((failed + unlisted))
printf -v steps '%s, ' "${times[@]}"
echo "== time by step: ${steps%, } (total $SECONDS s)"
echo "$passed passed, $failed failed, $((allowed + unlisted)) skipped"
[ "$failed" -eq 0 ]
