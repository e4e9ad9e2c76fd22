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
    sealed class ServerConfig
    {
        public FrameCodec Codec;
        public bool Sink;
        /// <summary>--io epoll (the default on Linux) | blocking (the default elsewhere) | saea.</summary>
        public string Io = Environment.OSVersion.Platform == PlatformID.Unix ? "epoll" : "blocking";
        public int Threads = Environment.ProcessorCount;   // --threads: event loops (epoll), pool minimum (others)
        public ResourceLimits Limits = new ResourceLimits();
    }
}
