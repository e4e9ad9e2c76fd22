#!/usr/bin/env bash
# Runs fp-netty-server (the contract's flags pass through: --protocol/--codec, --listen, --threads).
# exec: the signals the suite sends (SIGTERM) reach the JVM itself.
exec java -jar "$(dirname "$0")/target/fp-netty-server.jar" "$@"
