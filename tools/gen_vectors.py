#!/usr/bin/env python3
"""Writes conformance/vectors/<protocol>/*.json from the declarations below.

Every vector states its expectation by hand (frames built here, the error class
and offset the spec's "Error classification" gives); the generator refuses to
write a vector on which the Kaitai-based oracle disagrees. Re-run after editing:

    .venv/bin/python tools/gen_vectors.py [--check]

--check writes nothing and fails if a file on disk differs from what would be written.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "conformance"))

from frameproof import oracle  # noqa: E402
from frameproof.oracle import Codec, Error, Frame  # noqa: E402
from frameproof.vectors import compact_bytes  # noqa: E402

OUT = ROOT / "conformance" / "vectors"
VECTORS = {"standard": [], "length-field": []}


def fj(f: Frame, std=True) -> dict:
    d = {"payload": compact_bytes(f.payload)}
    if std:
        d = {"flag": f.flag, "sequence": f.sequence, **d}
    return d


def std_bytes(flag, seq, payload: bytes) -> bytes:
    r = oracle.encode(Codec("standard", max_payload=2 ** 31 - 1), Frame(flag, seq, payload))
    assert not isinstance(r, Error)
    return r


def add_decode(protocol, vid, desc, reqs, data: bytes, frames, error=None, codec=None, splits=None,
               encode=None, outcomes=None):
    codec = codec or Codec(protocol)
    std = protocol == "standard"
    got = oracle.decode(codec, data)
    if outcomes is None:
        exp_err = Error(*error) if error else None
        if got.frames != list(frames) or got.error != exp_err:
            raise SystemExit(f"{vid}: oracle disagrees: frames {[f.short() for f in got.frames]} "
                             f"error {got.error} vs expected {[f.short() for f in frames]} {exp_err}")
    v = {"id": vid, "description": desc, "requirements": reqs, "kind": "decode", "codec": codec.to_json(),
         "bytes": compact_bytes(data)}
    if splits:
        v["splits"] = splits
    if outcomes is not None:
        v["outcomes"] = [{"frames": [fj(f, std) for f in fr], **({"error": {"requirement": e[0], "offset": e[1]}} if e else {})}
                         for fr, e in outcomes]
        assert any(got.frames == list(fr) and got.error == (Error(*e) if e else None) for fr, e in outcomes), vid
    else:
        v["frames"] = [fj(f, std) for f in frames]
        if error:
            v["error"] = {"requirement": error[0], "offset": error[1]}
    if encode is None:
        encode = vid.startswith("y_") and not error
    if encode:
        enc = b"".join(oracle.encode(codec, f) for f in frames)
        assert enc == data, f"{vid}: not canonical, set encode=False"
        v["encode"] = True
    VECTORS[protocol].append(v)


def add_encode(protocol, vid, desc, reqs, frame: Frame, error, codec=None):
    codec = codec or Codec(protocol)
    got = oracle.encode(codec, frame)
    assert got == Error(error, 0), f"{vid}: oracle gives {got}"
    VECTORS[protocol].append({"id": vid, "description": desc, "requirements": reqs, "kind": "encode",
                              "codec": codec.to_json(), "frame": fj(frame, protocol == "standard"),
                              "expect": {"error": {"requirement": error, "offset": 0}}})


def add_match(protocol, vid, desc, reqs, events, expected_kinds=None, codec=None, timeout_ms=0, check=None):
    """``expected_kinds``: the hand-written list of (kind, request) the oracle must produce."""
    codec = codec or Codec(protocol)
    res = oracle.match(codec, events, timeout_ms)
    got = [(c.kind, c.request) for c in res.completions]
    if expected_kinds is not None and got != expected_kinds:
        raise SystemExit(f"{vid}: oracle completions {got} != expected {expected_kinds}")
    if check:
        check(res)
    std = protocol == "standard"
    evj = []
    for k, a in events:
        evj.append({k: a if k == "advance_ms" else compact_bytes(a)})
    v = {"id": vid, "description": desc, "requirements": reqs, "kind": "match", "codec": codec.to_json(),
         "timeout_ms": timeout_ms, "events": evj, "sent": [compact_bytes(s) for s in res.sent],
         "completions": [{"kind": c.kind, **({"request": c.request} if c.request is not None else {}),
                          **({"frame": fj(c.frame, std)} if c.frame else {})} for c in res.completions]}
    if res.error:
        v["error"] = {"requirement": res.error.requirement, "offset": res.error.offset}
    VECTORS[protocol].append(v)


# ====================================================================== standard
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

# ====================================================================== length-field
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
        add_decode(L, f"n_truncated_header_{pname(o, s)}", f"Stream ends inside the header/length field, offset {o}, size {s}",
                   ["LF-STR-3"], lf(b"abc" * 50, o, s)[:max(cut, 1)], [], ("LF-STR-3", 0), codec=c)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    bad = 0
    for proto, vecs in VECTORS.items():
        ids = [v["id"] for v in vecs]
        assert len(ids) == len(set(ids)), f"duplicate ids in {proto}"
        d = OUT / proto
        texts = {v["id"]: json.dumps(v, indent=1, ensure_ascii=False) + "\n" for v in vecs}
        if args.check:
            on_disk = {p.stem: p.read_text(encoding="utf-8") for p in d.glob("*.json")}
            for k in sorted(set(texts) | set(on_disk)):
                if texts.get(k) != on_disk.get(k):
                    print(f"differs: {proto}/{k}.json")
                    bad += 1
            continue
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        for k, t in texts.items():
            (d / f"{k}.json").write_text(t, encoding="utf-8")
        print(f"{proto}: {len(vecs)} vectors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
