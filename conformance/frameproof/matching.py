"""The client-side matching model shared by request/reply protocols (spec/testee.md, ``match``):
the event loop, the virtual clock, timeouts and the failed-connection state. A protocol
subclasses :class:`ClientModel` with its own allocation and matching rules."""
from __future__ import annotations

from typing import List, Optional, Tuple

from .oracle import DEFAULT_TIMEOUT_MS, Codec, Completion, Error, Frame, MatchResult, decode, encode


class ClientModel:
    """One client connection. Subclasses implement ``request_frame`` (allocation; ``None`` =
    refused) and ``pick`` (which pending request a reply completes)."""

    #: after a timeout, fail every other pending request and the connection (LF-MATCH-3)
    timeout_fails_connection = False

    def __init__(self, codec: Codec, timeout_ms: int = 0):
        self.codec = codec
        self.timeout = timeout_ms or DEFAULT_TIMEOUT_MS
        self.out = MatchResult()
        self.now = 0
        self.pending: List[Tuple[int, int, int]] = []  # (request index, key, deadline), in send order
        self.failed = False
        self.index = 0
        self.buf = b""
        self.consumed = 0  # stream offset of buf[0]

    # -- protocol hooks
    def request_frame(self, kind: str, arg) -> Optional[Tuple[Frame, int]]:
        """(frame to send, matching key) for a send event, or None if the send is refused."""
        raise NotImplementedError

    def commit(self, kind: str, key: int):
        """Called once a request's bytes were written (e.g. to advance a sequence counter)."""

    def pick(self, frame: Frame):
        """The pending entry this received frame completes; None = unmatched; False = ignore it."""
        raise NotImplementedError

    # -- the loop
    def fail_all(self):
        for req, _key, _dl in self.pending:
            self.out.completions.append(Completion("FAILED", req))
        self.pending.clear()

    def refuse(self, req):
        self.out.sent.append(b"")
        self.out.completions.append(Completion("REFUSED", req))

    def run(self, events) -> MatchResult:
        for ev, arg in events:
            if ev in ("send", "send_one_way", "send_frame"):
                self.on_send(ev, arg)
            elif ev == "receive":
                self.on_receive(arg)
            elif ev == "advance_ms":
                self.on_advance_ms(arg)
            else:
                raise ValueError(f"unknown match event {ev!r}")
        return self.out

    def on_send(self, kind, arg):
        req = self.index
        self.index += 1
        if self.failed:
            return self.refuse(req)
        r = self.request_frame(kind, arg)
        if r is None:
            return self.refuse(req)
        frame, key = r
        enc = encode(self.codec, frame)
        if isinstance(enc, Error):
            return self.refuse(req)
        self.commit(kind, key)
        self.out.sent.append(enc)
        if kind != "send_one_way":
            self.pending.append((req, key, self.now + self.timeout))


    def on_receive(self, data):
        if self.failed:
            return
        self.buf += data
        res = decode(self.codec, self.buf)  # an incomplete tail waits for more bytes
        for fr in res.frames:
            hit = self.pick(fr)
            if hit is False:
                continue
            if hit is None:
                self.out.completions.append(Completion("UNMATCHED", None, fr))
            else:
                self.pending.remove(hit)
                self.out.completions.append(Completion("REPLY", hit[0], fr))
        err = res.error
        if err and err.requirement != self.codec.spec.truncation_requirement:
            self.out.error = Error(err.requirement, self.consumed + err.offset)
            self.fail_all()
            self.failed = True
            self.buf = b""
        else:
            self.buf = self.buf[res.consumed:]
            self.consumed += res.consumed

    def on_advance_ms(self, ms):
        self.now += ms
        if self.failed:
            return
        expired = [p for p in self.pending if p[2] <= self.now]
        for p in expired:
            self.pending.remove(p)
            self.out.completions.append(Completion("TIMEOUT", p[0]))
        if expired and self.timeout_fails_connection:
            self.fail_all()
            self.failed = True
