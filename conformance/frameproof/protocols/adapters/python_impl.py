"""The PythonImpl adapter: the protocol's Python reference codec and what the Python testee and the
Python echo server (frameproof.pytestee, frameproof.pyserver) build on it, with their deliberate
bugs (mutants and server faults)."""
from __future__ import annotations

from typing import Dict


class PythonImpl:
    #: Python reference codec module (used by the Python testee, server and load client)
    reference = None
    #: deliberate bugs of the Python testee: name -> the requirement it breaks
    mutants: Dict[str, str] = {}
    #: deliberate bugs of the Python echo server: name -> the requirement it breaks
    server_faults: Dict[str, str] = {}

    def server_session(self, codec, endpoint: str = ""):
        """The Python reference server side of one ``serve`` connection (the Python testee): an
        object with ``feed(bytes) -> bytes``, ``eof() -> bytes``, ``closed`` and ``error`` (a
        ``CodecError``). Default: the echo session over ``reference`` (one endpoint, stateless
        replies); a protocol with several endpoints or a stateful one returns its own."""
        from ...reference import EchoSession
        return EchoSession(self.reference, codec)

    def echo_replier(self, codec, fault: str = ""):
        """A fresh per-connection ``reply(frame) -> Frame | None`` for the Python echo server
        (frameproof.pyserver); raising ``CodecError`` closes the connection on that frame.
        Default: ``reference.echo_reply(frame, fault)``, stateless."""
        return lambda frame: self.reference.echo_reply(frame, fault)

    def closing_bytes(self, codec, err, fault: str = "") -> bytes:
        """What the Python echo server writes right before it closes a connection on ``err`` (a
        ``CodecError`` from the decoder or the replier), e.g. a close frame. Default: nothing."""
        return b""

    def server_opening(self, codec, fault: str = ""):
        """The server side of an opening handshake that precedes the frames on a network
        connection (frameproof.pyserver), or None (default: frames from the first byte). An object
        with ``feed(bytes) -> (reply bytes, leftover bytes or None while incomplete)`` and ``ok``
        (True: frames follow; False: the server closes after the reply)."""
        return None
