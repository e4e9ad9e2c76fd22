#!/usr/bin/env bash
# Runs the C# unit tests with NUnit 2.6 (nunit-console) and ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")"
bash build.sh >&2 || { echo "0 passed, 1 failed"; exit 1; }
rm -f build/TestResult.xml
nunit-console -nologo -noshadow -xml=build/TestResult.xml build/Frameproof.Tests.dll
rc=$?
if [ -f build/TestResult.xml ]; then
  # <test-results total="T" errors="E" failures="F" not-run="N" inconclusive=... ignored=... skipped=... invalid=...>
  # NUnit 2.6: "total" counts the tests that ran; each test that did not (Ignore, Explicit) is named
  # on a line "SKIPPED <test>: <reason>" for tools/test.sh
  read -r total errors failures notrun < <(python3 - build/TestResult.xml <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
for tc in r.iter("test-case"):
    if tc.get("executed") == "False":
        reason = tc.find("reason/message")
        msg = " ".join((reason.text or "").split()) if reason is not None else tc.get("result", "not run")
        print(f"SKIPPED {tc.get('name')}: {msg}", file=sys.stderr)
print(r.get("total"), r.get("errors"), r.get("failures"), r.get("not-run"))
PY
)
  failed=$((errors + failures))
  passed=$((total - failed))
  echo "${passed} passed, ${failed} failed, ${notrun} skipped"
else
  echo "0 passed, 1 failed"
  [ "$rc" -eq 0 ] && rc=1
fi
exit $rc
