"""The Wire adapter: a protocol's codec configuration and frames as JSON (the vectors, ``--codec``)
and as the testee protocol's protobuf messages (schemas/testee.proto)."""
from __future__ import annotations


class Wire:
    def codec_from_json(self, d: dict):
        """The codec JSON (vectors, --codec) to a Codec; unknown keys are an error."""
        raise NotImplementedError

    def codec_from_pb(self, msg):
        """A testee ``Codec`` message (``params`` oneof) to a Codec (the Python testee)."""
        raise NotImplementedError(f"{self.name} has no protobuf codec conversion")

    def codec_to_pb(self, codec, msg) -> None:
        """Fills the protocol's parameters into a testee ``Codec`` message (``params`` oneof)."""

    def frame_to_json(self, f) -> dict:
        raise NotImplementedError

    def frame_from_json(self, d: dict):
        raise NotImplementedError

    def frame_to_pb(self, f, msg) -> None:
        msg.payload = f.payload

    def frame_from_pb(self, msg):
        from ...oracle import Frame
        return Frame(0, 0, bytes(msg.payload))
