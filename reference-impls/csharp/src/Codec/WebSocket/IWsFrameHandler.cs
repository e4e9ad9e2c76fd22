using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>Receives decoded websocket frames; returns false to stop the decoder.</summary>
    public interface IWsFrameHandler
    {
        bool OnFrame(ref WsFrame frame);
    }
}
