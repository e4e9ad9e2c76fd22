"""Differential fuzzing: the same generated streams, in the same random chunks, go to every
testee and to the oracle; any answer outside the oracle's allowed outcomes (other frames,
accept vs reject, another error class or offset, a crash or a hang) is a disagreement.

Streams come from Hypothesis (``properties.valid_streams``, ``arbitrary_streams`` — valid
streams mutated or plain random bytes — and ``invalid_streams``), split by ``splits_of``.
A disagreement is shrunk by Hypothesis to a small reproducer and written as a ready-to-add
decode vector (the JSON format of ``conformance/vectors``) together with the
``tools/gen_vectors.py`` line that generates it.

Budgets: ``seconds`` (wall clock) and/or ``examples``; ``seed`` fixes the example sequence, so
a failure found at example k is found again at example k with the same seed and testees.
``keep_going``: after a disagreement, drop the testees that disagreed and go on with the rest
(one minimized reproducer per failing testee).

The coverage-guided side (libFuzzer targets of the native decoders): ``fuzz_corpus``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

from . import oracle, properties, protocols as registry
from .checks import CheckFailure, check_decode, chunk
from .oracle import Codec, DecodeResult, Error, Frame
from .testee import Skipped, Testee, TesteeFailure
from .vectors import compact_bytes


def registry_requirements(protocol: str):
    from .spec import requirements
    return [r.id for r in requirements().values() if r.protocol == protocol]


class _BudgetExhausted(BaseException):
    """Stops a Hypothesis run from inside the test body (not an Exception: never a failure)."""


class _Disagreement(AssertionError):
    def __init__(self, finding: "Finding"):
        super().__init__(finding.summary())
        self.finding = finding


@dataclass
class Answer:
    testee: str
    result: Optional[DecodeResult] = None  # None when the testee failed
    failure: Optional[str] = None  # crash / timeout / garbage / runtime_error, with detail
    diff: Optional[str] = None  # why it does not conform
    broken: List[str] = field(default_factory=list)  # requirement(s) broken, when known

    def short(self) -> str:
        if self.failure:
            return self.failure.splitlines()[0]
        r = self.result
        s = f"{len(r.frames)} frame(s)"
        if r.frames:
            s += " [" + ", ".join(f.short() for f in r.frames[:3]) + (", …" if len(r.frames) > 3 else "") + "]"
        return s + (f", error {r.error.short()}" if r.error else ", no error")


@dataclass
class Finding:
    codec: Codec
    data: bytes
    chunks: List[bytes]
    expected: DecodeResult
    answers: List[Answer]  # the non-conforming answers only
    example: int  # index of the generated example that first failed (before shrinking)
    seed: Optional[int]  # Hypothesis seed of the round (None: from a libFuzzer input)

    @property
    def testees(self) -> List[str]:
        return [a.testee for a in self.answers]

    @property
    def splits(self) -> List[int]:
        out, pos = [], 0
        for c in self.chunks[:-1]:
            pos += len(c)
            out.append(pos)
        return out

    def summary(self) -> str:
        exp = self.expected
        lines = [f"disagreement on {len(self.data)} bytes in {len(self.chunks)} chunk(s) with {self.codec}:",
                 f"  bytes   {self.data[:64].hex(' ')}{' …' if len(self.data) > 64 else ''}",
                 f"  splits  {self.splits}",
                 f"  oracle  {Answer('oracle', exp).short()}" +
                 (f" (or {len(exp.alternatives)} alternative outcome(s))" if exp.alternatives else "")]
        for a in self.answers:
            lines.append(f"  {a.testee}: {a.short()}")
            if a.diff:
                lines += ["      " + d for d in a.diff.splitlines()]
        return "\n".join(lines)

    # ------------------------------------------------------------ as a regression vector
    def vector_id(self) -> str:
        exp = self.expected
        verdict = "i" if exp.alternatives else ("n" if exp.error else "y")
        h = hashlib.sha256(json.dumps([self.codec.to_json(), self.data.hex(), self.splits]).encode()).hexdigest()[:8]
        return f"{verdict}_fuzz_{h}"

    def requirements(self) -> List[str]:
        reqs: List[str] = []
        for a in self.answers:
            reqs += [r for r in a.broken if r not in reqs]
        exp = self.expected
        P = self.codec.spec.id_prefix
        if exp.error and exp.error.requirement not in reqs:
            reqs.append(exp.error.requirement)
        if len(self.chunks) > 1 and f"{P}-STR-1" not in reqs:
            reqs.append(f"{P}-STR-1")
        if not reqs:  # the protocol's first requirement: its frame layout
            reqs.append(next(r for r in registry_requirements(self.codec.protocol)))
        return reqs

    def description(self) -> str:
        who = ", ".join(f"{_short_cmd(a.testee)} ({a.short()})" if a.result else _short_cmd(a.testee)
                        for a in self.answers)
        if self.seed is None:  # a libFuzzer artifact
            return f"Found by coverage-guided fuzzing: {who}"[:300]
        return f"Found by frameproof fuzz (seed {self.seed}): {who}"[:300]

    def canonical(self) -> bool:
        exp = self.expected
        if exp.error or exp.alternatives:
            return False
        return b"".join(oracle.encode(self.codec, f) for f in exp.frames) == self.data

    def vector(self) -> dict:
        """The vector exactly as tools/gen_vectors.py's add_decode writes it."""
        fj = self.codec.spec.frame_to_json

        def ej(e: Error) -> dict:
            return {"requirement": e.requirement, "offset": e.offset}

        exp = self.expected
        v = {"id": self.vector_id(), "description": self.description(), "requirements": self.requirements(),
             "kind": "decode", "codec": self.codec.to_json(), "bytes": compact_bytes(self.data)}
        if self.splits:
            v["splits"] = self.splits
        if exp.alternatives:
            v["outcomes"] = [{"frames": [fj(f) for f in o.frames], **({"error": ej(o.error)} if o.error else {})}
                             for o in [exp] + exp.alternatives]
        else:
            v["frames"] = [fj(f) for f in exp.frames]
            if exp.error:
                v["error"] = ej(exp.error)
        if self.canonical():
            v["encode"] = True
        return v

    def gen_vectors_line(self) -> str:
        """The add_decode(...) call to paste into tools/gen_vectors.py."""
        exp = self.expected

        def fr(f: Frame) -> str:
            return f"F({f.flag:#04x}, {f.sequence}, {_pybytes(f.payload)})"

        codec = self.codec.spec.gen_vectors_codec(self.codec)
        args = [repr(self.codec.protocol), repr(self.vector_id()), repr(self.description()), repr(self.requirements()),
                f"bytes.fromhex({self.data.hex()!r})" if len(self.data) <= 256 else _pybytes(self.data)]
        if exp.alternatives:
            outs = ", ".join(f"([{', '.join(fr(f) for f in o.frames)}], "
                             f"{(o.error.requirement, o.error.offset) if o.error else None})" for o in [exp] + exp.alternatives)
            args += ["None", f"codec={codec}", f"outcomes=[{outs}]"]
        else:
            args.append("[" + ", ".join(fr(f) for f in exp.frames) + "]")
            if exp.error:
                args.append(repr((exp.error.requirement, exp.error.offset)))
            args.append(f"codec={codec}")
        if self.splits:
            args.append(f"splits={self.splits}")
        if not exp.error and not exp.alternatives and not self.canonical():
            args.append("encode=False")
        return f"add_decode({', '.join(args)})"

    def write(self, out_dir: Path) -> Path:
        d = Path(out_dir) / self.codec.protocol
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{self.vector_id()}.json"
        p.write_text(json.dumps(self.vector(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (d / f"{self.vector_id()}.gen_vectors.py").write_text(self.gen_vectors_line() + "\n", encoding="utf-8")
        return p


def _short_cmd(cmd: str) -> str:
    """A testee command without directories (vector descriptions do not name local paths)."""
    try:
        argv = shlex.split(cmd)
    except ValueError:
        return cmd
    return " ".join(os.path.basename(a) if "/" in a else a for a in argv)


def _pybytes(b: bytes) -> str:
    """A short Python expression for ``b`` (runs folded)."""
    parts, i = [], 0
    lit = bytearray()
    while i < len(b):
        j = i
        while j < len(b) and b[j] == b[i]:
            j += 1
        if j - i >= 16:
            if lit:
                parts.append(f"bytes.fromhex({lit.hex()!r})")
                lit = bytearray()
            parts.append(f"bytes([{b[i]:#04x}]) * {j - i}")
        else:
            lit += b[i:j]
        i = j
    if lit or not parts:
        parts.append(f"bytes.fromhex({lit.hex()!r})")
    return " + ".join(parts)


# ---------------------------------------------------------------- the fuzzer

@st.composite
def wild_codecs(draw, protocol: str):
    """Codecs beyond the suite's table (the protocol's ``wild_codecs``), invalid ones included."""
    return registry.get(protocol).wild_codecs(draw)


@st.composite
def wild_streams(draw, protocol: str):
    """A wild codec, frames encoded with it (or random bytes), then maybe one mutation."""
    codec = draw(wild_codecs(protocol))
    if codec.spec.invalid_config(codec):
        return codec, draw(st.binary(max_size=24))
    frames = draw(st.lists(codec.spec.strategies.frames_for(codec), max_size=5))
    b = bytearray(b"".join(oracle.encode(codec, f) for f in frames))
    how = draw(st.sampled_from(["none", "flip", "truncate", "append", "random", "edge", "edge"]))
    if how == "edge":  # a frame header declaring a boundary length (a fuzzing dictionary)
        b += _edge_header(codec, draw(st.integers(0, 255))) + draw(st.binary(max_size=4))
    elif how == "random" or not b:
        b = bytearray(draw(st.binary(max_size=64)))
    elif how == "flip":
        i = draw(st.integers(0, len(b) - 1))
        b[i] ^= draw(st.integers(1, 255))
    elif how == "truncate":
        b = b[:draw(st.integers(0, len(b) - 1))]
    elif how == "append":
        b += draw(st.binary(min_size=1, max_size=12))
    return codec, bytes(b)


def _edge_header(codec: Codec, pick: int) -> bytes:
    """The header of a frame declaring a length at a boundary (the protocol's fuzzing dictionary)."""
    return codec.spec.edge_header(codec, pick)


@st.composite
def fuzz_cases(draw, protocols: Sequence[str]):
    """(codec, whole stream, chunks): valid, mutated/random and invalid-by-construction streams
    with the suite's codecs, and mutated streams with wild codecs."""
    protocol = draw(st.sampled_from(list(protocols)))
    kind = draw(st.sampled_from(["arbitrary", "arbitrary", "invalid", "valid", "wild"]))
    S = registry.get(protocol).strategies
    if kind == "wild":
        codec, data = draw(wild_streams(protocol))
    elif kind == "valid":
        codec, _frames, data = draw(S.valid_streams())
    elif kind == "invalid":
        codec, data, _frames, _err = draw(S.invalid_streams())
    else:
        codec, data = draw(S.arbitrary_streams())
    chunks = draw(properties.splits_of(data))
    return _Case(codec, data, chunks)


class _Case(tuple):
    """(codec, data, chunks) with a short repr (Hypothesis prints the failing example)."""

    def __new__(cls, codec, data, chunks):
        return super().__new__(cls, (codec, data, chunks))

    def __repr__(self):
        return f"<{len(self[1])} bytes in {len(self[2])} chunk(s), {self[0]}>"


@dataclass
class FuzzReport:
    seed: int
    testees: List[str] = field(default_factory=list)
    examples: int = 0  # generated examples run, all rounds
    seconds: float = 0.0
    findings: List[Finding] = field(default_factory=list)
    vector_files: List[Path] = field(default_factory=list)
    found_after: Dict[str, float] = field(default_factory=dict)  # testee -> seconds to first failing example
    found_at_example: Dict[str, int] = field(default_factory=dict)
    skipped_testees: Dict[str, str] = field(default_factory=dict)

    def tests(self) -> List[dict]:
        """One test a testee (frameproof.report): failed with the first disagreement's summary, skipped
        with the reason it could not take part, passed when it agreed on every example."""
        from . import report
        out = []
        for name in self.testees:
            f = next((f for f in self.findings if name in f.testees), None)
            if name in self.skipped_testees:
                out.append(report.test(f"fuzz/{name}", [], "skipped", self.skipped_testees[name]))
            elif f:
                out.append(report.test(f"fuzz/{name}", f.requirements(), "failed", f.summary(),
                                       self.found_after.get(name, 0)))
            else:
                out.append(report.test(f"fuzz/{name}", [], "passed" if self.examples else "skipped",
                                       f"agreed with the oracle on {self.examples} examples", self.seconds))
        return out

    def to_json(self) -> dict:
        from . import report
        return report.make("fuzz", {"name": ", ".join(self.testees) or "?"}, self.tests(), **self._fields())

    def _fields(self) -> dict:
        return {"seed": self.seed, "examples": self.examples, "seconds": round(self.seconds, 3),
                "skipped_testees": self.skipped_testees,
                "findings": [{"testees": f.testees, "found_after_s": {t: round(self.found_after[t], 3) for t in f.testees
                                                                      if t in self.found_after},
                              "found_at_example": {t: self.found_at_example.get(t) for t in f.testees},
                              "summary": f.summary(), "vector": f.vector(), "gen_vectors": f.gen_vectors_line()}
                             for f in self.findings],
                "vector_files": [str(p) for p in self.vector_files]}


def compare(testees: Dict[str, Testee], codec: Codec, data: bytes, chunks: List[bytes],
            supported: Dict[str, set]) -> tuple:
    """(oracle result, [non-conforming Answer])."""
    expected = oracle.decode(codec, data)
    outcomes = [expected] + expected.alternatives
    bad = []
    for name, t in testees.items():
        if codec.protocol not in supported[name]:
            continue
        try:
            got = t.decode(codec, chunks)
        except Skipped:
            continue
        except TesteeFailure as e:
            bad.append(Answer(name, None, f"{e.kind}: {e.detail}" + (f"\n{e.stderr[-800:]}" if e.stderr else ""),
                              None, []))
            continue
        try:
            check_decode(outcomes, got)
        except CheckFailure as e:
            bad.append(Answer(name, got, None, str(e), list(e.requirements)))
    return expected, bad


def fuzz(commands: Sequence[str], seconds: Optional[float] = 10.0, examples: Optional[int] = None,
         seed: int = 0, protocols: Sequence[str] = (), out_dir: Optional[Path] = None,
         keep_going: bool = False, timeout: float = 5.0, cwd: Optional[str] = None,
         shrink_seconds: Optional[float] = None, until_found: Optional[Sequence[str]] = None,
         log=None) -> FuzzReport:
    """Runs the differential fuzzer; returns the report (findings written to ``out_dir``).
    ``until_found``: stop as soon as each of these testees has disagreed (planted-bug demos)."""
    names = list(dict.fromkeys(commands))
    testees = {c: Testee(c, cwd=cwd, timeout=timeout) for c in names}
    report = FuzzReport(seed, testees=names)
    supported: Dict[str, set] = {}
    for name, t in list(testees.items()):
        protos, feats = t.capabilities()
        if t.hello is None:
            report.skipped_testees[name] = f"does not start: {t.hello_error}"
        elif "decode" not in feats:
            report.skipped_testees[name] = "no decode feature"
        supported[name] = protos if "decode" in feats else set()
    protocols = [p for p in (protocols or registry.names()) if any(p in s for s in supported.values())]
    start = time.monotonic()
    deadline = start + seconds if seconds else None
    shrink_seconds = shrink_seconds if shrink_seconds is not None else max(10.0, (seconds or 30.0))
    round_no = 0
    try:
        while protocols and testees:
            left_examples = None if examples is None else examples - report.examples
            if left_examples is not None and left_examples <= 0:
                break
            if deadline and time.monotonic() >= deadline:
                break
            finding = _one_round(testees, supported, protocols, seed + round_no, report, start, deadline,
                                 left_examples, shrink_seconds)
            round_no += 1
            if finding is None:
                break
            finding = reduce_finding(finding, testees, supported, time.monotonic() + shrink_seconds)
            report.findings.append(finding)
            if out_dir:
                report.vector_files.append(finding.write(out_dir))
            if log:
                log(finding.summary())
            if not keep_going:
                break
            if until_found and set(until_found) <= {t for f in report.findings for t in f.testees}:
                break
            for name in finding.testees:
                testees.pop(name).stop()
                supported.pop(name)
            protocols = [p for p in protocols if any(p in s for s in supported.values())]
    finally:
        for t in testees.values():
            t.stop()
    report.seconds = time.monotonic() - start
    return report


def _one_round(testees, supported, protocols, round_seed, report, start, deadline, max_examples, shrink_seconds):
    state = {"first": None, "best": None, "shrink_deadline": None}
    counted = [0]

    def key(f: Finding):
        return (len(f.data), len(f.chunks), f.data)

    @hseed(round_seed)
    @settings(max_examples=max_examples or 10 ** 9, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink],
              print_blob=False, report_multiple_bugs=False)
    @given(fuzz_cases(protocols))
    def body(case):
        now = time.monotonic()
        if state["first"] is None:
            if deadline and now >= deadline:
                raise _BudgetExhausted()
            counted[0] += 1
        elif now >= state["shrink_deadline"]:
            raise _BudgetExhausted()
        codec, data, chunks = case
        expected, bad = compare(testees, codec, data, chunks, supported)
        if not bad:
            return
        f = Finding(codec, data, list(chunks), expected, bad, report.examples + counted[0], round_seed)
        if state["first"] is None:
            state["first"] = f
            state["shrink_deadline"] = now + shrink_seconds
        else:
            f.example = state["first"].example
        for a in bad:  # a testee first seen failing while shrinking counts from then
            report.found_after.setdefault(a.testee, now - start)
            report.found_at_example.setdefault(a.testee, f.example)
        if state["best"] is None or key(f) < key(state["best"]):
            state["best"] = f
        raise _Disagreement(f)

    try:
        body()
    except _Disagreement as e:
        report.examples += counted[0]
        return e.finding
    except _BudgetExhausted:
        report.examples += counted[0]
        return state["best"]
    except Exception:  # e.g. Hypothesis' Flaky: a failure that did not reproduce (a flaky testee)
        report.examples += counted[0]
        if state["best"] is None:
            raise
        return state["best"]
    report.examples += counted[0]
    return state["best"]


def _splits_to_chunks(data: bytes, splits: List[int]) -> List[bytes]:
    return chunk(data, splits) if data else [b""]


def reduce_finding(f: Finding, testees: Dict[str, Testee], supported: Dict[str, set], deadline: float,
                   max_tests: int = 3000) -> Finding:
    """A second, byte-level pass after Hypothesis' shrinking (which can get stuck in a strategy
    branch, e.g. a 64 KiB payload): merge chunks, delete byte ranges (ddmin), then lower byte
    values, keeping each change on which every testee of the finding still disagrees. Deterministic;
    bounded by ``deadline`` and ``max_tests``."""
    names = set(f.testees)
    ts = {n: testees[n] for n in names if n in testees}
    if not ts or len(ts) != len(names):
        return f
    tests = [0]

    def attempt(data: bytes, splits: List[int]):
        if tests[0] >= max_tests or time.monotonic() >= deadline:
            raise TimeoutError
        tests[0] += 1
        chunks = _splits_to_chunks(data, splits)
        expected, bad = compare(ts, f.codec, data, chunks, supported)
        if {a.testee for a in bad} == names:
            return Finding(f.codec, data, chunks, expected, bad, f.example, f.seed)
        return None

    best = f
    data, splits = f.data, f.splits
    try:
        # 1. fewer chunks
        if splits:
            r = attempt(data, [])
            if r:
                best, splits = r, []
            else:
                i = 0
                while i < len(splits):
                    cand = splits[:i] + splits[i + 1:]
                    r = attempt(data, cand)
                    if r:
                        best, splits = r, cand
                    else:
                        i += 1
        # 2. delete byte ranges, halves first (ddmin); 3. lower byte values; again while it helps
        while True:
            before = (data, splits)
            n = 2
            while len(data) > 1:
                size = max(1, len(data) // n)
                removed = False
                for start in range(0, len(data), size):
                    end = min(len(data), start + size)
                    cand = data[:start] + data[end:]
                    cs = [x if x <= start else x - (end - start) for x in splits if not start < x < end]
                    cs = sorted(set(x for x in cs if 0 < x < len(cand)))
                    r = attempt(cand, cs)
                    if r:
                        best, data, splits = r, cand, cs
                        removed = True
                        break
                if removed:
                    n = max(2, n - 1)
                elif size == 1:
                    break
                else:
                    n = min(len(data), n * 2)
            if len(data) <= 512:
                for i in range(len(data)):
                    for v in (0, 1, data[i] >> 1):
                        if v >= data[i]:
                            continue
                        cand = data[:i] + bytes([v]) + data[i + 1:]
                        r = attempt(cand, splits)
                        if r:
                            best, data = r, cand
                            break
            if (data, splits) == before:
                break
    except TimeoutError:
        pass
    return best
