"""The Python testee's answer to a long stream (spec/testee.md, "long stream", harness v3): the
recipe's reads through one reference decoder, each frame hashed and dropped as it comes."""
from __future__ import annotations

import hashlib

from .. import protocols
from .. import reference as R
from .._generated import testee_pb2 as pb
from ..long_stream import reads
from ..reference import CodecError


def do_long_stream(req: pb.LongStreamRequest) -> pb.TesteeLongStreamResponse:
    try:
        proto = protocols.get(req.codec.protocol)
    except KeyError:
        return pb.TesteeLongStreamResponse(skipped=f"protocol {req.codec.protocol!r} not implemented")
    if not 1 <= req.max_chunk <= 16 << 20 or not req.cycle:
        return pb.TesteeLongStreamResponse(runtime_error="max_chunk must be 1..16 MiB and the cycle non-empty")
    out = pb.LongStreamResponse()
    h = hashlib.sha256()
    state = {"frames": 0, "bytes": 0, "last": None}

    def take(frames):
        for f in frames:
            h.update(f.payload)
            state["frames"] += 1
            state["bytes"] += len(f.payload)
            state["last"] = f

    dec = proto.reference.decoder(proto.codec_from_pb(req.codec))
    fed = 0
    try:
        for chunk in reads(req.cycle, req.repeat, req.tail, req.seed, req.max_chunk):
            fed += len(chunk)
            try:
                take(dec.feed(chunk))
            except CodecError as e:
                take(e.frames)
                if R.MUTANT == "continues-after-error":
                    dec.skip(1)
                    continue
                raise
    except CodecError as e:
        out.error.requirement, out.error.offset, out.error.message = e.requirement, e.offset, e.message
    out.frames, out.payload_bytes, out.digest, out.fed = state["frames"], state["bytes"], h.digest(), fed
    if state["last"] is not None:
        proto.frame_to_pb(state["last"], out.last)
    return pb.TesteeLongStreamResponse(long_stream=out)
