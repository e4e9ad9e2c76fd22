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
    static class Clock
    {
        static readonly double MsPerTick = 1000.0 / Stopwatch.Frequency;
        /// <summary>Monotonic milliseconds (keeps running while the process is stopped).</summary>
        public static long NowMs() { return (long)(Stopwatch.GetTimestamp() * MsPerTick); }
    }
}
