using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>The rpc header and the typed body fields before the payload, in owning form
    /// (testee frames, <see cref="FrameValue.Header"/>). Values are kept as given, so an encoder can
    /// refuse out-of-range ones.</summary>
    public sealed class RpcHeader
    {
        public uint Version = 1;
        public uint Type;
        public uint Flags;
        public uint Reserved;
        public uint Id;
        public byte[] Service = new byte[0];
        public byte[] Method = new byte[0];
        public uint ErrorCode;
    }
}
