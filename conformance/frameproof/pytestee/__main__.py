"""The Python testee: speaks the testee protocol (spec/testee.md) on stdin/stdout."""
from __future__ import annotations

import argparse
import os
import struct
import sys
import time

from .. import __version__
from .._generated import testee_pb2 as pb
from . import codec as C

MUTANTS = {
    # name: the requirement it breaks
    "wrong-byte-order": "STD-HDR-1",
    "off-by-one-length": "STD-HDR-1",
    "ignores-chunk-boundaries": "STD-STR-1",
    "accepts-oversize": "STD-LIM-1",
    "accepts-noncanonical-ext": "STD-LEN-3",
    "drops-kind-bits": "STD-HDR-4",
    "no-truncation-error": "STD-STR-3",
    "continues-after-error": "STD-STR-4",
    "seq-starts-at-zero": "STD-SEQ-1",
    "mismatched-sequence": "STD-MATCH-1",
    "reuses-pending-sequence": "STD-SEQ-3",
    "no-timeout": "STD-MATCH-3",
    "lf-big-endian-default": "LF-FMT-2",
    "lf-split-length-throws": "LF-STR-1",
    "lf-varint-overlong-accepted": "LF-LEN-2",
    "lf-truncates-length": "LF-LEN-1",
    "lf-lifo": "LF-MATCH-1",
    "lf-no-fail-on-timeout": "LF-MATCH-3",
}
# Robustness probes for the runner itself: they misbehave on purpose.
FAULTS = ("crash-on-decode", "hang-on-decode", "garbage-on-decode")


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


def make_decoder(codec):
    mp = codec.limits.max_payload
    if codec.protocol == "standard":
        return C.StandardDecoder(mp)
    if codec.protocol == "length-field":
        lf = codec.length_field if codec.HasField("length_field") else pb.LengthFieldParams(offset=0, size=2)
        return C.LengthFieldDecoder(lf.offset, lf.size, mp)
    raise LookupError(codec.protocol)


def do_decode(req, fault):
    if fault == "crash-on-decode" and len(req.chunks) > 1:
        os._exit(3)
    if fault == "hang-on-decode" and len(req.chunks) > 1:
        time.sleep(3600)
    if fault == "garbage-on-decode" and len(req.chunks) > 1:
        sys.stdout.buffer.write(b"\xff\xff\xff\x7fgarbage")
        sys.stdout.buffer.flush()
        time.sleep(3600)
    out = pb.DecodeResponse()
    try:
        dec = make_decoder(req.codec)
        for ch in req.chunks:
            try:
                frames = dec.feed(ch)
            except C.CodecError as e:
                for flag, seq, payload in e.frames:
                    out.frames.add(flag=flag, sequence=seq, payload=payload)
                if C.MUTANT == "continues-after-error":
                    # bug: skip the bad byte and keep going
                    del dec.buf[:1]
                    dec.base += 1
                    continue
                raise
            for flag, seq, payload in frames:
                out.frames.add(flag=flag, sequence=seq, payload=payload)
        dec.finish()
    except C.CodecError as e:
        out.error.CopyFrom(pb.ProtocolError(requirement=e.requirement, offset=e.offset, message=e.message))
    return pb.TesteeResponse(decode=out)


def do_encode(req):
    c, f = req.codec, req.frame
    try:
        if c.protocol == "standard":
            data = C.encode_standard(f.flag, f.sequence, f.payload, c.limits.max_payload)
        else:
            lf = c.length_field if c.HasField("length_field") else pb.LengthFieldParams(offset=0, size=2)
            data = C.encode_length_field(f.payload, lf.offset, lf.size, c.limits.max_payload)
    except C.CodecError as e:
        return pb.TesteeResponse(encode=pb.EncodeResponse(error=pb.ProtocolError(requirement=e.requirement, offset=0)))
    return pb.TesteeResponse(encode=pb.EncodeResponse(encoded=data))


def do_match(req):
    c = req.codec
    std = c.protocol == "standard"
    timeout = req.timeout_ms or 3000
    out = pb.MatchResponse()
    try:
        dec = make_decoder(c)
    except C.CodecError as e:
        out.error.CopyFrom(pb.ProtocolError(requirement=e.requirement, offset=0))
        return pb.TesteeResponse(match=out)
    lf = c.length_field if c.HasField("length_field") else pb.LengthFieldParams(offset=0, size=2)
    now = 0
    counter = -1 if C.MUTANT == "seq-starts-at-zero" else 0
    pending = []  # [index, seq, deadline] in send order
    failed = False
    index = 0

    def complete(kind, request=None, frame=None):
        cp = out.completions.add(kind=kind)
        if request is not None:
            cp.request = request
        if frame is not None:
            cp.frame.CopyFrom(pb.Frame(flag=frame[0], sequence=frame[1], payload=frame[2]))

    def fail_all():
        for p in pending:
            complete(pb.Completion.FAILED, p[0])
        pending.clear()

    def deliver(frames):
        for fr in frames:
            if std:
                if not fr[0] & 0x80:
                    continue
                if C.MUTANT == "mismatched-sequence":
                    hit = pending[0] if pending else None
                else:
                    hit = next((p for p in pending if p[1] == fr[1]), None)
                if hit:
                    pending.remove(hit)
                    complete(pb.Completion.REPLY, hit[0], fr)
                else:
                    complete(pb.Completion.UNMATCHED, None, fr)
            else:
                if pending:
                    p = pending.pop(-1 if C.MUTANT == "lf-lifo" else 0)
                    complete(pb.Completion.REPLY, p[0], fr)
                else:
                    complete(pb.Completion.UNMATCHED, None, fr)

    for ev in req.events:
        kind = ev.WhichOneof("event")
        if kind in ("send", "send_one_way"):
            payload = getattr(ev, kind)
            i = index
            index += 1
            if failed:
                out.sent.append(b"")
                complete(pb.Completion.REFUSED, i)
                continue
            try:
                if std:
                    seq = (counter + 1) & 0xFF
                    if kind == "send" and C.MUTANT != "reuses-pending-sequence" and any(p[1] == seq for p in pending):
                        out.sent.append(b"")
                        complete(pb.Completion.REFUSED, i)
                        continue
                    data = C.encode_standard(0x01 if kind == "send" else 0x41, seq, payload, c.limits.max_payload)
                    counter = seq
                else:
                    if len(pending) >= 256:
                        out.sent.append(b"")
                        complete(pb.Completion.REFUSED, i)
                        continue
                    seq = 0
                    data = C.encode_length_field(payload, lf.offset, lf.size, c.limits.max_payload)
            except C.CodecError:
                out.sent.append(b"")
                complete(pb.Completion.REFUSED, i)
                continue
            out.sent.append(data)
            if kind == "send":
                pending.append([i, seq, now + timeout])
        elif kind == "receive":
            if failed:
                continue
            try:
                frames = dec.feed(ev.receive)
            except C.CodecError as e:
                frames = e.frames
                deliver(frames)
                out.error.CopyFrom(pb.ProtocolError(requirement=e.requirement, offset=e.offset))
                fail_all()
                failed = True
                continue
            deliver(frames)
        elif kind == "advance_ms":
            now += ev.advance_ms
            if failed or C.MUTANT == "no-timeout":
                continue
            expired = [p for p in pending if p[2] <= now]
            for p in expired:
                pending.remove(p)
                complete(pb.Completion.TIMEOUT, p[0])
            if expired and not std and C.MUTANT != "lf-no-fail-on-timeout":
                fail_all()
                failed = True
    return pb.TesteeResponse(match=out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m frameproof.pytestee")
    ap.add_argument("--mutant", choices=sorted(MUTANTS) + list(FAULTS), default="")
    args = ap.parse_args(argv)
    fault = args.mutant if args.mutant in FAULTS else ""
    C.MUTANT = "" if fault else args.mutant
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        data = read_msg(stdin)
        if data is None:
            return 0
        req = pb.TesteeRequest()
        req.ParseFromString(data)
        kind = req.WhichOneof("request")
        try:
            if kind == "hello":
                name = "frameproof-python" + (f"+{args.mutant}" if args.mutant else "")
                resp = pb.TesteeResponse(hello=pb.HelloResponse(
                    harness_version=1, name=name, version=__version__,
                    protocols=["standard", "length-field"], features=["decode", "encode", "match"]))
            elif req.WhichOneof("request") in ("decode", "encode", "match") and \
                    getattr(req, kind).codec.protocol not in ("standard", "length-field"):
                resp = pb.TesteeResponse(skipped=f"protocol {getattr(req, kind).codec.protocol!r} not implemented")
            elif kind == "decode":
                resp = do_decode(req.decode, fault)
            elif kind == "encode":
                resp = do_encode(req.encode)
            elif kind == "match":
                resp = do_match(req.match)
            else:
                resp = pb.TesteeResponse(skipped=f"unknown request {kind!r}")
        except Exception as e:  # a bug in this testee is reported, not fatal
            resp = pb.TesteeResponse(runtime_error=f"{type(e).__name__}: {e}")
        write_msg(stdout, resp)


if __name__ == "__main__":
    sys.exit(main())
