using System;

namespace Frameproof.Codec
{
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
}
