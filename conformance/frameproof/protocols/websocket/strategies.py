"""Hypothesis strategies for `websocket`: codecs of both roles, frames masked by role, valid
streams of messages (fragmented, control frames between fragments, a close at the end), invalid
streams whose class is known by construction, text messages for the UTF-8 property."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from ...coverage import declare, note
from ...oracle import Error, Frame
from ...properties import Strategies, payloads
from . import oracle as O
from .frames import BINARY, CLOSE, CONT, PING, PONG, TEXT, WsHeader, frame, python_fail_fast
from .oracle import WsCodec

EDGE_LIMITS = (125, 126, 65535, 65536)

#: the shapes of the messages valid streams carry (frameproof/coverage.py): a message in one frame, a
#: every sequence at a bound of RFC 3629's table (WS-UTF8-1): the smallest and largest of 2, 3 and 4 bytes; E0,
#: ED, F0 and F4, whose second byte has a narrower range, at both ends of it; and 00, 7F
UTF8_BOUNDS = (b"\x00\x7f", b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xe0\xbf\xbf", b"\xe1\x80\x80",
               b"\xec\xbf\xbf", b"\xed\x80\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf",
               b"\xf0\x90\x80\x80", b"\xf0\xbf\xbf\xbf", b"\xf1\x80\x80\x80", b"\xf3\xbf\xbf\xbf",
               b"\xf4\x80\x80\x80", b"\xf4\x8f\xbf\xbf")
#: fragmented one, with an empty first, middle or last fragment, a control frame between its fragments
FRAGMENT_SHAPES = declare("ws.fragments", ("single-frame", "fragmented", "empty first", "empty middle", "empty last",
                                           "control between"), ["WS-FRAG-1", "WS-CTL-3"])
#: the close codes of the close frames the streams carry, by the classes of net.CLOSE_CLASSES, or none
CLOSE_CODE_CODEC = declare("ws.close_code.codec", ("no code", "0-999, unused", "1000-1003",
                                                   "1004-1006, reserved or never sent", "1007-1011",
                                                   "1012-1014, IANA registry", "1015, never sent",
                                                   "1016-2999, reserved", "3000-4999, registered and private",
                                                   "5000 and above, undefined"), ["WS-CLOSE-2", "WS-CLOSE-1"])
#: close bodies by class of their code: none, 1000-1003, 1007-1011, 1012-1014, 3000-4999 (with a reason)
VALID_CLOSE_BODIES = ((b"",), (b"\x03\xe8", b"\x03\xe9"), (b"\x03\xf3", b"\x03\xef"), (b"\x03\xf4ok", b"\x03\xf6"),
                      (b"\x0b\xb8", b"\x0f\xa0bye"))
#: invalid close codes by class: 0-999, 1004-1006, 1015, 1016-2999, 5000 and above
INVALID_CLOSE_CODES = ((0, 999), (1004, 1005, 1006), (1015,), (1016, 2999), (5000, 65535))
#: the kinds of invalid streams; a close code of each invalid class is a kind of its own (``closecode<i>``),
#: listed first and twice: under the ci profile's 40 examples every class of invalid codes is drawn (the
#: suite's tests/test_class_coverage.py requires it; with one ``closecode`` kind only 0-999 was)
KINDS = tuple(f"closecode{i}" for i in range(len(INVALID_CLOSE_CODES))) * 2 + (
    "rsv", "opcode", "ctl-fin", "mask", "ctl-len", "nonmin16", "nonmin64", "msb", "orphan", "interleave", "lim",
    "utf8-frag", "utf8-final", "close1", "closeutf8", "trunc")


def _close_class(body: bytes) -> str:
    """The class of a close body's code (net.CLOSE_CLASSES' label), or "no code"."""
    if len(body) < 2:
        return "no code"
    from .net import close_class
    return close_class(int.from_bytes(body[:2], "big"))[3]


def _codec(role, max_payload=0, max_message=0):
    return WsCodec("websocket", max_payload, role, max_message)


def masked_for(codec):
    """A receiver of ``codec``'s role gets masked frames iff it is a server."""
    return codec.role != "client"


class WsStrategies(Strategies):
    splices = (b"\x81\xff\xff\xff\xff\xff\xff\xff\xff\xff", b"\x82\x7e\x00\x05", b"\x88\x81\x00\x00\x00\x00\x01",
               b"\x80\x80\x00\x00\x00\x00", b"\xc1\x80\x00\x00\x00\x00", b"\x81\x82\x00\x00\x00\x00\xc3\x28")

    def codecs(self, small_limits=True):
        limits = st.sampled_from([0, 0, 200, 65536, 70000] if small_limits else [0])
        return st.builds(_codec, st.sampled_from(["server", "client"]), limits,
                         st.sampled_from([0, 0, 70000]))

    def server_codecs(self):
        return st.builds(_codec, st.just("server"), st.sampled_from([0, 0, 300]), st.sampled_from([0, 0, 1000]))

    def key(self, codec):
        return st.binary(min_size=4, max_size=4) if masked_for(codec) else st.none()

    @st.composite
    def _frames_for(draw, self, codec):
        """One frame valid on its own: an unfragmented text or binary message, a ping or a pong."""
        key = draw(self.key(codec))
        kind = draw(st.sampled_from([TEXT, BINARY, BINARY, PING, PONG]))
        if kind == TEXT:
            p = draw(st.text(max_size=40)).encode()
            if draw(st.integers(0, 4)) == 0:
                p = b"t" * min(codec.limit, codec.message_limit, draw(st.sampled_from(EDGE_LIMITS)))
        elif kind == BINARY:
            p = draw(payloads(min(codec.limit, codec.message_limit)))
        else:
            p = draw(st.binary(max_size=125))
        return frame(kind, p, True, key)

    def frames_for(self, codec):
        return self._frames_for(codec)

    def encode_edges(self):
        """Control frames of 125 bytes (the most a control frame carries) and 126 (refused, WS-CTL-2), of each
        control opcode (close from 8: a check from 9 up passes a close of 126), masked and not; each control opcode
        without FIN (WS-CTL-1); masking keys of the wrong length (WS-MASK-4)."""
        out = []
        for op in (CLOSE, PING, PONG):
            for n in (125, 126):
                payload = b"\x03\xe8" + b"r" * (n - 2) if op == CLOSE else b"p" * n
                for masked, key in ((False, b""), (True, b"\x0a\x0b\x0c\x0d")):
                    out.append((_codec("server"), Frame(0, 0, payload, WsHeader(True, 0, op, masked, key))))
            out.append((_codec("server"), Frame(0, 0, b"c", WsHeader(False, 0, op, False, b""))))  # WS-CTL-1
        # a masking key of five octets, and a key on an unmasked frame (WS-MASK-4)
        out.append((_codec("client"), Frame(0, 0, b"k", WsHeader(True, 0, BINARY, True, b"\x01\x02\x03\x04\x05"))))
        out.append((_codec("server"), Frame(0, 0, b"k", WsHeader(True, 0, BINARY, False, b"\x01\x02\x03\x04"))))
        return out

    def encode_cases(self):
        @st.composite
        def case(draw):
            codec = draw(self.codecs())
            if draw(st.integers(0, 3)):
                return codec, draw(self.frames_for(codec))
            h = WsHeader(draw(st.booleans()), draw(st.sampled_from([0, 0, 1, 4])), draw(st.sampled_from(
                [0, 1, 2, 8, 9, 10, 3, 11])), draw(st.booleans()), draw(st.sampled_from([b"", b"abcd", b"abc"])))
            n = draw(st.sampled_from([0, 5, 125, 126, 201]))
            return codec, Frame(0, 0, b"x" * n, h)
        return case()

    def valid_streams(self):
        @st.composite
        def streams(draw):
            codec = draw(self.codecs())
            frames = []
            for _ in range(draw(st.integers(0, 4))):
                if draw(st.booleans()):
                    f = draw(self.frames_for(codec))
                    if f.header.opcode in (TEXT, BINARY):
                        note(FRAGMENT_SHAPES, "single-frame")
                    frames.append(f)
                    continue
                # a fragmented message, control frames between its fragments
                key = lambda: draw(self.key(codec))
                text = draw(st.booleans())
                body = draw(st.text(max_size=30)).encode() if text else draw(st.binary(max_size=60))
                cuts = sorted(draw(st.lists(st.integers(0, len(body)), min_size=1, max_size=4)))
                parts = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
                note(FRAGMENT_SHAPES, "fragmented")
                if not parts[0]:
                    note(FRAGMENT_SHAPES, "empty first")
                if not parts[-1]:
                    note(FRAGMENT_SHAPES, "empty last")
                if not all(parts[1:-1]):
                    note(FRAGMENT_SHAPES, "empty middle")
                for i, p in enumerate(parts):
                    frames.append(frame((TEXT if text else BINARY) if i == 0 else CONT, p, i == len(parts) - 1, key()))
                    if i < len(parts) - 1 and draw(st.integers(0, 2)) == 0:
                        note(FRAGMENT_SHAPES, "control between")
                        frames.append(frame(draw(st.sampled_from([PING, PONG])), draw(st.binary(max_size=8)), True, key()))
            if draw(st.integers(0, 3)) == 0:
                # a class of valid close bodies first (net.CLOSE_CLASSES), then a body of it
                code = draw(st.sampled_from(draw(st.sampled_from(VALID_CLOSE_BODIES))))
                note(CLOSE_CODE_CODEC, _close_class(code))
                frames.append(frame(CLOSE, code, True, draw(self.key(codec))))
            data = b"".join(O.encode(codec, f) for f in frames)
            return codec, frames, data
        return streams()

    def invalid_edges(self):
        """UTF-8 at the edges of RFC 3629's table (WS-UTF8-1): one text frame holding every sequence at a bound of
        its lead byte's range (the smallest and largest of 2, 3 and 4 bytes; E0, ED, F0 and F4, whose second byte
        has a narrower range, at both ends of it; and 00, 7F), then a text frame with one sequence just outside a
        bound (E0 9F: overlong, ED A0: a surrogate, F0 8F: overlong, F4 90: above U+10FFFF; leads C1 and F5; a bare
        80 and BF; a continuation byte of 7F or C0 after a lead of each kind), each a stream of its own; and a fragmented message of exactly the message limit, then one a byte over. The expected
        result is the oracle's. A random draw rarely lands on a bound."""
        from frameproof import oracle as fp_oracle
        from ...properties import Edge
        codec = _codec("server")
        key = b"\x01\x02\x03\x04"
        valid = UTF8_BOUNDS
        first = frame(TEXT, b"|".join(valid), True, key)
        pre = O.encode(codec, first)
        out = []
        for bad in (b"\xe0\x9f\x80", b"\xed\xa0\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xc1\xbf",
                    b"\xf5\x80\x80\x80", b"\x80", b"\xbf", b"\xc2\x7f", b"\xc2\xc0", b"\xe0\xc0\x80", b"\xed\x7f\x80",
                    b"\xf0\xc0\x80\x80", b"\xf4\x7f\x80\x80", b"\xf1\x80\x80\x7f", b"\xf1\x80\x80\xc0"):
            whole = pre + O.encode(codec, frame(TEXT, b"ok" + bad + b"ok", True, key))
            r = fp_oracle.decode(codec, whole)
            assert r.frames == [first] and r.error is not None and r.error.requirement == "WS-UTF8-1", (bad, r)
            out.append((codec, whole, r.frames, r.error, Edge(f"UTF-8 {bad.hex(' ')} after every bound", ("WS-UTF8-1",))))
        # the same sequences split across two fragments after each of their bytes: the validator's state carried
        # from one frame to the next (a streaming validator takes a code point cut at a frame's end byte by byte)
        # (the valid ones so: valid_edges, UTF8_BOUNDS)
        for bad in (b"\xe0\x9f\x80", b"\xed\xa0\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xc2\x7f",
                    b"\xc2\xc0", b"\xf1\x80\x80\x7f", b"\xf1\x80\x80\xc0"):
            for k in range(1, len(bad)):
                fs = [frame(TEXT, b"ok" + bad[:k], False, key), frame(CONT, bad[k:] + b"ok", True, key)]
                whole = b"".join(O.encode(codec, f) for f in fs)
                r = fp_oracle.decode(codec, whole)
                assert r.error is not None and r.error.requirement in ("WS-UTF8-1", "WS-UTF8-2"), (bad, k, r)
                out.append((codec, whole, r.frames, r.error, Edge(f"UTF-8 {bad.hex(' ')} cut after byte {k}",
                                                                  (r.error.requirement,))))
        # the message limit at its edge: a fragmented message of exactly max_message bytes, then one a byte over
        small = _codec("server", 100, 100)
        ok = [frame(BINARY, b"a" * 60, False, key), frame(CONT, b"b" * 40, True, key)]
        whole = b"".join(O.encode(small, f) for f in ok + [frame(BINARY, b"c" * 60, False, key),
                                                            frame(CONT, b"d" * 41, True, key)])
        r = fp_oracle.decode(small, whole)
        assert r.frames[:2] == ok and r.error is not None, r
        out.append((small, whole, r.frames, r.error, Edge("a message of max_message bytes, then one a byte over",
                                                          (r.error.requirement,))))
        out += self._header_edges(key)
        return out

    def _header_edges(self, key):
        """Edges of the header's checks a random draw misses: every control opcode (close included) not FIN
        (WS-CTL-1) and of 126 bytes (WS-CTL-2); a single frame one byte over the message limit where the frame
        limit is larger (WS-LIM-2); 64-bit lengths of exactly 2^63 and 2^64-1 (WS-LEN-4); a close whose reason is
        not UTF-8 at its first byte and at a later one (WS-CLOSE-3); a close frame of exactly two octets holding an
        invalid code (WS-CLOSE-2), each after a valid frame."""
        from frameproof import oracle as fp_oracle
        from ...properties import Edge
        codec = _codec("server")
        pre = frame(BINARY, b"ok", True, key)
        head = O.encode(codec, pre)
        cases = []
        for op in (CLOSE, PING, PONG):
            body = b"\x03\xe8" if op == CLOSE else b"p"
            cases.append((codec, bytes([op, 0x80 | len(body)]) + key + bytes(b ^ key[i % 4] for i, b in enumerate(body)),
                          "WS-CTL-1", f"opcode {op} without FIN"))
            cases.append((codec, bytes([0x80 | op, 0x80 | 126, 0, 126]) + key + b"\x03\xe8" + b"r" * 124,
                          "WS-CTL-2", f"opcode {op} of 126 bytes"))
        big = _codec("server", 300, 200)
        cases.append((big, bytes([0x82, 0x80 | 126, 0, 201]) + key + b"m" * 201, "WS-LIM-2",
                      "one frame of max_message + 1 bytes under a larger frame limit"))
        for n in (2 ** 63, 2 ** 64 - 1):
            cases.append((codec, bytes([0x82, 0xFF]) + n.to_bytes(8, "big") + key, "WS-LEN-4", f"a 64-bit length of {n}"))
        for body in (b"\x03\xe8\xff", b"\x03\xe8a\xff"):
            cases.append((codec, bytes([0x88, 0x80 | len(body)]) + key + bytes(b ^ key[i % 4] for i, b in enumerate(body)),
                          "WS-CLOSE-3", f"a close whose reason has 0xFF at index {len(body) - 3}"))
        for code in (1005, 999, 5000):
            body = code.to_bytes(2, "big")
            cases.append((codec, bytes([0x88, 0x82]) + key + bytes(b ^ key[i] for i, b in enumerate(body)), "WS-CLOSE-2",
                          f"a close of exactly the code {code}"))
        out = []
        for c, bad, req, name in cases:
            whole = (head if c is codec else O.encode(c, pre)) + bad
            r = fp_oracle.decode(c, whole)
            assert r.frames == [pre] and r.error is not None and r.error.requirement == req, (name, r)
            out.append((c, whole, r.frames, r.error, Edge(name, (req,))))
        return out

    def serve_edges(self):
        """Echoes of messages at the edges of the reply's length encoding (125, 126, 65535 and 65536 bytes, the
        last fragmented), then a close: a server that refuses or miscodes a long reply fails WS-ECHO-1/WS-LEN-1."""
        from ...properties import Edge
        key = b"\x0a\x0b\x0c\x0d"
        codec = _codec("server")
        frames = [frame(BINARY, b"a" * 125, True, key), frame(TEXT, b"b" * 126, True, key),
                  frame(BINARY, b"c" * 65535, True, key), frame(BINARY, b"d" * 40000, False, key),
                  frame(CONT, b"e" * 25536, True, key), frame(CLOSE, b"\x03\xe8", True, key)]
        data = b"".join(O.encode(codec, f) for f in frames)
        return [(codec, "", [data], False, Edge("echoes of 125, 126, 65535 and 65536 bytes, then a close",
                                                ("WS-ECHO-1", "WS-LEN-1")))]

    def valid_edges(self):
        """Valid streams at the edges the checks above guard, decoded by the oracle: a single frame of exactly the
        message limit under a larger frame limit (WS-LIM-2); a ping of 125 bytes where the message limit is 100,
        alone and between the fragments of a message (control frames do not count, WS-LIM-2); a close of exactly
        a valid code (WS-CLOSE-2); a fragmented binary message whose continuation is not UTF-8 (WS-UTF8-1 checks
        text only)."""
        from frameproof import oracle as fp_oracle
        from ...properties import Edge
        key = b"\x05\x06\x07\x08"
        out = []
        big = _codec("server", 300, 200)
        frames = [frame(BINARY, b"m" * 200, True, key)]
        out.append((big, frames, Edge("one frame of exactly max_message bytes under a larger frame limit", ("WS-LIM-2",))))
        small = _codec("server", 200, 100)
        frames = [frame(PING, b"p" * 125, True, key), frame(BINARY, b"a" * 60, False, key),
                  frame(PONG, b"q" * 125, True, key), frame(CONT, b"b" * 40, True, key)]
        out.append((small, frames, Edge("control frames of 125 bytes under a message limit of 100", ("WS-LIM-2", "WS-CTL-3"))))
        codec = _codec("server")
        frames = [frame(BINARY, b"ok", False, key), frame(CONT, b"\xff\xc3\x28", False, key),
                  frame(CONT, b"\xed\xa0\x80", True, key), frame(CLOSE, b"\x03\xe8", True, key)]
        out.append((codec, frames, Edge("a binary message that is not UTF-8, then a close of exactly the code 1000",
                                        ("WS-UTF8-1", "WS-CLOSE-2"))))
        # every bound of RFC 3629's table cut across two fragments after each of its bytes: the validator's state
        # carried from one frame to the next (a streaming validator takes a code point cut at a frame's end byte by
        # byte; the whole-frame edges in invalid_edges never cut one)
        frames = [f for v in UTF8_BOUNDS for k in range(1, len(v))
                  for f in (frame(TEXT, b"ok" + v[:k], False, key), frame(CONT, v[k:] + b"ok", True, key))]
        out.append((codec, frames, Edge("UTF-8 at every bound, cut across two fragments after each byte",
                                        ("WS-UTF8-1", "WS-UTF8-2"))))
        result = []
        for c, fs, edge in out:
            whole = b"".join(O.encode(c, f) for f in fs)
            r = fp_oracle.decode(c, whole)
            assert r.frames == fs and r.error is None, (edge, r)
            result.append((c, whole, fs, edge))
        return result

    def invalid_streams(self):
        @st.composite
        def bad(draw):
            codec = draw(self.codecs())
            srv = masked_for(codec)
            key = (lambda: draw(st.binary(min_size=4, max_size=4))) if srv else (lambda: None)
            good = [draw(self.frames_for(codec)) for _ in range(draw(st.integers(0, 2)))]
            prefix = b"".join(O.encode(codec, f) for f in good)
            wide = replace(codec, max_payload=2 ** 63 - 1, max_message=2 ** 63 - 1)
            enc = lambda f: O.encode(wide, f)
            m = 0x80 if srv else 0
            k = b"\x01\x02\x03\x04" if srv else b""
            kind = draw(st.sampled_from(KINDS))
            if kind == "rsv":
                b, req = bytes([0x82 | (draw(st.sampled_from([1, 2, 4])) << 4), m]) + k, "WS-HDR-2"
            elif kind == "opcode":
                b, req = bytes([0x80 | draw(st.sampled_from([3, 4, 5, 6, 7, 11, 12, 13, 14, 15])), m]) + k, "WS-HDR-3"
            elif kind == "ctl-fin":
                b, req = bytes([draw(st.sampled_from([8, 9, 10])), m]) + k, "WS-CTL-1"
            elif kind == "mask":
                b, req = bytes([0x82, 0x80 ^ m]) + (b"" if srv else b"\x00\x00\x00\x00"), "WS-MASK-1" if srv else "WS-MASK-2"
            elif kind == "ctl-len":
                b, req = bytes([0x89, m | 126, 0, 126]) + k, "WS-CTL-2"
            elif kind == "nonmin16":
                b, req = bytes([0x82, m | 126, 0, draw(st.integers(0, 125))]) + k, "WS-LEN-3"
            elif kind == "nonmin64":
                b, req = bytes([0x82, m | 127]) + draw(st.integers(0, 65535)).to_bytes(8, "big") + k, "WS-LEN-3"
            elif kind == "msb":
                b, req = bytes([0x82, m | 127]) + (2 ** 63 + draw(st.integers(0, 99))).to_bytes(8, "big") + k, "WS-LEN-4"
            elif kind == "orphan":
                b, req = enc(frame(CONT, b"x", True, key())), "WS-FRAG-2"
            elif kind == "interleave":
                pre = enc(frame(BINARY, b"a", False, key()))
                prefix += pre
                good = good + [frame(BINARY, b"a", False, k or None)]
                b, req = enc(frame(draw(st.sampled_from([TEXT, BINARY])), b"b", True, key())), "WS-FRAG-3"
            elif kind == "lim":
                n = codec.limit + 1
                b, req = bytes([0x82, m | 127]) + n.to_bytes(8, "big") + k, "WS-LIM-1" if n > 65535 else "WS-LIM-1"
                if n <= 65535:
                    b = bytes([0x82, m | 126]) + n.to_bytes(2, "big") + k
            elif kind in ("utf8-frag", "utf8-final"):
                bad_ = draw(st.sampled_from([b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xff"]))
                fin = kind == "utf8-final"
                b, req = enc(frame(TEXT, b"ok" + bad_, fin, key())), "WS-UTF8-1" if fin else "WS-UTF8-2"
            elif kind == "close1":
                b, req = enc(frame(CLOSE, b"\x03", True, key())), "WS-CLOSE-1"
            elif kind.startswith("closecode"):
                # a kind per class of invalid codes (each class drawn under the ci profile too), then a code of it
                c = draw(st.sampled_from(INVALID_CLOSE_CODES[int(kind[9:])]))
                note(CLOSE_CODE_CODEC, _close_class(c.to_bytes(2, "big")))
                b, req = enc(frame(CLOSE, c.to_bytes(2, "big") + b"r", True, key())), "WS-CLOSE-2"
            elif kind == "closeutf8":
                b, req = enc(frame(CLOSE, b"\x03\xe8\xce", True, key())), "WS-CLOSE-3"
            else:
                f = enc(frame(BINARY, b"truncated", True, key()))
                b, req = f[:draw(st.integers(1, len(f) - 1))], "WS-STR-3"
            # the frames before the bad one, as the receiver delivers them
            frames = O.decode(wide, prefix).frames
            return codec, prefix + b, frames, Error(req, len(prefix))
        return bad()

    def serve_scripts(self):
        from ...properties import splits_of

        @st.composite
        def scripts(draw):
            if draw(st.booleans()):
                codec, _f, data = draw(self.valid_streams())
            else:
                codec, data = draw(self.arbitrary_streams())
            codec = replace(codec, role="server")
            return codec, "", data, draw(splits_of(data)), draw(st.booleans())
        return scripts()

    def text_messages(self):
        """(server codec, frames, bytes, expected DecodeResult) for a text message of mostly-valid
        UTF-8 in random fragments, expected from Python's decoder (frames.python_fail_fast)."""
        @st.composite
        def msgs(draw):
            codec = _codec("server")
            pieces = draw(st.lists(st.one_of(st.text(max_size=6).map(str.encode),
                                              st.sampled_from([b"\xed\xa0", b"\xf4\x90", b"\xe0\x80", b"\xc0", b"\xff",
                                                               b"\xf0\x9f", b"\xe2\x82", b"\xed\x9f\xbf"])),
                                    max_size=6))
            body = b"".join(pieces)
            cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=3)))
            parts = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
            frames = [frame(TEXT if i == 0 else CONT, p, i == len(parts) - 1, draw(st.binary(min_size=4, max_size=4)))
                      for i, p in enumerate(parts)]
            data = b"".join(O.encode(codec, f) for f in frames)
            bad = python_fail_fast(body)
            if bad is None and body.endswith(b"") and _incomplete(body):
                bad = len(body)  # the message ends inside a code point: the last fragment fails
            from ...oracle import DecodeResult
            exp = DecodeResult(list(frames))
            if bad is not None:
                at, off = 0, 0
                for i, p in enumerate(parts):
                    if bad < at + len(p) or (i == len(parts) - 1):
                        exp = DecodeResult(frames[:i], Error("WS-UTF8-1" if i == len(parts) - 1 else "WS-UTF8-2", off))
                        break
                    at += len(p)
                    off += len(O.encode(codec, frames[i]))
            return codec, data, exp
        return msgs()


def _incomplete(body: bytes) -> bool:
    try:
        body.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True
