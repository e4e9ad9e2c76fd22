#!/usr/bin/env bash
# Builds the spec docs site: installs the docs dependencies into .venv (MkDocs + Material),
# generates the Markdown sources from spec/, schemas/, the vectors, the suite's
# requirement -> tests map, reports/ and results/ into build/docs (gitignored), then
# `mkdocs build --strict` into site/ (broken links, missing anchors, pages missing from the
# nav all fail the build). The MkDocs configuration used is mkdocs.yml plus the sources
# directory and the navigation, written by the generator next to the sources.
#   bash tools/docs/build.sh [--site-dir DIR] [--docs-dir DIR] [--matrix FILE] [--results DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
site_dir=$root/site
docs_dir=$root/build/docs
gen_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --site-dir) site_dir=$(realpath -m "$2"); shift 2 ;;
    --docs-dir) docs_dir=$(realpath -m "$2"); shift 2 ;;
    --matrix|--results) gen_args+=("$1" "$(realpath -m "$2")"); shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
bash tools/bootstrap.sh
# the Kaitai compiler (diagrams, field positions) is fetched by tools/gen.sh
ls tools/kaitai/lib/kaitai-struct-compiler*.jar >/dev/null 2>&1 || bash tools/gen.sh
py=.venv/bin/python
if ! "$py" -c 'import mkdocs, material' 2>/dev/null; then
  .venv/bin/pip install -q "mkdocs>=1.6,<2" "mkdocs-material>=9.5,<10"
fi
if ! command -v dot >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q graphviz
fi
cfg=$(dirname "$docs_dir")/$(basename "$docs_dir").mkdocs.yml   # mkdocs.yml + sources dir + generated nav
"$py" tools/docs/gen_docs.py --out "$docs_dir" --config "$cfg" "${gen_args[@]}"
export NO_MKDOCS_2_WARNING=1
# (no --quiet: MkDocs does not count the warnings it does not print, and strict mode would pass)
.venv/bin/mkdocs build --strict --config-file "$cfg" --site-dir "$site_dir"
echo "site built: $site_dir (open $site_dir/index.html, or serve it: bash tools/docs/serve.sh)"
