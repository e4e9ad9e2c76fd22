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
    /// <summary>The soft RLIMIT_NOFILE raised towards the hard limit, so that accepting does not fail
    /// before the connection limit (RES-6/7). Linux only; elsewhere nothing happens.</summary>
    static class Descriptors
    {
        [StructLayout(LayoutKind.Sequential)]
        struct RLimit { public ulong Cur, Max; }

        [DllImport("libc", SetLastError = true)] static extern int getrlimit(int resource, out RLimit rlim);
        [DllImport("libc", SetLastError = true)] static extern int setrlimit(int resource, ref RLimit rlim);
        const int RLIMIT_NOFILE = 7;

        public static void Raise(long connections)
        {
            try
            {
                if (Environment.OSVersion.Platform != PlatformID.Unix) return;
                RLimit r;
                if (getrlimit(RLIMIT_NOFILE, out r) != 0) return;
                ulong want = (ulong)connections + 256;
                if (r.Cur >= want) return;
                r.Cur = Math.Min(want, r.Max);
                setrlimit(RLIMIT_NOFILE, ref r);
            }
            catch (Exception) { }
        }
    }
}
