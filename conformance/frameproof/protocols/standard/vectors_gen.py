"""The standard vectors: conformance/vectors/standard/*.json are generated from these declarations
by tools/gen_vectors.py (which refuses a vector the oracle disagrees with)."""
# flake8: noqa: E501
import sys

from frameproof import oracle
from frameproof.oracle import Error, Frame
from frameproof.vectorgen import Codec, F, add_decode, add_encode, add_match



def std_bytes(flag, seq, payload: bytes) -> bytes:
    r = oracle.encode(Codec("standard", 2 ** 31 - 1), Frame(flag, seq, payload))
    assert not isinstance(r, Error)
    return r


S = "standard"
F = Frame
open_ = b"Open"
add_decode(S, "y_request_open", "DefaultMessageTests.BinaryEncode request: seq 1, \"Open\" (upstream unit test vector)",
           ["STD-HDR-1"], bytes.fromhex("010104004f70656e"), [F(0x01, 1, open_)])
utf8 = "执行成功".encode()
add_decode(S, "y_reply_utf8", "DefaultMessageTests.BinaryEncode reply: 0x81, seq 1, 12 bytes of UTF-8",
           ["STD-HDR-2", "STD-HDR-1"], bytes.fromhex("81010c00") + utf8, [F(0x81, 1, utf8)])
add_decode(S, "y_reply_ok", "DefaultMessage doc example reply 81-01-02-00-\"OK\"", ["STD-HDR-2"],
           bytes.fromhex("810102004f4b"), [F(0x81, 1, b"OK")])
add_decode(S, "y_one_way", "One-way request: flag 0x41", ["STD-HDR-3"], bytes.fromhex("41010300616263"), [F(0x41, 1, b"abc")])
add_decode(S, "y_error_reply", "Error reply: flag 0xC1", ["STD-HDR-3"], bytes.fromhex("c1010300616263"), [F(0xC1, 1, b"abc")])
add_decode(S, "y_kind_string_0", "Data kind 0 (string) request: flag 0x00", ["STD-HDR-4"], bytes.fromhex("00010300616263"), [F(0x00, 1, b"abc")])
add_decode(S, "y_kind_63", "Largest data kind 63 on a request (0x3F)", ["STD-HDR-4"], std_bytes(0x3F, 7, b"k"), [F(0x3F, 7, b"k")])
add_decode(S, "y_reply_kind_63", "Reply of kind 63 (0xBF)", ["STD-HDR-4", "STD-HDR-2"], std_bytes(0xBF, 7, b"k"), [F(0xBF, 7, b"k")])
add_decode(S, "y_error_kind_0", "Error reply of kind 0 (0xC0)", ["STD-HDR-4", "STD-HDR-3"], std_bytes(0xC0, 0, b""), [F(0xC0, 0, b"")])
add_decode(S, "y_all_flag_values", "One frame for each of the 256 flag byte values, carried verbatim",
           ["STD-HDR-4", "STD-HDR-2", "STD-HDR-3"],
           b"".join(std_bytes(i, i, bytes([i])) for i in range(256)), [F(i, i, bytes([i])) for i in range(256)])
add_decode(S, "y_empty_payload", "Empty request: 4 header bytes alone", ["STD-HDR-5"], bytes.fromhex("01010000"), [F(1, 1, b"")])
add_decode(S, "y_payload_all_byte_values", "Payload 00..FF delivered verbatim", ["STD-HDR-5"],
           std_bytes(1, 2, bytes(range(256))), [F(1, 2, bytes(range(256)))])
add_decode(S, "y_seq_0_and_255", "Sequence bytes 0 and 255", ["STD-HDR-1", "STD-SEQ-2"],
           std_bytes(0x81, 0, b"a") + std_bytes(0x81, 255, b"b"), [F(0x81, 0, b"a"), F(0x81, 255, b"b")])
p65534 = bytes([0x5A]) * 65534
add_decode(S, "y_max_short_payload_65534", "Largest short-form payload: length FE FF", ["STD-LEN-1"],
           std_bytes(1, 1, p65534), [F(1, 1, p65534)])
p65535 = bytes([0x5A]) * 65535
add_decode(S, "y_extended_65535", "Payload of 65535 bytes uses the 8-byte header: FF FF FF FF 00 00", ["STD-LEN-2"],
           std_bytes(1, 1, p65535), [F(1, 1, p65535)])
p70000 = bytes([0x33]) * 70000
add_decode(S, "y_extended_70000", "70000-byte payload: FF FF 70 11 01 00", ["STD-LEN-2"],
           bytes.fromhex("0101ffff70110100") + p70000, [F(1, 1, p70000)])
add_decode(S, "y_payload_at_limit", "Payload exactly at a 16-byte limit is accepted", ["STD-LIM-1"],
           std_bytes(1, 1, b"x" * 16), [F(1, 1, b"x" * 16)], codec=Codec(S, 16))
add_decode(S, "y_extended_at_limit", "Extended frame exactly at a 65535-byte limit", ["STD-LIM-1", "STD-LEN-2"],
           std_bytes(1, 1, p65535), [F(1, 1, p65535)], codec=Codec(S, 65535))
sticky = bytes.fromhex("01101400") + b"sticky-first-message" + bytes.fromhex("01111500") + b"sticky-second-message"
add_decode(S, "y_sticky_two_frames", "HighThroughputCodecTests Test14 sticky packet: two frames in one 49-byte write",
           ["STD-STR-2"], sticky, [F(1, 0x10, b"sticky-first-message"), F(1, 0x11, b"sticky-second-message")])
many = [F(1, i & 0xFF, bytes([i & 0xFF]) * (i % 40)) for i in range(1, 301)]
add_decode(S, "y_many_frames_one_chunk", "300 frames of 0..39 bytes back to back", ["STD-STR-2", "STD-SEQ-2"],
           b"".join(std_bytes(f.flag, f.sequence, f.payload) for f in many), many)
split = bytes.fromhex("01202300") + b"split-frame-reassembly-test-payload"
add_decode(S, "y_split_frame_upstream", "HighThroughputCodecTests Test15: one frame written as 21 + 18 bytes",
           ["STD-STR-1"], split, [F(1, 0x20, b"split-frame-reassembly-test-payload")], splits=[21])
mixed = [F(1, 1, b"abc"), F(0x81, 2, p65535), F(1, 3, b""), F(0x41, 4, p70000), F(1, 5, b"z")]
mixed_b = b"".join(std_bytes(f.flag, f.sequence, f.payload) for f in mixed)
add_decode(S, "y_split_inside_extended_header", "Short and extended frames, split inside the 8-byte extended header",
           ["STD-STR-1", "STD-LEN-2"], mixed_b, mixed, splits=[7 + 2, 7 + 6, 7 + 8 + 65535 + 4 + 3])
add_decode(S, "y_empty_stream", "No bytes at all: no frames and no error", ["STD-STR-3"], b"", [])
add_decode(S, "y_trailing_frame_is_next_frame", "Bytes after a frame are parsed as the next frame, not skipped",
           ["STD-STR-5"], std_bytes(1, 1, b"ab") + std_bytes(1, 2, b""), [F(1, 1, b"ab"), F(1, 2, b"")])

good = std_bytes(1, 1, b"good")
add_decode(S, "n_truncated_header_1_byte", "Stream ends after 1 header byte", ["STD-STR-3"], b"\x01", [], ("STD-STR-3", 0))
add_decode(S, "n_truncated_header_3_bytes", "Stream ends after 3 header bytes", ["STD-STR-3"], b"\x01\x01\x04", [], ("STD-STR-3", 0))
add_decode(S, "n_truncated_payload", "Length 4, only 3 payload bytes", ["STD-STR-3"], bytes.fromhex("010104004f7065"), [], ("STD-STR-3", 0))
add_decode(S, "n_truncated_extended_header", "FF FF then only 2 of the 4 extended length bytes", ["STD-STR-3"],
           bytes.fromhex("0101ffffffff"), [], ("STD-STR-3", 0))
add_decode(S, "n_truncated_after_good_frame", "A complete frame, then a partial one: the first is delivered",
           ["STD-STR-3", "STD-STR-4"], good + bytes.fromhex("0102ff00"), [F(1, 1, b"good")], ("STD-STR-3", len(good)))
add_decode(S, "n_extended_noncanonical_0", "Extended header declaring 0 bytes", ["STD-LEN-3"],
           bytes.fromhex("0101ffff00000000"), [], ("STD-LEN-3", 0))
add_decode(S, "n_extended_noncanonical_65534", "Extended header declaring 65534 bytes (short form required)", ["STD-LEN-3"],
           bytes.fromhex("0101fffffeff0000") + bytes(65534), [], ("STD-LEN-3", 0))
add_decode(S, "n_extended_noncanonical_65531", "Extended length 65531: upstream's read check lets it through; the spec rejects it",
           ["STD-LEN-3"], bytes.fromhex("0101fffffbff0000") + bytes(65531), [], ("STD-LEN-3", 0))
add_decode(S, "n_extended_bit31", "Extended length 0x80000000 (negative as upstream's Int32)", ["STD-LEN-4"],
           bytes.fromhex("0101ffff00000080"), [], ("STD-LEN-4", 0))
add_decode(S, "n_extended_ffffffff", "Extended length FF FF FF FF", ["STD-LEN-4"], bytes.fromhex("0101ffffffffffff"), [], ("STD-LEN-4", 0))
add_decode(S, "n_over_limit_by_one", "17-byte payload, limit 16, payload present", ["STD-LIM-1"],
           std_bytes(1, 1, b"x" * 17), [], ("STD-LIM-1", 0), codec=Codec(S, 16))
add_decode(S, "n_over_limit_header_only", "Header declaring 17 bytes with limit 16 and no payload: rejected from the header alone",
           ["STD-LIM-1"], bytes.fromhex("01011100"), [], ("STD-LIM-1", 0), codec=Codec(S, 16))
add_decode(S, "n_over_default_limit", "Extended header declaring 10 MiB + 1 under the default limit, no payload",
           ["STD-LIM-1", "STD-LIM-3"], bytes.fromhex("0101ffff0100a000"), [], ("STD-LIM-1", 0))
add_decode(S, "n_header_promises_2gib", "Extended header declaring 2^31-1 bytes: rejected without allocating",
           ["STD-LIM-3", "STD-LIM-1"], bytes.fromhex("0101ffffffffff7f"), [], ("STD-LIM-1", 0))
bad_after = good + std_bytes(1, 2, b"ok") + bytes.fromhex("0103ffff00000000") + good
add_decode(S, "n_error_stops_stream", "Two good frames, a non-canonical header, another good frame: only the first two are delivered",
           ["STD-STR-4", "STD-LEN-3"], bad_after, [F(1, 1, b"good"), F(1, 2, b"ok")], ("STD-LEN-3", len(good) + 6))
http = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
add_decode(S, "n_garbage_http_request", "An HTTP request sent to a standard port: 'GE' then length 0x2054; limit 1024",
           ["STD-STR-5", "STD-LIM-1"], http, [], ("STD-LIM-1", 0), codec=Codec(S, 1024))
add_decode(S, "n_garbage_http_default_limit", "The same HTTP request under the default limit: a truncated 8276-byte frame",
           ["STD-STR-5", "STD-STR-3"], http, [], ("STD-STR-3", 0))

add_encode(S, "n_encode_over_limit", "Encoding a 17-byte payload with a 16-byte limit is refused", ["STD-LIM-2"],
           F(1, 1, b"x" * 17), "STD-LIM-2", codec=Codec(S, 16))
add_encode(S, "n_encode_over_default_limit", "Encoding 10 MiB + 1 under the default limit is refused", ["STD-LIM-2"],
           F(1, 1, bytes(10 * 1024 * 1024 + 1)), "STD-LIM-2")


def rep(seq, payload, flag=0x81):
    return std_bytes(flag, seq, payload)


add_match(S, "y_match_sequence_starts_at_1", "Three requests get sequence numbers 1, 2, 3", ["STD-SEQ-1"],
          [("send", b"a"), ("send", b"b"), ("send", b"c")], [],
          check=lambda r: [s[1] for s in r.sent] == [1, 2, 3] or sys.exit("seq"))
wrap = []
for i in range(300):
    wrap += [("send", bytes([i & 0xFF])), ("receive", rep((i + 1) & 0xFF, bytes([i & 0xFF])))]
add_match(S, "y_match_sequence_wraparound", "300 request/reply pairs: sequence 255 is followed by 0, then 1",
          ["STD-SEQ-1", "STD-SEQ-2", "STD-MATCH-1"], wrap, [("REPLY", i) for i in range(300)],
          check=lambda r: [s[1] for s in r.sent][253:258] == [254, 255, 0, 1, 2] or sys.exit("wrap"))
add_match(S, "y_match_out_of_order", "Replies 3, 1, 2 complete requests 2, 0, 1", ["STD-MATCH-1", "STD-SEQ-2"],
          [("send", b"one"), ("send", b"two"), ("send", b"three"),
           ("receive", rep(3, b"THREE") + rep(1, b"ONE") + rep(2, b"TWO"))],
          [("REPLY", 2), ("REPLY", 0), ("REPLY", 1)])
add_match(S, "y_match_reply_dribbled", "A reply arriving one byte at a time", ["STD-MATCH-1", "STD-STR-1"],
          [("send", b"x")] + [("receive", bytes([b])) for b in rep(1, b"hello")], [("REPLY", 0)])
add_match(S, "y_match_unmatched_reply", "A reply with no pending request is reported as unmatched", ["STD-MATCH-2"],
          [("receive", rep(9, b"stray")), ("send", b"a"), ("receive", rep(1, b"A"))], [("UNMATCHED", None), ("REPLY", 0)])
add_match(S, "y_match_timeout_default", "No reply: times out at 3000 ms, not at 2999; the late reply is unmatched",
          ["STD-MATCH-3"], [("send", b"a"), ("advance_ms", 2999), ("advance_ms", 1), ("receive", rep(1, b"late"))],
          [("TIMEOUT", 0), ("UNMATCHED", None)])
add_match(S, "y_match_timeout_custom", "Timeout of 100 ms: the first request expires, the second is answered",
          ["STD-MATCH-3"], [("send", b"a"), ("advance_ms", 60), ("send", b"b"), ("advance_ms", 40),
                            ("receive", rep(2, b"B"))], [("TIMEOUT", 0), ("REPLY", 1)], timeout_ms=100)
add_match(S, "y_match_one_way_not_pending", "A one-way message takes sequence 1 (flag 0x41) but a reply with seq 1 is unmatched",
          ["STD-MATCH-4", "STD-HDR-3"], [("send_one_way", b"fire"), ("send", b"req"), ("receive", rep(1, b"?") + rep(2, b"R"))],
          [("UNMATCHED", None), ("REPLY", 1)], check=lambda r: r.sent[0][:2] == b"\x41\x01" or sys.exit("ow"))
add_match(S, "y_match_peer_request_ignored", "A request frame (bit 7 clear) from the peer completes nothing",
          ["STD-MATCH-5"], [("send", b"a"), ("receive", std_bytes(0x01, 1, b"not a reply")), ("receive", rep(1, b"A"))],
          [("REPLY", 0)])
add_match(S, "y_match_error_reply", "An error reply (0xC1) completes its request with the error bit", ["STD-MATCH-6"],
          [("send", b"a"), ("receive", rep(1, b"boom", flag=0xC1))], [("REPLY", 0)])
full = [("send", bytes([i])) for i in range(256)]
add_match(S, "n_match_sequence_in_use_refused", "256 pending requests hold every sequence; the 257th send is refused "
          "and, once seq 1 is answered, the next send takes seq 1", ["STD-SEQ-3"],
          full + [("send", b"late"), ("receive", rep(1, b"A")), ("send", b"again")],
          [("REFUSED", 256), ("REPLY", 0)],
          check=lambda r: (r.sent[256] == b"" and r.sent[257][1] == 1) or sys.exit("refuse"))
add_match(S, "n_match_bad_stream_fails_pending", "A malformed reply stream fails every pending request and the connection",
          ["STD-STR-4", "STD-LEN-3"], [("send", b"a"), ("send", b"b"), ("receive", rep(2, b"B") + bytes.fromhex("8101ffff00000000")),
                                       ("send", b"c")], [("REPLY", 1), ("FAILED", 0), ("REFUSED", 2)])

