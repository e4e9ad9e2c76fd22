#!/usr/bin/env bash
# Installs the Autobahn testsuite drivers that `frameproof autobahn` runs, into their own environments:
#   wstest (autobahntestsuite 25.10.1, Python 2 only) in a virtualenv on pyenv's CPython 2.7.18,
#   kosoku 0.1.0 (Python 3) in a venv; both from PyPI, under ~/.cache/frameproof (FP_AUTOBAHN_HOME).
# Idempotent and cached (a second run returns at once). FP_PYTHON27 names another CPython 2.7.
# The install itself lives in frameproof.protocols.websocket.autobahn (so the wheel has it too).
# Prints "WSTEST <path>" and "KOSOKU <path>" (or "KOSOKU none: <reason>").
# Exit status: 0 wstest usable; 3 no Python 2.7 or the install failed (the reason on stderr).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py="$root/.venv/bin/python"
[ -x "$py" ] || { bash "$root/tools/bootstrap.sh" >&2; }
cd "$root"
exec "$py" -m frameproof.protocols.websocket.autobahn install
