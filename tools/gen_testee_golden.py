#!/usr/bin/env python3
"""Golden bytes of the testee protocol (schemas/testee.proto), serialized by the protobuf runtime.

Hand-written protobuf codecs (the C# testee's src/Testee/TesteeProto.cs) parse every entry and check
its fields, and re-encode the messages they write and compare the bytes. The messages cover every
field of every message a testee reads or writes, with non-default, multi-byte values (so that a
field-number, wire-type or zigzag slip changes the bytes), plus the members of the per-protocol
oneofs (Codec.params, Frame.header, ProtocolError.detail) of protocols a testee may not have: it
must skip them correctly.

Output: conformance/testee-golden.json, a list of {"name", "message", "hex", "json"}: the entry's
name, the message type, the serialized bytes (deterministic serialization) and, for readers, the
message in protobuf's JSON mapping. conformance/tests/test_testee_golden.py fails if the committed
file is stale.

Usage: .venv/bin/python tools/gen_testee_golden.py [--check] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "conformance" / "testee-golden.json"

sys.path.insert(0, str(ROOT / "conformance"))
from frameproof._generated import testee_pb2 as pb  # noqa: E402
from google.protobuf import json_format  # noqa: E402


def pattern(n: int, seed: int = 0) -> bytes:
    return bytes((i * 7 + seed * 13 + 1) & 0xFF for i in range(n))


def messages():
    """(name, message) pairs, in file order. The C# golden test names these entries."""
    lf_codec = pb.Codec(protocol="length-field", limits=pb.Limits(max_payload=0x123456789),
                        length_field=pb.LengthFieldParams(offset=300, size=-1000))
    std_codec = pb.Codec(protocol="standard", limits=pb.Limits(max_payload=70000))
    error = pb.ProtocolError(requirement="STD-STR-3", offset=0x100000001, message="stream ended \u00fcnexpectedly")
    frame = pb.Frame(flag=0xC1, sequence=200, payload=pattern(130, 1))
    R, S = pb.TesteeRequest, pb.TesteeResponse
    yield "hello_request", R(hello=pb.HelloRequest(harness_version=1, max_harness_version=258))
    yield "decode_request", R(decode=pb.DecodeRequest(codec=lf_codec, chunks=[b"\x01\x02\x03", b"", pattern(200, 2)]))
    yield "decode_request_rpc_params", R(decode=pb.DecodeRequest(
        codec=pb.Codec(protocol="rpc", limits=pb.Limits(max_payload=1000), rpc=pb.RpcParams(max_body=70000)),
        chunks=[b"\xAA"]))
    yield "decode_request_websocket_params", R(decode=pb.DecodeRequest(
        codec=pb.Codec(protocol="websocket", websocket=pb.WebSocketParams(role=pb.WebSocketParams.CLIENT, max_message=1 << 40)),
        chunks=[b"\xBB\xCC"]))
    yield "encode_request", R(encode=pb.EncodeRequest(codec=std_codec, frame=frame))
    yield "encode_request_rpc_header", R(encode=pb.EncodeRequest(codec=pb.Codec(protocol="rpc"), frame=pb.Frame(
        flag=0x81, sequence=300, payload=b"body",
        rpc=pb.RpcHeader(version=1, type=0x12, flags=0x05, reserved=7, id=0x12345678, service=b"svc.Echo",
                         method=b"Call", error_code=70000))))
    yield "encode_request_websocket_header", R(encode=pb.EncodeRequest(codec=pb.Codec(protocol="websocket"), frame=pb.Frame(
        payload=b"hi", websocket=pb.WebSocketHeader(fin=True, rsv=5, opcode=0x0A, masked=True, mask_key=b"\x01\x02\x03\x04"))))
    yield "match_request", R(match=pb.MatchRequest(codec=std_codec, timeout_ms=70000, events=[
        pb.MatchEvent(send=pattern(3, 3)),
        pb.MatchEvent(send=b""),
        pb.MatchEvent(send_one_way=pattern(140, 4)),
        pb.MatchEvent(receive=b"\x81\x01\x03\x00abc"),
        pb.MatchEvent(advance_ms=150000),
        pb.MatchEvent(advance_ms=0),
        pb.MatchEvent(send_frame=pb.Frame(flag=0x41, sequence=129, payload=b"sf")),
    ]))
    yield "serve_request", R(serve=pb.ServeRequest(
        codec=pb.Codec(protocol="length-field", length_field=pb.LengthFieldParams(offset=1, size=-2)),
        endpoint="unary", chunks=[pattern(129, 5), b""], half_close=True))
    yield "hello_response", S(hello=pb.HelloResponse(harness_version=2, name="frameproof-csharp", version="0.1.0",
                                                     protocols=["standard", "length-field"],
                                                     features=["decode", "encode", "match", "serve"]))
    yield "decode_response", S(decode=pb.DecodeResponse(frames=[
        pb.Frame(flag=0x81, sequence=255, payload=pattern(131, 6)),
        pb.Frame(),
        pb.Frame(flag=0x3F, payload=b"\x00"),
    ], error=error))
    yield "decode_response_rpc_detail", S(decode=pb.DecodeResponse(error=pb.ProtocolError(
        requirement="RPC-HDR-1", offset=16, message="m", rpc=pb.RpcErrorDetail(error_code=300))))
    yield "decode_response_websocket_detail", S(decode=pb.DecodeResponse(frames=[pb.Frame(payload=b"z")], error=pb.ProtocolError(
        requirement="WS-FRM-1", offset=2, websocket=pb.WebSocketErrorDetail(close_code=1002))))
    yield "decode_response_header_frames", S(decode=pb.DecodeResponse(frames=[
        pb.Frame(flag=1, payload=b"r", rpc=pb.RpcHeader(id=9, service=b"s")),
        pb.Frame(payload=b"w", websocket=pb.WebSocketHeader(fin=True, opcode=2)),
    ]))
    yield "encode_response_encoded", S(encode=pb.EncodeResponse(encoded=pattern(300, 7)))
    yield "encode_response_encoded_empty", S(encode=pb.EncodeResponse(encoded=b""))
    yield "encode_response_error", S(encode=pb.EncodeResponse(error=pb.ProtocolError(
        requirement="LF-LIM-2", offset=0, message="payload of 70000 bytes exceeds the maximum 65535")))
    C = pb.Completion
    yield "match_response", S(match=pb.MatchResponse(sent=[pattern(5, 8), b"", pattern(150, 9)], completions=[
        C(kind=C.REPLY, request=0, frame=pb.Frame(flag=0x81, sequence=1, payload=b"abc")),
        C(kind=C.TIMEOUT, request=300),
        C(kind=C.UNMATCHED, frame=pb.Frame(flag=0x82, sequence=130)),
        C(kind=C.FAILED, request=2),
        C(kind=C.REFUSED, request=100000),
        C(),
    ], error=pb.ProtocolError(requirement="STD-LEN-3", offset=129, message="non-canonical")))
    yield "serve_response", S(serve=pb.ServeResponse(written=[pattern(133, 10), b"", b"\x81\x05\x00\x00"], closed=True,
                                                     error=pb.ProtocolError(requirement="LF-STR-3", offset=200, message="eof")))
    yield "serve_response_open", S(serve=pb.ServeResponse(written=[b"x"]))
    yield "skipped", S(skipped="protocol 'rpc' not implemented")
    yield "runtime_error", S(runtime_error="InvalidOperationException: \u00e9t\u00e9")


def golden():
    out = []
    for name, msg in messages():
        out.append({
            "name": name,
            "message": msg.DESCRIPTOR.name,
            "hex": msg.SerializeToString(deterministic=True).hex(),
            "json": json_format.MessageToDict(msg, preserving_proto_field_name=True),
        })
    return out


def render() -> str:
    return json.dumps(golden(), indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs from what would be written")
    a = ap.parse_args(argv)
    text = render()
    if a.check:
        same = a.out.exists() and a.out.read_text(encoding="utf-8") == text
        print(f"{a.out}: {'up to date' if same else 'STALE (run tools/gen_testee_golden.py)'}")
        return 0 if same else 1
    a.out.write_text(text, encoding="utf-8")
    print(f"wrote {a.out} ({len(golden())} messages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
