using System;
using System.Collections.Generic;
using System.Security.Cryptography;
using Frameproof.Codec;

namespace Frameproof.Testee
{
    /// <summary>A long-stream request (spec/testee.md, "long stream", harness v3): <c>cycle</c> ×
    /// <c>repeat</c>, then <c>tail</c>, fed to one decoder in splitmix64-sized reads.</summary>
    public sealed class LongStreamRequestMsg
    {
        public CodecConfig Codec = new CodecConfig();
        public byte[] Cycle = new byte[0];
        public ulong Repeat;
        public byte[] Tail = new byte[0];
        public ulong Seed;
        public uint MaxChunk;

        public static LongStreamRequestMsg Parse(ProtoReader r)
        {
            var m = new LongStreamRequestMsg();
            while (!r.AtEnd)
            {
                int f, wt; r.ReadTag(out f, out wt);
                switch (f)
                {
                    case 1: ProtoReader.Expect(wt, 2, f); m.Codec = CodecConfig.Parse(r.ReadMessage()); break;
                    case 2: ProtoReader.Expect(wt, 2, f); m.Cycle = r.ReadBytes(); break;
                    case 3: ProtoReader.Expect(wt, 0, f); m.Repeat = r.ReadVarint(); break;
                    case 4: ProtoReader.Expect(wt, 2, f); m.Tail = r.ReadBytes(); break;
                    case 5: ProtoReader.Expect(wt, 0, f); m.Seed = r.ReadVarint(); break;
                    case 6: ProtoReader.Expect(wt, 0, f); m.MaxChunk = (uint)r.ReadVarint(); break;
                    default: r.Skip(wt); break;
                }
            }
            return m;
        }
    }

    /// <summary>The answer: what the decoder delivered, its payloads hashed, none kept.</summary>
    public sealed class LongStreamResponseMsg
    {
        public ulong Frames, PayloadBytes, Fed;
        public byte[] Digest = new byte[0];
        public FrameMsg Last;
        public ErrorMsg Error;

        public ProtoWriter ToWriter()
        {
            var w = new ProtoWriter();
            w.UInt64(1, Frames); w.UInt64(2, PayloadBytes); w.Bytes(3, Digest);
            if (Last != null) w.Message(4, Last.ToWriter());
            if (Error != null) w.Message(5, Error.ToWriter());
            w.UInt64(6, Fed);
            return w;
        }
    }

    /// <summary>Runs a long stream through one decoder of the request's codec.</summary>
    public static class LongStream
    {
        const uint MaxChunkLimit = 16u << 20;

        /// <summary>splitmix64: the generator spec/testee.md gives for the reads' sizes.</summary>
        public sealed class SplitMix64
        {
            ulong _state;
            public SplitMix64(ulong seed) { _state = seed; }
            public ulong Next()
            {
                unchecked
                {
                    _state += 0x9E3779B97F4A7C15UL;
                    ulong z = _state;
                    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
                    z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
                    return z ^ (z >> 31);
                }
            }
        }

        /// <summary>The stream's reads, in order, each written into one reused buffer.</summary>
        public static IEnumerable<ArraySegment<byte>> Reads(byte[] cycle, ulong repeat, byte[] tail, ulong seed, uint maxChunk)
        {
            ulong body = checked((ulong)cycle.Length * repeat);
            ulong total = checked(body + (ulong)tail.Length);
            var rnd = new SplitMix64(seed);
            var buf = new byte[maxChunk];
            ulong pos = 0;
            while (pos < total)
            {
                int n = (int)Math.Min(1 + rnd.Next() % maxChunk, total - pos);
                int at = 0;
                while (at < n)
                {
                    ulong p = pos + (ulong)at;
                    int take;
                    if (p < body)
                    {
                        int c = (int)(p % (ulong)cycle.Length);
                        take = (int)Math.Min((ulong)Math.Min(cycle.Length - c, n - at), body - p);
                        Buffer.BlockCopy(cycle, c, buf, at, take);
                    }
                    else
                    {
                        take = n - at;
                        Buffer.BlockCopy(tail, (int)(p - body), buf, at, take);
                    }
                    at += take;
                }
                pos += (ulong)n;
                yield return new ArraySegment<byte>(buf, 0, n);
            }
        }

        /// <summary>The answer to <paramref name="req"/>, or the reason it cannot run (skipped).</summary>
        public static TesteeResponseMsg Run(LongStreamRequestMsg req)
        {
            if (req.Cycle.Length == 0 || req.MaxChunk == 0 || req.MaxChunk > MaxChunkLimit)
                return new TesteeResponseMsg { Kind = ResponseKind.RuntimeError,
                    Text = "a long stream needs a non-empty cycle and max_chunk 1.." + MaxChunkLimit };
            FrameCodec codec = Registry.Create(req.Codec.ToSpec());
            if (codec == null)
                return new TesteeResponseMsg { Kind = ResponseKind.Skipped, Text = "protocol '" + req.Codec.Protocol + "' not implemented" };
            var hash = new Hasher();
            var outMsg = new LongStreamResponseMsg();
            IEnumerable<ArraySegment<byte>> reads = Counted(Reads(req.Cycle, req.Repeat, req.Tail, req.Seed, req.MaxChunk), outMsg);
            ProtocolError err;
            if (codec.ConfigError.IsSet) err = codec.ConfigError;
            else if (codec.Typed != null)
            {
                FrameValue last = null;
                err = codec.Typed.DecodeReads(reads, f => { hash.Add(f.Payload, 0, f.Payload.Length); last = f; }, false);
                if (last != null) outMsg.Last = FrameMsg.From(last);
            }
            else
            {
                using (FrameDecoder dec = codec.NewDecoder())
                {
                    err = default(ProtocolError);
                    foreach (ArraySegment<byte> r in reads)
                    {
                        if (!dec.Feed(new ReadOnlySpan<byte>(r.Array, r.Offset, r.Count), hash)) { err = dec.Error; break; }
                    }
                    if (hash.HasLast) outMsg.Last = new FrameMsg { Flag = hash.LastFlag, Sequence = hash.LastSequence, Payload = hash.LastPayload() };
                }
            }
            outMsg.Frames = hash.Frames;
            outMsg.PayloadBytes = hash.Bytes;
            outMsg.Digest = hash.Finish();
            if (err.IsSet) outMsg.Error = ErrorMsg.From(err);
            return new TesteeResponseMsg { Kind = ResponseKind.LongStream, LongStream = outMsg };
        }

        static IEnumerable<ArraySegment<byte>> Counted(IEnumerable<ArraySegment<byte>> reads, LongStreamResponseMsg out_)
        {
            foreach (ArraySegment<byte> r in reads)
            {
                out_.Fed += (ulong)r.Count;
                yield return r;
            }
        }

        /// <summary>SHA-256 over the payloads as they come (the frames of standard and length-field
        /// arrive as spans, copied into one reused array for the hash), and the last frame.</summary>
        sealed class Hasher : IFrameHandler
        {
            readonly SHA256 _sha = SHA256.Create();
            byte[] _copy = new byte[64 * 1024];
            int _lastLength;
            public ulong Frames, Bytes;
            public bool HasLast;
            public uint LastFlag, LastSequence;

            public void Add(byte[] b, int offset, int count)
            {
                _sha.TransformBlock(b, offset, count, null, 0);
                Frames++;
                Bytes += (ulong)count;
            }

            public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
            {
                if (_copy.Length < payload.Length) _copy = new byte[payload.Length];
                payload.CopyTo(_copy);
                Add(_copy, 0, payload.Length);
                HasLast = true; LastFlag = flag; LastSequence = sequence; _lastLength = payload.Length;
            }

            public byte[] LastPayload()
            {
                var p = new byte[_lastLength];
                Buffer.BlockCopy(_copy, 0, p, 0, _lastLength);
                return p;
            }

            public byte[] Finish()
            {
                _sha.TransformFinalBlock(new byte[0], 0, 0);
                return _sha.Hash;
            }
        }
    }
}
