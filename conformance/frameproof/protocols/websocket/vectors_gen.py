"""The websocket vectors: conformance/vectors/websocket/*.json are generated from these
declarations by tools/gen_vectors.py (which refuses a vector the oracle disagrees with). The
worked bytes are RFC 6455 §5.7's own examples (spec/websocket.md §15)."""
# flake8: noqa: E501
from frameproof import oracle
from frameproof.oracle import Error
from frameproof.protocols.websocket.frames import BINARY, CLOSE, CONT, PING, PONG, TEXT, frame, key_for
from frameproof.vectorgen import Codec, add_decode, add_encode

W = "websocket"
SRV = Codec(W, 0, "server", 0)
CLI = Codec(W, 0, "client", 0)
K = bytes.fromhex("37fa213d")  # RFC 6455 §5.7's masking key


def enc(f, codec=Codec(W, 2 ** 63 - 1, "server", 2 ** 63 - 1)):
    r = oracle.encode(codec, f)
    assert not isinstance(r, Error), r
    return r


def raw(b0, p=b"", key=b"\x11\x22\x33\x44"):
    """A masked frame's bytes with any first byte (frames an encoder refuses)."""
    from frameproof.protocols.websocket.frames import xor
    n = len(p)
    ln = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return bytes([b0]) + ln + key + xor(p, key)


def m(op, p=b"", fin=True, i=1):
    return frame(op, p, fin, key_for(i))


def u(op, p=b"", fin=True):
    return frame(op, p, fin)


# ---- RFC 6455 §5.7 examples
add_decode(W, "y_rfc_unmasked_text", "RFC 6455 §5.7: a single-frame unmasked text message \"Hello\" (a client receives it)",
           ["WS-HDR-1", "WS-MASK-2"], bytes.fromhex("810548656c6c6f"), [u(TEXT, b"Hello")], codec=CLI)
add_decode(W, "y_rfc_masked_text", "RFC 6455 §5.7: a single-frame masked text message \"Hello\", key 37fa213d",
           ["WS-HDR-1", "WS-MASK-3", "WS-MASK-1"], bytes.fromhex("818537fa213d7f9f4d5158"), [frame(TEXT, b"Hello", True, K)])
add_decode(W, "y_rfc_fragmented_text", "RFC 6455 §5.7: a fragmented unmasked text message \"Hel\" + \"lo\"",
           ["WS-FRAG-1"], bytes.fromhex("010348656c80026c6f"), [u(TEXT, b"Hel", False), u(CONT, b"lo")], codec=CLI, splits=[5])
add_decode(W, "y_rfc_unmasked_ping", "RFC 6455 §5.7: unmasked ping \"Hello\"", ["WS-HDR-1", "WS-CTL-1"],
           bytes.fromhex("890548656c6c6f"), [u(PING, b"Hello")], codec=CLI)
add_decode(W, "y_rfc_masked_pong", "RFC 6455 §5.7: masked pong \"Hello\" (in answer to the ping)", ["WS-HDR-1", "WS-MASK-3"],
           bytes.fromhex("8a8537fa213d7f9f4d5158"), [frame(PONG, b"Hello", True, K)])
add_decode(W, "y_rfc_256_binary", "RFC 6455 §5.7: 256 bytes of binary in one unmasked frame (16-bit length)",
           ["WS-LEN-1"], bytes.fromhex("827e0100") + b"\x5a" * 256, [u(BINARY, b"\x5a" * 256)], codec=CLI)
add_decode(W, "y_rfc_64k_binary", "RFC 6455 §5.7: 64 KiB of binary in one unmasked frame (64-bit length)",
           ["WS-LEN-1"], bytes.fromhex("827f0000000000010000") + b"\xa5" * 65536, [u(BINARY, b"\xa5" * 65536)], codec=CLI)

# ---- lengths at every boundary, masked (server) and unmasked (client)
for n in (0, 1, 125, 126, 127, 65535, 65536):
    add_decode(W, f"y_length_{n}_masked", f"A masked binary frame of {n} bytes: the minimal length form", ["WS-LEN-1", "WS-LEN-2", "WS-MASK-3"],
               enc(m(BINARY, bytes(range(256)) * (n // 256) + bytes(range(n % 256)), i=n)), [m(BINARY, bytes(range(256)) * (n // 256) + bytes(range(n % 256)), i=n)])
    add_decode(W, f"y_length_{n}_unmasked", f"An unmasked binary frame of {n} bytes (a client receives it)", ["WS-LEN-1", "WS-LEN-2"],
               enc(u(BINARY, b"\x07" * n)), [u(BINARY, b"\x07" * n)], codec=CLI)
add_decode(W, "y_mask_key_restarts_each_frame", "Two masked frames with the same key: each payload is unmasked from key octet 0",
           ["WS-MASK-3"], enc(frame(BINARY, b"abcde", True, K)) + enc(frame(BINARY, b"fghij", True, K)),
           [frame(BINARY, b"abcde", True, K), frame(BINARY, b"fghij", True, K)], splits=[3, 11])

# ---- header
for rsv in (1, 2, 4, 7):
    add_decode(W, f"n_rsv_{rsv}", f"RSV bits {rsv:03b} without an extension", ["WS-HDR-2"],
               bytes([0x82 | rsv << 4, 0x80]) + b"\0\0\0\0", [], ("WS-HDR-2", 0))
for op in (3, 7, 0xB, 0xF):
    add_decode(W, f"n_opcode_{op:x}", f"Reserved opcode 0x{op:X}", ["WS-HDR-3"], enc(m(TEXT, b"ok")) + bytes([0x80 | op, 0x80]) + b"\0\0\0\0",
               [m(TEXT, b"ok")], ("WS-HDR-3", 8))
add_decode(W, "n_rsv_before_opcode", "RSV set and a reserved opcode: the RSV bits come first (§14)", ["WS-HDR-2", "WS-HDR-3"],
           bytes([0xC3, 0x80]) + b"\0\0\0\0", [], ("WS-HDR-2", 0))
# ---- masking by role
add_decode(W, "n_server_gets_unmasked", "A server receives an unmasked frame", ["WS-MASK-1"], enc(m(TEXT, b"a")) + enc(u(TEXT, b"b")),
           [m(TEXT, b"a")], ("WS-MASK-1", 7))
add_decode(W, "n_client_gets_masked", "A client receives a masked frame", ["WS-MASK-2"], enc(u(TEXT, b"a")) + enc(m(TEXT, b"b")),
           [u(TEXT, b"a")], ("WS-MASK-2", 3), codec=CLI)
# ---- length forms
add_decode(W, "n_16bit_nonminimal", "The 16-bit form carrying 125", ["WS-LEN-3"], bytes([0x82, 0xFE, 0, 125]) + b"\0\0\0\0" + b"x" * 125, [], ("WS-LEN-3", 0))
add_decode(W, "n_64bit_nonminimal", "The 64-bit form carrying 65535", ["WS-LEN-3"], bytes([0x82, 0xFF]) + (65535).to_bytes(8, "big") + b"\0\0\0\0", [], ("WS-LEN-3", 0))
add_decode(W, "n_64bit_msb", "A 64-bit length with its most significant bit set", ["WS-LEN-4"], bytes([0x82, 0xFF]) + (2 ** 63 + 5).to_bytes(8, "big") + b"\0\0\0\0", [], ("WS-LEN-4", 0))
add_decode(W, "n_64bit_max_over_limit", "The largest 64-bit length (2^63-1): over the limit, judged from the header", ["WS-LIM-1", "WS-LEN-1"],
           bytes([0x82, 0xFF]) + (2 ** 63 - 1).to_bytes(8, "big") + b"\0\0\0\0", [], ("WS-LIM-1", 0))
# ---- control frames
add_decode(W, "n_fragmented_ping", "A ping with FIN clear", ["WS-CTL-1"], raw(PING, b"p"), [], ("WS-CTL-1", 0))
add_decode(W, "n_ping_126", "A ping of 126 bytes", ["WS-CTL-2"], raw(0x80 | PING, b"p" * 126), [], ("WS-CTL-2", 0))
add_decode(W, "y_ping_125", "A ping of 125 bytes (the largest control payload)", ["WS-CTL-2"], enc(m(PING, b"p" * 125)), [m(PING, b"p" * 125)])
add_decode(W, "y_control_between_fragments", "Ping, pong between fragments of a text message", ["WS-CTL-3", "WS-FRAG-1"],
           enc(m(TEXT, b"ab", False, 1)) + enc(m(PING, b"x", True, 2)) + enc(m(PONG, b"", True, 3)) + enc(m(CONT, b"cd", True, 4)),
           [m(TEXT, b"ab", False, 1), m(PING, b"x", True, 2), m(PONG, b"", True, 3), m(CONT, b"cd", True, 4)], splits=[9, 20])
add_decode(W, "y_close_between_fragments", "A close between fragments ends the stream (the message never completes)", ["WS-CTL-3", "WS-CLOSE-4"],
           enc(m(BINARY, b"ab", False, 1)) + enc(m(CLOSE, b"\x03\xe8", True, 2)) + enc(m(CONT, b"cd", True, 3)),
           [m(BINARY, b"ab", False, 1), m(CLOSE, b"\x03\xe8", True, 2)], encode=False)
# ---- fragmentation
add_decode(W, "y_empty_fragments", "A binary message of empty fragments", ["WS-FRAG-1"],
           enc(m(BINARY, b"", False)) + enc(m(CONT, b"", False)) + enc(m(CONT, b"", True)), [m(BINARY, b"", False), m(CONT, b"", False), m(CONT, b"", True)])
add_decode(W, "n_orphan_continuation", "A continuation with no message in progress", ["WS-FRAG-2"], enc(m(CONT, b"x")), [], ("WS-FRAG-2", 0))
add_decode(W, "n_continuation_after_end", "A continuation after the final fragment", ["WS-FRAG-2"],
           enc(m(TEXT, b"a", False)) + enc(m(CONT, b"b")) + enc(m(CONT, b"c")), [m(TEXT, b"a", False), m(CONT, b"b")], ("WS-FRAG-2", 14))
add_decode(W, "n_text_inside_message", "A text frame while a binary message is in progress", ["WS-FRAG-3"],
           enc(m(BINARY, b"a", False)) + enc(m(TEXT, b"b")), [m(BINARY, b"a", False)], ("WS-FRAG-3", 7))
# ---- UTF-8
kosme = "κόσμε".encode()
add_decode(W, "y_utf8_split_code_point", "A text message whose 3-byte code point is split across three fragments", ["WS-UTF8-1"],
           enc(m(TEXT, b"\xe2", False, 1)) + enc(m(CONT, b"\x82", False, 2)) + enc(m(CONT, b"\xac", True, 3)),
           [m(TEXT, b"\xe2", False, 1), m(CONT, b"\x82", False, 2), m(CONT, b"\xac", True, 3)])
add_decode(W, "y_utf8_kosme", "Valid UTF-8: κόσμε and U+10FFFF", ["WS-UTF8-1"], enc(m(TEXT, kosme + b"\xf4\x8f\xbf\xbf")), [m(TEXT, kosme + b"\xf4\x8f\xbf\xbf")])
for name, bad in [("surrogate", b"\xed\xa0\x80"), ("overlong", b"\xc0\xaf"), ("above_10ffff", b"\xf4\x90\x80\x80"), ("ff", b"\xff")]:
    add_decode(W, f"n_utf8_{name}", f"Text frame with {bad.hex()} after κόσμε", ["WS-UTF8-1"], enc(m(TEXT, kosme + bad)), [], ("WS-UTF8-1", 0))
add_decode(W, "n_utf8_fragmented_last", "Fragmented text, the invalid bytes in the final fragment (galay-http never checks fragmented text)", ["WS-UTF8-1"],
           enc(m(TEXT, b"ok", False, 1)) + enc(m(CONT, b"\xed\xa0\x80", True, 2)), [m(TEXT, b"ok", False, 1)], ("WS-UTF8-1", 8))
add_decode(W, "n_utf8_fail_fast_first_fragment", "Invalid in the first fragment: fails there, before the message ends", ["WS-UTF8-2"],
           enc(m(TEXT, b"\xce\xba\xed\xa0", False, 1)) + enc(m(CONT, b"\x80 more", True, 2)), [], ("WS-UTF8-2", 0))
add_decode(W, "n_utf8_fail_fast_partial_frame", "The stream ends inside a text frame whose received part is already invalid: UTF-8, not truncation",
           ["WS-UTF8-1", "WS-STR-3"], enc(m(TEXT, kosme + b"\xed\xa0\x80" + b"x" * 20))[:6 + len(kosme) + 2], [], ("WS-UTF8-1", 0))
add_decode(W, "n_utf8_fail_fast_partial_fragment", "A non-final text fragment cut after its invalid byte", ["WS-UTF8-2"],
           enc(m(TEXT, b"\xf4\x90" + b"x" * 30, False))[:8], [], ("WS-UTF8-2", 0))
add_decode(W, "n_utf8_message_ends_mid_code_point", "The final fragment ends inside a code point", ["WS-UTF8-1"],
           enc(m(TEXT, b"a\xe2\x82", False, 1)) + enc(m(CONT, b"", True, 2)), [m(TEXT, b"a\xe2\x82", False, 1)], ("WS-UTF8-1", 9))
add_decode(W, "y_binary_not_utf8", "A binary message is never checked as UTF-8", ["WS-UTF8-1"], enc(m(BINARY, b"\xff\xfe"))
           , [m(BINARY, b"\xff\xfe")])
# ---- close frames
add_decode(W, "y_close_empty", "An empty close frame", ["WS-CLOSE-1"], enc(m(CLOSE)), [m(CLOSE)])
add_decode(W, "y_close_code_reason", "Close 1000 with a UTF-8 reason", ["WS-CLOSE-2", "WS-CLOSE-3"], enc(m(CLOSE, b"\x03\xe8" + kosme)), [m(CLOSE, b"\x03\xe8" + kosme)])
add_decode(W, "n_close_one_byte", "A close payload of 1 byte", ["WS-CLOSE-1"], enc(m(CLOSE, b"\x03")), [], ("WS-CLOSE-1", 0))
for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000):
    add_decode(W, f"n_close_code_{code}", f"Close code {code} may not be sent", ["WS-CLOSE-2"], enc(m(CLOSE, code.to_bytes(2, "big"))), [], ("WS-CLOSE-2", 0))
for code in (1000, 1003, 1007, 1014, 3000, 4999):
    add_decode(W, f"y_close_code_{code}", f"Close code {code} is valid", ["WS-CLOSE-2"], enc(m(CLOSE, code.to_bytes(2, "big"))), [m(CLOSE, code.to_bytes(2, "big"))])
add_decode(W, "n_close_reason_utf8", "A close reason that is not UTF-8", ["WS-CLOSE-3"], enc(m(CLOSE, b"\x03\xe8\xce")), [], ("WS-CLOSE-3", 0))
add_decode(W, "y_nothing_read_after_close", "Bytes after a close frame are not read (even garbage)", ["WS-CLOSE-4"],
           enc(m(CLOSE, b"\x03\xe8")) + b"\xff\xff garbage", [m(CLOSE, b"\x03\xe8")], encode=False)
# ---- limits
L = Codec(W, 200, "server", 500)
add_decode(W, "y_frame_at_limit", "A frame of exactly max_payload (200)", ["WS-LIM-1"], enc(m(BINARY, b"x" * 200)), [m(BINARY, b"x" * 200)], codec=L)
add_decode(W, "n_frame_over_limit", "A frame of max_payload+1, judged from the header", ["WS-LIM-1"], enc(m(BINARY, b"x" * 201))[:8], [], ("WS-LIM-1", 0), codec=L)
add_decode(W, "y_message_at_limit", "A message of exactly max_message (500) in three fragments", ["WS-LIM-2"],
           enc(m(BINARY, b"x" * 200, False)) + enc(m(CONT, b"y" * 200, False)) + enc(m(CONT, b"z" * 100)),
           [m(BINARY, b"x" * 200, False), m(CONT, b"y" * 200, False), m(CONT, b"z" * 100)], codec=L)
add_decode(W, "n_message_over_limit", "The fragment that takes the message to max_message+1", ["WS-LIM-2"],
           enc(m(BINARY, b"x" * 200, False)) + enc(m(CONT, b"y" * 200, False)) + enc(m(CONT, b"z" * 101)),
           [m(BINARY, b"x" * 200, False), m(CONT, b"y" * 200, False)], ("WS-LIM-2", 416), codec=L)
add_decode(W, "y_control_not_counted", "Pings between fragments do not count toward max_message", ["WS-LIM-2", "WS-CTL-3"],
           enc(m(BINARY, b"x" * 200, False)) + enc(m(PING, b"p" * 125)) + enc(m(CONT, b"y" * 200, False)) + enc(m(PING, b"q" * 125)) + enc(m(CONT, b"z" * 100)),
           [m(BINARY, b"x" * 200, False), m(PING, b"p" * 125), m(CONT, b"y" * 200, False), m(PING, b"q" * 125), m(CONT, b"z" * 100)], codec=L)
add_decode(W, "n_lim_after_len", "A non-minimal length over the limit: the length form comes first (§14)", ["WS-LEN-3", "WS-LIM-1"],
           bytes([0x82, 0xFF]) + (100).to_bytes(8, "big") + b"\0\0\0\0", [], ("WS-LEN-3", 0), codec=Codec(W, 50, "server", 0))
# ---- streams
add_decode(W, "y_many_frames_one_read", "Text, binary, ping, pong and a close in one read", ["WS-STR-2"],
           enc(m(TEXT, b"t", True, 1)) + enc(m(BINARY, b"b", True, 2)) + enc(m(PING, b"", True, 3)) + enc(m(PONG, b"p", True, 4)) + enc(m(CLOSE, b"", True, 5)),
           [m(TEXT, b"t", True, 1), m(BINARY, b"b", True, 2), m(PING, b"", True, 3), m(PONG, b"p", True, 4), m(CLOSE, b"", True, 5)], splits=[1, 2, 3, 4, 5, 6, 7, 8])
add_decode(W, "y_header_split_everywhere", "A 64-bit-length frame split inside its header", ["WS-STR-1"],
           enc(m(BINARY, b"q" * 70000)), [m(BINARY, b"q" * 70000)], splits=[1, 2, 5, 9, 11, 13, 14])
add_decode(W, "n_truncated_header", "The stream ends inside the extended length", ["WS-STR-3"], enc(m(TEXT, b"a")) + bytes([0x82, 0xFE, 0x01]),
           [m(TEXT, b"a")], ("WS-STR-3", 7))
add_decode(W, "n_truncated_bad_header", "A stream that ends inside a header is truncated whatever its bytes (§14)", ["WS-STR-3"],
           bytes([0xF2, 0xFE, 0x00]), [], ("WS-STR-3", 0))
add_decode(W, "n_truncated_payload", "The stream ends inside a binary payload", ["WS-STR-3"], enc(m(BINARY, b"abcdef"))[:9], [], ("WS-STR-3", 0))
add_decode(W, "y_ends_between_fragments", "The stream ends between fragments: not a decoding error", ["WS-STR-3", "WS-FRAG-1"],
           enc(m(TEXT, b"half", False)), [m(TEXT, b"half", False)])
add_decode(W, "n_stop_after_error", "Frames after an error are not delivered", ["WS-STR-4"],
           enc(m(TEXT, b"a")) + bytes([0x83, 0x80]) + b"\0\0\0\0" + enc(m(TEXT, b"never")), [m(TEXT, b"a")], ("WS-HDR-3", 7))

# ---- encoding refusals
add_encode(W, "n_encode_rsv", "Encoding a frame with RSV1 set", ["WS-HDR-2"], frame(TEXT, b"x", True, None, rsv=4), "WS-HDR-2")
add_encode(W, "n_encode_opcode", "Encoding reserved opcode 0x3", ["WS-HDR-3"], u(3, b"x"), "WS-HDR-3")
add_encode(W, "n_encode_fragmented_control", "Encoding a ping with FIN clear", ["WS-CTL-1"], u(PING, b"x", False), "WS-CTL-1")
add_encode(W, "n_encode_big_control", "Encoding a pong of 126 bytes", ["WS-CTL-2"], u(PONG, b"x" * 126), "WS-CTL-2")
add_encode(W, "n_encode_short_key", "Encoding a masked frame with a 3-byte key", ["WS-MASK-4"], frame(TEXT, b"x", True, b"abc"), "WS-MASK-4")
add_encode(W, "n_encode_over_limit", "Encoding 201 bytes with max_payload 200", ["WS-LIM-3"], u(BINARY, b"x" * 201), "WS-LIM-3", codec=L)
