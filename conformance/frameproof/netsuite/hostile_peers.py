"""Hostile peers, one connection at a time, each beside a healthy connection with the server's
RSS watched: the shared hostile cases every protocol maps to its own requirement IDs."""
from __future__ import annotations

import random
import socket
import threading
import time
from typing import List

from .. import oracle
from ..checks import CheckFailure
from ..loadside import payload_for
from .conn import Conn, check_replies, healthy, request, watched
from .common_cases import _hostile, stalled_maximal_frames
from .target import NetCase, READ_TIMEOUT, SkipCase


# ------------------------------------------------------------------ hostile peers, one connection at a time
#
# Each case below runs one hostile peer (or a burst of them) with a healthy connection alongside
# (opened before, checked after), then a fresh connection, and the server's RSS watched. The
# requirements a case checks are *roles* that each protocol's net.py maps to its own IDs
# (``hostile_cases(ROLES)``): close: the server closes a connection on a decoding error and serves
# every other one; lim: the frame limit at header time; mem: per-connection memory bounded;
# trunc: a stream ending inside a frame; stop: nothing after an error; split: any split of the
# stream; half: replies to complete frames on half-close; order: replies in request order; RES-n:
# the resource limits (the protocol's prefix + "-RES-n").

def _oversize(t):
    if t.limit >= t.codec.capacity:
        raise SkipCase("the profile's length field cannot exceed the server's limit")
    return t.spec.oversize_header(t.codec, t.limit + 1)


def _rst(c):
    try:
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    except OSError:
        pass
    c.close()


def _quiet_send(c, data):
    try:
        c.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed first: fine


def h_oversize_capacity(t):
    cap = t.codec.capacity
    if t.limit >= cap:
        raise SkipCase("the profile's length field cannot exceed the server's limit")
    _hostile(t, lambda c: t.spec.oversize_header(t.codec, cap) + b"z" * 64, f"a header declaring {cap} bytes")


def h_oversize_byte_by_byte(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        try:
            for b in head:
                _quiet_send(c, bytes([b]))
                time.sleep(0.002)
            c.expect_closed(what=" after an oversize header written one byte at a time")
        finally:
            c.close()
    watched(t, body, "an oversize header written one byte at a time")


def h_oversize_after_requests(t):
    _hostile(t, lambda c: _oversize(t), "100 requests then an oversize header in one write", 100)


def h_requests_after_oversize(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        try:
            c.send(head + b"".join(c.frame(request(t, i + 1, b"after-the-error")) for i in range(10)))
            c.expect_closed(what=" (10 requests came after an oversize header in the same write: none may be answered)")
        finally:
            c.close()
    watched(t, body, "requests after an oversize header")


def h_write_after_close(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        try:
            c.send(head)
            c.expect_closed(what=" after an oversize header")
            for _ in range(16):
                _quiet_send(c, b"w" * 65536)
        finally:
            c.close()
    watched(t, body, "1 MiB written after the server closed")


def h_oversize_burst(t):
    head = _oversize(t)

    def body():
        conns = [Conn(t) for _ in range(32)]
        try:
            for c in conns:
                _quiet_send(c, head)
            for c in conns:
                c.expect_closed(what=" (32 connections sent an oversize header at once)")
        finally:
            for c in conns:
                c.close()
    watched(t, body, "32 oversize headers at once")


def _flood(t, byte, ctx):
    def body():
        c = Conn(t)
        try:
            for _ in range(4):
                _quiet_send(c, bytes([byte]) * 65536)
            c.idle(0.5)  # whatever it means, the server answers with well-formed frames or closes
            oracle_check_replies_wellformed(c)
        finally:
            _rst(c)
    watched(t, body, ctx)


def oracle_check_replies_wellformed(c):
    res = oracle.decode(c.codec, c.buf)
    if res.error and not oracle.is_truncation(c.codec, res.error):
        raise CheckFailure(f"the server sent a malformed frame ({res.error.requirement}): {c.buf[:24].hex(' ')}")


def h_zero_flood(t):
    _flood(t, 0x00, "256 KiB of zero bytes")


def h_ff_flood(t):
    _flood(t, 0xFF, "256 KiB of 0xFF bytes")


def h_garbage_8(t):
    def body():
        conns = []
        try:
            for k in range(8):
                rnd = random.Random(99 + k)
                c = Conn(t)
                conns.append(c)
                _quiet_send(c, bytes(rnd.getrandbits(8) for _ in range(65536)))
            for c in conns:
                c.idle(0.2)
                oracle_check_replies_wellformed(c)
        finally:
            for c in conns:
                _rst(c)
    watched(t, body, "8 connections of random bytes at once")


def h_reset_in_header(t):
    def body():
        for k in range(32):
            c = Conn(t)
            data = c.frame(request(t, 1, b"cut-in-the-header"))
            c.send(data[: 1 + k % 3])
            _rst(c)
        time.sleep(0.1)
    watched(t, body, "32 connections reset inside a header")


def h_reset_mid_large_frame(t):
    n = min(t.limit, 4 << 20)

    def body():
        for k in range(8):
            c = Conn(t)
            data = c.frame(request(t, 1, payload_for(k, n)))
            _quiet_send(c, data[: len(data) // 2])
            _rst(c)
        time.sleep(0.2)
    watched(t, body, f"8 connections reset halfway through a {n}-byte frame")


def h_reset_loop_maximal(t):
    """A frame one byte short of the largest, then a reset, five times: memory comes back each time."""
    n = t.limit

    def body():
        for k in range(5):
            c = Conn(t)
            data = c.frame(request(t, 1, payload_for(k, n)))
            _quiet_send(c, data[:-1])
            time.sleep(0.05)
            _rst(c)
        time.sleep(0.2)
    watched(t, body, "five maximal frames reset one byte short")


def h_half_close_mid_header(t):
    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, b"then-half-a-header-%d" % i) for i in range(5)]
            c.send(b"".join(c.frame(r) for r in reqs) + c.frame(request(t, 9, b"x"))[:2])
            c.s.shutdown(socket.SHUT_WR)
            check_replies(t, reqs, c.read_frames(len(reqs)), "half-close inside a header: ")
            c.expect_closed(what=" after a half-close inside a header")
        finally:
            c.close()
    watched(t, body, "a half-close inside a header")


def h_half_close_mid_payload(t):
    n = min(t.limit, 65536)

    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, b"then-half-a-payload-%d" % i) for i in range(5)]
            big = c.frame(request(t, 9, payload_for(3, n)))
            c.send(b"".join(c.frame(r) for r in reqs) + big[: len(big) - 7])
            c.s.shutdown(socket.SHUT_WR)
            check_replies(t, reqs, c.read_frames(len(reqs)), "half-close inside a payload: ")
            c.expect_closed(what=" after a half-close inside a payload")
        finally:
            c.close()
    watched(t, body, "a half-close inside a payload")


def h_half_close_at_once(t):
    def body():
        c = Conn(t)
        try:
            c.s.shutdown(socket.SHUT_WR)
            c.expect_closed(what=" after a half-close with no request")
        finally:
            c.close()
    watched(t, body, "a half-close before any request")


def h_stalled_maximal(t):
    stalled_maximal_frames(t)


def h_flood_without_reading(t):
    """20,000 requests written before reading a single reply: all come back, in order."""
    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, payload_for(i, 8 + i % 16)) for i in range(20000)]
            data = b"".join(c.frame(r) for r in reqs)
            th = threading.Thread(target=lambda: _quiet_send(c, data), daemon=True)
            th.start()
            got = c.read_frames(len(reqs), timeout=READ_TIMEOUT * 6)
            th.join(READ_TIMEOUT)
            check_replies(t, reqs, got, "20,000 requests written before any read: ")
        finally:
            c.close()
    watched(t, body, "20,000 requests written before any read")


def h_slow_reader(t):
    """200 requests of 16 KiB, the replies read 4 KiB at a time with pauses: none is lost."""
    n = min(t.limit, 16384)

    def body():
        # a small receive window from the start: shrunk after the connection is up, the window falls
        # below loopback's 32 KiB MSS and Linux sends only on its persist timer (a 20x slower case)
        c = Conn(t, rcvbuf=16384)
        try:
            reqs = [request(t, i + 1, payload_for(i, n)) for i in range(200)]
            data = b"".join(c.frame(r) for r in reqs)
            th = threading.Thread(target=lambda: _quiet_send(c, data), daemon=True)
            th.start()
            got = []
            deadline = time.monotonic() + READ_TIMEOUT * 6
            dec = t.spec.reference.decoder(c.codec)
            while len(got) < len(reqs):
                if time.monotonic() > deadline:
                    raise CheckFailure(f"a slow reader got {len(got)} of {len(reqs)} replies before the deadline")
                c.s.settimeout(READ_TIMEOUT)
                chunk = c.s.recv(4096)
                if not chunk:
                    raise CheckFailure(f"a slow reader got {len(got)} of {len(reqs)} replies, then the server closed")
                got += dec.feed(chunk)
                time.sleep(0.0005)
            th.join(READ_TIMEOUT)
            check_replies(t, reqs, got, "replies read slowly: ")
        finally:
            c.close()
    watched(t, body, "a slow reader")


def h_never_reading_bounded(t):
    """A peer writes requests for 2 s and never reads: the server stops reading it (its output is
    bounded) and its RSS stays bounded; others are served meanwhile."""
    n = min(t.limit, 65536)

    def body():
        c = Conn(t)
        try:
            c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            batch = b"".join(c.frame(request(t, i + 1, payload_for(i, n))) for i in range(16))
            sent = 0
            end = time.monotonic() + 2.0
            c.s.settimeout(0.0)
            while time.monotonic() < end and sent < (256 << 20):
                try:
                    sent += c.s.send(batch)
                except (BlockingIOError, InterruptedError):
                    time.sleep(0.01)
                except OSError:
                    break  # closed (the write timeout may be short): fine
            c.s.settimeout(READ_TIMEOUT)
            healthy(t, f"while a peer that never reads has written {sent >> 20} MiB: ")
        finally:
            _rst(c)
    watched(t, body, "a peer that never reads")


def h_tiny_writes(t):
    def body():
        c = Conn(t)
        try:
            reqs = [request(t, i + 1, b"tiny-%d" % i) for i in range(300)]
            for b in b"".join(c.frame(r) for r in reqs):
                c.send(bytes([b]))
            check_replies(t, reqs, c.read_frames(len(reqs)), "300 requests in one-byte writes: ")
        finally:
            c.close()
    watched(t, body, "300 requests written one byte per write, no pause")


def h_partial_frames_everywhere(t):
    """32 connections each stop at a different offset of a frame for 0.3 s, then finish it."""
    def body():
        conns = []
        try:
            for k in range(32):
                c = Conn(t)
                r = request(t, 1, payload_for(k, 100 + k))
                data = c.frame(r)
                cut = 1 + k % (len(data) - 1)
                c.send(data[:cut])
                conns.append((c, r, data, cut))
            time.sleep(0.3)
            for c, r, data, cut in conns:
                c.send(data[cut:])
            for c, r, _, _ in conns:
                check_replies(t, [r], c.read_frames(1), "a frame finished after 0.3 s: ")
        finally:
            for c, _, _, _ in conns:
                c.close()
    watched(t, body, "32 connections pausing mid-frame")


def h_connect_close_burst(t):
    def body():
        for k in range(200):
            c = Conn(t)
            if k % 2:
                _rst(c)
            else:
                c.close()
        time.sleep(0.1)
    watched(t, body, "200 connections opened and closed without a request")


def h_reset_before_reply(t):
    n = min(t.limit, 1 << 20)

    def body():
        for k in range(20):
            c = Conn(t)
            _quiet_send(c, c.frame(request(t, 1, payload_for(k, n))))
            _rst(c)
        time.sleep(0.2)
    watched(t, body, f"20 connections reset right after a {n}-byte request")


def h_close_with_unread_replies(t):
    def body():
        for k in range(10):
            c = Conn(t)
            _quiet_send(c, b"".join(c.frame(request(t, i + 1, payload_for(i, 1000))) for i in range(100)))
            c.close()
        time.sleep(0.2)
    watched(t, body, "10 connections closed with 100 replies unread")


def h_partial_churn(t):
    def body():
        for k in range(100):
            c = Conn(t)
            data = c.frame(request(t, 1, payload_for(k, 200)))
            _quiet_send(c, data[: 1 + k % (len(data) - 1)])
            c.close()
        time.sleep(0.1)
    watched(t, body, "100 connections closed mid-frame one after another")


def h_oversize_beside_pipeline(t):
    head = _oversize(t)

    def body():
        c = Conn(t)
        bad = Conn(t)
        try:
            reqs = [request(t, i + 1, payload_for(i, 40)) for i in range(1000)]
            c.send(b"".join(c.frame(r) for r in reqs[:500]))
            _quiet_send(bad, head)
            c.send(b"".join(c.frame(r) for r in reqs[500:]))
            check_replies(t, reqs, c.read_frames(len(reqs)), "a pipeline beside an oversize header: ")
            bad.expect_closed(what=" after an oversize header")
        finally:
            c.close()
            bad.close()
    watched(t, body, "an oversize header beside a 1,000-request pipeline")


def h_slow_header(t):
    """A header written one byte every 100 ms, then the payload: answered (a slow peer, within the
    frame timeout, is served)."""
    def body():
        c = Conn(t)
        try:
            r = request(t, 1, b"slow-header")
            data = c.frame(r)
            for b in data[:-1]:
                c.send(bytes([b]))
                time.sleep(0.1)
            c.send(data[-1:])
            check_replies(t, [r], c.read_frames(1), "a frame written one byte per 100 ms: ")
        finally:
            c.close()
    watched(t, body, "a frame written one byte every 100 ms")


# name -> (description, run, roles)
HOSTILE = {
    "oversize_capacity": ("A header declaring the largest length the framing can hold: closed at once",
                          h_oversize_capacity, ("close", "lim", "mem")),
    "oversize_byte_by_byte": ("An oversize header written one byte per write: closed after its last byte",
                              h_oversize_byte_by_byte, ("lim", "split")),
    "oversize_after_100_requests": ("100 requests then an oversize header in one write: 100 replies, then closed",
                                    h_oversize_after_requests, ("close", "order")),
    "requests_after_oversize": ("Requests after an oversize header in the same write are not answered",
                                h_requests_after_oversize, ("stop", "close")),
    "write_after_close": ("1 MiB written after the server closed on an oversize header: the server stays up",
                          h_write_after_close, ("close",)),
    "oversize_burst_32": ("32 connections send an oversize header at once: all closed, others served",
                          h_oversize_burst, ("close", "lim")),
    "oversize_beside_pipeline": ("An oversize header on one connection beside a 1,000-request pipeline on "
                                 "another", h_oversize_beside_pipeline, ("close", "order")),
    "zero_bytes_256kib": ("256 KiB of zero bytes: well-formed answers or a close, bounded memory", h_zero_flood,
                          ("mem",)),
    "ff_bytes_256kib": ("256 KiB of 0xFF bytes: well-formed answers or a close, bounded memory", h_ff_flood,
                        ("mem",)),
    "garbage_8_connections": ("8 connections of random bytes at once", h_garbage_8, ("mem", "close")),
    "reset_in_header": ("32 connections reset inside a header", h_reset_in_header, ("trunc", "close")),
    "reset_mid_large_frame": ("8 connections reset halfway through a large frame: memory released",
                              h_reset_mid_large_frame, ("mem", "RES-1")),
    "reset_loop_maximal": ("Five maximal frames reset one byte short: memory comes back each time",
                           h_reset_loop_maximal, ("mem", "RES-1")),
    "half_close_mid_header": ("Half-close inside a header: replies to the complete frames, then closed",
                              h_half_close_mid_header, ("half", "trunc")),
    "half_close_mid_payload": ("Half-close inside a payload: replies to the complete frames, then closed",
                               h_half_close_mid_payload, ("half", "trunc")),
    "half_close_at_once": ("Half-close before any request: the server closes, sends nothing",
                           h_half_close_at_once, ("half",)),
    "stalled_maximal_frames_32": ("32 connections hold unfinished frames of the largest declarable size",
                                  h_stalled_maximal, ("mem", "RES-2")),
    "flood_without_reading": ("20,000 requests written before any read: every reply, in order",
                              h_flood_without_reading, ("order", "RES-5")),
    "slow_reader": ("200 requests of 16 KiB, replies read 4 KiB at a time: none lost", h_slow_reader,
                    ("order", "RES-5")),
    "never_reading_bounded": ("A peer writes for 2 s and never reads: bounded output and RSS, others served",
                              h_never_reading_bounded, ("RES-5", "RES-1")),
    "tiny_writes_300": ("300 requests in one-byte writes with no pause", h_tiny_writes, ("split",)),
    "partial_frames_32_connections": ("32 connections stop at different offsets of a frame, then finish it",
                                      h_partial_frames_everywhere, ("split", "RES-2")),
    "connect_close_burst_200": ("200 connections opened and closed (half reset) without a request",
                                h_connect_close_burst, ("close",)),
    "reset_before_reply": ("20 connections reset right after a large request, before its reply",
                           h_reset_before_reply, ("close",)),
    "close_with_unread_replies": ("10 connections closed with 100 replies unread", h_close_with_unread_replies,
                                  ("close",)),
    "partial_churn_100": ("100 connections closed mid-frame one after another", h_partial_churn,
                          ("trunc", "close")),
    "slow_header": ("A frame written one byte every 100 ms is answered", h_slow_header, ("split", "RES-4")),
}


def hostile_cases(roles: dict) -> List[NetCase]:
    """The shared hostile cases with the protocol's requirement IDs: ``roles`` maps each role
    (close, lim, mem, trunc, stop, split, half, order) to an ID, and ``prefix`` to the ID prefix
    for the RES-n roles."""
    out = []
    for name, (description, run, rs) in HOSTILE.items():
        reqs = []
        for r in rs:
            rid = f"{roles['prefix']}-{r}" if r.startswith("RES-") else roles[r]
            if rid not in reqs:
                reqs.append(rid)
        out.append(NetCase(name, reqs, description, run, hostile=True))
    return out
