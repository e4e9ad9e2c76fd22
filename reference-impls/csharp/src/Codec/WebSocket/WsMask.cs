using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;
#if MONO
using Mono.Simd;
#else
using System.Numerics;
using System.Runtime.CompilerServices;
#endif

namespace Frameproof.Codec
{
    /// <summary>WS-MASK-3 at memory speed: XOR with the 4-byte key, 16 bytes at a time in SIMD registers
    /// (Mono: Mono.Simd's Vector4ui, which Mono's JIT compiles to SSE2 loads, pxor and stores; a modern
    /// runtime: System.Numerics.Vector), then 8 bytes, then a scalar tail. Pointers, not span slices:
    /// on Mono each slice and index is a call. Mono 6.8 does not accelerate System.Numerics.Vector
    /// (Vector.IsHardwareAccelerated is false), and its 8-byte loop is bound by one store a cycle:
    /// 64 KiB took 2.6 µs, Mono.Simd 1.4 µs, as long as Buffer.MemoryCopy of the same bytes (busy
    /// machine, 2026-11-28).</summary>
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
            if (n >= 64)
            {
#if MONO
#pragma warning disable 618 // Mono.Simd is marked obsolete in favour of System.Numerics, which Mono 6.8 does not accelerate
                // SSE2 (every x64 CPU has it; Mono's JIT emits it for Mono.Simd whatever SimdRuntime says)
                var kv = new Vector4ui(k4, k4, k4, k4);
                for (; s + 64 <= end; s += 64, d += 64)
                {
                    *(Vector4ui*)d = *(Vector4ui*)s ^ kv;
                    *(Vector4ui*)(d + 16) = *(Vector4ui*)(s + 16) ^ kv;
                    *(Vector4ui*)(d + 32) = *(Vector4ui*)(s + 32) ^ kv;
                    *(Vector4ui*)(d + 48) = *(Vector4ui*)(s + 48) ^ kv;
                }
                for (; s + 16 <= end; s += 16, d += 16) *(Vector4ui*)d = *(Vector4ui*)s ^ kv;
#pragma warning restore 618
#else
                var kv = new Vector<uint>(k4);
                int w = Vector<byte>.Count;
                for (; s + w <= end; s += w, d += w)
                    Unsafe.WriteUnaligned(d, Unsafe.ReadUnaligned<Vector<uint>>(s) ^ kv);
#endif
            }
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
