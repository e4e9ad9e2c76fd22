#!/usr/bin/env bash
# Builds the C# reference implementation with Mono's mcs (no .NET SDK / NuGet on this machine).
# Idempotent: installs mono-complete and nunit-console via apt if missing, then compiles into build/.
set -euo pipefail
cd "$(dirname "$0")"

have_tools() {
  command -v mcs >/dev/null 2>&1 && command -v mono >/dev/null 2>&1 &&
  command -v nunit-console >/dev/null 2>&1 && ls /usr/lib/cli/nunit.framework-*/nunit.framework.dll >/dev/null 2>&1 &&
  [ -f /usr/lib/mono/4.5/Mono.Posix.dll ] && [ -f /usr/lib/mono/4.5/Mono.Simd.dll ]
}
if ! have_tools; then
  echo "build.sh: installing mono-complete and nunit-console via apt" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y mono-complete nunit-console
fi

NUNIT_FW=$(ls /usr/lib/cli/nunit.framework-*/nunit.framework.dll | head -n1)
MCS="mcs -langversion:7.2 -optimize+ -nowarn:1591 -define:MONO"
mkdir -p build

# mk OUT "INPUTS" MCS-ARGS...: compiles OUT unless it is newer than every input and this script. mcs
# rewrites its output every time, and the suite may be running build/*.exe while a unit-test run
# calls this script: an output is compiled in build/.new and renamed into place (a running process
# keeps the file it opened).
mk() {
  local out=$1 inputs=$2
  shift 2
  # shellcheck disable=SC2086
  if [ -f "build/$out" ] && [ -z "$(find $inputs build.sh -newer "build/$out" 2>/dev/null | head -1)" ]; then
    return
  fi
  mkdir -p build/.new
  $MCS -out:"build/.new/$out" "$@"
  for f in build/.new/*; do mv -f "$f" build/; done
}
# Mono.Simd: the SSE2 masking loop of WsMask (Mono 6.8 does not accelerate System.Numerics.Vector)
mk Frameproof.Codec.dll src/Codec -unsafe -r:Mono.Simd -target:library -doc:build/.new/Frameproof.Codec.xml $(find src/Codec -name '*.cs' | sort)
dll="src/Codec build/Frameproof.Codec.dll"
mk fp-testee.exe "src/Testee $dll" -r:build/Frameproof.Codec.dll src/Testee/*.cs
if [ -d src/Server ] && ls src/Server/*.cs >/dev/null 2>&1; then
  mk fp-server.exe "src/Server $dll" -unsafe -r:build/Frameproof.Codec.dll -r:Mono.Posix src/Server/*.cs
fi
if [ -d src/Load ] && ls src/Load/*.cs >/dev/null 2>&1; then
  mk fp-load.exe "src/Load $dll" -r:build/Frameproof.Codec.dll src/Load/*.cs
fi
if [ -d src/AutobahnClient ] && ls src/AutobahnClient/*.cs >/dev/null 2>&1; then
  mk fp-autobahn-client.exe "src/AutobahnClient $dll" -r:build/Frameproof.Codec.dll src/AutobahnClient/*.cs
fi
if [ -d src/Bench ] && ls src/Bench/*.cs >/dev/null 2>&1; then
  mk fp-bench.exe "src/Bench $dll" -unsafe -r:build/Frameproof.Codec.dll src/Bench/*.cs
fi
if [ -d src/DiscoveryBench ] && ls src/DiscoveryBench/*.cs >/dev/null 2>&1; then
  mk fp-discovery-bench.exe "src/DiscoveryBench $dll" -r:build/Frameproof.Codec.dll src/DiscoveryBench/*.cs
fi
if ls tests/*.cs >/dev/null 2>&1; then
  # The testee's message and service files are compiled into the test assembly as well.
  mk Frameproof.Tests.dll "tests src/Testee $dll" -target:library -r:build/Frameproof.Codec.dll -r:"$NUNIT_FW" \
    tests/*.cs src/Testee/TesteeProto.cs src/Testee/TesteeService.cs src/Testee/DiscoveryScript.cs src/Testee/LongStream.cs
  cp -f "$NUNIT_FW" build/
fi
echo "build.sh: ok ($(ls build/*.exe build/*.dll | wc -l) assemblies in build/)"
