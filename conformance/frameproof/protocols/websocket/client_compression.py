"""HAR-CLI-3: a load client that agreed on permessage-deflate compresses what it sends (spec/harness.md).

RFC 7692 lets a sender send any message uncompressed (RSV1 clear, WSD-FRM-1), so a client that offers the
extension, has it accepted and then sends everything plain breaks no rule of the RFC's; but the benchmark
that names the extension (the deflate group of tools/bench, run with ``--variant prose``) then measures a
run without compression. The checking server of ``frameproof net --client`` (``client_request_check``)
counts, on each connection whose opening agreed on the extension, the ``--variant prose`` messages that came
compressed and those that came plain although compressing them alone makes them shorter (``shrinks``); the
case below runs the client with ``--variant prose`` and fails on any of the second kind."""
from __future__ import annotations

import zlib

from .frames import TEXT

#: the weakest compressor a sender may use (zlib's level 1, its smallest window): a message it makes
#: shorter is one every compressor makes shorter, so none may go plain for want of gain (WSD-FRM-3)
LEVEL, WINDOW_BITS = 1, 9


def shrinks(message: bytes) -> bool:
    """Whether the message alone, compressed as WSD-CMP-1 says (sync-flushed, its last four octets off),
    is shorter than itself."""
    z = zlib.compressobj(LEVEL, zlib.DEFLATED, -WINDOW_BITS)
    return len(z.compress(message) + z.flush(zlib.Z_SYNC_FLUSH)) - 4 < len(message)


class ProseWatch:
    """One connection's prose messages on the checking server: ``agreed`` is called when the opening
    accepted permessage-deflate (with the server's ``Stats.observed`` to count in), ``watch`` on every
    data message the client sends."""

    def __init__(self, variant):
        self.on = variant == "prose"
        self.tally = None

    def agreed(self, params, tally: dict):
        # an agreed 8-bit window for the client: zlib cannot compress with it, so nothing need be compressed
        if params.client_max_window_bits != 8:
            self.tally = tally

    def watch(self, frame, n: int):
        if not self.on or self.tally is None or frame.header.opcode != TEXT:
            return
        t = self.tally
        if frame.header.rsv & 4:
            t["prose compressed"] = t.get("prose compressed", 0) + 1
        elif shrinks(bytes(frame.payload)):
            t["prose plain"] = t.get("prose plain", 0) + 1
            t.setdefault("prose plain example", (n, bytes(frame.payload)))


def c_prose_compressed(t):
    """The client's command with ``--variant prose --payload 256``, under a codec that switches
    permessage-deflate on: every prose message on a connection that agreed goes compressed."""
    from ...checks import CheckFailure
    from ...clientsuite import ClientTarget, _with_flag, run_client
    from ...netsuite import SkipCase
    from ... import protocols
    if not protocols.get(t.protocol).client_extension(t.codec):
        raise SkipCase("the codec does not switch permessage-deflate on")
    cmd = _with_flag(_with_flag(t.command, "--variant", "prose"), "--payload", 256)
    r = run_client(ClientTarget(cmd, t.codec, t.sink, t.cwd))
    s, seen = r.stats, r.stats.observed
    plain, packed = seen.get("prose plain", 0), seen.get("prose compressed", 0)
    if not s.extended:
        raise CheckFailure(f"the client run with --variant prose agreed on permessage-deflate on none of its "
                           f"{s.connections} connection(s)\n--- client output ---\n{r.output[-1500:]}")
    if plain + packed == 0:
        raise CheckFailure(f"the client run with --variant prose sent no text message on a connection with "
                           f"permessage-deflate\n--- client output ---\n{r.output[-1500:]}")
    if plain:
        n, example = seen["prose plain example"]
        raise CheckFailure(
            f"the client agreed on permessage-deflate on {s.extended} connection(s) and was run with --variant prose "
            f"--payload 256:\n  expected every prose message compressed (RSV1 set): each is made shorter by "
            f"DEFLATE alone (zlib level {LEVEL}, {WINDOW_BITS}-bit window)\n  actual   {plain} of "
            f"{plain + packed} sent uncompressed; frame {n} of its connection carries {len(example)} bytes "
            f"plain: {example[:48]!r}...")


def client_cases():
    from ...clientsuite import ClientCase
    return [ClientCase("prose_sent_compressed", ["HAR-CLI-3"], "With permessage-deflate agreed, the client's "
                       "--variant prose messages go compressed", c_prose_compressed)]
