using System;
using System.Collections.Generic;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>
    /// Randomised differential tests: the streaming decoders, fed random splits of random streams
    /// (valid frames followed by random garbage), must agree with a naive whole-buffer model written
    /// directly from the specs' text and error classification.
    /// </summary>
    [TestFixture]
    public class DifferentialTests
    {
        static DecodeResult NaiveStandard(byte[] s, long max)
        {
            var r = new DecodeResult { Frames = new List<Decoded>() };
            int pos = 0;
            while (pos < s.Length)
            {
                int start = pos;
                if (s.Length - pos < 4) { r.Error = new ProtocolError("STD-STR-3", start, ""); return r; }
                long len = s[pos + 2] | (s[pos + 3] << 8);
                int hl = 4;
                if (len == 0xFFFF)
                {
                    if (s.Length - pos < 8) { r.Error = new ProtocolError("STD-STR-3", start, ""); return r; }
                    len = (long)s[pos + 4] | ((long)s[pos + 5] << 8) | ((long)s[pos + 6] << 16) | ((long)s[pos + 7] << 24);
                    hl = 8;
                    if (len >= 0x80000000L) { r.Error = new ProtocolError("STD-LEN-4", start, ""); return r; }
                    if (len < 65535) { r.Error = new ProtocolError("STD-LEN-3", start, ""); return r; }
                }
                if (len > max) { r.Error = new ProtocolError("STD-LIM-1", start, ""); return r; }
                if (s.Length - pos - hl < len) { r.Error = new ProtocolError("STD-STR-3", start, ""); return r; }
                var p = new byte[len];
                Array.Copy(s, pos + hl, p, 0, len);
                r.Frames.Add(new Decoded { Flag = s[pos], Seq = s[pos + 1], Payload = p });
                pos += hl + (int)len;
            }
            return r;
        }

        static DecodeResult NaiveLengthField(byte[] s, LengthFieldProfile prof, long max)
        {
            var r = new DecodeResult { Frames = new List<Decoded>() };
            long limit = Math.Min(max, prof.Capacity);
            int pos = 0;
            while (pos < s.Length)
            {
                int start = pos;
                int q = pos + (int)prof.Offset;
                long len = 0;
                int fl = Math.Abs(prof.Size);
                if (prof.Size == 0)
                {
                    int i = 0;
                    while (true)
                    {
                        if (q + i >= s.Length) { r.Error = new ProtocolError("LF-STR-3", start, ""); return r; }
                        byte b = s[q + i];
                        len |= (long)(b & 0x7F) << (7 * i);
                        i++;
                        if ((b & 0x80) == 0) break;
                        if (i == 5) { r.Error = new ProtocolError("LF-LEN-2", start, ""); return r; }
                    }
                    if (len > int.MaxValue) { r.Error = new ProtocolError("LF-LEN-2", start, ""); return r; }
                    fl = i;
                }
                else
                {
                    if (q + fl > s.Length) { r.Error = new ProtocolError("LF-STR-3", start, ""); return r; }
                    for (int i = 0; i < fl; i++)
                    {
                        int idx = prof.Size > 0 ? q + i : q + fl - 1 - i; // little-endian: byte i has weight 256^i
                        len |= (long)s[idx] << (8 * i);
                    }
                    if (fl == 4 && len >= 0x80000000L) { r.Error = new ProtocolError("LF-LEN-3", start, ""); return r; }
                }
                if (len > limit) { r.Error = new ProtocolError("LF-LIM-1", start, ""); return r; }
                int body = q + fl;
                if (s.Length - body < len) { r.Error = new ProtocolError("LF-STR-3", start, ""); return r; }
                var p = new byte[len];
                Array.Copy(s, body, p, 0, len);
                r.Frames.Add(new Decoded { Payload = p });
                pos = body + (int)len;
            }
            return r;
        }

        static int[] RandomCuts(Random rnd, int length)
        {
            var cuts = new SortedSet<int>();
            int n = rnd.Next(0, Math.Min(length, 12) + 1);
            for (int i = 0; i < n; i++) if (length > 1) cuts.Add(rnd.Next(1, length));
            if (rnd.Next(4) == 0) for (int i = 1; i < Math.Min(length, 10); i++) cuts.Add(i); // byte-wise head
            var a = new int[cuts.Count];
            cuts.CopyTo(a);
            return a;
        }

        static int RandomLength(Random rnd, int cap)
        {
            switch (rnd.Next(8))
            {
                case 0: return 0;
                case 1: return Math.Min(cap, 65534 + rnd.Next(3));
                default: return Math.Min(cap, rnd.Next(0, 300));
            }
        }

        static readonly uint[] Boundaries = { 0, 1, 254, 255, 256, 65534, 65535, 65536, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 10485760, 10485761 };

        /// <summary>A header-like tail with a boundary length value, in a random encoding.</summary>
        static byte[] BoundaryTail(Random rnd)
        {
            uint v = Boundaries[rnd.Next(Boundaries.Length)];
            switch (rnd.Next(5))
            {
                case 0: return new byte[] { 1, 1, 0xFF, 0xFF, (byte)v, (byte)(v >> 8), (byte)(v >> 16), (byte)(v >> 24), 0 }; // standard extended
                case 1: return new byte[] { (byte)v, (byte)(v >> 8), (byte)(v >> 16), (byte)(v >> 24), 0 };                   // LE
                case 2: return new byte[] { (byte)(v >> 24), (byte)(v >> 16), (byte)(v >> 8), (byte)v, 0 };                   // BE
                case 3: return new byte[] { 0x80, 0x80, 0x80, 0x80, (byte)rnd.Next(0, 16), 0 };                                 // 5-byte varint
                default: return new byte[] { 0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0x01 };                                              // 6-byte varint
            }
        }

        static byte[] Garbage(Random rnd)
        {
            if (rnd.Next(2) == 0) return BoundaryTail(rnd);
            var g = new byte[rnd.Next(0, 12)];
            rnd.NextBytes(g);
            // Bias towards interesting header values.
            if (g.Length >= 4 && rnd.Next(3) == 0) { g[2] = 0xFF; g[3] = 0xFF; }
            if (g.Length >= 1 && rnd.Next(3) == 0) g[g.Length - 1] |= 0x80;
            return g;
        }

        [Test]
        public void Standard_RandomStreams_AgreeWithNaiveModel()
        {
            var rnd = new Random(1234);
            for (int iter = 0; iter < 400; iter++)
            {
                long max = rnd.Next(3) == 0 ? rnd.Next(0, 400) : Limits.DefaultMaxPayload;
                var parts = new List<byte[]>();
                int frames = rnd.Next(0, 6);
                for (int i = 0; i < frames; i++)
                {
                    var p = new byte[RandomLength(rnd, 70000)];
                    rnd.NextBytes(p);
                    parts.Add(StandardEncoder.Encode((byte)rnd.Next(256), (byte)rnd.Next(256), p, long.MaxValue));
                }
                parts.Add(Garbage(rnd));
                byte[] s = T.Concat(parts.ToArray());
                DecodeResult expected = NaiveStandard(s, max == 0 ? Limits.DefaultMaxPayload : max);
                T.AssertSame(expected, T.Decode(new StandardDecoder(max), s, RandomCuts(rnd, s.Length)), "iteration " + iter);
            }
        }

        [Test]
        public void LengthField_RandomStreams_AgreeWithNaiveModel()
        {
            var rnd = new Random(5678);
            int[] sizes = { 1, 2, -2, 4, -4, 0 };
            for (int iter = 0; iter < 600; iter++)
            {
                var prof = new LengthFieldProfile(rnd.Next(3) == 0 ? rnd.Next(0, 5) : 0, sizes[rnd.Next(sizes.Length)]);
                long max = rnd.Next(3) == 0 ? rnd.Next(0, 400) : Limits.DefaultMaxPayload;
                var parts = new List<byte[]>();
                int frames = rnd.Next(0, 6);
                for (int i = 0; i < frames; i++)
                {
                    var p = new byte[RandomLength(rnd, (int)Math.Min(prof.Capacity, 70000))];
                    rnd.NextBytes(p);
                    byte[] f = LengthFieldEncoder.Encode(prof, p, long.MaxValue);
                    for (int k = 0; k < prof.Offset; k++) f[k] = (byte)rnd.Next(256); // header content is ignored
                    parts.Add(f);
                }
                parts.Add(Garbage(rnd));
                byte[] s = T.Concat(parts.ToArray());
                DecodeResult expected = NaiveLengthField(s, prof, max == 0 ? Limits.DefaultMaxPayload : max);
                T.AssertSame(expected, T.Decode(new LengthFieldDecoder(prof, max), s, RandomCuts(rnd, s.Length)), prof + " iteration " + iter);
            }
        }
    }
}
