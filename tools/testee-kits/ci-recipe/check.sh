#!/usr/bin/env bash
# frameproof conformance gate for your CI. Copy this folder into your repository (e.g. ci/frameproof/),
# put the frameproof wheel next to it (built from a frameproof checkout with `bash tools/build_wheel.sh`),
# and run:
#   TESTEE="./build/my-testee" bash ci/frameproof/check.sh
# Settings (environment):
#   TESTEE    your testee command (required), run from the current directory
#   PROTOCOL  protocol to test (default: standard)
#   WHEEL     the wheel (default: the newest frameproof-*.whl next to this script, else in the current directory)
#   XFAIL     expected-failures file (default: known-gaps.txt next to this script)
#   JUNIT     JUnit XML report to write (default: report.xml)
#   VENV      where to make the venv (default: .frameproof-venv)
# Exit status is frameproof's: 0 all passed, 1 an unexpected failure (or a known gap that now passes,
# or a known-gaps entry that matches no test), 2 usage error, 3 the testee could not start.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${TESTEE:?set TESTEE to your testee command, e.g. TESTEE=./my-testee}"
PROTOCOL=${PROTOCOL:-standard}
XFAIL=${XFAIL:-$here/known-gaps.txt}
JUNIT=${JUNIT:-report.xml}
VENV=${VENV:-.frameproof-venv}
if [ -z "${WHEEL:-}" ]; then
  WHEEL=$(ls -t "$here"/frameproof-*.whl ./frameproof-*.whl 2>/dev/null | head -1 || true)
fi
[ -n "$WHEEL" ] && [ -f "$WHEEL" ] || { echo "check.sh: no frameproof-*.whl found (set WHEEL)" >&2; exit 2; }

python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "$WHEEL"
"$VENV/bin/frameproof" --version

args=(run --testee "$TESTEE" --protocol "$PROTOCOL" --junit "$JUNIT")
[ -f "$XFAIL" ] && args+=(--xfail "$XFAIL")
status=0
"$VENV/bin/frameproof" "${args[@]}" || status=$?
case $status in
  0) echo "check.sh: conformance gate passed" ;;
  1) echo "check.sh: conformance gate FAILED (an unexpected failure, or $XFAIL is out of date)" >&2 ;;
  3) echo "check.sh: the testee could not start: $TESTEE" >&2 ;;
  *) echo "check.sh: frameproof exited $status" >&2 ;;
esac
exit "$status"
