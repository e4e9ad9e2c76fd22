using System;
using System.Collections.Generic;
using System.Text;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    public struct Decoded
    {
        public byte Flag, Seq;
        public byte[] Payload;
    }

    /// <summary>Collects decoded frames.</summary>
    public sealed class FrameList : IFrameHandler
    {
        public readonly List<Decoded> Frames = new List<Decoded>();
        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            Frames.Add(new Decoded { Flag = flag, Seq = sequence, Payload = payload.ToArray() });
        }
    }

    public sealed class DecodeResult
    {
        public List<Decoded> Frames;
        public ProtocolError Error; // IsSet when rejected
    }

    /// <summary>A load channel's observer that writes each event as a line: "reply ID TEXT" (TEXT: what
    /// <c>reply</c> makes of the opcode/flag and the payload), "timeout ID", "failed ID", "unmatched",
    /// "rejected ID: WHY".</summary>
    public sealed class ClientLog : IClientObserver
    {
        public readonly List<string> Log = new List<string>();
        readonly Func<byte, byte[], string> _reply;
        public ClientLog(Func<byte, byte[], string> reply) { _reply = reply; }
        public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload) { Log.Add("reply " + id + " " + _reply(flag, payload.ToArray())); }
        public void OnTimeout(RequestId id, object state) { Log.Add("timeout " + id); }
        public void OnFailed(RequestId id, object state) { Log.Add("failed " + id); }
        public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { Log.Add("unmatched"); }
        public void OnRejectedReply(RequestId id, object state, string why) { Log.Add("rejected " + id + ": " + why); }
    }

    public static class T
    {
        public static byte[] Hex(string s)
        {
            s = s.Replace(" ", "");
            var b = new byte[s.Length / 2];
            for (int i = 0; i < b.Length; i++) b[i] = Convert.ToByte(s.Substring(2 * i, 2), 16);
            return b;
        }

        public static string ToHex(byte[] b)
        {
            var sb = new StringBuilder();
            foreach (byte x in b) sb.Append(x.ToString("X2"));
            return sb.ToString();
        }

        public static byte[] Ascii(string s) { return Encoding.UTF8.GetBytes(s); }

        public static byte[] Concat(params byte[][] parts)
        {
            int n = 0;
            foreach (var p in parts) n += p.Length;
            var r = new byte[n];
            int o = 0;
            foreach (var p in parts) { Buffer.BlockCopy(p, 0, r, o, p.Length); o += p.Length; }
            return r;
        }

        public static byte[] Pattern(int n, int seed = 0)
        {
            var r = new byte[n];
            for (int i = 0; i < n; i++) r[i] = (byte)(i * 7 + seed * 13 + 1);
            return r;
        }

        /// <summary>Feeds the stream split at the given cut points, then finishes.</summary>
        public static DecodeResult Decode(FrameDecoder dec, byte[] stream, params int[] cuts)
        {
            var fl = new FrameList();
            int prev = 0;
            bool ok = true;
            var points = new List<int>(cuts);
            points.Add(stream.Length);
            foreach (int c in points)
            {
                if (!dec.Feed(new ReadOnlySpan<byte>(stream, prev, c - prev), fl)) { ok = false; break; }
                prev = c;
            }
            if (ok) ok = dec.Finish();
            return new DecodeResult { Frames = fl.Frames, Error = ok ? default(ProtocolError) : dec.Error };
        }

        /// <summary>Feeds the stream one byte at a time.</summary>
        public static DecodeResult DecodeBytewise(FrameDecoder dec, byte[] stream)
        {
            var cuts = new int[Math.Max(0, stream.Length - 1)];
            for (int i = 0; i < cuts.Length; i++) cuts[i] = i + 1;
            return Decode(dec, stream, cuts);
        }

        public static void AssertSame(DecodeResult expected, DecodeResult actual, string context)
        {
            Assert.AreEqual(expected.Frames.Count, actual.Frames.Count, context + ": frame count");
            for (int i = 0; i < expected.Frames.Count; i++)
            {
                Assert.AreEqual(expected.Frames[i].Flag, actual.Frames[i].Flag, context + ": flag of frame " + i);
                Assert.AreEqual(expected.Frames[i].Seq, actual.Frames[i].Seq, context + ": seq of frame " + i);
                // Fast comparison first: NUnit's element-wise array comparison is slow on big payloads.
                if (!new ReadOnlySpan<byte>(expected.Frames[i].Payload).SequenceEqual(actual.Frames[i].Payload))
                    Assert.AreEqual(expected.Frames[i].Payload, actual.Frames[i].Payload, context + ": payload of frame " + i);
            }
            Assert.AreEqual(expected.Error.Requirement, actual.Error.Requirement, context + ": error");
            Assert.AreEqual(expected.Error.Offset, actual.Error.Offset, context + ": error offset");
        }
    }
}
