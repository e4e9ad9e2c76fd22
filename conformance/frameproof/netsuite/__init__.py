"""Network conformance cases: `frameproof net --server HOST:PORT` tests a live echo
server (STD-ECHO-*, LF-ECHO-*); every case talks to 127.0.0.1/::1 only, with a
bounded count of frames and connections and a timeout on every read.

A case raises CheckFailure (expected vs actual) on a violation.

The package, one module a job: ``target`` (the server under test, the case entry), ``conn`` (the client
helpers), ``common_cases`` (the cases every protocol runs, and a protocol's list), ``hostile_peers`` (the shared
hostile peers), ``process_cases`` (the cases that start a server of their own from --server-cmd). Protocols build their cases from these (protocols/*/net.py).
"""
from ..loadside import payload_for
from .conn import Alongside, Conn, check_replies, expected_reply, healthy, request, roundtrip, rss_kib, watched
from .common_cases import cases, generic, hostile, oversize, requirements_for, stalled_maximal_frames
from .process_cases import process_cases
from .hostile_peers import _quiet_send, _rst, hostile_cases  # noqa: F401  (_quiet_send, _rst: for protocols/*/net.py)
from .target import READ_TIMEOUT, NetCase, NetTarget, SkipCase

__all__ = ["Alongside", "Conn", "NetCase", "NetTarget", "READ_TIMEOUT", "SkipCase", "cases", "check_replies",
           "expected_reply", "generic", "healthy", "hostile", "hostile_cases", "oversize", "payload_for", "process_cases", "request",
           "requirements_for", "roundtrip", "rss_kib", "stalled_maximal_frames", "watched"]
