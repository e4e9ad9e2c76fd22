"""Runs an implementation's testee program and talks the testee protocol to it
(spec/testee.md): u32 little-endian length + protobuf, one response per request.

The runner survives a testee that crashes, hangs or writes garbage: the failing
call raises ``TesteeFailure`` (a runtime error for that test), the process is
killed, and the next call starts a fresh one.
"""
from __future__ import annotations

import os
import select
import shlex
import signal
import struct
import subprocess
import tempfile
import time
from typing import List, Optional

from google.protobuf.message import DecodeError

from ._generated import testee_pb2 as pb
from .oracle import Codec, Completion, DecodeResult, Error, Frame, MatchResult
from .protocols.base import ServeResult

HARNESS_VERSION = 3  # the highest version this runner speaks (spec/testee.md, "Versions")
MAX_RESPONSE = 256 * 1024 * 1024
# The harness version each optional feature came with (spec/testee.md); the others are version 1's.
FEATURE_SINCE = {"serve": 2, "discovery": 2, "discovery-etcd": 2, "long-stream": 3}
STDERR_TAIL = 4096


class TesteeFailure(Exception):
    """The testee crashed, timed out, or answered something unparseable."""

    def __init__(self, kind: str, detail: str, stderr: str = ""):
        self.kind = kind  # crash | timeout | garbage | runtime_error | protocol
        self.detail = detail
        self.stderr = stderr
        msg = f"testee {kind}: {detail}"
        if stderr:
            msg += "\n--- testee stderr (tail) ---\n" + stderr
        super().__init__(msg)


class Skipped(Exception):
    pass


class Testee:
    def __init__(self, command: str, cwd: Optional[str] = None, timeout: float = 10.0, no_skip: bool = False):
        self.command = command
        #: `frameproof run --no-skip`: a `skipped` answer fails the test (CheckFailure) instead of skipping it
        self.no_skip = no_skip
        self.argv = shlex.split(command)
        self.cwd = cwd
        self.timeout = timeout
        self.proc: Optional[subprocess.Popen] = None
        self._stderr = None
        self.hello: Optional[pb.HelloResponse] = None
        self.hello_error: Optional[TesteeFailure] = None
        self.restarts = 0

    # -- process management
    def _start(self):
        self._stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, cwd=self.cwd, bufsize=0,
                                         start_new_session=True)
        except OSError as e:
            self.proc = None
            raise TesteeFailure("crash", f"cannot start {self.command!r}: {e}")
        req = pb.TesteeRequest(hello=pb.HelloRequest(harness_version=1, max_harness_version=HARNESS_VERSION))
        resp = self._roundtrip(req)
        if resp.WhichOneof("result") != "hello":
            self.stop()
            raise TesteeFailure("protocol", f"expected a hello response, got {resp.WhichOneof('result')}")
        self.hello = resp.hello

    def stderr_tail(self) -> str:
        if not self._stderr:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - STDERR_TAIL))
            return self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def stop(self):
        p, self.proc = self.proc, None
        if not p:
            return
        try:
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._kill(p)

    @staticmethod
    def _kill(p):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass

    def _fail(self, kind: str, detail: str):
        p = self.proc
        self.proc = None
        if p:
            if kind == "crash":
                try:
                    p.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
                if p.returncode is not None:
                    rc = p.returncode
                    detail += f" (exit status {rc})" if rc >= 0 else f" (killed by signal {-rc})"
            self._kill(p)
        self.restarts += 1
        raise TesteeFailure(kind, detail, self.stderr_tail())

    def ensure_started(self):
        if self.proc is None:
            self._start()

    # -- wire
    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        out = bytearray()
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail("timeout", f"no complete response within {self.timeout:g} s")
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, min(n - len(out), 1 << 20))
            if not chunk:
                self._fail("crash", "testee closed stdout / exited")
            out += chunk
        return bytes(out)

    def _roundtrip(self, req) -> pb.TesteeResponse:
        data = req.SerializeToString()
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self._fail("crash", f"cannot write request: {e}")
        deadline = time.monotonic() + self.timeout
        (n,) = struct.unpack("<I", self._read_exact(4, deadline))
        if n > MAX_RESPONSE:
            self._fail("garbage", f"response length prefix {n} is implausible (garbage on stdout?)")
        body = self._read_exact(n, deadline)
        resp = pb.TesteeResponse()
        try:
            resp.ParseFromString(body)
        except DecodeError as e:
            self._fail("garbage", f"response does not parse as TesteeResponse: {e}")
        if resp.WhichOneof("result") is None:
            # discovery and long-stream answers travel outside the oneof
            view = {pb.TesteeDiscoveryRequest: (pb.TesteeDiscoveryResponse, "discovery"),
                    pb.TesteeLongStreamRequest: (pb.TesteeLongStreamResponse, "long_stream")}.get(type(req))
            if view:
                d = view[0]()
                d.ParseFromString(body)
                if d.HasField(view[1]):
                    return d
            self._fail("garbage", "empty TesteeResponse")
        return resp

    def call(self, req: pb.TesteeRequest) -> pb.TesteeResponse:
        self.ensure_started()
        resp = self._roundtrip(req)
        if isinstance(resp, (pb.TesteeDiscoveryResponse, pb.TesteeLongStreamResponse)):
            return resp
        kind = resp.WhichOneof("result")
        if kind == "skipped":
            if self.no_skip:
                from .checks import CheckFailure
                raise CheckFailure("the testee skipped a request (--no-skip: it must support every configuration "
                                   f"the suite draws)\n  expected an answer\n  actual   skipped: "
                                   f"{resp.skipped or 'no reason given'}")
            raise Skipped(resp.skipped or "testee skipped this configuration")
        if kind == "runtime_error":
            raise TesteeFailure("runtime_error", resp.runtime_error, self.stderr_tail())
        return resp

    def _call_within(self, req, timeout: Optional[float]):
        """``call`` with a deadline of at least ``timeout`` seconds for this one answer."""
        saved, self.timeout = self.timeout, max(self.timeout, timeout or 0)
        try:
            return self.call(req)
        finally:
            self.timeout = saved

    # -- capabilities
    @property
    def harness_version(self) -> int:
        return self.hello.harness_version if self.hello else 0

    def capabilities(self):
        """(protocols, features) from hello; a testee that cannot start has none. A version-1
        testee is asked only about the version-1 protocols and features."""
        if self.hello is None and self.hello_error is None:
            try:
                self.ensure_started()
            except TesteeFailure as e:
                self.hello_error = e
        if self.hello is None:
            return set(), set()
        from . import protocols as registry
        v = self.hello.harness_version
        protocols = {p for p in self.hello.protocols if p in registry.names() and registry.get(p).since_harness <= v}
        features = set(self.hello.features) if v >= 2 else set(self.hello.features) & {"decode", "encode", "match"}
        return protocols, features

    def why_not(self, protocol: str, feature: str) -> Optional[str]:
        """Why a test of ``protocol``/``feature`` is skipped for this testee (None: it runs)."""
        from . import protocols as registry
        protocols, features = self.capabilities()
        if self.hello:
            v = self.hello.harness_version
            if v < max(registry.get(protocol).since_harness, FEATURE_SINCE.get(feature, 1)):
                return f"testee speaks harness v{v}"
        if protocol not in protocols:
            return f"testee does not implement {protocol}"
        if feature not in features:
            return f"testee does not support the '{feature}' feature"
        return None

    # -- typed requests
    def decode(self, codec: Codec, chunks: List[bytes]) -> DecodeResult:
        req = pb.TesteeRequest(decode=pb.DecodeRequest(codec=codec_pb(codec), chunks=chunks))
        resp = self.call(req)
        if resp.WhichOneof("result") != "decode":
            raise TesteeFailure("protocol", f"expected decode response, got {resp.WhichOneof('result')}")
        d = resp.decode
        return DecodeResult([frame_py(codec, f) for f in d.frames], error_py(d.error) if d.HasField("error") else None)

    def encode(self, codec: Codec, frame: Frame):
        req = pb.TesteeRequest(encode=pb.EncodeRequest(codec=codec_pb(codec), frame=frame_pb(codec, frame)))
        resp = self.call(req)
        if resp.WhichOneof("result") != "encode":
            raise TesteeFailure("protocol", f"expected encode response, got {resp.WhichOneof('result')}")
        e = resp.encode
        if e.WhichOneof("result") == "error":
            return error_py(e.error)
        return bytes(e.encoded)

    def match(self, codec: Codec, events: list, timeout_ms: int = 0) -> MatchResult:
        evs = []
        for ev, arg in events:
            if ev == "send_frame":
                m = pb.MatchEvent()
                frame_pb(codec, arg, m.send_frame)
                evs.append(m)
            else:
                evs.append(pb.MatchEvent(**{ev: arg}))
        req = pb.TesteeRequest(match=pb.MatchRequest(codec=codec_pb(codec), timeout_ms=timeout_ms, events=evs))
        resp = self.call(req)
        if resp.WhichOneof("result") != "match":
            raise TesteeFailure("protocol", f"expected match response, got {resp.WhichOneof('result')}")
        m = resp.match
        kinds = {pb.Completion.REPLY: "REPLY", pb.Completion.TIMEOUT: "TIMEOUT",
                 pb.Completion.UNMATCHED: "UNMATCHED", pb.Completion.FAILED: "FAILED",
                 pb.Completion.REFUSED: "REFUSED"}
        comps = []
        for c in m.completions:
            kind = kinds.get(c.kind, f"KIND_{c.kind}")
            comps.append(Completion(kind, None if kind == "UNMATCHED" else c.request,
                                    frame_py(codec, c.frame) if kind in ("REPLY", "UNMATCHED") else None))
        return MatchResult([bytes(s) for s in m.sent], comps, error_py(m.error) if m.HasField("error") else None)

    def serve(self, codec: Codec, endpoint: str, chunks: List[bytes], half_close: bool) -> ServeResult:
        req = pb.TesteeRequest(serve=pb.ServeRequest(codec=codec_pb(codec), endpoint=endpoint, chunks=chunks,
                                                     half_close=half_close))
        resp = self.call(req)
        if resp.WhichOneof("result") != "serve":
            raise TesteeFailure("protocol", f"expected serve response, got {resp.WhichOneof('result')}")
        r = resp.serve
        return ServeResult([bytes(w) for w in r.written], r.closed, error_py(r.error) if r.HasField("error") else None)


    def discovery(self, req: pb.DiscoveryRequest, timeout: Optional[float] = None) -> pb.DiscoveryResponse:
        """A registry script (spec/testee.md, ``discovery``): sent as a TesteeDiscoveryRequest, answered
        within ``timeout`` seconds if given (a script that waits), else the run's deadline."""
        resp = self._call_within(pb.TesteeDiscoveryRequest(discovery=req), timeout)
        if not isinstance(resp, pb.TesteeDiscoveryResponse):
            raise TesteeFailure("protocol", f"expected a discovery response, got {resp.WhichOneof('result')}")
        if len(resp.discovery.results) != len(req.ops):
            raise TesteeFailure("protocol", f"{len(req.ops)} ops but {len(resp.discovery.results)} results")
        return resp.discovery


    def long_stream(self, codec: Codec, recipe, timeout: float):
        """A long stream (spec/testee.md, ``long stream``), answered within ``timeout`` seconds:
        (frames, payload_bytes, digest, last frame or None, error or None, fed)."""
        from types import SimpleNamespace
        req = pb.TesteeLongStreamRequest(long_stream=pb.LongStreamRequest(
            codec=codec_pb(codec), cycle=recipe.cycle, repeat=recipe.repeat, tail=recipe.tail, seed=recipe.seed,
            max_chunk=recipe.max_chunk))
        resp = self._call_within(req, timeout)
        if not isinstance(resp, pb.TesteeLongStreamResponse):
            raise TesteeFailure("protocol", f"expected a long-stream response, got {resp.WhichOneof('result')}")
        r = resp.long_stream
        return SimpleNamespace(frames=r.frames, payload_bytes=r.payload_bytes, digest=bytes(r.digest),
                               last=frame_py(codec, r.last) if r.HasField("last") else None,
                               error=error_py(r.error) if r.HasField("error") else None, fed=r.fed)


def codec_pb(c: Codec) -> pb.Codec:
    msg = pb.Codec(protocol=c.protocol, limits=pb.Limits(max_payload=c.max_payload))
    c.spec.codec_to_pb(c, msg)
    return msg


def frame_pb(codec: Codec, f: Frame, msg=None) -> pb.Frame:
    msg = pb.Frame() if msg is None else msg
    codec.spec.frame_to_pb(f, msg)
    return msg


def frame_py(codec: Codec, f: pb.Frame) -> Frame:
    return codec.spec.frame_from_pb(f)


def error_py(e: pb.ProtocolError) -> Error:
    """The requirement and offset; the protocol-specific detail only where the testee set one."""
    which = e.WhichOneof("detail")
    return Error(e.requirement, e.offset, getattr(e, which) if which else None)
