#!/usr/bin/env bash
# Builds the floor servers of the benchmark (tools/bench/floor, issue 28) into tools/bench/floor/build/.
# Needs a C compiler, cJSON, http-parser, OpenSSL's libcrypto and liburing (Debian: libcjson-dev,
# libhttp-parser-dev, libssl-dev, liburing-dev), installed here when missing and apt-get exists. The io_uring floor is left out (with a message) where liburing is not there.
set -euo pipefail
cd "$(dirname "$0")"
for pkg in libcjson-dev:/usr/include/cjson/cJSON.h liburing-dev:/usr/include/liburing.h \
    libhttp-parser-dev:/usr/include/http_parser.h libssl-dev:/usr/include/openssl/evp.h; do
  if ! [ -f "${pkg#*:}" ] && command -v apt-get >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkg%%:*}" || { apt-get update -q &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkg%%:*}"; }; } >/dev/null 2>&1 ||
      echo "floor/build.sh: could not install ${pkg%%:*}" >&2
  fi
done
mkdir -p build
cc -O2 -g -Wall -Wextra -Werror -std=c11 -o build/fp-floor-epoll fp-floor-epoll.c -lcjson -lhttp_parser -lcrypto
echo "built $(pwd)/build/fp-floor-epoll"
if [ -f /usr/include/liburing.h ]; then
  cc -O2 -g -Wall -Wextra -Werror -std=c11 -o build/fp-floor-uring fp-floor-uring.c -lcjson -lhttp_parser -lcrypto -luring
  echo "built $(pwd)/build/fp-floor-uring"
else
  echo "floor/build.sh: no liburing: fp-floor-uring not built" >&2
fi
