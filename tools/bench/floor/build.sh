#!/usr/bin/env bash
# Builds the floor servers of the benchmark (tools/bench/floor, issue 28) into tools/bench/floor/build/.
# Needs a C compiler and cJSON (Debian: libcjson-dev), installed here when missing and apt-get exists.
set -euo pipefail
cd "$(dirname "$0")"
if ! [ -f /usr/include/cjson/cJSON.h ] && command -v apt-get >/dev/null; then
  apt-get install -y -q libcjson-dev >/dev/null
fi
mkdir -p build
cc -O2 -g -Wall -Wextra -Werror -std=c11 -o build/fp-floor-epoll fp-floor-epoll.c -lcjson
echo "built $(pwd)/build/fp-floor-epoll"
