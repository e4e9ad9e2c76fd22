using System;
using System.Buffers;
using System.Collections.Generic;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Threading;
using Frameproof.Codec;

namespace Frameproof.Server
{
    sealed class Counters
    {
        public long Connections, Frames, Bytes, ProtocolErrors;
        /// <summary>Connections closed for a limit, connections refused at the connection limit, failed accepts.</summary>
        public long ClosedBudget, ClosedIdle, ClosedFrame, ClosedWrite, ClosedHandshake, Refused, AcceptErrors;

        /// <summary>Adds what a session counted since the last call (reported = the session's totals
        /// already added).</summary>
        public void Add(ServerSession s, ref long reportedFrames, ref long reportedBytes)
        {
            long f = s.Frames, b = s.PayloadBytes;
            if (f != reportedFrames) { Interlocked.Add(ref Frames, f - reportedFrames); reportedFrames = f; }
            if (b != reportedBytes) { Interlocked.Add(ref Bytes, b - reportedBytes); reportedBytes = b; }
        }
    }
}
