"""The rpc vectors: conformance/vectors/rpc/*.json are generated from these declarations by
tools/gen_vectors.py (which refuses a vector the oracle disagrees with). The worked bytes are the
ones captured from upstream (spec/rpc.md §12)."""
# flake8: noqa: E501
import sys

from frameproof import oracle
from frameproof.oracle import Error
from frameproof.protocols.rpc import frames as K
from frameproof.protocols.rpc.frames import RpcHeader
from frameproof.vectorgen import Codec, add_decode, add_encode, add_match

R = "rpc"
BIG = Codec(R, 2 ** 32 - 1)


def enc(f, codec=BIG):
    r = oracle.encode(codec, f)
    assert not isinstance(r, Error), r
    return r


def hdr(kind, rid, n, version=1, magic=b"GRPC", flags=0, reserved=0):
    return magic + bytes([version, kind, flags, reserved]) + rid.to_bytes(4, "big") + n.to_bytes(4, "big")


req_up = bytes.fromhex("4752504301010400000000010000001d" "001042656e63684563686f53657276696365" "00046563686f" "68656c6c6f")
F_req_up = K.request(1, b"hello", b"BenchEchoService", b"echo", 0x04)
add_decode(R, "y_request_upstream", "Upstream B2 REQUEST: BenchEchoService.echo(\"hello\"), id 1, flags UNARY|END (45 bytes, captured)",
           ["RPC-HDR-1", "RPC-HDR-2", "RPC-BODY-1", "RPC-HDR-5"], req_up, [F_req_up])
resp_up = bytes.fromhex("47525043010204000000000100000007" "0000" "68656c6c6f")
add_decode(R, "y_response_upstream", "Upstream B1 RESPONSE to it: code 0, \"hello\" (23 bytes, captured)",
           ["RPC-HDR-1", "RPC-BODY-2", "RPC-MODE-2"], resp_up, [K.response(1, b"hello")])
add_decode(R, "y_response_service_not_found", "Upstream: unknown service, id 20: code 2, empty payload",
           ["RPC-BODY-2", "RPC-ERR-1", "RPC-ECHO-2"], bytes.fromhex("4752504301020400000000140000000200" "02"), [K.response(20, b"", 2)])
add_decode(R, "y_response_method_not_found", "Upstream: unknown method, id 20: code 3",
           ["RPC-BODY-2", "RPC-ERR-1", "RPC-ECHO-2"], bytes.fromhex("47525043010204000000001400000002" "0003"), [K.response(20, b"", 3)])
add_decode(R, "y_response_client_stream", "Upstream: client-streaming call (flags 0x05), id 15, \"m\"",
           ["RPC-MODE-2", "RPC-HDR-5"], bytes.fromhex("47525043010205000000000f00000003" "00006d"), [K.response(15, b"m", flags=5)])
init_up = bytes.fromhex("4752504301100000000000070000001a" "0012" "53747265616d42656e636853657276696365" "0004" "6563686f")
add_decode(R, "y_stream_init_upstream", "Upstream B5 STREAM_INIT StreamBenchService.echo, stream 7 (captured)",
           ["RPC-BODY-3", "RPC-HDR-4"], init_up, [K.init(7, b"StreamBenchService", b"echo")])
s_up = [K.stream(K.INIT_ACK, 7), K.stream(K.DATA, 7, b"abc"), K.stream(K.END, 7)]
add_decode(R, "y_stream_ack_data_end_upstream", "Upstream B4 replies: INIT_ACK, DATA \"abc\", END for stream 7 (captured)",
           ["RPC-BODY-4", "RPC-BODY-5", "RPC-HDR-4"],
           bytes.fromhex("47525043011100000000000700000000" "47525043011200000000000700000003616263" "47525043011300000000000700000000"), s_up)
echo_call = bytes.fromhex("47525043010104000000000000000019" "000f6672616d6570726f6f662e4563686f" "00046563686f" "6869")
add_decode(R, "y_conformance_echo_call", "The conformance service's call frameproof.Echo.echo(\"hi\"), id 0 (spec §12)",
           ["RPC-BODY-1", "RPC-ECHO-1"], echo_call, [K.request(0, b"hi")])
for t in sorted(K.TYPE_NAMES):
    name = K.TYPE_NAMES[t].lower()
    if t in K.NAMED_TYPES:
        f = K.frame(RpcHeader(t, 0, 300 + t, b"svc", b"m"), b"" if t == K.INIT else b"p")
    elif t == K.RESPONSE:
        f = K.response(300 + t, b"p", 1)
    else:
        f = K.stream(t, 300 + t, b"" if t in K.CONTROL_TYPES else b"payload")
    add_decode(R, f"y_type_{name}", f"One {K.TYPE_NAMES[t]} frame (type 0x{t:02x})", ["RPC-HDR-4", "RPC-BODY-4" if t in (3, 4, 0x12) else "RPC-HDR-1"],
               enc(f), [f])
flags_frames = [K.request(i, bytes([i]), flags=i) for i in range(256)]
add_decode(R, "y_all_flag_values", "Requests with each of the 256 flag byte values, delivered unchanged",
           ["RPC-HDR-5"], b"".join(enc(f) for f in flags_frames), flags_frames)
rsv = K.frame(RpcHeader(K.DATA, 0, 1, reserved=0xAB), b"r")
add_decode(R, "y_reserved_delivered", "A non-zero reserved byte (0xAB) is accepted and delivered", ["RPC-HDR-6"], enc(rsv), [rsv])
ids = [K.stream(K.DATA, i, b"i") for i in (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)]
add_decode(R, "y_id_extremes", "Ids 0, 1, 2^31-1, 2^31 and 2^32-1", ["RPC-HDR-7"], b"".join(enc(f) for f in ids), ids)
add_decode(R, "y_unknown_error_code", "A RESPONSE with code 0xFFFF and a payload: delivered unchanged",
           ["RPC-ERR-1"], enc(K.response(5, b"x", 0xFFFF)), [K.response(5, b"x", 0xFFFF)])
odd = K.request(2, b"", "服务".encode(), b"")
add_decode(R, "y_names_opaque", "UTF-8 service name, empty method, empty payload", ["RPC-BODY-6", "RPC-BODY-7"], enc(odd), [odd])
pay = K.request(2, bytes(range(256)))
add_decode(R, "y_payload_all_bytes", "Payload 00..FF delivered verbatim", ["RPC-BODY-7"], enc(pay), [pay])
trail = K.frame(RpcHeader(K.INIT, 0, 4, K.ECHO_SERVICE, K.ECHO_METHOD), b"extra")
add_decode(R, "y_init_trailing_bytes", "STREAM_INIT with 5 bytes after the method: delivered as its payload",
           ["RPC-BODY-3"], enc(trail), [trail])
lim = 64
at_lim = K.request(1, b"x" * (lim - 4 - len(K.ECHO_SERVICE) - len(K.ECHO_METHOD)))
add_decode(R, "y_body_at_limit", "A REQUEST whose body is exactly the 64-byte limit", ["RPC-LIM-1"], enc(at_lim), [at_lim], codec=Codec(R, lim))
big = K.stream(K.DATA, 1, b"\x5a" * 70000)
add_decode(R, "y_data_70000", "A 70000-byte STREAM_DATA", ["RPC-BODY-4", "RPC-HDR-1"], enc(big), [big])
mixed = [K.request(1, b"a"), K.response(1, b"b"), K.init(2), K.stream(K.DATA, 2, b"c" * 300), K.stream(K.END, 2)]
mb = b"".join(enc(f) for f in mixed)
add_decode(R, "y_split_inside_header_and_names", "Five frames split inside a header, the name fields and a payload",
           ["RPC-STR-1"], mb, mixed, splits=[3, 15, 17, 20, 35, len(enc(mixed[0])) + 8])
add_decode(R, "y_many_frames_one_chunk", "200 frames back to back", ["RPC-STR-2"],
           b"".join(enc(K.request(i, bytes([i]) * (i % 30))) for i in range(200)), [K.request(i, bytes([i]) * (i % 30)) for i in range(200)])
add_decode(R, "y_empty_stream", "No bytes at all", ["RPC-STR-3"], b"", [])
add_decode(R, "y_next_frame_follows", "Bytes after a frame are the next frame", ["RPC-STR-5"], enc(K.stream(K.END, 1)) + enc(K.stream(K.END, 2)),
           [K.stream(K.END, 1), K.stream(K.END, 2)])

good = enc(K.request(1, b"good"))
add_decode(R, "n_bad_magic", "Magic GRPX", ["RPC-HDR-2"], hdr(K.REQUEST, 1, 0, magic=b"GRPX"), [], ("RPC-HDR-2", 0))
add_decode(R, "n_http_request", "An HTTP request sent to an rpc port", ["RPC-HDR-2", "RPC-STR-5"], b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", [], ("RPC-HDR-2", 0))
add_decode(R, "n_version_2", "Version 2 (upstream serves it; this spec rejects it)", ["RPC-HDR-3"], hdr(K.DATA, 1, 0, version=2), [], ("RPC-HDR-3", 0))
add_decode(R, "n_version_2_header_only", "Version 2 declaring a 10-byte body, header only: rejected from the header",
           ["RPC-HDR-3"], hdr(K.REQUEST, 1, 10, version=2), [], ("RPC-HDR-3", 0))
add_decode(R, "n_type_55_header_only", "Type 0x55 declaring a 10-byte body, header only: rejected from the header",
           ["RPC-HDR-4"], hdr(0x55, 1, 10), [], ("RPC-HDR-4", 0))
add_decode(R, "n_bad_magic_header_only", "Magic GRPX declaring a 10-byte body, header only: rejected from the header",
           ["RPC-HDR-2"], hdr(K.REQUEST, 1, 10, magic=b"GRPX"), [], ("RPC-HDR-2", 0))
add_decode(R, "n_version_0", "Version 0", ["RPC-HDR-3"], hdr(K.DATA, 1, 0, version=0), [], ("RPC-HDR-3", 0))
for t in (0x00, 0x05, 0x0F, 0x15, 0x55, 0xFF):
    add_decode(R, f"n_type_{t:02x}", f"Unknown type 0x{t:02x}", ["RPC-HDR-4"], hdr(t, 1, 0), [], ("RPC-HDR-4", 0))
for t in K.CONTROL_TYPES:
    add_decode(R, f"n_{K.TYPE_NAMES[t].lower()}_with_body", f"{K.TYPE_NAMES[t]} with a 3-byte body (upstream leaves it unread)",
               ["RPC-BODY-5"], hdr(t, 7, 3) + b"abc", [], ("RPC-BODY-5", 0))
add_decode(R, "n_end_with_body_header_only", "STREAM_END declaring a body, no body bytes: rejected from the header",
           ["RPC-BODY-5"], hdr(K.END, 7, 3), [], ("RPC-BODY-5", 0))
for vid, body, cls, t in [("n_request_empty_body", b"", "RPC-BODY-1", K.REQUEST), ("n_request_1_byte", b"\x00", "RPC-BODY-1", K.REQUEST),
                          ("n_request_service_past_body", b"\x00\x05abc", "RPC-BODY-1", K.REQUEST),
                          ("n_request_no_method_length", b"\x00\x01a\x00", "RPC-BODY-1", K.REQUEST),
                          ("n_request_method_past_body", b"\x00\x01a\x00\x09xy", "RPC-BODY-1", K.REQUEST),
                          ("n_init_method_past_body", b"\x00\x01a\x00\x09xy", "RPC-BODY-3", K.INIT),
                          ("n_response_empty_body", b"", "RPC-BODY-2", K.RESPONSE), ("n_response_1_byte", b"\x00", "RPC-BODY-2", K.RESPONSE)]:
    add_decode(R, vid, f"{K.TYPE_NAMES[t]} body {body.hex() or 'empty'}: too short for its fields", [cls], hdr(t, 1, len(body)) + body, [], (cls, 0))
add_decode(R, "n_over_limit_by_one", "Body of 65 bytes with a 64-byte limit", ["RPC-LIM-1"], enc(K.request(1, b"x" * (65 - 23))), [], ("RPC-LIM-1", 0), codec=Codec(R, 64))
add_decode(R, "n_over_limit_header_only", "A header declaring 65 bytes with limit 64, no body: rejected from the header",
           ["RPC-LIM-1"], hdr(K.REQUEST, 1, 65), [], ("RPC-LIM-1", 0), codec=Codec(R, 64))
add_decode(R, "n_over_default_limit", "A header declaring 16 MiB + 1", ["RPC-LIM-1"], hdr(K.REQUEST, 1, (16 << 20) + 1), [], ("RPC-LIM-1", 0))
add_decode(R, "n_header_promises_4gib", "A header declaring 2^32-1 bytes: rejected without allocating", ["RPC-LIM-3", "RPC-LIM-1"],
           hdr(K.DATA, 1, 2 ** 32 - 1), [], ("RPC-LIM-1", 0))
add_decode(R, "n_bad_magic_and_version", "Bad magic and version 2 at once: either class", ["RPC-HDR-2", "RPC-HDR-3"],
           hdr(K.DATA, 1, 0, magic=b"XRPC", version=2), [], ("RPC-HDR-2", 0))
add_decode(R, "n_end_with_body_over_limit", "STREAM_END declaring 2^32-1 bytes: a control body and over the limit",
           ["RPC-BODY-5", "RPC-LIM-1"], hdr(K.END, 1, 2 ** 32 - 1), [], ("RPC-BODY-5", 0))
for cut in (1, 4, 15):
    add_decode(R, f"n_truncated_header_{cut}", f"Stream ends after {cut} header bytes", ["RPC-STR-3"], good[:cut], [], ("RPC-STR-3", 0))
add_decode(R, "n_truncated_bad_magic_header", "GRPX and 6 more bytes, then the end: the header is incomplete, so truncated",
           ["RPC-STR-3"], hdr(K.REQUEST, 1, 0, magic=b"GRPX")[:10], [], ("RPC-STR-3", 0))
add_decode(R, "n_truncated_body", "Stream ends inside the body", ["RPC-STR-3"], good[:-1], [], ("RPC-STR-3", 0))
add_decode(R, "n_truncated_short_body", "A REQUEST whose body will be too short, cut before its end: truncated (body judged whole)",
           ["RPC-STR-3"], hdr(K.REQUEST, 1, 3) + b"\x00\x09", [], ("RPC-STR-3", 0))
add_decode(R, "n_error_stops_stream", "A good frame, a version-2 header, a good frame: only the first is delivered",
           ["RPC-STR-4", "RPC-HDR-3"], good + hdr(K.DATA, 2, 0, version=2) + good, [K.request(1, b"good")], ("RPC-HDR-3", len(good)))
add_decode(R, "n_truncated_after_good_frame", "A good frame then half a header", ["RPC-STR-3", "RPC-STR-4"], good + good[:8],
           [K.request(1, b"good")], ("RPC-STR-3", len(good)))

add_encode(R, "n_encode_over_limit", "A REQUEST body of 65 bytes with a 64-byte limit", ["RPC-LIM-2"], K.request(1, b"x" * 42), "RPC-LIM-2", codec=Codec(R, 64))
add_encode(R, "n_encode_version_2", "Version 2 is refused", ["RPC-HDR-3"], K.frame(RpcHeader(K.DATA, 0, 1, version=2), b"v"), "RPC-HDR-3")
add_encode(R, "n_encode_type_55", "Type 0x55 is refused", ["RPC-HDR-4"], K.stream(0x55, 1, b""), "RPC-HDR-4")
add_encode(R, "n_encode_end_with_payload", "STREAM_END with a payload is refused", ["RPC-BODY-5"], K.stream(K.END, 1, b"x"), "RPC-BODY-5")
add_encode(R, "n_encode_name_65536", "A 65536-byte service name is refused (upstream wraps its length)", ["RPC-BODY-6"],
           K.request(1, b"", b"s" * 65536), "RPC-BODY-6")
add_encode(R, "n_encode_code_65536", "Error code 65536 is refused", ["RPC-BODY-2"], K.response(1, b"", 65536), "RPC-BODY-2")

rp = lambda rid, p=b"", code=0, flags=4: enc(K.response(rid, p, code, flags))
add_match(R, "y_match_ids_start_at_0", "Three calls carry ids 0, 1, 2 and flags UNARY|END", ["RPC-ID-1"],
          [("send", b"a"), ("send", b"b"), ("send", b"c")], [],
          check=lambda r: [s[8:12] for s in r.sent] == [bytes(4), b"\0\0\0\1", b"\0\0\0\2"] and r.sent[0][6] == 4 or sys.exit("ids"))
add_match(R, "y_match_call_frame", "A call with its own service, method and mode: the client writes its own id", ["RPC-ID-1", "RPC-BODY-1"],
          [("send", b"first"), ("send_frame", K.request(77, b"x", b"Svc", b"m", flags=1)), ("receive", rp(1, b"X", flags=5))],
          [("REPLY", 1)], check=lambda r: r.sent[1] == enc(K.request(1, b"x", b"Svc", b"m", flags=1)) or sys.exit("frame"))
add_match(R, "y_match_out_of_order", "Pipelined calls answered 2, 0, 1", ["RPC-MATCH-1"],
          [("send", b"a"), ("send", b"b"), ("send", b"c"), ("receive", rp(2, b"C") + rp(0, b"A") + rp(1, b"B"))],
          [("REPLY", 2), ("REPLY", 0), ("REPLY", 1)])
add_match(R, "y_match_dribbled", "A response arriving one byte at a time", ["RPC-MATCH-1", "RPC-STR-1"],
          [("send", b"x")] + [("receive", bytes([b])) for b in rp(0, b"hello")], [("REPLY", 0)])
add_match(R, "y_match_unmatched", "A response with no pending id is unmatched", ["RPC-MATCH-2"],
          [("receive", rp(9, b"stray")), ("send", b"a"), ("receive", rp(0, b"A"))], [("UNMATCHED", None), ("REPLY", 0)])
add_match(R, "y_match_timeout", "No response: timed out at 3000 ms, not 2999; the late one is unmatched", ["RPC-MATCH-3"],
          [("send", b"a"), ("advance_ms", 2999), ("advance_ms", 1), ("receive", rp(0, b"late"))], [("TIMEOUT", 0), ("UNMATCHED", None)])
add_match(R, "y_match_other_types_ignored", "A REQUEST and a STREAM_DATA from the peer complete nothing", ["RPC-MATCH-4"],
          [("send", b"a"), ("receive", enc(K.request(0, b"?")) + enc(K.stream(K.DATA, 0, b"?"))), ("receive", rp(0, b"A"))], [("REPLY", 0)])
add_match(R, "y_match_error_response", "A response with code 3 completes its request", ["RPC-MATCH-5"],
          [("send", b"a"), ("receive", rp(0, b"", 3))], [("REPLY", 0)])
add_match(R, "y_match_mode_not_compared", "A response with other flags still completes by id", ["RPC-MATCH-1"],
          [("send", b"a"), ("receive", rp(0, b"A", flags=7))], [("REPLY", 0)])
add_match(R, "n_match_refused_send_takes_no_id", "An over-limit call is refused and does not take an id", ["RPC-LIM-2", "RPC-ID-1"],
          [("send", b"x" * 100), ("send", b"ok"), ("receive", enc(K.response(0, b"OK"), Codec(R, 64)))], [("REFUSED", 0), ("REPLY", 1)],
          codec=Codec(R, 64))
add_match(R, "n_match_bad_stream_fails_pending", "A malformed response stream fails every pending call", ["RPC-STR-4", "RPC-HDR-2"],
          [("send", b"a"), ("send", b"b"), ("receive", rp(1, b"B") + hdr(K.RESPONSE, 0, 2, magic=b"XXXX")), ("send", b"c")],
          [("REPLY", 1), ("FAILED", 0), ("REFUSED", 2)])
