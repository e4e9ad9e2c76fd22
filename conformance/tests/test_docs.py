"""The spec docs site (tools/docs, mkdocs.yml): it builds in strict mode from the repository,
a broken anchor fails the build, every requirement is an anchor with its tests listed, and the
built site renders in headless Chromium (screenshots under reports/docs/)."""
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from frameproof import catalog, spec, vectors as V
from frameproof.protocols import get as registry_get, names as protocol_names

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "docs"))
import browser  # noqa: E402  (tools/docs/browser.py)

SHOTS = ROOT / "reports" / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Runs tools/docs/build.sh into a temporary directory; returns (docs sources, site).
    Under pytest-xdist the workers of one run share a single build (file lock)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        tmp = tmp_path_factory.getbasetemp().parent / "docs-site"  # this run's directory, shared
        tmp.mkdir(exist_ok=True)
    else:
        tmp = tmp_path_factory.mktemp("docs")
    docs, out = tmp / "src", tmp / "site"
    with open(tmp / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (tmp / "built").exists():
            p = subprocess.run(["bash", "tools/docs/build.sh", "--docs-dir", str(docs), "--site-dir", str(out)],
                               cwd=ROOT, capture_output=True, text=True, timeout=600)
            assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
            (tmp / "built").touch()
    return docs, out


def test_site_has_every_spec_requirement_schema_and_vector(site):
    _docs, out = site
    rmap = catalog.requirement_map()
    for rid, req in spec.requirements().items():
        page = (out / req.protocol / "index.html").read_text(encoding="utf-8")
        assert f'id="{rid}"' in page, f"no anchor for {rid} on {req.protocol}/"
    for proto in sorted({q.protocol for q in spec.requirements().values()}):  # every spec, the harness's too
        page = (out / proto / "index.html").read_text(encoding="utf-8")
        tested = [r for r, q in spec.requirements().items() if q.protocol == proto and rmap.get(r)]
        assert page.count("Checked by ") == len(tested), proto
    # the tests listed come from the suite's own map: one sample per requirement
    std = (out / "standard" / "index.html").read_text(encoding="utf-8")
    for rid in ("STD-LIM-1", "STD-MATCH-1"):
        some = rmap[rid][0]["name"].rsplit("/", 1)[0] if rmap[rid][0].get("vector") else rmap[rid][0]["name"]
        assert some in std, some
    assert (out / "testee" / "index.html").exists() and (out / "implementers" / "index.html").exists()
    for ksy in (ROOT / "schemas").glob("*.ksy"):
        page = (out / "schemas" / ksy.stem / "index.html").read_text(encoding="utf-8")
        svg = re.search(r'src="([^"]+\.svg)"', page)
        assert svg, f"no diagram on schemas/{ksy.stem}/"
        assert (out / "schemas" / ksy.stem / svg.group(1)).resolve().read_text().lstrip().startswith(("<?xml", "<svg"))
        assert "Fields" in page and "Source" in page
    for proto in protocol_names():
        page = (out / "vectors" / proto / "index.html").read_text(encoding="utf-8")
        for v in V.load(proto):
            assert f'id="{v.id}"' in page, f"vector {proto}/{v.id} missing"
        assert page.count('class="fp-hex"') >= len(V.load(proto)) // 2
    for p in ("results/matrix", "results/benchmarks", "requirements", "search"):
        assert (out / p).is_dir(), p
    # the home page's protocol table comes from the registry: every protocol, its spec and its vectors
    home = (out / "index.html").read_text(encoding="utf-8")
    for proto in protocol_names():
        assert f"<code>{proto}</code>" in home and f'href="{proto}/"' in home and f'href="vectors/{proto}/"' in home, proto
    # the report JSON Schemas are published: shown on their page and downloadable as files
    reports = (out / "schemas" / "reports" / "index.html").read_text(encoding="utf-8")
    for f in (ROOT / "conformance" / "frameproof" / "schemas").glob("*.schema.json"):
        assert f.name in reports and json.loads((out / "schemas" / f.name).read_text()) == json.loads(f.read_text())
    assert "STD-LIM-1" in (out / "search" / "search_index.json").read_text(encoding="utf-8")


def test_strict_build_fails_on_a_missing_anchor(site, tmp_path):
    docs, _out = site
    broken = tmp_path / "src"
    shutil.copytree(docs, broken)
    with open(broken / "index.md", "a", encoding="utf-8") as f:
        f.write("\n[a requirement that does not exist](standard.md#STD-NOPE-1)\n")
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {broken}\n")
    p = subprocess.run([str(ROOT / ".venv" / "bin" / "mkdocs"), "build", "--strict", "-f", str(cfg),
                        "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert p.returncode != 0, "a link to a missing anchor must fail the strict build"
    assert "STD-NOPE-1" in p.stdout + p.stderr


def test_site_builds_without_results_and_says_so(tmp_path):
    """A fresh checkout has no reports/ or results/: the pages say "no results yet"."""
    empty = tmp_path / "no-results"
    empty.mkdir()
    p = subprocess.run(["bash", "tools/docs/build.sh", "--docs-dir", str(tmp_path / "src"), "--site-dir",
                        str(tmp_path / "site"), "--matrix", str(empty / "matrix.json"), "--results", str(empty)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    for page in ("matrix", "benchmarks"):
        html = (tmp_path / "site" / "results" / page / "index.html").read_text(encoding="utf-8")
        assert "No results yet" in html, page


def _ensure_chromium():
    if browser.find_chromium():
        return
    subprocess.run("apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium",
                   shell=True, capture_output=True, timeout=900)
    if not browser.find_chromium():
        pytest.skip("chromium is not installed and `apt-get install chromium` failed")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_site_renders_in_headless_chromium(site):
    _docs, out = site
    _ensure_chromium()
    port = _free_port()
    srv = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                            "--directory", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/"
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        with browser.Browser() as b:
            # landing page: title, navigation, the search box of the theme
            b.goto(base)
            assert b.eval("document.querySelector('h1').textContent").strip().startswith("frameproof")
            assert b.eval("document.querySelectorAll('nav.md-nav a').length") > 10
            assert b.eval("!!document.querySelector('input.md-search__input')")
            b.screenshot(SHOTS / "index.png")

            # a requirement anchor resolves: the element exists and is scrolled to the top
            b.goto(base + "standard/#STD-LIM-1")
            top = b.eval("document.getElementById('STD-LIM-1').getBoundingClientRect().top")
            assert b.eval("window.scrollY") > 500 and 0 <= top < 200, top
            assert b.eval("document.getElementById('STD-LIM-1').nextElementSibling.textContent").startswith("STD-LIM-1")
            shot = b.screenshot(SHOTS / "standard-STD-LIM-1.png")
            assert Path(shot).stat().st_size > 20000  # a blank 1200x800 page is ~5 kB

            # search: type a query into the theme's search box, results appear
            b.goto(base)
            b.eval("""(() => { const i = document.querySelector('input.md-search__input');
                       i.focus(); i.value = 'sticky packet';
                       i.dispatchEvent(new Event('input', {bubbles: true}));
                       i.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true})); })()""")
            n = 0
            for _ in range(100):  # the search index is built in a web worker: slow on a loaded machine
                time.sleep(0.2)
                n = b.eval("document.querySelectorAll('.md-search-result__item').length")
                if n:
                    break
            assert n > 0, "search gave no results for 'sticky packet'"
            b.screenshot(SHOTS / "search.png")
            # a requirement ID typed into the search box jumps to its anchor on Enter
            b.goto(base + "vectors/standard/")
            b.eval("""(() => { const i = document.querySelector('input.md-search__input');
                       i.focus(); i.value = 'lf-match-1';
                       i.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); })()""")
            for _ in range(30):
                time.sleep(0.2)
                if b.eval("location.href").endswith("/length-field/#LF-MATCH-1"):
                    break
            assert b.eval("location.href") == base + "length-field/#LF-MATCH-1"

            # every protocol: a requirement anchor with its tests, annotated vectors, the schema diagram
            for proto in protocol_names():
                P = registry_get(proto)
                rid = next(r for r, q in spec.requirements().items() if q.protocol == P.spec_name)
                b.goto(base + f"{P.spec_name}/#{rid}")
                assert b.eval(f"!!document.getElementById('{rid}')"), rid
                assert "Checked by" in b.eval("document.querySelector('article').textContent"), proto
                vec = V.load(proto)[0].id
                b.goto(base + f"vectors/{proto}/#{vec}")
                assert b.eval("document.querySelectorAll('.fp-hex span[title]').length") > 20, proto
                b.screenshot(SHOTS / f"vectors-{proto}.png")
                b.goto(base + f"schemas/{P.schema}/")
                assert b.eval("[...document.images].filter(i => i.src.endsWith('.svg') && i.naturalWidth > 100)"
                              ".length") >= 1, P.schema
            if list((ROOT / "results").glob("bench-*.png")):
                b.goto(base + "results/benchmarks/")
                assert b.eval("[...document.images].filter(i => i.src.endsWith('.png') && i.naturalWidth > 100).length") >= 1
            for page, text in (("results/matrix/", "Conformance results"), ("results/benchmarks/", "Benchmark results"),
                               ("implementers/", "testee")):
                b.goto(base + page)
                assert text in b.eval("document.querySelector('article').textContent"), page
    finally:
        srv.terminate()
        srv.wait(timeout=10)


def test_results_page_falls_back_to_the_committed_matrix(tmp_path, monkeypatch):
    """Without a local run (no reports/), the results page shows the main job's matrix committed
    under results/ (the newest), so the site has results on a fresh clone."""
    sys.path.insert(0, str(ROOT / "tools" / "docs"))
    from gendocs import result_pages
    (tmp_path / "results").mkdir()
    for day in ("2026-01-01", "2026-02-01"):
        shutil.copy(sorted((ROOT / "results").glob("matrix-*.json"))[-1], tmp_path / "results" / f"matrix-{day}.json")
    monkeypatch.setattr(result_pages, "ROOT", tmp_path)
    assert result_pages.find_matrix(None) == tmp_path / "results" / "matrix-2026-02-01.json"
    (tmp_path / "reports" / "x").mkdir(parents=True)
    (tmp_path / "reports" / "x" / "matrix.json").write_text("{}")
    assert result_pages.find_matrix(None) == tmp_path / "reports" / "x" / "matrix.json"  # a local run wins
