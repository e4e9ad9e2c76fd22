using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>WS-MASK-3 at memory speed: XOR with the 4-byte key, 32 then 8 bytes at a time through
    /// pointers, then a scalar tail. Pointers, not <c>MemoryMarshal.Read&lt;ulong&gt;</c> on span slices
    /// or <see cref="System.Numerics.Vector{T}"/>: on Mono 6.8 Vector is not hardware accelerated and
    /// the span reads cost about 12 ns each (1.5 µs a KiB, measured); the pointer loop runs at about
    /// 28 ns a KiB there, and is what a modern JIT vectorises as well.</summary>
    public static class WsMask
    {
        /// <summary>dst[i] = src[i] ^ key[(phase + i) % 4]; src and dst may be the same span.</summary>
        public static unsafe void Apply(ReadOnlySpan<byte> src, Span<byte> dst, ReadOnlySpan<byte> key, long phase)
        {
            int n = src.Length;
            if (dst.Length < n) throw new ArgumentException("dst is shorter than src");
            if (n == 0) return;
            if (key.Length < 4) throw new ArgumentException("the key has 4 bytes");
            fixed (byte* s0 = &MemoryMarshal.GetReference(src))
            fixed (byte* d0 = &MemoryMarshal.GetReference(dst))
            fixed (byte* k = &MemoryMarshal.GetReference(key))
                Apply(s0, d0, n, k, phase);
        }

        /// <summary>The same over pointers: <paramref name="n"/> bytes, the 4-byte key at <paramref name="key"/>
        /// (the decoder's path, without the Spans that cost Mono a few ns each).</summary>
        public static unsafe void Apply(byte* s0, byte* d0, int n, byte* key, long phase)
        {
            int p = (int)(phase & 3);
            // the key rotated to this phase, as it lies in memory over 8 bytes (built in a register, not
            // through a pointer into a local, which keeps it in memory for the whole loop on Mono)
            uint b0 = key[p], b1 = key[(p + 1) & 3], b2 = key[(p + 2) & 3], b3 = key[(p + 3) & 3];
            uint k4 = BitConverter.IsLittleEndian ? b0 | b1 << 8 | b2 << 16 | b3 << 24 : b3 | b2 << 8 | b1 << 16 | b0 << 24;
            ulong kw = k4 | (ulong)k4 << 32;
            byte* s = s0, d = d0, end = s0 + n;
            for (; s + 32 <= end; s += 32, d += 32)
            {
                *(ulong*)d = *(ulong*)s ^ kw;
                *(ulong*)(d + 8) = *(ulong*)(s + 8) ^ kw;
                *(ulong*)(d + 16) = *(ulong*)(s + 16) ^ kw;
                *(ulong*)(d + 24) = *(ulong*)(s + 24) ^ kw;
            }
            for (; s + 8 <= end; s += 8, d += 8) *(ulong*)d = *(ulong*)s ^ kw;
            for (int j = p; s < end; s++, d++, j++) *d = (byte)(*s ^ key[j & 3]);
        }
    }

    /// <summary>One decoded frame, valid during the handler call: header fields, the unmasked payload
    /// and the stream offset where the frame starts.</summary>
    public ref struct WsFrame
    {
        public bool Fin, Masked;
        public byte Rsv, Opcode;
        public ReadOnlySpan<byte> Payload;
        public long Offset;
        /// <summary>The decoder's 4-byte key of a masked frame (a Span is built only when asked for:
        /// building one costs Mono a few ns a frame).</summary>
        internal byte[] Key;

        /// <summary>The masking key of a masked frame, else empty.</summary>
        public ReadOnlySpan<byte> MaskKey { get { return Masked && Key != null ? new ReadOnlySpan<byte>(Key) : ReadOnlySpan<byte>.Empty; } }

        public FrameValue ToValue()
        {
            return new FrameValue
            {
                Payload = Payload.ToArray(),
                Header = new WebSocketHeader { Fin = Fin, Rsv = Rsv, Opcode = Opcode, Masked = Masked, MaskKey = MaskKey.ToArray() }
            };
        }
    }
}
