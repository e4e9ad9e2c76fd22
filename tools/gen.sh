#!/usr/bin/env bash
# Generates the suite's oracle and harness bindings from the schemas:
#   schemas/*.ksy      -> conformance/frameproof/_generated/*_frame.py   (Kaitai Struct compiler, JVM build)
#   schemas/testee.proto -> conformance/frameproof/_generated/testee_pb2.py (grpcio-tools' protoc)
# Generated files are never edited or committed. Needs java + maven (installed here if missing)
# and the Python environment made by tools/bootstrap.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
out=$root/conformance/frameproof/_generated
lib=$root/tools/kaitai/lib
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q default-jre-headless maven
fi
if [ ! -f "$lib/kaitai-struct-compiler_2.13-0.11.jar" ]; then
  (cd "$root/tools/kaitai" && mvn -q dependency:copy-dependencies -DoutputDirectory=lib)
fi
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
java -cp "$lib/*" io.kaitai.struct.JavaMain -t python --outdir "$out.tmp" "$root"/schemas/*.ksy
"$py" -m grpc_tools.protoc -I"$root/schemas" --python_out="$out.tmp" "$root/schemas/testee.proto"
touch "$out.tmp/__init__.py"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "generated: $(cd "$out" && ls *.py | tr '\n' ' ')"
