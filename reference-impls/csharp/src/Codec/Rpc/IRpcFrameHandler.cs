using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>Receives decoded rpc frames; returns false to stop the decoder (the receiver closes).</summary>
    public interface IRpcFrameHandler
    {
        bool OnFrame(ref RpcFrame frame);
    }
}
