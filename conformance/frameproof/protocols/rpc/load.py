"""The rpc side of the Python load client (reference-impls/README.md, "rpc: what changes"):
``--variant`` sets the call-mode bits of every REQUEST (RPC-MODE-1), a RESPONSE must carry the
request's mode with END_STREAM (RPC-MODE-2) and error code 0; ``--mode stream`` runs STREAM_INIT,
DATA echoes and STREAM_END (§10) with the same id counter as the requests (RPC-ID-1)."""
from __future__ import annotations

from ...loadside import LoadSide
from ...oracle import Frame
from . import frames as K
from .frames import RpcHeader

VARIANTS = ("unary", "client-stream", "server-stream", "bidi")  # call mode 0..3 (spec/rpc.md §7)
#: planted bugs of the Python load client (frameproof.pyload --fault), caught by rpc's client cases
FAULTS = {"rpc-client-counts-stray-response": "RPC-MATCH-2",  # an unmatched RESPONSE is a reply and an error
          "rpc-client-counts-non-response": "RPC-MATCH-4",  # a REQUEST or STREAM_DATA is taken for a reply
          "rpc-client-ignores-variant": "HAR-CLI-1"}  # every call in mode 0 (unary), whatever --variant names
#: the client arguments a planted bug shows under (the default variant is unary: ignoring it changes nothing)
FAULT_ARGS = {"rpc-client-ignores-variant": "--variant bidi"}


class RpcLoadSide(LoadSide):
    def __init__(self, proto, codec, variant):
        super().__init__(proto, codec, variant)
        self.mode = VARIANTS.index(variant)

    def request(self, payload):
        if getattr(self, "fault", "") == "rpc-client-ignores-variant":
            self.mode = 0  # the bug: its replies are then checked against mode 0 too, consistently
        key, frame = self.m.next_request(
            Frame(0, 0, payload, RpcHeader(K.REQUEST, self.mode | K.END_STREAM, 0, K.ECHO_SERVICE, K.ECHO_METHOD)),
            check_pending=False)
        return key, frame

    # -- unary calls: only a RESPONSE can complete one (RPC-MATCH-4); one with no pending id completes
    # nothing and is no error (RPC-MATCH-2)
    def counted(self, frame):
        if getattr(self, "fault", "") == "rpc-client-counts-non-response":
            return super().counted(frame)  # the bug: every frame the server counts (REQUEST, STREAM_DATA too)
        return frame.header.type == K.RESPONSE

    def stray(self, frame):
        return frame.header.type == K.RESPONSE and getattr(self, "fault", "") != "rpc-client-counts-stray-response"

    def reply_ok(self, frame, payload):
        return super().reply_ok(frame, payload) and frame.header.flags == self.mode | K.END_STREAM

    # -- streams: the id counter is shared with requests (RPC-ID-1)
    def stream_open(self):
        sid = self.m.next_id
        self.m.next_id = (sid + 1) & 0xFFFFFFFF
        return sid, K.init(sid)

    def stream_data(self, sid, payload):
        return K.stream(K.DATA, sid, payload)

    def stream_end(self, sid):
        return K.stream(K.END, sid)

    def stream_kind(self, frame):
        """("ack" | "data" | "end" | "other", id) of a frame from the stream endpoint."""
        kinds = {K.INIT_ACK: "ack", K.DATA: "data", K.END: "end"}
        return kinds.get(frame.header.type, "other"), frame.header.id


def request_check(variant=None):
    """HAR-CLI-1 for rpc: REQUESTs and STREAM_INITs take ids 0, 1, 2 ... from one counter
    (RPC-ID-1), every REQUEST has the call mode of the client's --variant (RPC-MODE-1; not named:
    unary, mode 0), STREAM_DATA/END carry the open stream's id and come only inside a stream."""
    named = variant or VARIANTS[0]
    want_mode = VARIANTS.index(named) if named in VARIANTS else None  # an unknown one: the client refuses it
    st = {"expect": 0, "n": 0, "mode": want_mode, "open": None}

    def check(frame):
        st["n"] += 1
        h = frame.header
        n = st["n"]
        if h.type in (K.REQUEST, K.INIT):
            want = st["expect"]
            st["expect"] = (h.id + 1) & 0xFFFFFFFF
            if h.id != want:
                return f"frame {n} ({K.TYPE_NAMES[h.type]}) has id {h.id}, RPC-ID-1 expects {want}"
            if h.service != K.ECHO_SERVICE or h.method != K.ECHO_METHOD:
                return f"frame {n} names {h.service!r}/{h.method!r}, not the echo service's {K.ECHO_SERVICE!r}/{K.ECHO_METHOD!r}"
            if h.type == K.INIT:
                if st["open"] is not None:
                    return f"frame {n} opens stream {h.id} while stream {st['open']} is open (RPC-STREAM-7)"
                st["open"] = h.id
                return None
            mode = h.flags & 3
            if st["mode"] is None:
                st["mode"] = mode
            if mode != st["mode"] or h.flags & ~7:
                why = (f"the client was run with --variant {named}, call mode {want_mode} (RPC-MODE-1)"
                       if want_mode is not None else f"the run's first request had call mode {st['mode']}")
                return f"request {n} has flags 0x{h.flags:02X}; {why}"
            return None
        if h.type in (K.DATA, K.END):
            if st["open"] is None or h.id != st["open"]:
                return f"frame {n} ({K.TYPE_NAMES[h.type]}, id {h.id}) outside its stream (open: {st['open']})"
            if h.type == K.END:
                st["open"] = None
            return None
        return f"frame {n} is a {K.TYPE_NAMES.get(h.type, hex(h.type))}, which a load client never sends"
    return check
