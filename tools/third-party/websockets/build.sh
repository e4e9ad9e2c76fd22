#!/usr/bin/env bash
# Installs websockets (PyPI, pinned below) into its own venv, for echo_server.py: the third-party
# websocket echo server `frameproof autobahn` runs beside the Python reference server.
# Idempotent and cached: ~/.cache/frameproof/websockets-venv (FP_AUTOBAHN_HOME moves it).
# Prints the venv's python last.
set -euo pipefail
VERSION=17.4
home="${FP_AUTOBAHN_HOME:-$HOME/.cache/frameproof}"
venv="$home/websockets-venv"
mkdir -p "$home"
exec 9>"$home/websockets-install.lock"
flock 9
if [ ! -f "$venv/.fp-ok-$VERSION" ]; then
  rm -rf "$venv"
  "${FP_PYTHON3:-python3}" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "websockets==$VERSION"
  touch "$venv/.fp-ok-$VERSION"
fi
echo "build.sh: websockets $VERSION in $venv" >&2
echo "$venv/bin/python"
