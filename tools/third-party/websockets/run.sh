#!/usr/bin/env bash
# Runs one of this folder's programs (echo_server.py: the fp-server contract's --protocol/--codec and
# --listen; autobahn_client.py: the fp-autobahn-client contract) on the venv build.sh makes, installing it
# on first use:  bash run.sh echo_server.py ARGS...   exec, so that SIGTERM reaches the program itself.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prog="$1"; shift
case "$prog" in /*) ;; *) prog="$here/$prog" ;; esac
py="${FP_AUTOBAHN_HOME:-$HOME/.cache/frameproof}/websockets-venv/bin/python"
[ -x "$py" ] || py=$(bash "$here/build.sh")
exec "$py" "$prog" "$@"
