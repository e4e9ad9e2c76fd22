"""pytest plugin behind `frameproof run`: collects the conformance cases (vectors x
chunkings, properties) as items with stable hierarchical names, runs them against
one testee, and reports per requirement (text, JSON; JUnit through pytest).

Test names: <protocol>/<requirement>/<case>/<variant>, e.g.
``standard/STD-HDR-1/y_request_open/chunked-1``.
"""
from __future__ import annotations

import fnmatch
import json
import time
from pathlib import Path

import pytest

from . import coverage, oracle, report, spec, vectors as V
from .checks import CheckFailure, check_decode, check_encode, check_match, chunk, chunk_every
from . import protocols as registry
from .testee import Skipped, Testee, TesteeFailure

SUITE_ANCHOR = Path(__file__).with_name("run.fpsuite")
from .report import EXIT_DID_NOT_START as EXIT_TESTEE_DID_NOT_START, EXIT_NOTHING_RAN
CHUNKINGS = ("whole", "chunked-1", "chunked-7")
RESULTS = pytest.StashKey[dict]()
LISTED = []  # `frameproof list` output lines


def pytest_addoption(parser):
    g = parser.getgroup("frameproof")
    g.addoption("--fp-testee", default=None, help="testee command line")
    g.addoption("--fp-cwd", default=None)
    g.addoption("--fp-protocol", action="append", default=[])
    g.addoption("--fp-xfail", default=None, help="expected-failures file")
    g.addoption("--fp-json", default=None, help="write the JSON report here")
    g.addoption("--fp-profile", default="ci", choices=["ci", "fuzz", "smoke"])
    g.addoption("--fp-no-shrink", action="store_true", help="properties report their first failing example unshrunk")
    g.addoption("--fp-timeout", type=float, default=10.0)
    g.addoption("--fp-no-skip", action="store_true", default=False)
    g.addoption("--fp-long-stream", default=None,
                help="bytes through one decoder in the long-stream test (default: by profile)")
    g.addoption("--fp-select", action="append", default=[], help="only names matching this glob")
    g.addoption("--fp-deselect", action="append", default=[], help="not the names matching this glob")
    g.addoption("--fp-requirement", action="append", default=[], help="only tests that check this requirement ID")
    g.addoption("--fp-list", action="store_true", help="collect and list, run nothing")
    g.addoption("--fp-list-names", action="store_true", help="with --fp-list: names only")
    g.addoption("--fp-net", default=None, help="HOST:PORT of a live echo server (network suite)")
    g.addoption("--fp-net-pid", type=int, default=None)
    g.addoption("--fp-net-name", default=None)
    g.addoption("--fp-net-cmd", default=None, help="the command that started the server (--server-cmd)")
    g.addoption("--fp-net-contract", action="store_true", default=False,
                help="the server is a program of the contract (reference-impls/README.md): HAR-CODEC-1 too")
    g.addoption("--fp-name", default=None, help="name of the implementation in the report")
    g.addoption("--fp-codec", default=None, help="codec JSON of the server / client under test")
    g.addoption("--fp-client", default=None, help="load client command ({host} {port} {json})")
    g.addoption("--fp-client-sink", action="store_true")
    g.addoption("--fp-level", default="spec", choices=list(report.LEVELS),
                help="spec (every failure fails) or rfc (only failures of RFC MUSTs / upstream's behaviour fail; "
                     "the spec's own decisions and RFC SHOULDs are listed apart)")


def pytest_configure(config):
    config.stash[RESULTS] = {"items": {}, "xfail_unmatched": [], "started": time.time()}
    from hypothesis import settings
    from . import properties  # noqa: F401  (registers the profiles)
    profile = config.getoption("--fp-profile")
    if config.getoption("--fp-no-shrink"):
        from hypothesis import Phase
        settings.register_profile(profile + "-no-shrink", settings.get_profile(profile),
                                  phases=[p for p in settings.get_profile(profile).phases if p != Phase.shrink])
        profile += "-no-shrink"
    settings.load_profile(profile)
    from . import long_stream
    size = config.getoption("--fp-long-stream")
    long_stream.SIZE = long_stream.parse_size(size) if size else long_stream.size_for(config.getoption("--fp-profile"))


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".fpsuite":
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteFile(pytest.File):
    def collect(self):
        cfg = self.config
        protocols = cfg.getoption("--fp-protocol") or list(registry.names())
        for p in protocols:
            if p not in registry.names():
                raise pytest.UsageError(f"unknown protocol {p!r} (known: {', '.join(registry.names())})")
        if cfg.getoption("--fp-client"):
            from .clientsuite import ClientTarget, all_cases
            protocol = protocols[0]
            target = ClientTarget(cfg.getoption("--fp-client"), _codec(cfg, protocol), cfg.getoption("--fp-client-sink"),
                                  cfg.getoption("--fp-cwd"))
            for case in all_cases(protocol):
                yield ClientItem.from_parent(self, name=f"{protocol}/{case.requirements[0]}/client/{case.name}",
                                             case=case, protocol=protocol, target=target)
            return
        if cfg.getoption("--fp-net"):
            from .netsuite import cases, requirements_for
            protocol = protocols[0]
            codec = _codec(cfg, protocol)
            for case in cases(protocol):
                if not case.applies(codec):
                    continue
                reqs = requirements_for(case, protocol)
                yield NetItem.from_parent(self, name=f"{protocol}/{reqs[0]}/net/{case.name}", case=case,
                                          protocol=protocol, requirements=reqs)
            return
        for protocol in protocols:
            for vec in V.load(protocol):
                for variant in _variants(vec):
                    yield VectorItem.from_parent(self, name=f"{protocol}/{vec.requirements[0]}/{vec.id}/{variant}",
                                                 vector=vec, variant=variant)
            from .properties import properties
            for prop in properties(protocol):
                yield PropertyItem.from_parent(self, name=f"{protocol}/{prop.requirements[0]}/{prop.name}", prop=prop)


def _codec(cfg, protocol):
    """The codec of the server / client under test: --fp-codec JSON, else the protocol's defaults."""
    js = cfg.getoption("--fp-codec")
    return oracle.Codec.from_json(json.loads(js)) if js else registry.get(protocol).codec()


def _variants(vec):
    if vec.kind == "decode":
        out = ["as-given"] if vec.splits else []
        out += list(CHUNKINGS)
        if vec.check_encode:
            out.append("encode")
        return out
    return [vec.kind]


def _testee(config) -> Testee:
    t = getattr(config, "_fp_testee", None)
    if t is None:
        cmd = config.getoption("--fp-testee")
        if not cmd:
            raise pytest.UsageError("--testee is required")
        t = Testee(cmd, cwd=config.getoption("--fp-cwd"), timeout=config.getoption("--fp-timeout"),
                   no_skip=config.getoption("--fp-no-skip"))
        config._fp_testee = t
    return t


def failure_leaves(exc) -> list:
    """The CheckFailure / TesteeFailure behind an exception: through Hypothesis' wrapping
    (__cause__/__context__) and its exception groups (several distinct failures)."""
    out = []
    seen = set()

    def walk(e):
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            if isinstance(e, (CheckFailure, TesteeFailure)):
                out.append(e)
                return
            if isinstance(e, BaseExceptionGroup):
                for sub in e.exceptions:
                    walk(sub)
                return
            e = e.__cause__ or e.__context__

    walk(exc)
    return out


class _ExampleSkipper:
    """The testee as a property sees it: a ``skipped`` answer discards that one example
    (hypothesis.reject) instead of skipping the whole property; the property is skipped only
    when every example was."""

    def __init__(self, testee):
        self._t = testee
        self.skipped = 0
        self.reason = ""

    def __getattr__(self, name):
        fn = getattr(self._t, name)
        if name not in ("decode", "encode", "match", "serve"):
            return fn

        def call(*a, **kw):
            try:
                return fn(*a, **kw)
            except Skipped as e:
                from hypothesis import reject
                self.skipped += 1
                self.reason = str(e)
                reject()
        return call


class FrameproofItem(pytest.Item):
    requirements: list = []
    feature = "decode"
    protocol = ""

    def _needs(self):
        t = _testee(self.config)
        t.capabilities()
        if t.hello_error is not None:
            raise t.hello_error
        why = t.why_not(self.protocol, self.feature)
        if why:
            pytest.skip(why)
        return t

    def runtest(self):
        t = self._needs()
        try:
            self.check(t)
        except Skipped as e:
            pytest.skip(f"testee skipped: {e}")

    def repr_failure(self, excinfo, style=None):
        leaves = failure_leaves(excinfo.value)
        if not leaves:
            return super().repr_failure(excinfo, style)
        if len(leaves) == 1:
            return str(leaves[0])
        # Hypothesis found several distinct failures: each as expected vs actual
        return f"{len(leaves)} distinct failures:\n" + "\n".join(
            f"--- failure {i} ---\n{leaf}" for i, leaf in enumerate(leaves, 1))

    def reportinfo(self):
        return self.path, None, self.name

    @property
    def level(self):
        return spec.level_of(self.requirements[:1])


class VectorItem(FrameproofItem):
    def __init__(self, *, vector, variant, **kw):
        super().__init__(**kw)
        self.vector = vector
        self.variant = variant
        self.protocol = vector.protocol
        self.requirements = vector.requirements
        self.feature = "encode" if variant == "encode" or vector.kind == "encode" else vector.kind
        self.description = vector.description

    def check(self, t: Testee):
        v = self.vector
        if v.kind == "decode":
            if self.variant == "encode":
                got = b""
                for i, f in enumerate(v.outcomes()[0].frames):
                    e = t.encode(v.codec, f)
                    if isinstance(e, oracle.Error):
                        raise CheckFailure(f"frame {i} {f.short()}: encoder refused it with {e.requirement}")
                    got += e
                check_encode(v.data, got, "concatenated encodings: ")
                return
            data = v.data
            if self.variant == "as-given":
                chunks = chunk(data, v.splits)
            elif self.variant == "whole":
                chunks = [data]
            else:
                chunks = chunk_every(data, int(self.variant.split("-")[1]))
            got = t.decode(v.codec, chunks)
            exp = [oracle.DecodeResult(o.frames, o.error) for o in v.outcomes()]
            check_decode(exp, got, stop=v.codec.spec.stop_requirement)
        elif v.kind == "encode":
            check_encode(v.expect, t.encode(v.codec, v.frame))
        elif v.kind == "match":
            check_match(v.expected_match(), t.match(v.codec, v.events(), int(v.raw.get("timeout_ms", 0))))
        else:  # pragma: no cover
            raise ValueError(v.kind)


class PropertyItem(FrameproofItem):
    def __init__(self, *, prop, **kw):
        super().__init__(**kw)
        self.prop = prop
        self.protocol = prop.protocol
        self.requirements = prop.requirements
        self.feature = prop.feature
        self.description = prop.description

    def check(self, t: Testee):
        from hypothesis.errors import Unsatisfiable
        from .properties import DRAWN_EDGES
        sk = _ExampleSkipper(t)
        DRAWN_EDGES.clear()
        try:
            self.prop.run(sk)
        except Unsatisfiable:
            if sk.skipped:
                raise Skipped(f"every example was skipped by the testee (last: {sk.reason})")
            raise
        if sk.skipped:
            self.user_properties.append(("examples_skipped", sk.skipped))
        if DRAWN_EDGES:  # the length-encoding edges this property's examples covered
            self.user_properties.append(("length_edges_covered", sorted(DRAWN_EDGES)))
        own = getattr(self.prop.run, "coverage", None)  # a property's own classes covered
        if own is not None:
            self.user_properties.extend(own().items())


class NetItem(FrameproofItem):
    def __init__(self, *, case, protocol, requirements, **kw):
        super().__init__(**kw)
        self.case = case
        self.protocol = protocol
        self.requirements = requirements
        self.description = case.description

    def runtest(self):
        from .netsuite import READ_TIMEOUT, NetTarget, SkipCase
        cfg = self.config
        host, _, port = cfg.getoption("--fp-net").rpartition(":")
        codec = _codec(cfg, self.protocol)
        t = NetTarget(host.strip("[]"), int(port), codec, cfg.getoption("--fp-net-pid"), codec.max_payload,
                      cfg.getoption("--fp-net-cmd"), cfg.getoption("--fp-cwd"), cfg.getoption("--fp-net-contract"))
        try:
            self.case.run(t)
        except SkipCase as e:
            pytest.skip(str(e))
        except OSError as e:  # a socket error the case did not expect: still expected vs actual
            what = (f"no progress within {READ_TIMEOUT:g} s: the server stopped reading, answering or accepting"
                    if isinstance(e, TimeoutError) else f"the connection failed: {e.strerror or e}")
            raise CheckFailure(f"{self.case.description}\n  expected the exchange to complete\n"
                               f"  actual   {what}") from e


class ClientItem(FrameproofItem):
    def __init__(self, *, case, protocol, target, **kw):
        super().__init__(**kw)
        self.case = case
        self.protocol = protocol
        self.target = target
        self.requirements = case.requirements
        self.description = case.description

    def runtest(self):
        from .netsuite import SkipCase
        try:
            self.case.run(self.target)
        except SkipCase as e:
            pytest.skip(str(e))
        except OSError as e:
            raise CheckFailure(f"{self.case.description}\n  expected the client run to complete\n"
                               f"  actual   the connection failed: {e.strerror or e}") from e


# ------------------------------------------------------------------ selection, expected failures

def pytest_collection_modifyitems(session, config, items):
    sel = config.getoption("--fp-select")
    if sel:
        keep = [i for i in items if any(fnmatch.fnmatchcase(i.name, g) for g in sel)]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    unsel = config.getoption("--fp-deselect")
    if unsel:
        keep = [i for i in items if not any(fnmatch.fnmatchcase(i.name, g) for g in unsel)]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    want = {r.upper() for r in config.getoption("--fp-requirement")}
    if want:
        keep = [i for i in items if want & set(getattr(i, "requirements", None) or ())]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    xf = config.getoption("--fp-xfail")
    if xf:
        entries = report.read_xfail(xf)
        reasons = report.read_xfail_reasons(xf)
        flaky = report.read_xfail_flaky(xf)
        used = set()
        for item in items:
            for e in entries:
                if fnmatch.fnmatchcase(item.name, e):
                    used.add(e)
                    item.fp_flaky = e in flaky  # '~': may pass too (a race of the implementation's own)
                    item.fp_expected_failure = True  # (pytest_runtest_call: no shrinking)
                    item.add_marker(pytest.mark.xfail(reason=f"expected failure ({e})", strict=not item.fp_flaky))
                    item.user_properties.append(("xfail_reason", reasons.get(e) or f"listed in {Path(xf).name}"))
                    break
        config.stash[RESULTS]["xfail_unmatched"] = [e for e in entries if e not in used]
    if config.getoption("--fp-list"):
        for item in items:
            LISTED.append(item.name if config.getoption("--fp-list-names") else
                          json.dumps({"name": item.name, "requirements": item.requirements, "level": item.level}))
        items[:] = []


# ------------------------------------------------------------------ reporting

PROGRESS_EVERY_S = 5.0


def pytest_collection_finish(session):
    st = session.config.stash[RESULTS]
    st["total"] = len(session.items)
    st["last_progress"] = time.time()


def _progress(config):
    """One line on stderr every few seconds of a long run: tests done / total, failures, elapsed."""
    st = config.stash[RESULTS]
    now = time.time()
    if now - st.get("last_progress", now) < PROGRESS_EVERY_S:
        return
    st["last_progress"] = now
    res = st["items"]
    failed = sum(1 for r in res.values() if r["status"] in ("failed", "xpassed"))
    import sys
    print(f"frameproof: {len(res)}/{st.get('total', '?')} tests, {failed} failed so far, "
          f"{now - st['started']:.0f} s", file=sys.stderr, flush=True)


def pytest_runtest_setup(item):
    if isinstance(item, FrameproofItem):
        coverage.reset()  # the classes of its inputs are counted per test (property, vector, net, client)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test an --xfail file expects to fail runs without Hypothesis' shrink phase: its outcome is all the
    report keeps, and shrinking a failing example costs a connection per attempt (a third-party server's
    handshake_grammar took 50-86 s to shrink against 6-8 s to pass, in CI's matrix of 2026-11-28). The
    tests whose settings are made when they run (the network cases) take the profile loaded here."""
    if not getattr(item, "fp_expected_failure", False):
        yield
        return
    from hypothesis import Phase, settings
    cur = settings.get_current_profile_name()
    base = settings.get_profile(cur)
    settings.register_profile(cur + "-expected-failure", base, phases=[p for p in base.phases if p != Phase.shrink])
    settings.load_profile(cur + "-expected-failure")
    try:
        yield
    finally:
        settings.load_profile(cur)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not isinstance(item, FrameproofItem):
        return
    res = item.config.stash[RESULTS]["items"]
    if rep.when == "call" or (rep.when == "setup" and not rep.passed):
        if hasattr(rep, "wasxfail"):
            status = "xfailed" if rep.skipped else "passed" if getattr(item, "fp_flaky", False) else "xpassed"
        elif rep.passed:
            status = "passed"
        elif rep.skipped:
            status = "skipped"
        else:
            status = "failed"
            if "XPASS(strict)" in str(rep.longrepr):
                status = "xpassed"
        msg = ""
        broken = []
        if status == "failed":
            msg = str(rep.longreprtext)
            leaves = [x for x in failure_leaves(call.excinfo.value) if isinstance(x, CheckFailure)] \
                if call.excinfo else []
            if leaves and all(x.requirements for x in leaves):
                # narrowed to what the observed behaviour breaks (any requirement of the spec)
                known = spec.requirements()
                broken = sorted({r for x in leaves for r in x.requirements if r in known})
        elif status == "skipped" and isinstance(rep.longrepr, tuple):
            msg = rep.longrepr[2]
        elif status == "xfailed" and rep.longrepr is not None and not isinstance(rep.longrepr, tuple):
            msg = str(rep.longreprtext)  # the failure that was expected: expected, actual, input
        extra = {}
        if status == "failed":
            verdict = spec.rfc_verdict(broken or item.requirements)
            extra["rfc_verdict"] = verdict
            if verdict != "failed" and item.config.getoption("--fp-level") == "rfc":
                # not a failure at --level rfc: reported as an expected failure, listed apart
                why = {"stricter": "stricter than the RFC / upstream (the spec's own decision)",
                       "should": "an RFC SHOULD (a MUST in the spec)"}[verdict]
                rep.outcome = "skipped"
                rep.wasxfail = f"--level rfc: {why}"
                status = "xfailed"
                extra["level_verdict"] = verdict
        covered = coverage.drawn()
        if covered:  # the classes of each input dimension this test drew (coverage.declare)
            extra["classes_covered"] = covered
        _progress(item.config)
        res[item.name] = {"name": item.name, "protocol": item.protocol, "requirements": item.requirements,
                          "broken": broken or list(item.requirements),
                          "level": item.level, "status": status, "message": msg,
                          "description": getattr(item, "description", ""), "duration": round(rep.duration, 4),
                          **extra, **{k: v for k, v in item.user_properties}}


def _implementation(config) -> dict:
    """Who is under test: --name, else the testee's hello, else the command (or address)."""
    t = getattr(config, "_fp_testee", None)
    impl = {}
    if t and t.hello:
        impl = {"name": t.hello.name, "version": t.hello.version, "protocols": list(t.hello.protocols),
                "features": list(t.hello.features)}
    if config.getoption("--fp-client"):  # --name (net_cli passes it as --fp-net-name), else the command
        impl.setdefault("name", config.getoption("--fp-net-name") or config.getoption("--fp-client"))
    elif config.getoption("--fp-net"):
        impl.setdefault("name", config.getoption("--fp-net-name") or f"server at {config.getoption('--fp-net')}")
    else:
        impl.setdefault("name", t.command if t else config.getoption("--fp-testee"))
    if config.getoption("--fp-name"):
        impl["name"] = config.getoption("--fp-name")
    impl.setdefault("name", "?")
    return impl


def _report(config) -> dict:
    st = config.stash[RESULTS]
    t = getattr(config, "_fp_testee", None)
    tests = sorted(st["items"].values(), key=lambda r: r["name"])
    by_level = {}
    for r in tests:
        by_level.setdefault(r["level"], report.zero())[r["status"]] += 1
    kind = "client" if config.getoption("--fp-client") else "net" if config.getoption("--fp-net") else "run"
    return report.make(kind, _implementation(config), tests,
                       client=config.getoption("--fp-client"), server=config.getoption("--fp-net"),
                       server_name=config.getoption("--fp-net-name"),
                       testee_command=t.command if t else None, testee_restarts=t.restarts if t else 0,
                       started=st["started"], duration_s=round(time.time() - st["started"], 3),
                       by_level=by_level, xfail_unmatched=st["xfail_unmatched"], level=config.getoption("--fp-level"))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    st = config.stash[RESULTS]
    if config.getoption("--fp-list"):
        return
    tw = terminalreporter
    t = getattr(config, "_fp_testee", None)
    doc = _report(config)
    tw.write_sep("=", "frameproof: results per requirement")
    impl = doc["implementation"]
    where = f" at {config.getoption('--fp-net')}" if config.getoption("--fp-net") and config.getoption("--fp-net-name") else ""
    tw.write_line(f"implementation: {impl['name']}{(' ' + impl['version']) if impl.get('version') else ''}{where}")
    if t and t.hello_error:
        tw.write_line(f"testee failed to start: {t.hello_error}", red=True)
    at_rfc = doc["level"] == "rfc"
    apart = {r: "stricter" for r in doc["levels"]["rfc"]["stricter_requirements"]}
    apart.update({r: "SHOULD" for r in doc["levels"]["rfc"]["should_requirements"]})
    for rid, d in doc["requirements"].items():
        state = "FAIL" if d["failed"] or d["xpassed"] else ("skip" if d["passed"] == 0 and d["xfailed"] == 0 else "ok")
        if at_rfc and state != "FAIL" and rid in apart and any(
                rid in (r.get("broken") or r["requirements"]) for r in doc["tests"] if r.get("level_verdict")):
            state = apart[rid]
        extra = "".join(f", {d[k]} {k}" for k in ("failed", "skipped", "xfailed", "xpassed") if d[k])
        tw.write_line(f"  {state:4} {rid:12} {d['level']:6} {d['passed']} passed{extra}",
                      red=state == "FAIL", green=state == "ok", yellow=state not in ("FAIL", "ok"))
    failed = [r for r in doc["tests"] if r["status"] in ("failed", "xpassed")]
    if failed:
        tw.write_sep("-", f"failures ({len(failed)})")
        for r in failed[:60]:
            tw.write_line(f"✗ {r['name']}  [breaks {', '.join(r['broken'])}]", red=True)
            if r["description"]:
                tw.write_line(f"    {r['description']}")
            for line in (r["message"] or "").splitlines()[:12]:
                tw.write_line(f"    {line}")
        if len(failed) > 60:
            tw.write_line(f"… and {len(failed) - 60} more (see the JSON report)")
    for verdict, title in (("stricter", "stricter than the RFC / upstream: the spec's own decisions"),
                           ("should", "RFC SHOULDs (MUSTs in the spec)")):
        apart_tests = [r for r in doc["tests"] if r.get("level_verdict") == verdict]
        if apart_tests:
            tw.write_sep("-", f"{title}, not failures at --level rfc ({len(apart_tests)})", yellow=True)
            for r in apart_tests[:60]:
                tw.write_line(f"~ {r['name']}  [breaks {', '.join(r['broken'])}]", yellow=True)
                for line in (r["message"] or "").splitlines()[:4]:
                    tw.write_line(f"    {line}")
            if len(apart_tests) > 60:
                tw.write_line(f"… and {len(apart_tests) - 60} more (see the JSON report)")
    if st["xfail_unmatched"]:
        tw.write_sep("-", "expected-failure entries that match no test", red=True)
        for e in st["xfail_unmatched"]:
            tw.write_line(f"  {e}", red=True)
    cat = {"MUST": "required (MUST)", "SHOULD": "recommended (SHOULD)", "MAY": "optional (MAY)"}
    for lvl in ("MUST", "SHOULD", "MAY"):
        if lvl in doc["by_level"]:
            d = doc["by_level"][lvl]
            tw.write_line(f"{cat[lvl]:22}: " + ", ".join(f"{d[k]} {k}" for k in report.STATUSES if d[k] or k in ("passed", "failed")))
    tw.write_line(f"levels: {report.views_text(doc['levels'])} (verdict at --level {doc['level']})")
    tot = doc["totals"]
    tw.write_line("frameproof: " + ", ".join(f"{v} {k}" for k, v in tot.items() if v or k in ("passed", "failed", "skipped")),
                  bold=True, red=bool(tot["failed"] or tot["xpassed"]))
    if not report.ran(doc):
        tw.write_line(f"frameproof: no test ran ({len(doc['tests'])} selected): exit status {EXIT_NOTHING_RAN}",
                      red=True)
    out = config.getoption("--fp-json")
    if out:
        report.write(doc, out)
        tw.write_line(f"JSON report: {out}")


def pytest_sessionfinish(session, exitstatus):
    st = session.config.stash[RESULTS]
    if st["xfail_unmatched"] and session.exitstatus == 0:
        session.exitstatus = 1
    t = getattr(session.config, "_fp_testee", None)
    if t and t.hello_error is not None and t.hello is None:
        session.exitstatus = EXIT_TESTEE_DID_NOT_START
    elif not session.config.getoption("--fp-list") and session.exitstatus in (0, 5) \
            and not any(r["status"] != "skipped" for r in st["items"].values()):
        session.exitstatus = EXIT_NOTHING_RAN
    if t:
        t.stop()
