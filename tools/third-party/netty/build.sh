#!/usr/bin/env bash
# Builds target/fp-netty-server.jar: frameproof's length-field echo-server contract around Netty 4.1's
# LengthFieldBasedFrameDecoder. Needs a JDK (17 or newer) and Maven, installed from Debian's packages when
# missing; the jars come from Maven Central through mvn (versions pinned in pom.xml). Idempotent: a
# second run only repackages.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "build.sh: installing maven and a JDK (apt)" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven default-jdk-headless >/dev/null
fi
lock=()
command -v flock >/dev/null 2>&1 && lock=(flock /tmp/frameproof-build.lock)
"${lock[@]}" mvn -q -B package
test -f target/fp-netty-server.jar || { echo "build.sh: target/fp-netty-server.jar missing" >&2; exit 1; }
echo "build.sh: built $(pwd)/target/fp-netty-server.jar"
