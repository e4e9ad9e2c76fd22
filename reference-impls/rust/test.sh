#!/usr/bin/env bash
# Runs the unit and property tests (cargo test) and clippy (-D warnings), then prints a last
# line "N passed, N failed, N skipped" summing the cargo test results (each skip on a line
# "SKIPPED <test>: <reason>"). A clippy failure, or a test binary
# that does not build, counts as one more failure. Exit status 0 only if nothing failed.
# Benchmarks are not run here (cargo bench -p frameproof-codec).
set -uo pipefail
cd "$(dirname "$0")"
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
lock=()
if command -v flock >/dev/null 2>&1; then
  lock=(flock /tmp/frameproof-build.lock)
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# the shared build lock is held while cargo compiles, not while the tests run (the other
# implementations' builds wait on it: CI runs the three test.sh side by side)
"${lock[@]}" cargo test --locked --no-run 2>&1 | grep -v -E '^ +Executable ' >&2
cargo test --locked 2>&1 | tee "$log"
test_rc=${PIPESTATUS[0]}
# The discovery crate's etcd-backed registry (feature "etcd") and its tests against a real etcd
# (each test starts its own on 127.0.0.1): they need etcd-server and protoc, installed here with
# apt-get where missing; where that fails, skipped with the reason (a SKIPPED line, which
# tools/test.sh checks against .ci/allowed-skips).
need=()
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"; } >&2 || true
fi
if command -v etcd >/dev/null 2>&1 && command -v protoc >/dev/null 2>&1; then
  "${lock[@]}" cargo test --locked --release -p fp-discovery --features etcd --no-run 2>&1 | grep -v -E '^ +Executable ' >&2
  cargo test --locked --release -p fp-discovery --features etcd 2>&1 | tee -a "$log"
  etcd_rc=${PIPESTATUS[0]}
  [ "$etcd_rc" -ne 0 ] && test_rc=$etcd_rc
else
  echo "SKIPPED etcd registry tests (fp-discovery --features etcd): needs etcd-server and protoc, which apt-get could not install"
  skipped_extra=1
fi
passed=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) passed.*/\1/' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) failed.*/\1/' | awk '{s+=$1} END {print s+0}')
ignored=$(grep -E '^test result:' "$log" | sed -E 's/.* ([0-9]+) ignored.*/\1/' | awk '{s+=$1} END {print s+0}')
# an ignored test (#[ignore]) is a skip: named on a SKIPPED line for tools/test.sh
grep -E '^test .* \.\.\. ignored' "$log" | sed -E 's/^test (.*) \.\.\. ignored(, )?(.*)$/SKIPPED \1: #[ignore] \3/'
skipped=$((ignored + ${skipped_extra:-0}))
if [ "$test_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "test.sh: cargo test failed without a failing test (build error?)" >&2
  failed=$((failed + 1))
fi
if "${lock[@]}" cargo clippy --locked --all-targets -- -D warnings; then
  echo "test.sh: clippy clean"
else
  echo "test.sh: clippy reported problems" >&2
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
