#!/usr/bin/env python3
"""Golden bytes of the testee protocol (schemas/testee.proto), serialized by the protobuf runtime.

Hand-written protobuf codecs (the C# testee's src/Testee/TesteeProto.cs) parse every entry and check
its fields, and re-encode the messages they write and compare the bytes. The messages cover every
field of every message a testee reads or writes, with non-default, multi-byte values (so that a
field-number, wire-type or zigzag slip changes the bytes), plus the members of the per-protocol
oneofs (Codec.params, Frame.header, ProtocolError.detail) of protocols a testee may not have: it
must skip them correctly.

Output: conformance/testee-golden.json (and conformance/testee-golden-discovery.json, the registry
scripts' messages, and conformance/testee-golden-long-stream.json, harness v3's), a list of {"name", "message", "hex", "json"}: the entry's
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
    yield "hello_response", S(hello=pb.HelloResponse(harness_version=3, name="frameproof-csharp", version="0.1.0",
                                                     protocols=["standard", "length-field"],
                                                     features=["decode", "encode", "match", "serve", "long-stream"]))
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


def discovery_messages():
    """The registry scripts (feature "discovery", spec/testee.md): a TesteeDiscoveryRequest and a
    TesteeDiscoveryResponse that set every field of the Discovery* messages. They are kept in a
    file of their own (conformance/testee-golden-discovery.json) so that a hand-written codec that
    does not speak them yet keeps checking every entry of testee-golden.json."""
    E = pb.DiscoveryEndpoint
    ep = E(service="svc.\u00e9cho", instance_id="i-300", host="10.0.0.200", port=65535, weight=0xFFFFFFFF)
    ops = [
        pb.DiscoveryOp(register=ep),
        pb.DiscoveryOp(deregister=E(service="svc", instance_id="i")),
        pb.DiscoveryOp(discover="svc.a"),
        pb.DiscoveryOp(watch=pb.DiscoveryWatch(service="svc.a", on_first_event=pb.DiscoveryOp(unwatch=300))),
        pb.DiscoveryOp(unwatch=70000),
        pb.DiscoveryOp(select=pb.DiscoverySelect(selector_id=300, service="svc.a", selector="weighted-round-robin",
                                                 seed=0x123456789ABCDEF0, count=2000)),
        pb.DiscoveryOp(etcd_encode=pb.DiscoveryEtcdEncode(prefix="frameproof/services", endpoint=ep)),
        pb.DiscoveryOp(etcd_decode=pb.DiscoveryEtcdEntry(prefix="p", key=b"/p/s/i", value=b'{"port":1}')),
        pb.DiscoveryOp(concurrent=pb.DiscoveryConcurrent(service="svc.c", threads=16, rounds=10000, picks=300)),
        pb.DiscoveryOp(wait_ms=70000),
    ]
    yield "discovery_request", pb.TesteeDiscoveryRequest(discovery=pb.DiscoveryRequest(
        codec=pb.Codec(protocol="rpc"), ops=ops,
        etcd=pb.DiscoveryEtcd(endpoint="127.0.0.1:23790", prefix="fp-test/one", lease_ttl_s=300, abandon=True,
                              request_timeout_ms=70000)))
    result = pb.DiscoveryResult(
        code=5, endpoints=[ep, E(service="s", instance_id="i", host="h", port=1, weight=100)], watch=300,
        picks=["i-300", "i0"], etcd_key=b"/frameproof/services/svc/i-300", etcd_value=pattern(130, 11),
        concurrent=pb.DiscoveryConcurrentResult(failures=1, added=70000, removed=300, updated=2,
                                                picks=[pb.DiscoveryCount(instance_id="c0-0", count=150)]))
    ev = pb.DiscoveryEvent
    yield "discovery_response", pb.TesteeDiscoveryResponse(discovery=pb.DiscoveryResponse(
        results=[result, pb.DiscoveryResult()],
        events=[ev(watch=300, type=ev.UPDATED, endpoint=ep, op=70000, nested=pb.DiscoveryResult(code=1)),
                ev(watch=0, type=ev.ADDED, endpoint=ep), ev(type=ev.REMOVED, endpoint=ep)]))
    yield "discovery_response_skipped", pb.TesteeDiscoveryResponse(skipped="no service registry")
    yield "discovery_response_runtime_error", pb.TesteeDiscoveryResponse(runtime_error="KeyError: 2")


OUT_DISCOVERY = ROOT / "conformance" / "testee-golden-discovery.json"


def long_stream_messages():
    """The long stream (harness v3, feature "long-stream", spec/testee.md): a TesteeLongStreamRequest
    and a TesteeLongStreamResponse that set every field; a file of their own, as discovery's."""
    yield "long_stream_request", pb.TesteeLongStreamRequest(long_stream=pb.LongStreamRequest(
        codec=pb.Codec(protocol="standard", limits=pb.Limits(max_payload=131072)), cycle=pattern(300, 12),
        repeat=0x123456789, tail=pattern(5, 13), seed=0xFEDCBA9876543210, max_chunk=65536))
    yield "long_stream_response", pb.TesteeLongStreamResponse(long_stream=pb.LongStreamResponse(
        frames=0x10000000F, payload_bytes=0x1122334455, digest=pattern(32, 14),
        last=pb.Frame(flag=0x81, sequence=255, payload=pattern(130, 15)),
        error=pb.ProtocolError(requirement="STD-LIM-1", offset=0x106A0F2C0, message="payload over the limit"),
        fed=0x106A0F3C9))
    yield "long_stream_response_skipped", pb.TesteeLongStreamResponse(skipped="no long streams")
    yield "long_stream_response_runtime_error", pb.TesteeLongStreamResponse(runtime_error="KeyError: 3")


OUT_LONG_STREAM = ROOT / "conformance" / "testee-golden-long-stream.json"
#: Every golden file and what it holds.
FILES = ((OUT, messages), (OUT_DISCOVERY, discovery_messages), (OUT_LONG_STREAM, long_stream_messages))


def golden(which=None):
    out = []
    for name, msg in (which or messages)():
        out.append({
            "name": name,
            "message": msg.DESCRIPTOR.name,
            "hex": msg.SerializeToString(deterministic=True).hex(),
            "json": json_format.MessageToDict(msg, preserving_proto_field_name=True),
        })
    return out


def render(which=None) -> str:
    return json.dumps(golden(which), indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="exit 1 if the file differs from what would be written")
    a = ap.parse_args(argv)
    status = 0
    for out, which in ((a.out.with_name(path.name), which) for path, which in FILES):
        text = render(which)
        if a.check:
            same = out.exists() and out.read_text(encoding="utf-8") == text
            print(f"{out}: {'up to date' if same else 'STALE (run tools/gen_testee_golden.py)'}")
            status |= 0 if same else 1
            continue
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out} ({len(golden(which))} messages)")
    return status


if __name__ == "__main__":
    sys.exit(main())
