#!/usr/bin/env bash
# Builds the C# reference implementation with Mono's mcs (no .NET SDK / NuGet on this machine).
# Idempotent: installs mono-complete and nunit-console via apt if missing, then compiles into build/.
set -euo pipefail
cd "$(dirname "$0")"

have_tools() {
  command -v mcs >/dev/null 2>&1 && command -v mono >/dev/null 2>&1 &&
  command -v nunit-console >/dev/null 2>&1 && ls /usr/lib/cli/nunit.framework-*/nunit.framework.dll >/dev/null 2>&1 &&
  [ -f /usr/lib/mono/4.5/Mono.Posix.dll ]
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

$MCS -unsafe -target:library -out:build/Frameproof.Codec.dll -doc:build/Frameproof.Codec.xml $(find src/Codec -name '*.cs' | sort)
$MCS -out:build/fp-testee.exe -r:build/Frameproof.Codec.dll src/Testee/*.cs
if [ -d src/Server ] && ls src/Server/*.cs >/dev/null 2>&1; then
  $MCS -unsafe -out:build/fp-server.exe -r:build/Frameproof.Codec.dll -r:Mono.Posix src/Server/*.cs
fi
if [ -d src/Load ] && ls src/Load/*.cs >/dev/null 2>&1; then
  $MCS -out:build/fp-load.exe -r:build/Frameproof.Codec.dll src/Load/*.cs
fi
if [ -d src/AutobahnClient ] && ls src/AutobahnClient/*.cs >/dev/null 2>&1; then
  $MCS -out:build/fp-autobahn-client.exe -r:build/Frameproof.Codec.dll src/AutobahnClient/*.cs
fi
if [ -d src/Bench ] && ls src/Bench/*.cs >/dev/null 2>&1; then
  $MCS -unsafe -out:build/fp-bench.exe -r:build/Frameproof.Codec.dll src/Bench/*.cs
fi
if [ -d src/DiscoveryBench ] && ls src/DiscoveryBench/*.cs >/dev/null 2>&1; then
  $MCS -out:build/fp-discovery-bench.exe -r:build/Frameproof.Codec.dll src/DiscoveryBench/*.cs
fi
if ls tests/*.cs >/dev/null 2>&1; then
  # The testee's message and service files are compiled into the test assembly as well.
  $MCS -target:library -out:build/Frameproof.Tests.dll -r:build/Frameproof.Codec.dll -r:"$NUNIT_FW" \
    tests/*.cs src/Testee/TesteeProto.cs src/Testee/TesteeService.cs src/Testee/DiscoveryScript.cs src/Testee/LongStream.cs
  cp -f "$NUNIT_FW" build/
fi
echo "build.sh: ok ($(ls build/*.exe build/*.dll | wc -l) assemblies in build/)"
