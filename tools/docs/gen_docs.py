#!/usr/bin/env python3
"""Generates the Markdown sources of the spec docs site (MkDocs, see mkdocs.yml) from
the repository: nothing on the site is typed twice.

  spec/*.md            -> <out>/<name>.md, each requirement followed by the tests that check
                          it (frameproof.catalog.requirement_map(), the suite's own map)
  schemas/*.ksy        -> <out>/schemas/<name>.md: field tables from the .ksy, the Kaitai
                          compiler's graphviz diagram rendered to SVG by `dot`, the source
  schemas/testee.proto -> <out>/schemas/testee.md
  conformance/vectors  -> <out>/vectors/<protocol>.md: every vector, hex dumps annotated by
                          field (frames and errors from frameproof.oracle, field positions from
                          the same .ksy compiled with Kaitai's --debug position tracking)
  reports/matrix.json  -> <out>/results/matrix.md (implementation x requirement)
  results/bench-*.*    -> <out>/results/benchmarks.md (+ PNG charts)
  tools/docs/pages/*   -> hand-written pages (landing page template, implementers' guide)

  -> <out>.mkdocs.yml: mkdocs.yml (INHERIT) + the sources directory + the navigation

Usage: gen_docs.py --out build/docs [--config FILE] [--kaitai-lib tools/kaitai/lib] [--matrix FILE] [--results DIR]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

# the page families live in tools/docs/gendocs, one module each
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gendocs.common import ROOT  # noqa: E402  (first: it puts conformance/ on the path)
from frameproof import catalog  # noqa: E402
from gendocs.result_pages import find_matrix, gen_bench, gen_matrix  # noqa: E402
from gendocs.schema_pages import compile_ksy, gen_schemas  # noqa: E402
from gendocs.site import gen_config, gen_pages  # noqa: E402
from gendocs.spec_pages import gen_requirements_index, gen_spec_pages  # noqa: E402
from gendocs.vector_pages import Annotator, gen_vectors, load_debug_parsers  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "docs"))
    ap.add_argument("--kaitai-lib", default=str(ROOT / "tools" / "kaitai" / "lib"))
    ap.add_argument("--matrix", help="matrix.json to show (default: reports/matrix.json, else the newest reports/*/matrix.json)")
    ap.add_argument("--results", default=str(ROOT / "results"), help="directory of bench-*.json/.md/.png")
    ap.add_argument("--config", help="MkDocs configuration to write (default: <out>.mkdocs.yml)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    lib = Path(a.kaitai_lib)
    if not (lib / "kaitai-struct-compiler_2.13-0.11.jar").exists() and not list(lib.glob("kaitai-struct-compiler*.jar")):
        raise SystemExit(f"Kaitai compiler jars missing in {lib}: run `bash tools/bootstrap.sh`")
    rmap = catalog.requirement_map()
    spec_pages = gen_spec_pages(out, rmap)
    gen_requirements_index(out, rmap)
    with tempfile.TemporaryDirectory(prefix="fp-docs-ksc-") as tmp:
        compiled = compile_ksy(lib, Path(tmp))
        schema_pages = gen_schemas(out, compiled)
        vector_pages = gen_vectors(out, Annotator(load_debug_parsers(compiled)), rmap)
    gen_matrix(out, find_matrix(a.matrix))
    gen_bench(out, Path(a.results))
    gen_pages(out, rmap, spec_pages)
    config = Path(a.config) if a.config else out.with_name(out.name + ".mkdocs.yml")
    gen_config(out, config, spec_pages, schema_pages, vector_pages)
    n = sum(1 for _ in out.rglob("*.md"))
    print(f"docs sources: {n} pages in {out}; MkDocs configuration {config}")


if __name__ == "__main__":
    main()
