using System;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>
    /// zlib (libz.so.1) through P/Invoke, for permessage-deflate (spec/websocket-deflate.md).
    /// Why not System.IO.Compression.DeflateStream: Mono 6.8's DeflateStream cannot set the window
    /// bits (client_max_window_bits / server_max_window_bits, WSD-CTX-2) and cannot reliably
    /// sync-flush at the end of each message (Z_SYNC_FLUSH, WSD-CMP-1) or tell where a stream's final
    /// block ended (WSD-CMP-5); nor does it let the inflater stop after a bounded number of output bytes
    /// without buffering ahead (WSD-LIM-1). zlib's own API does all of that.
    /// The <see cref="ZStream"/> is allocated in unmanaged memory: zlib's state keeps a pointer back to
    /// it (and checks it), so it must never move.
    /// </summary>
    public static unsafe class Zlib
    {
        const string Lib = "libz.so.1";

        public const int Ok = 0, StreamEnd = 1, NeedDict = 2, StreamError = -2, DataError = -3, MemError = -4, BufError = -5;
        public const int NoFlush = 0, SyncFlush = 2;
        public const int Deflated = 8, DefaultStrategy = 0;

        /// <summary>z_stream as laid out on 64-bit Linux (LP64: uLong is 64 bits, uInt 32; 112 bytes).</summary>
        [StructLayout(LayoutKind.Sequential)]
        public struct ZStream
        {
            public byte* NextIn;
            public uint AvailIn;
            public ulong TotalIn;
            public byte* NextOut;
            public uint AvailOut;
            public ulong TotalOut;
            public IntPtr Msg;
            public IntPtr State;
            public IntPtr ZAlloc, ZFree, Opaque;
            public int DataType;
            public ulong Adler;
            public ulong Reserved;
        }

        [DllImport(Lib, EntryPoint = "zlibVersion")] static extern IntPtr zlibVersion();
        [DllImport(Lib, EntryPoint = "deflateInit2_")] static extern int deflateInit2_(ZStream* strm, int level, int method, int windowBits, int memLevel, int strategy, IntPtr version, int streamSize);
        [DllImport(Lib, EntryPoint = "deflate")] public static extern int Deflate(ZStream* strm, int flush);
        [DllImport(Lib, EntryPoint = "deflateReset")] public static extern int DeflateReset(ZStream* strm);
        [DllImport(Lib, EntryPoint = "deflateEnd")] public static extern int DeflateEnd(ZStream* strm);
        [DllImport(Lib, EntryPoint = "inflateInit2_")] static extern int inflateInit2_(ZStream* strm, int windowBits, IntPtr version, int streamSize);
        [DllImport(Lib, EntryPoint = "inflate")] public static extern int Inflate(ZStream* strm, int flush);
        [DllImport(Lib, EntryPoint = "inflateReset")] public static extern int InflateReset(ZStream* strm);
        [DllImport(Lib, EntryPoint = "inflateEnd")] public static extern int InflateEnd(ZStream* strm);
        [DllImport(Lib, EntryPoint = "inflateSetDictionary")] public static extern int InflateSetDictionary(ZStream* strm, byte* dictionary, uint length);
        [DllImport(Lib, EntryPoint = "inflateGetDictionary")] public static extern int InflateGetDictionary(ZStream* strm, byte* dictionary, uint* length);

        static IntPtr _version;

        static IntPtr Version
        {
            get
            {
                if (_version == IntPtr.Zero) _version = zlibVersion();
                return _version;
            }
        }

        /// <summary>A zeroed z_stream in unmanaged memory.</summary>
        static ZStream* Alloc()
        {
            var z = (ZStream*)Marshal.AllocHGlobal(sizeof(ZStream));
            *z = default(ZStream);
            return z;
        }

        /// <summary>A raw-DEFLATE compressor (negative window bits: no zlib header), memLevel 8.</summary>
        public static ZStream* NewDeflater(int level, int windowBits)
        {
            ZStream* z = Alloc();
            int rc = deflateInit2_(z, level, Deflated, -windowBits, 8, DefaultStrategy, Version, sizeof(ZStream));
            if (rc != Ok) { Marshal.FreeHGlobal((IntPtr)z); throw new InvalidOperationException("deflateInit2 failed: " + rc); }
            return z;
        }

        /// <summary>A raw-DEFLATE decompressor.</summary>
        public static ZStream* NewInflater(int windowBits)
        {
            ZStream* z = Alloc();
            int rc = inflateInit2_(z, -windowBits, Version, sizeof(ZStream));
            if (rc != Ok) { Marshal.FreeHGlobal((IntPtr)z); throw new InvalidOperationException("inflateInit2 failed: " + rc); }
            return z;
        }

        public static void FreeDeflater(ZStream* z)
        {
            if (z == null) return;
            DeflateEnd(z);
            Marshal.FreeHGlobal((IntPtr)z);
        }

        public static void FreeInflater(ZStream* z)
        {
            if (z == null) return;
            InflateEnd(z);
            Marshal.FreeHGlobal((IntPtr)z);
        }

        /// <summary>zlib's message for the last error, or the return code.</summary>
        public static string Message(ZStream* z, int rc)
        {
            string m = z != null && z->Msg != IntPtr.Zero ? Marshal.PtrToStringAnsi(z->Msg) : null;
            return m ?? ("zlib error " + rc);
        }
    }
}
