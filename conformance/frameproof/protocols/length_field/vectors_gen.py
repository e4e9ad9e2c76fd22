"""The length-field vectors: conformance/vectors/length-field/*.json are generated from these declarations
by tools/gen_vectors.py (which refuses a vector the oracle disagrees with)."""
# flake8: noqa: E501
import sys

from frameproof import oracle
from frameproof.oracle import Error, Frame
from frameproof.vectorgen import Codec, F, add_decode, add_encode, add_match

L = "length-field"
PROFILES = [(0, 2), (0, -2), (0, 4), (0, -4), (0, 1), (0, 0), (2, 2), (4, -4), (1, 1), (3, 0)]


def pname(o, s):
    return f"o{o}_s{s}".replace("-", "m")


def lf(payload, o=0, s=2):
    r = oracle.encode(Codec(L, 2 ** 31 - 1, o, s), Frame(0, 0, payload))
    assert not isinstance(r, Error)
    return r


LFR = {"0,2": "LF-FMT-2", }
for o, s in PROFILES:
    c = Codec(L, 0, o, s)
    reqs = ["LF-FMT-3", "LF-FMT-1"] if (o, s) != (0, 2) else ["LF-FMT-2", "LF-FMT-1"]
    add_decode(L, f"y_abc_{pname(o, s)}", f"Payload \"abc\" with offset {o}, size {s}", reqs, lf(b"abc", o, s),
               [F(0, 0, b"abc")], codec=c)
    add_decode(L, f"y_empty_{pname(o, s)}", f"Empty payload with offset {o}, size {s}", ["LF-FMT-5"] + reqs,
               lf(b"", o, s), [F(0, 0, b"")], codec=c)
    fr = [F(0, 0, bytes([i]) * (i * 7 % 300 if s != 1 else i % 200)) for i in range(40)]
    data = b"".join(lf(f.payload, o, s) for f in fr)
    add_decode(L, f"y_many_frames_{pname(o, s)}", f"40 frames in one chunk, offset {o}, size {s}", ["LF-STR-2"], data, fr, codec=c)
    add_decode(L, f"n_truncated_{pname(o, s)}", f"Stream ends inside the payload, offset {o}, size {s}", ["LF-STR-3"],
               lf(b"abc", o, s)[:-1], [], ("LF-STR-3", 0), codec=c)
    if o or abs(s) > 1 or s == 0:
        cut = o + (1 if s else 0)
        # a 1-byte length field is whole after one byte: that cut ends right before the payload (the
        # case LengthDelimitedCodec misses, tools/third-party/tokio-util); one byte less ends in the offset
        where = "after the length field, before any of the 150 payload bytes" if s == 1 else "inside the length field"
        add_decode(L, f"n_truncated_header_{pname(o, s)}", f"Stream ends {where}, offset {o}, size {s}",
                   ["LF-STR-3"], lf(b"abc" * 50, o, s)[:max(cut, 1)], [], ("LF-STR-3", 0), codec=c)
        if o > 1:
            add_decode(L, f"n_truncated_offset_{pname(o, s)}", f"Stream ends inside the {o} bytes before the length "
                       f"field, offset {o}, size {s}", ["LF-STR-3"], lf(b"abc", o, s)[:o - 1], [], ("LF-STR-3", 0), codec=c)
    add_decode(L, f"y_split_in_length_field_{pname(o, s)}", f"Frames split one byte at a time across the length field, offset {o}, size {s}",
               ["LF-STR-1"], lf(b"x" * 200 if s != 1 else b"x" * 200, o, s) + lf(b"yz", o, s), [F(0, 0, b"x" * 200), F(0, 0, b"yz")],
               codec=c, splits=list(range(1, o + 4)))

add_decode(L, "y_benchmark_frame", "The upstream benchmark frame: 1E 00 and 30 bytes", ["LF-FMT-2"],
           bytes.fromhex("1e00") + bytes(range(30)), [F(0, 0, bytes(range(30)))])
add_decode(L, "y_default_is_u16_little_endian", "Default profile, 258-byte payload: length 02 01", ["LF-FMT-2", "LF-FMT-1"],
           bytes.fromhex("0201") + bytes(258), [F(0, 0, bytes(258))])
add_decode(L, "y_max_u1", "Size 1, 255-byte payload", ["LF-FMT-3"], lf(b"m" * 255, 0, 1), [F(0, 0, b"m" * 255)], codec=Codec(L, 0, 0, 1))
add_decode(L, "y_max_u2le", "Size 2, 65535-byte payload", ["LF-FMT-2"], lf(b"m" * 65535), [F(0, 0, b"m" * 65535)])
add_decode(L, "y_max_u2be", "Size -2, 65535-byte payload", ["LF-FMT-3"], lf(b"m" * 65535, 0, -2), [F(0, 0, b"m" * 65535)], codec=Codec(L, 0, 0, -2))
add_decode(L, "y_u4le_70000", "Size 4, 70000-byte payload", ["LF-FMT-3"], lf(b"q" * 70000, 0, 4), [F(0, 0, b"q" * 70000)], codec=Codec(L, 0, 0, 4))
add_decode(L, "y_varint_300", "Size 0, 300-byte payload: varint AC 02", ["LF-FMT-3"], bytes.fromhex("ac02") + b"v" * 300,
           [F(0, 0, b"v" * 300)], codec=Codec(L, 0, 0, 0))
vb = [127, 128, 16383, 16384]
add_decode(L, "y_varint_boundaries", "Size 0 with payloads of 127, 128, 16383 and 16384 bytes (1, 2, 2 and 3 varint bytes)",
           ["LF-FMT-3", "LF-LEN-2"], b"".join(lf(b"b" * n, 0, 0) for n in vb), [F(0, 0, b"b" * n) for n in vb], codec=Codec(L, 0, 0, 0))
add_decode(L, "y_header_bytes_ignored", "Offset 2 with non-zero header bytes AB CD: accepted, only the payload is delivered",
           ["LF-FMT-4"], bytes.fromhex("abcd0300616263"), [F(0, 0, b"abc")], codec=Codec(L, 0, 2, 2), encode=False)
add_decode(L, "y_payload_at_limit", "16-byte payload with limit 16", ["LF-LIM-1"], lf(b"p" * 16), [F(0, 0, b"p" * 16)], codec=Codec(L, 16))
add_decode(L, "y_empty_stream", "No bytes: no frames, no error", ["LF-STR-3"], b"", [])
add_decode(L, "y_split_inside_varint", "A 3-byte varint split after each byte", ["LF-STR-1"], lf(b"w" * 20000, 0, 0),
           [F(0, 0, b"w" * 20000)], codec=Codec(L, 0, 0, 0), splits=[1, 2, 3])

add_decode(L, "n_size_3", "Size 3 is not a valid profile", ["LF-FMT-3"], bytes.fromhex("030000616263"), [], ("LF-FMT-3", 0), codec=Codec(L, 0, 0, 3))
add_decode(L, "n_size_minus_1", "Size -1 (documented upstream, never implemented) is refused", ["LF-FMT-3"],
           bytes.fromhex("03616263"), [], ("LF-FMT-3", 0), codec=Codec(L, 0, 0, -1))
add_decode(L, "n_varint_6_bytes", "A varint with 6 bytes", ["LF-LEN-2"], bytes.fromhex("808080808000"), [], ("LF-LEN-2", 0), codec=Codec(L, 0, 0, 0))
add_decode(L, "n_varint_above_2_31", "A 5-byte varint whose value is 2^31", ["LF-LEN-2"], bytes.fromhex("8080808008"), [],
           ("LF-LEN-2", 0), codec=Codec(L, 0, 0, 0))
add_decode(L, "n_u4le_bit31", "Size 4 length 0x80000000", ["LF-LEN-3"], bytes.fromhex("00000080"), [], ("LF-LEN-3", 0), codec=Codec(L, 0, 0, 4))
add_decode(L, "n_u4be_bit31", "Size -4 length 0xFFFFFFFF", ["LF-LEN-3"], bytes.fromhex("ffffffff"), [], ("LF-LEN-3", 0), codec=Codec(L, 0, 0, -4))
add_decode(L, "n_over_limit_by_one", "17-byte payload with limit 16", ["LF-LIM-1"], lf(b"p" * 17), [], ("LF-LIM-1", 0), codec=Codec(L, 16))
add_decode(L, "n_over_limit_header_only", "Length 17 with limit 16 and no payload: rejected from the length field",
           ["LF-LIM-1"], bytes.fromhex("1100"), [], ("LF-LIM-1", 0), codec=Codec(L, 16))
add_decode(L, "n_u4_promises_2gib", "Size 4 declaring 2^31-1 bytes under the default limit: rejected without allocating",
           ["LF-LIM-3", "LF-LIM-1"], bytes.fromhex("ffffff7f"), [], ("LF-LIM-1", 0), codec=Codec(L, 0, 0, 4))
add_decode(L, "n_varint_over_default_limit", "Size 0 declaring 10 MiB + 1", ["LF-LIM-1"], lf(b"", 0, 0)[:0] + bytes.fromhex("81808005"),
           [], ("LF-LIM-1", 0), codec=Codec(L, 0, 0, 0))
lgood = lf(b"good")
add_decode(L, "n_error_stops_stream", "A good frame, an over-limit one, a good one: only the first is delivered",
           ["LF-STR-4", "LF-LIM-1"], lgood + bytes.fromhex("ff00") + bytes(255) + lgood, [F(0, 0, b"good")],
           ("LF-LIM-1", len(lgood)), codec=Codec(L, 64))
add_decode(L, "n_truncated_after_good_frame", "A good frame then 1 byte of a length field", ["LF-STR-3"], lgood + b"\x05",
           [F(0, 0, b"good")], ("LF-STR-3", len(lgood)))
add_decode(L, "i_varint_non_minimal", "Size 0, varint 80 00 (non-minimal 0): may be accepted as an empty frame or rejected",
           ["LF-LEN-4"], bytes.fromhex("8000"), None, codec=Codec(L, 0, 0, 0),
           outcomes=[([F(0, 0, b"")], None), ([], ("LF-LEN-2", 0))])

add_encode(L, "n_encode_u1_256", "Size 1 cannot hold 256", ["LF-LEN-1"], F(0, 0, bytes(256)), "LF-LEN-1", codec=Codec(L, 0, 0, 1))
add_encode(L, "n_encode_u2_65536", "Size 2 cannot hold 65536 (upstream truncates to 0)", ["LF-LEN-1"], F(0, 0, bytes(65536)), "LF-LEN-1")
add_encode(L, "n_encode_u2be_65536", "Size -2 cannot hold 65536", ["LF-LEN-1"], F(0, 0, bytes(65536)), "LF-LEN-1", codec=Codec(L, 0, 0, -2))
add_encode(L, "n_encode_over_limit", "17 bytes with limit 16", ["LF-LIM-2"], F(0, 0, bytes(17)), "LF-LIM-2", codec=Codec(L, 16))
add_encode(L, "n_encode_over_default_limit_u4", "Size 4, 10 MiB + 1 under the default limit", ["LF-LIM-2"],
           F(0, 0, bytes(10 * 1024 * 1024 + 1)), "LF-LIM-2", codec=Codec(L, 0, 0, 4))
add_encode(L, "n_encode_size_3", "Size 3 is refused by the encoder too", ["LF-FMT-3"], F(0, 0, b"abc"), "LF-FMT-3", codec=Codec(L, 0, 0, 3))

add_match(L, "y_match_fifo", "Four pipelined requests; the replies complete them oldest first", ["LF-MATCH-1"],
          [("send", b"r0"), ("send", b"r1"), ("send", b"r2"), ("send", b"r3"),
           ("receive", lf(b"R0") + lf(b"R1")), ("receive", lf(b"R2") + lf(b"R3"))],
          [("REPLY", 0), ("REPLY", 1), ("REPLY", 2), ("REPLY", 3)])
add_match(L, "y_match_fifo_interleaved", "Sends and replies interleaved, reply bytes split inside the length field",
          ["LF-MATCH-1", "LF-STR-1"], [("send", b"a"), ("send", b"b"), ("receive", lf(b"A")[:1]), ("send", b"c"),
                                       ("receive", lf(b"A")[1:] + lf(b"B")), ("receive", lf(b"C"))],
          [("REPLY", 0), ("REPLY", 1), ("REPLY", 2)])
add_match(L, "y_match_unmatched", "A frame with nothing pending is unmatched", ["LF-MATCH-2"],
          [("receive", lf(b"stray")), ("send", b"a"), ("receive", lf(b"A"))], [("UNMATCHED", None), ("REPLY", 0)])
add_match(L, "n_match_timeout_fails_connection", "Request 0 times out at 3000 ms: request 1 fails, the connection is failed, "
          "later replies complete nothing and later sends are refused", ["LF-MATCH-3"],
          [("send", b"a"), ("advance_ms", 1000), ("send", b"b"), ("advance_ms", 2000), ("receive", lf(b"A") + lf(b"B")),
           ("send", b"c")], [("TIMEOUT", 0), ("FAILED", 1), ("REFUSED", 2)])
add_match(L, "y_match_profile_varint", "FIFO matching with a varint profile", ["LF-MATCH-1", "LF-FMT-3"],
          [("send", b"x" * 200), ("send", b"y"), ("receive", lf(b"X" * 200, 0, 0) + lf(b"Y", 0, 0))],
          [("REPLY", 0), ("REPLY", 1)], codec=Codec(L, 0, 0, 0))
add_match(L, "n_match_pending_bound", "257 pending requests: the 257th send is refused", ["LF-MATCH-4"],
          [("send", b"%d" % i) for i in range(257)], [("REFUSED", 256)])
add_match(L, "n_match_bad_stream_fails_pending", "An over-limit reply fails the pending requests", ["LF-STR-4", "LF-LIM-1"],
          [("send", b"a"), ("send", b"b"), ("receive", lf(b"A") + bytes.fromhex("ff00"))], [("REPLY", 0), ("FAILED", 1)],
          codec=Codec(L, 16))


