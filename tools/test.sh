#!/usr/bin/env bash
# The project's tests, on a fresh machine:
#  1. the Python suite's own tests (the suite bites, runner robustness, spec coverage,
#     vectors vs the Kaitai oracle, network suite vs broken servers/clients);
#  2. each reference implementation's build and unit tests (reference-impls/*/test.sh);
#  3. the conformance matrix against every bundled implementation (smoke profile).
# Ends with one line "N passed, N failed" totalling all three; exit 0 only if nothing failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash tools/bootstrap.sh || { echo "0 passed, 1 failed"; exit 1; }
passed=0; failed=0
add() { passed=$((passed + $1)); failed=$((failed + $2)); }
last_counts() {  # the last "N passed, N failed" line of a log -> "P F"
  grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$1" | tail -1 | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2 \3/'
}
mkdir -p reports
echo "== 1. suite tests (pytest)"
.venv/bin/python -m pytest conformance/tests -q -n 2 -p no:cacheprovider --junitxml=reports/suite-tests.xml
rc=$?
read -r p f < <(.venv/bin/python - <<'PY'
import xml.etree.ElementTree as ET
try:
    r = ET.parse("reports/suite-tests.xml").getroot()
    s = r if r.tag == "testsuite" else r.find("testsuite")
    t, fl, er, sk = (int(s.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
    print(t - fl - er - sk, fl + er)
except Exception:
    print(0, 1)
PY
)
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
add "$p" "$f"
for dir in reference-impls/*/; do
  [ -f "$dir/impl.json" ] || continue
  name=$(basename "$dir")
  echo "== 2. $name: build and unit tests"
  log=$(mktemp)
  if (cd "$dir" && bash build.sh) >"$log" 2>&1; then
    (cd "$dir" && bash test.sh) >"$log" 2>&1
    rc=$?
    tail -5 "$log"
    counts=$(last_counts "$log")
    if [ -z "$counts" ]; then counts="0 1"; fi
    read -r p f <<<"$counts"
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
    add "$p" "$f"
  else
    tail -30 "$log"
    echo "$name: build FAILED"
    add 0 1
  fi
  rm -f "$log"
done
for dir in tools/third-party/*/; do
  [ -f "$dir/impl.json" ] || continue
  echo "== 2. third-party $(basename "$dir"): build (its codec suite runs in the matrix)"
  if (cd "$dir" && bash build.sh) >/tmp/fp-third-party-build.log 2>&1; then add 1 0; else tail -30 /tmp/fp-third-party-build.log; add 0 1; fi
done
echo "== 3. conformance matrix (all bundled implementations)"
./frameproof matrix --no-build --profile smoke --out reports/ci-matrix
rc=$?
read -r p f < <(.venv/bin/python - <<'PY'
import json
from frameproof.matrix import _all_cells
try:
    d = json.load(open("reports/ci-matrix/matrix.json"))
    cells = [c for _, c in _all_cells(d)]
    print(sum(1 for c in cells if c["ok"]), sum(1 for c in cells if not c["ok"]))
except Exception:
    print(0, 1)
PY
)
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
add "$p" "$f"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
