#!/usr/bin/env bash
# frameproof as a gate in any CI: the logic of the GitHub Action (action.yml at the repository's top),
# usable from GitLab, Jenkins, Buildkite or a Makefile alike. It installs frameproof (the wheel of this
# checkout, i.e. the version pinned by the tag or commit you took it at, or FP_WHEEL), runs the suites
# asked for, writes a JSON and a JUnit report per suite and the HTML pages with badges (frameproof
# report), and exits as frameproof's own commands do.
#
# Settings (environment; every command is run from the current directory):
#   FP_PROTOCOLS      protocols, comma-separated (default: standard)
#   FP_TESTEE         testee command: the codec suite (frameproof run), once per protocol
#   FP_SERVER         echo server command (the fp-server contract: prints "LISTENING host:port"); the
#                     network suite (frameproof net) once per protocol. {protocol} in it is replaced
#   FP_STRESS         1: also the stress group (frameproof net --stress) against FP_SERVER
#   FP_LOAD_CLIENT    load client command with {host} {port} {json} (and {protocol}): frameproof net --client
#   FP_AUTOBAHN       server, client or both (websocket): the Autobahn testsuite against FP_SERVER and/or
#   FP_AUTOBAHN_CLIENT  the client command (frameproof autobahn --client-cmd)
#   FP_XFAIL_DIR      directory of expected-failure files, used where present: codec-<protocol>.txt,
#                     net-<protocol>.txt, stress-<protocol>.txt, client-<protocol>.txt, autobahn-server.txt,
#                     autobahn-client.txt (one test name or glob a line, '#' starts the reason)
#   FP_LEVEL          spec (default) or rfc: judge by this spec, or by the RFC's and upstream's MUSTs alone
#   FP_PROFILE        the codec suite's Hypothesis profile: ci (default, derandomized), smoke (few examples)
#   FP_OUT            report directory (default frameproof-reports)
#   FP_WHEEL          a frameproof wheel to install instead of building this checkout's
#   FP_VENV           where the venv goes (default .frameproof-venv)
# Exit status: 0 every suite passed (expected failures included); otherwise the status of the first
# suite that did not exit 0, after every suite has run: 1 an unexpected failure (or an expected failure
# that passed, or an expected-failures entry that matches no test), 2 a usage error, 3 a program under
# test could not start, 5 nothing ran. A gate with no suite to run (no FP_TESTEE, FP_SERVER,
# FP_LOAD_CLIENT or FP_AUTOBAHN) is a usage error.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
protocols=${FP_PROTOCOLS:-standard}
level=${FP_LEVEL:-spec}
profile=${FP_PROFILE:-ci}
out=${FP_OUT:-frameproof-reports}
venv=${FP_VENV:-.frameproof-venv}
xdir=${FP_XFAIL_DIR:-}

if [ -z "${FP_TESTEE:-}${FP_SERVER:-}${FP_LOAD_CLIENT:-}${FP_AUTOBAHN:-}" ]; then
  echo "gate.sh: nothing to check: set FP_TESTEE, FP_SERVER, FP_LOAD_CLIENT or FP_AUTOBAHN" >&2
  exit 2
fi
case $level in spec | rfc) ;; *) echo "gate.sh: FP_LEVEL is spec or rfc, not '$level'" >&2; exit 2 ;; esac
case $profile in ci | smoke | fuzz) ;; *) echo "gate.sh: FP_PROFILE is ci, smoke or fuzz, not '$profile'" >&2; exit 2 ;; esac

# --- install the pinned frameproof into its own venv
wheel=${FP_WHEEL:-}
if [ -z "$wheel" ]; then
  wheel=$(bash "$here/tools/build_wheel.sh" "$(mktemp -d)") || { echo "gate.sh: could not build the frameproof wheel" >&2; exit 2; }
fi
python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check "$wheel" \
  || { echo "gate.sh: could not install $wheel" >&2; exit 2; }
fp="$venv/bin/frameproof"
echo "gate.sh: $("$fp" --version) from $wheel; level $level; reports in $out"
mkdir -p "$out"

first=0
declare -a summary=()
step() {  # step NAME XFAIL-FILE ARGS...: one suite, its reports, its status
  local name=$1 xf=$2
  shift 2
  local args=("$@" --json "$out/$name.json" --junit "$out/$name.xml")
  [ -n "$xdir" ] && [ -f "$xdir/$xf" ] && args+=(--xfail "$xdir/$xf")
  echo "== $name: frameproof ${args[*]}"
  "$fp" "${args[@]}"
  local rc=$?
  summary+=("$(printf '%-28s exit %s' "$name" "$rc")")
  [ "$rc" -ne 0 ] && [ "$first" -eq 0 ] && first=$rc
  return 0
}
sub() { local s=${1//\{protocol\}/$2}; printf '%s' "$s"; }

IFS=',' read -r -a plist <<<"$protocols"
for p in "${plist[@]}"; do
  p=$(echo "$p" | tr -d ' ')
  [ -n "${FP_TESTEE:-}" ] && step "codec-$p" "codec-$p.txt" run --testee "$(sub "$FP_TESTEE" "$p")" --protocol "$p" --level "$level" --profile "$profile"
  if [ -n "${FP_SERVER:-}" ]; then
    step "net-$p" "net-$p.txt" net --protocol "$p" --server-cmd "$(sub "$FP_SERVER" "$p")" --level "$level"
    [ "${FP_STRESS:-0}" = 1 ] && step "stress-$p" "stress-$p.txt" net --protocol "$p" --stress --server-cmd "$(sub "$FP_SERVER" "$p")"
  fi
  [ -n "${FP_LOAD_CLIENT:-}" ] && step "client-$p" "client-$p.txt" net --protocol "$p" --client "$(sub "$FP_LOAD_CLIENT" "$p")" --level "$level"
done
case ${FP_AUTOBAHN:-} in
  "") ;;
  server | client | both)
    if [ "$FP_AUTOBAHN" != client ]; then
      [ -n "${FP_SERVER:-}" ] || { echo "gate.sh: FP_AUTOBAHN=$FP_AUTOBAHN needs FP_SERVER" >&2; exit 2; }
      step autobahn-server autobahn-server.txt autobahn --server-cmd "$(sub "$FP_SERVER" websocket)"
    fi
    if [ "$FP_AUTOBAHN" != server ]; then
      [ -n "${FP_AUTOBAHN_CLIENT:-}" ] || { echo "gate.sh: FP_AUTOBAHN=$FP_AUTOBAHN needs FP_AUTOBAHN_CLIENT" >&2; exit 2; }
      step autobahn-client autobahn-client.txt autobahn --client-cmd "$FP_AUTOBAHN_CLIENT"
    fi
    ;;
  *) echo "gate.sh: FP_AUTOBAHN is server, client or both, not '$FP_AUTOBAHN'" >&2; exit 2 ;;
esac

"$fp" report "$out" --out "$out/html" >/dev/null || echo "gate.sh: no HTML pages (no report was written)" >&2
echo "== gate.sh: summary (pages: $out/html/index.html)"
printf '  %s\n' "${summary[@]}"
if [ "$first" -eq 0 ]; then echo "gate.sh: conformance gate passed"; else echo "gate.sh: conformance gate FAILED (exit $first)" >&2; fi
exit "$first"
