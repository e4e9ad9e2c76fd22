"""The LoadClient adapter: the load clients (fp-load, the Python load client, ``net --client``) and
the checking server that counts and checks what they send."""
from __future__ import annotations

from typing import Tuple


class LoadClient:
    #: the checking server of `frameproof net --client` (and the Python load client) handle it
    load_client_checks: bool = True
    #: the values of the load clients' ``--variant`` (reference-impls/README.md); the first is the default
    load_variants: Tuple[str, ...] = ("default",)
    #: the load clients have ``--mode stream`` for this protocol
    load_streams: bool = False
    #: extra load-client runs the matrix checks with ``net --client`` beside the default one:
    #: (label, fp-load arguments replacing the default mode/window/requests)
    load_client_profiles: Tuple[Tuple[str, str], ...] = ()

    #: frames a load client sends on each connection besides its requests (a close frame): a server
    #: counting every frame it receives counts them too (reference-impls/README.md, counters)
    load_goodbye_frames: int = 0

    def largest_load_payload(self, codec) -> int:
        """The largest ``--payload`` a load client with ``codec`` can carry in one request (HAR-CLI-2: it
        must accept it and refuse one byte more), one bound in every --mode. Default: the limit, or what the
        length field declares."""
        return min(codec.limit, codec.capacity)

    def load_side(self, codec, variant: str):
        """The protocol side of one Python load-client connection (frameproof.loadside.LoadSide)."""
        from ...loadside import LoadSide
        return LoadSide(self, codec, variant)

    def counted(self, frame) -> bool:
        """True for a frame the checking server counts as a request (from the client) or a reply
        (to it); False for protocol traffic around them (stream set-up, close frames). Default: all."""
        return True

    def corrupt_reply(self, reply, k: int):
        """The ``k``-th reply the checking server corrupts on purpose (0, 1, ...; clientsuite's corrupted run):
        a load client must count it as an error (HAR-VERIFY-1). Default: bit 0 of the first payload byte
        flipped (text stays valid UTF-8: the client sees a wrong payload, not a broken stream)."""
        from dataclasses import replace
        return replace(reply, payload=bytes([reply.payload[0] ^ 0x01]) + reply.payload[1:])

    def client_extension(self, codec):
        """The extension ``codec`` switches on that a load client must offer and get on every
        connection (the checking server counts the connections that agreed on one), or None."""
        return None

    def client_request_check(self, variant=None):
        """A fresh per-connection checker the checking server calls as ``check(frame) -> str|None``
        (the HAR-CLI-1 violation, if any) on every request a load client sends; ``variant``: the
        --variant the client was run with (None: not named, the protocol's first)."""
        return lambda frame: None
