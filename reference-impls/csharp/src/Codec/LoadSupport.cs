using System;
using System.Buffers.Binary;

namespace Frameproof.Codec
{
    /// <summary>Load-test payloads: bytes 0..7 hold the request's global index (u64 LE) when the
    /// payload has room, the rest a pattern derived from the index, so a mix-up is detectable.</summary>
    public static class Payloads
    {
        static byte PatternByte(long index, int i)
        {
            return unchecked((byte)(index * 0x9E3779B1L + i * 31 + (i >> 8) + 0x5A));
        }

        public static void Fill(long index, Span<byte> dst)
        {
            int start = 0;
            if (dst.Length >= 8)
            {
                BinaryPrimitives.WriteUInt64LittleEndian(dst, (ulong)index);
                start = 8;
            }
            for (int i = start; i < dst.Length; i++) dst[i] = PatternByte(index, i);
        }

        public static bool Verify(long index, int expectedLength, ReadOnlySpan<byte> payload)
        {
            if (payload.Length != expectedLength) return false;
            int start = 0;
            if (payload.Length >= 8)
            {
                if (BinaryPrimitives.ReadUInt64LittleEndian(payload) != (ulong)index) return false;
                start = 8;
            }
            for (int i = start; i < payload.Length; i++)
                if (payload[i] != PatternByte(index, i)) return false;
            return true;
        }
    }

    /// <summary>Log-linear latency histogram in microseconds (relative error below 1/64, exact max).
    /// Fixed memory, no allocation per record; merge per-connection histograms at the end.</summary>
    public sealed class LatencyHistogram
    {
        const int Linear = 128;               // values below 128 us are exact
        const int SubBuckets = 64;
        const int Shifts = 40;
        readonly long[] _counts = new long[Linear + Shifts * SubBuckets];
        public long Count;
        public long Max;

        static int Index(long v)
        {
            if (v < Linear) return (int)v;
            int log2 = 63 - LeadingZeros((ulong)v);
            int shift = log2 - 6;                  // (v >> shift) in [64, 127]
            if (shift > Shifts) return Linear + Shifts * SubBuckets - 1;
            return Linear + (shift - 1) * SubBuckets + (int)((v >> shift) - 64);
        }

        /// <summary>Highest value that maps to bucket i.</summary>
        static long UpperBound(int i)
        {
            if (i < Linear) return i;
            int shift = (i - Linear) / SubBuckets + 1;
            long m = (i - Linear) % SubBuckets + 64;
            return ((m + 1) << shift) - 1;
        }

        static int LeadingZeros(ulong x)
        {
            int n = 0;
            if (x == 0) return 64;
            while ((x & 0x8000000000000000UL) == 0) { x <<= 1; n++; }
            return n;
        }

        public void Record(long micros)
        {
            if (micros < 0) micros = 0;
            _counts[Index(micros)]++;
            Count++;
            if (micros > Max) Max = micros;
        }

        public void Add(LatencyHistogram other)
        {
            for (int i = 0; i < _counts.Length; i++) _counts[i] += other._counts[i];
            Count += other.Count;
            if (other.Max > Max) Max = other.Max;
        }

        /// <summary>Value at quantile q (0..1]: the bucket's upper bound, capped at the exact max; 0 if empty.</summary>
        public long Percentile(double q)
        {
            if (Count == 0) return 0;
            long rank = (long)Math.Ceiling(q * Count);
            if (rank < 1) rank = 1;
            long seen = 0;
            for (int i = 0; i < _counts.Length; i++)
            {
                seen += _counts[i];
                if (seen >= rank) return Math.Min(UpperBound(i), Max);
            }
            return Max;
        }
    }
}
