using System;

namespace Frameproof.Codec
{
    /// <summary>The websocket codec's parameters: codec JSON <c>{"websocket": {"role": "server"|"client",
    /// "max_message": N}}</c>, testee <c>WebSocketParams</c> (spec/websocket.md).</summary>
    public sealed class WebSocketParams
    {
        /// <summary>Client role: receives unmasked frames, sends masked ones (default: server).</summary>
        public bool Client;
        /// <summary>Largest message after reassembly; 0 = the spec default.</summary>
        public long MaxMessage;
    }

    /// <summary>One websocket frame's header in owning form (testee frames, <see cref="FrameValue.Header"/>).</summary>
    public sealed class WebSocketHeader
    {
        public bool Fin;
        /// <summary>RSV1..RSV3 as bits 2..0.</summary>
        public uint Rsv;
        public uint Opcode;
        public bool Masked;
        public byte[] MaskKey = new byte[0];
    }

    /// <summary><see cref="ProtocolError.Detail"/> of a websocket error: the close code the endpoint sends.</summary>
    public sealed class WebSocketCloseDetail
    {
        public readonly uint Code;
        public WebSocketCloseDetail(uint code) { Code = code; }
    }
}
