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
    /// <summary>The server-wide resource limits (*-RES-*, reference-impls/README.md "Resource limits"):
    /// the spec's defaults, set by the generic flags.</summary>
    sealed class ResourceLimits
    {
        /// <summary>A connection holding at most this is never closed for the budget (*-RES-2).</summary>
        public const long Floor = 64 * 1024;
        public long MemoryBudget = 256L * 1024 * 1024;   // --memory-budget
        public long IdleTimeoutMs = 30000;               // --idle-timeout-ms
        public long FrameTimeoutMs = 10000;              // --frame-timeout-ms
        public long MaxOutputBytes = 1024 * 1024;        // --max-output-bytes
        public long WriteTimeoutMs = 10000;              // --write-timeout-ms
        public int MaxConnections = 4096;                // --max-connections
    }
}
