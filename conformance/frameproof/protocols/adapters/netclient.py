"""The NetClient adapter: the network suite's client side (frameproof.netsuite.Conn) where a
protocol has roles or an opening handshake."""
from __future__ import annotations


class NetClient:
    def net_client_codec(self, codec):
        """The codec the network suite's client speaks to a server configured with ``codec``.
        Default: the same codec (a protocol with roles returns the peer's)."""
        return codec

    def net_handshake(self, conn) -> None:
        """The client side of an opening handshake on a fresh ``netsuite.Conn`` (raises
        CheckFailure when the server's answer is wrong). Default: none."""

    def net_goodbye(self):
        """The frame a client sends to end a connection the protocol's orderly way (websocket's close with
        code 1000), which the server answers with a goodbye frame (``net_is_goodbye``) and a close; the
        counters a server prints (HAR-SRV-1) count no protocol error for it. Default: None, the protocol
        has none (its connections end with a TCP close)."""
        return None

    def net_is_goodbye(self, frame) -> bool:
        """True for a frame a server may send right before it closes a connection (e.g. a close
        frame): ``Conn.expect_closed`` does not count it as a reply. Default: none is."""
        return False
