#!/usr/bin/env bash
# Runs the C++ implementation's own tests:
#   1. the release build (build/, via build.sh): GoogleTest unit tests through ctest;
#   2. the sanitizer build (build-asan/, -fsanitize=address,undefined): the same unit tests, plus
#      fp-testee smoke checks over stdin/stdout (hello v1 and v2, a split decode, a truncated
#      stream, a serve);
#   3. the pytest tests in tests/ (the repo's venv, ../../.venv: the suite's reference codecs build
#      and read the frames): fp-server and fp-load end to end on 127.0.0.1, once for the release and
#      once for the sanitizer binaries; each skipped test on a line "SKIPPED <test>: <reason>".
# Builds take the shared build lock (running the tests does not). The last line is exactly "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")"
here=$(pwd)
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/frameproof-build.lock)

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "PASS $1"; }
ko() { failed=$((failed + 1)); echo "FAIL $1${2:+: $2}"; }

# ctest in a build dir; adds its counts (a run that reports nothing counts as one failure).
run_ctest() {
  local dir=$1 label=$2 out
  out=$(ctest --test-dir "$dir" --output-on-failure --timeout 300 -j2 2>&1)
  echo "$out" | grep -E '% tests passed|\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|Not Run' | tail -20
  local line
  line=$(echo "$out" | grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' | tail -1)
  if [ -z "$line" ]; then
    ko "$label ctest" "no test summary"
    echo "$out" | tail -30
    return
  fi
  local nfail total
  nfail=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
  total=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
  if [ "$total" -eq 0 ]; then
    ko "$label ctest" "0 tests found"
    return
  fi
  passed=$((passed + total - nfail))
  failed=$((failed + nfail))
  echo "$label: $((total - nfail)) passed, $nfail failed (ctest)"
}

# --- 1. release build --------------------------------------------------------------------------
if bash build.sh >/tmp/fp-cpp-build.$$.log 2>&1; then
  ok "release build (build.sh)"
  run_ctest build release
else
  tail -30 /tmp/fp-cpp-build.$$.log
  ko "release build (build.sh)"
fi
rm -f /tmp/fp-cpp-build.$$.log

# --- 2. sanitizer build ------------------------------------------------------------------------
# -O1 (what the AddressSanitizer documentation suggests) and -g1 (line tables: enough for the stack
# traces a report prints): the whole tree at RelWithDebInfo's -O2 -g took 1070 CPU-seconds here, more
# than anything else in CI; these flags and only the programs the steps below run: 575.
asan_ok=1
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFP_SANITIZE=ON -DFP_BUILD_BENCH=OFF \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" >/dev/null || asan_ok=0
asan_targets=(fp-testee fp-server fp-load)
grep -q '^build fp-tests[ :]' build-asan/build.ninja 2>/dev/null && asan_targets+=(fp-tests)  # FP_BUILD_TESTS
if [ "$asan_ok" = 1 ] && "${lock[@]}" cmake --build build-asan -j2 --target "${asan_targets[@]}" >/tmp/fp-cpp-asan.$$.log 2>&1; then
  ok "sanitizer build (build-asan)"
else
  tail -30 /tmp/fp-cpp-asan.$$.log 2>/dev/null
  ko "sanitizer build (build-asan)"
  asan_ok=0
fi
rm -f /tmp/fp-cpp-asan.$$.log

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "$asan_ok" = 1 ]; then
  run_ctest build-asan asan

  # fp-testee (sanitized) over its stdio protocol. Requests are hand-encoded protobuf
  # (schemas/testee.proto), each with its u32 little-endian length prefix.
  testee=build-asan/fp-testee
  hexout() { od -An -v -tx1 | tr -d ' \n'; }
  # hello{harness_version: 1} (a v1 runner), hello{harness_version: 1, max_harness_version: 2}
  hello='\x04\x00\x00\x00\x0a\x02\x08\x01'
  hello2='\x06\x00\x00\x00\x0a\x04\x08\x01\x10\x02'
  # decode{codec{protocol:"standard"}, chunks:["01 01 04", "00 'Open'"]}
  codec='\x0a\x0a\x0a\x08standard'
  split='\x1a\x00\x00\x00\x12\x18'"$codec"'\x12\x03\x01\x01\x04\x12\x05\x00Open'
  # decode{codec{protocol:"standard"}, chunks:["01 01 04 00 'Op'"]} (ends inside the frame)
  trunc='\x16\x00\x00\x00\x12\x14'"$codec"'\x12\x06\x01\x01\x04\x00Op'
  # encode{codec{protocol:"standard"}, frame{flag: 0x181, sequence: 1}}: must be skipped, not
  # silently encoded as flag 0x81
  wide='\x15\x00\x00\x00\x1a\x13'"$codec"'\x12\x05\x08\x81\x03\x10\x01'
  # serve{codec{protocol:"standard"}, chunks:["01 01 02 00 'hi'"], half_close: true}
  serve='\x18\x00\x00\x00\x2a\x16'"$codec"'\x1a\x06\x01\x01\x02\x00hi\x20\x01'
  resp=$(printf "$hello$split$trunc$wide" | "$testee" 2>/tmp/fp-cpp-testee.$$.err | hexout)
  rc=$?
  resp2=$(printf "$hello2$serve" | "$testee" 2>>/tmp/fp-cpp-testee.$$.err | hexout)
  rc2=$?
  # expected: decode{frames{flag 1, sequence 1, payload "Open"}}
  want_split='0e000000120c0a0a080110011a044f70656e'
  want_str3=$(printf 'STD-STR-3' | hexout)
  name=$(printf 'frameproof-cpp' | hexout)
  # v1 runner: harness_version 1 (field 1 of HelloResponse, first in it); v2: 2, "serve". The answer: a 4-byte
  # length, the Response's field 1 tag (0a), the HelloResponse's length as a varint (1 byte below 128, else 2)
  hv() { local r=$1; if [ $((16#${r:10:2})) -ge 128 ]; then echo "${r:14:4}"; else echo "${r:12:4}"; fi; }
  if [ "$rc" -eq 0 ] && [[ "$resp" == *"$name"* ]] && [ "$(hv "$resp")" = "0801" ]; then ok "asan testee hello v1"; else ko "asan testee hello v1" "rc=$rc $resp"; fi
  if [ "$rc2" -eq 0 ] && [ "$(hv "$resp2")" = "0802" ] && [[ "$resp2" == *"$(printf serve | hexout)"* ]]; then
    ok "asan testee hello v2"
  else
    ko "asan testee hello v2" "rc=$rc2 $resp2"
  fi
  # serve{written: ["81 01 02 00 'hi'", ""], closed: true}
  if [[ "$resp2" == *"0e0000003a0c0a068101020068690a001001" ]]; then ok "asan testee serve"; else ko "asan testee serve" "$resp2"; fi
  if [[ "$resp" == *"$want_split"* ]]; then ok "asan testee split decode"; else ko "asan testee split decode" "$resp"; fi
  if [[ "$resp" == *"$want_str3"* ]] && [[ "${resp##*$want_split}" != *"4f70"* ]]; then
    ok "asan testee truncated stream -> STD-STR-3, no frame"
  else
    ko "asan testee truncated stream" "$resp"
  fi
  skip_wide=$(printf 'do not fit a byte' | hexout)
  if [[ "$resp" == *"$skip_wide"* ]]; then ok "asan testee flag 0x181 skipped"; else ko "asan testee flag 0x181 skipped" "$resp"; fi
  if [ -s /tmp/fp-cpp-testee.$$.err ]; then
    ko "asan testee stderr clean" "$(head -c 2000 /tmp/fp-cpp-testee.$$.err)"
  else
    ok "asan testee stderr clean"
  fi
  rm -f /tmp/fp-cpp-testee.$$.err
fi

# --- 3. fp-server / fp-load end to end (pytest) -------------------------------------------------
# Counts from pytest's JUnit XML: passed and failed (failures + errors) join the totals; a run in
# which nothing ran (or pytest failed without a failing test) is a failure.
run_pytest() {
  local py=../../.venv/bin/python out xml counts p f
  local dirs=()
  [ -x build/fp-server ] && dirs+=(--binaries release)
  [ "$asan_ok" = 1 ] && dirs+=(--binaries asan)
  if [ ! -x "$py" ]; then
    ko "net tests (pytest)" "no venv at ../../.venv (tools/bootstrap.sh makes it)"
    return
  fi
  if [ "${#dirs[@]}" -eq 0 ]; then
    ko "net tests (pytest)" "neither build/ nor build-asan/ has the programs"
    return
  fi
  xml=$(mktemp --suffix=.xml)
  out=$(timeout 1200 "$py" -m pytest tests/ -q -p no:cacheprovider "${dirs[@]}" --junitxml="$xml" 2>&1)
  local rc=$?
  echo "$out" | grep -v -E '^[.sxXFE]+ *(\[ *[0-9]+%\])?$' | tail -60  # not the progress lines
  counts=$("$py" - "$xml" <<'PY'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    total, failures, errors, skipped = (int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
    for tc in suite.iter("testcase"):
        el = tc.find("skipped")
        if el is not None:
            name = tc.get("classname", "").replace(".", "/") + ".py::" + tc.get("name", "")
            reason = (el.get("message") or "").replace("\n", " ")
            print(f"SKIPPED {name}: {reason}", file=sys.stderr)
    print(total - failures - errors - skipped, failures + errors)
except Exception as e:  # no report: pytest did not get as far as running tests
    print(f"cannot read the pytest report: {e}", file=sys.stderr)
    print(0, 0)
PY
  )
  rm -f "$xml"
  read -r p f <<<"$counts"
  if [ "$((p + f))" -eq 0 ]; then
    ko "net tests (pytest)" "nothing ran (exit status $rc)"
    return
  fi
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
  passed=$((passed + p))
  failed=$((failed + f))
  echo "net: $p passed, $f failed (pytest: ${dirs[*]})"
}
run_pytest

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
