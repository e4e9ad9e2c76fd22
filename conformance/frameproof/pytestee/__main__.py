"""The Python testee: speaks the testee protocol (spec/testee.md, harness v1 to v3) on
stdin/stdout, over the Python reference codecs of every registered protocol
(frameproof.protocols.<name>.reference). Generic: every protocol is reached through the registry."""
from __future__ import annotations

import argparse
import os
import struct
import sys
import time

from .. import __version__, protocols
from .. import reference as R
from .._generated import testee_pb2 as pb
from ..reference import CodecError
from .long_stream import do_long_stream

HARNESS_VERSION = 3

# Robustness probes for the runner itself: they misbehave on purpose.
FAULTS = ("crash-on-decode", "hang-on-decode", "garbage-on-decode",
          # two distinct failures in one property (prop_encode_decode_roundtrip): refuses to encode
          # payloads over 8 bytes, and misdecodes what it does encode
          "refuse-long-misdecode")


# Bugs only a stream past 4 GiB shows (the long-stream test under --long-stream 4.1G or more); kept
# apart from the protocols' mutants, which the smoke profile's short streams must catch.
LONG_STREAM_MUTANTS = {"offset-wraps-at-4gib": "STD-LIM-1"}


def mutants() -> dict:
    """Every protocol's deliberate bugs: name -> the requirement it breaks."""
    out = {}
    for p in protocols.all_protocols():
        out.update(p.mutants)
    out.update(LONG_STREAM_MUTANTS)
    return out


def read_msg(stream):
    hdr = stream.read(4)
    if len(hdr) < 4:
        return None
    (n,) = struct.unpack("<I", hdr)
    return stream.read(n)


def write_msg(stream, msg):
    data = msg.SerializeToString()
    stream.write(struct.pack("<I", len(data)) + data)
    stream.flush()


def _error(e: CodecError, offset=None) -> pb.ProtocolError:
    return pb.ProtocolError(requirement=e.requirement, offset=e.offset if offset is None else offset, message=e.message)


def do_decode(proto, req, fault):
    if fault == "crash-on-decode" and len(req.chunks) > 1:
        os._exit(3)
    if fault == "hang-on-decode" and len(req.chunks) > 1:
        time.sleep(3600)
    if fault == "garbage-on-decode" and len(req.chunks) > 1:
        sys.stdout.buffer.write(b"\xff\xff\xff\x7fgarbage")
        sys.stdout.buffer.flush()
        time.sleep(3600)
    out = pb.DecodeResponse()
    if fault == "refuse-long-misdecode":
        R.MUTANT = "off-by-one-length"

    def add(frames):
        for f in frames:
            proto.frame_to_pb(f, out.frames.add())

    try:
        dec = proto.reference.decoder(proto.codec_from_pb(req.codec))
        for ch in req.chunks:
            try:
                frames = dec.feed(ch)
            except CodecError as e:
                add(e.frames)
                if R.MUTANT == "continues-after-error":
                    dec.skip(1)  # bug: skip the bad byte and keep going
                    continue
                raise
            add(frames)
        dec.finish()
    except CodecError as e:
        out.error.CopyFrom(_error(e))
    return pb.TesteeResponse(decode=out)


def do_encode(proto, req, fault=""):
    if fault == "refuse-long-misdecode" and len(req.frame.payload) > 8:
        return pb.TesteeResponse(encode=pb.EncodeResponse(error=pb.ProtocolError(requirement="STD-LIM-2")))
    try:
        data = proto.reference.encode(proto.codec_from_pb(req.codec), proto.frame_from_pb(req.frame))
    except CodecError as e:
        return pb.TesteeResponse(encode=pb.EncodeResponse(error=_error(e, 0)))
    return pb.TesteeResponse(encode=pb.EncodeResponse(encoded=data))


def do_match(proto, req):
    out = pb.MatchResponse()
    try:
        codec = proto.codec_from_pb(req.codec)
        dec = proto.reference.decoder(codec)
    except CodecError as e:
        out.error.CopyFrom(_error(e, 0))
        return pb.TesteeResponse(match=out)
    m = proto.reference.ClientMatcher(codec)
    timeout = req.timeout_ms or 3000
    now = 0
    failed = False
    index = 0

    def complete(kind, request=None, frame=None):
        cp = out.completions.add(kind=kind)
        if request is not None:
            cp.request = request
        if frame is not None:
            proto.frame_to_pb(frame, cp.frame)

    def fail_all():
        for e in m.entries():
            m.expire(e)
            complete(pb.Completion.FAILED, e[0])

    def deliver(frames):
        for fr in frames:
            entry = m.take(fr)
            if entry is False:
                continue
            if entry is None:
                complete(pb.Completion.UNMATCHED, None, fr)
            else:
                complete(pb.Completion.REPLY, entry[0], fr)

    for ev in req.events:
        kind = ev.WhichOneof("event")
        if kind in ("send", "send_one_way", "send_frame"):
            i = index
            index += 1
            one_way = kind == "send_one_way"
            r = None if failed else m.next_request(proto.frame_from_pb(ev.send_frame) if kind == "send_frame"
                                                   else getattr(ev, kind), one_way)
            data = None
            if r is not None:
                try:
                    data = proto.reference.encode(codec, r[1])
                except CodecError:
                    data = None
            if data is None:
                out.sent.append(b"")
                complete(pb.Completion.REFUSED, i)
                continue
            out.sent.append(data)
            m.sent(r[0], [i, now + timeout], one_way)
        elif kind == "receive":
            if failed:
                continue
            try:
                deliver(dec.feed(ev.receive))
            except CodecError as e:
                deliver(e.frames)
                out.error.CopyFrom(_error(e))
                fail_all()
                failed = True
        elif kind == "advance_ms":
            now += ev.advance_ms
            if failed or R.MUTANT == "no-timeout":
                continue
            expired = [e for e in m.entries() if e[1] <= now]
            for e in expired:
                m.expire(e)
                complete(pb.Completion.TIMEOUT, e[0])
            if expired and m.fails_on_timeout:
                fail_all()
                failed = True
    return pb.TesteeResponse(match=out)


def do_serve(proto, req):
    out = pb.ServeResponse()
    codec = proto.codec_from_pb(req.codec)
    try:
        session = proto.server_session(codec, req.endpoint)
    except CodecError as e:  # a configuration error: closed before any byte is read
        out.closed = True
        out.error.CopyFrom(_error(e, 0))
        return pb.TesteeResponse(serve=out)
    for ch in req.chunks:
        out.written.append(session.feed(ch))
        if session.closed:
            break
    else:
        if req.half_close:
            out.written.append(session.eof())
    out.closed = session.closed
    if session.error is not None:
        out.error.CopyFrom(_error(session.error))
    return pb.TesteeResponse(serve=out)


def do_discovery(req: pb.DiscoveryRequest):
    """A registry script (spec/testee.md, ``discovery``), over the registry of the protocol that has
    one (``Protocol.registry_script``); the answer is a TesteeDiscoveryResponse."""
    try:
        proto = protocols.get(req.codec.protocol)
    except KeyError:
        return pb.TesteeResponse(skipped=f"protocol {req.codec.protocol!r} not implemented")
    script = getattr(proto, "registry_script", None)
    if script is None:
        return pb.TesteeResponse(skipped=f"{proto.name} has no service registry")
    return pb.TesteeDiscoveryResponse(discovery=script(req))


def registry_features() -> list:
    """The features of the protocols' registries (``Protocol.registry_features``)."""
    return sorted({f for p in protocols.all_protocols()
                   for f in (*getattr(p, "registry_features", ()), *getattr(p, "testee_features", ()))})


def outside_oneof(data: bytes, version: int):
    """The answer to a request in one of the views outside the oneof, or None if it is neither."""
    for since, view, field, handler in ((2, pb.TesteeDiscoveryRequest, "discovery", do_discovery),
                                        (3, pb.TesteeLongStreamRequest, "long_stream", do_long_stream)):
        req = view()
        req.ParseFromString(data)
        if version >= since and req.HasField(field):
            try:
                return handler(getattr(req, field))
            except Exception as e:  # a bug in this testee is reported, not fatal
                return pb.TesteeResponse(runtime_error=f"{type(e).__name__}: {e}")
    return None


HANDLERS = {"decode": do_decode, "encode": do_encode, "match": do_match, "serve": do_serve}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frameproof.pytestee")
    ap.add_argument("--mutant", choices=sorted(mutants()) + list(FAULTS), default="")
    ap.add_argument("--partial", action="store_true",
                    help="behave as a partial implementation: answer `skipped` for every non-default "
                         "codec parameter and limit (the suite must still run the rest of each property)")
    ap.add_argument("--harness", type=int, default=HARNESS_VERSION, choices=[1, 2, 3],
                    help="the highest harness version to speak (1: behave as a version-1 testee)")
    args = ap.parse_args(argv)
    fault = args.mutant if args.mutant in FAULTS else ""
    R.MUTANT = "" if fault else args.mutant
    version = 1
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        data = read_msg(stdin)
        if data is None:
            return 0
        req = pb.TesteeRequest()
        req.ParseFromString(data)
        kind = req.WhichOneof("request")
        if kind is None:  # a discovery script (v2) or a long stream (v3) travels outside the oneof
            resp = outside_oneof(data, version)
            if resp is not None:
                write_msg(stdout, resp)
                continue
        try:
            if kind == "hello":
                version = min(args.harness, max(1, req.hello.max_harness_version))
                name = "frameproof-python" + (f"+{args.mutant}" if args.mutant else "")
                features = ["decode", "encode", "match"] + (["serve"] if version >= 2 else []) + \
                    (registry_features() if version >= 2 else []) + (["long-stream"] if version >= 3 else [])
                resp = pb.TesteeResponse(hello=pb.HelloResponse(
                    harness_version=version, name=name, version=__version__,
                    protocols=list(protocols.names()), features=features))
            elif kind in HANDLERS and (version >= 2 or kind != "serve"):
                r = getattr(req, kind)
                if args.partial and r.codec.protocol in protocols.names() and \
                        protocols.get(r.codec.protocol).codec_from_pb(r.codec) != protocols.get(r.codec.protocol).codec():
                    write_msg(stdout, pb.TesteeResponse(skipped="partial: only default parameters"))
                    continue
                try:
                    proto = protocols.get(r.codec.protocol)
                except KeyError:
                    resp = pb.TesteeResponse(skipped=f"protocol {r.codec.protocol!r} not implemented")
                else:
                    resp = HANDLERS[kind](proto, r, fault) if kind in ("decode", "encode") else HANDLERS[kind](proto, r)
            else:
                resp = pb.TesteeResponse(skipped=f"unknown request {kind!r}")
        except Exception as e:  # a bug in this testee is reported, not fatal
            resp = pb.TesteeResponse(runtime_error=f"{type(e).__name__}: {e}")
        write_msg(stdout, resp)


if __name__ == "__main__":
    sys.exit(main())
