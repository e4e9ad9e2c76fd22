using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>
    /// Incremental fail-fast UTF-8 validation (RFC 3629; WS-UTF8-1/2): <see cref="Feed(ReadOnlySpan{byte})"/> returns the
    /// index of the first byte after which the input so far can no longer be completed to valid
    /// UTF-8 (overlong forms, surrogates and code points above U+10FFFF are excluded by the ranges
    /// of the byte after the lead byte), or -1. Code points may be split across calls. ASCII runs
    /// are skipped eight bytes at a time.
    /// </summary>
    public struct Utf8Validator
    {
        int _left;          // continuation bytes still due
        byte _lo, _hi;      // the range of the next continuation byte

        /// <summary>True if the input so far ends on a code point boundary.</summary>
        public bool Complete { get { return _left == 0; } }

        public void Reset() { _left = 0; }

        public unsafe int Feed(ReadOnlySpan<byte> s)
        {
            int n = s.Length;
            if (n == 0) return -1;
            // through a pointer: span indexing and span reads are slow on Mono (see WsMask)
            fixed (byte* p = &MemoryMarshal.GetReference(s)) return Feed(p, n);
        }

        /// <summary>The same over <paramref name="n"/> bytes at <paramref name="p"/> (the decoder's path).</summary>
        public unsafe int Feed(byte* p, int n)
        {
            int i = 0;
            int left = _left;
            byte lo = _lo, hi = _hi;
            while (i < n)
            {
                if (left == 0)
                {
                    while (i + 8 <= n && (*(ulong*)(p + i) & 0x8080808080808080UL) == 0) i += 8;
                    if (i == n) break;
                    byte b = p[i];
                    if (b < 0x80) { i++; continue; }
                    if (b < 0xC2 || b > 0xF4) { _left = 0; return i; }
                    left = b < 0xE0 ? 1 : b < 0xF0 ? 2 : 3;
                    lo = b == 0xE0 ? (byte)0xA0 : b == 0xF0 ? (byte)0x90 : (byte)0x80;
                    hi = b == 0xED ? (byte)0x9F : b == 0xF4 ? (byte)0x8F : (byte)0xBF;
                    i++;
                    continue;
                }
                byte c = p[i];
                if (c < lo || c > hi) { _left = left; _lo = lo; _hi = hi; return i; }
                left--;
                lo = 0x80;
                hi = 0xBF;
                i++;
            }
            _left = left; _lo = lo; _hi = hi;
            return -1;
        }

        public static bool IsValid(ReadOnlySpan<byte> s)
        {
            var v = new Utf8Validator();
            return v.Feed(s) < 0 && v.Complete;
        }
    }
}
