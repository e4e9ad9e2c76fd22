"""The Limits adapter: a server's resource limits (the Python echo server's memory budget, the
``*-RES-*`` requirements) and the codec of hostile peers at scale (``net --stress``)."""
from __future__ import annotations


class Limits:
    def held_bytes(self, decoder, replier) -> int:
        """Input the Python echo server holds for one connection's unfinished frame (RES-1): what
        ``decoder`` (``reference.decoder``) buffers, plus what the ``echo_replier`` keeps (a message's
        fragments). Default: the decoder's buffer."""
        return len(getattr(decoder, "buf", b""))

    def largest_unit(self, codec) -> int:
        """The largest frame (or message) a server with ``codec`` accepts: a memory budget below it is a
        usage error (RES-1). Default: the frame limit."""
        return codec.limit

    #: the largest frame of the small-bounds stress configuration (frameproof.stress.SMALL_LIMITS)
    STRESS_FRAME = 1 << 20

    def stress_codec(self):
        """The codec a server runs the small-bounds stress group with (CI and the main job): frames
        up to 1 MiB, so that an 8 MiB budget holds several. Default: the codec that carries 1 MiB
        payloads (``bench_codec``) limited to 1 MiB."""
        return self.bench_codec(self.STRESS_FRAME).with_limit(self.STRESS_FRAME)
