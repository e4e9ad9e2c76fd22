using System;
using System.Collections.Generic;

namespace Frameproof.Codec
{
    /// <summary>
    /// The server's streaming decoder of a protocol as the micro-benchmark contract runs it
    /// (tools/bench/microbench.md, "decode"): bytes in, every frame's payload consumed into a checksum
    /// (its length and first byte), nothing else.
    /// </summary>
    public abstract class BenchDecoder : IDisposable
    {
        public long Checksum;
        public long Frames;

        /// <summary>Feeds one read; false if the decoder rejected it.</summary>
        public abstract bool Feed(ReadOnlySpan<byte> data);

        protected void Consume(ReadOnlySpan<byte> payload)
        {
            Frames++;
            Checksum += payload.Length + (payload.Length > 0 ? payload[0] : 0);
        }

        public virtual void Dispose() { }
    }

    /// <summary>The byte-level decoder (standard, length-field) behind <see cref="BenchDecoder"/>.</summary>
    sealed class FrameBenchDecoder : BenchDecoder, IFrameHandler
    {
        readonly FrameDecoder _d;
        public FrameBenchDecoder(FrameDecoder d) { _d = d; }
        public override bool Feed(ReadOnlySpan<byte> data) { return _d.Feed(data, this); }
        public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
        {
            // Consume(payload), inlined: Mono does not inline a call that passes a Span on.
            int n = payload.Length;
            Frames++;
            Checksum += n + (n > 0 ? payload[0] : 0);
        }
        public override void Dispose() { _d.Dispose(); }
    }

    /// <summary>A protocol-specific micro-benchmark case (websocket mask, utf8): one iteration, its checksum.</summary>
    public delegate long BenchIteration();

    /// <summary>The micro-benchmark members of a configured protocol (tools/bench/microbench.md). The
    /// defaults serve byte-level protocols (standard, length-field); typed ones override them.</summary>
    public abstract partial class FrameCodec
    {
        /// <summary>Request <paramref name="index"/> as the load client sends it (standard: flag 0x01,
        /// sequence index mod 256; length-field: the payload behind its length).</summary>
        public virtual byte[] BenchRequest(long index, ReadOnlySpan<byte> payload)
        {
            var r = new byte[EncodedLength(payload.Length)];
            WriteRequest((byte)index, payload, r);
            return r;
        }

        /// <summary>The server's streaming decoder, consuming payloads into a checksum.</summary>
        public virtual BenchDecoder NewBenchDecoder() { return new FrameBenchDecoder(NewDecoder()); }

        /// <summary>Bytes of the reply the server's echo path writes for a payload of this length.</summary>
        public virtual int BenchReplyLength(int payloadLength) { return EncodedLength(payloadLength); }

        /// <summary>The reply to request <paramref name="index"/> with the server's encoder, appended to
        /// the reply buffer <paramref name="dest"/> at <paramref name="offset"/> as the server's session
        /// appends to its output array. Default: a frame with flag 0 and the request's sequence (index
        /// mod 256); a protocol whose replies carry a flag of their own overrides it.</summary>
        public virtual int WriteBenchReply(long index, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return Write(0, (byte)index, payload, dest, offset);
        }

        /// <summary>Protocol-specific cases, by "op/payload/frames" (e.g. websocket "mask/1024/1").</summary>
        public virtual IDictionary<string, BenchIteration> BenchExtraCases { get { return new Dictionary<string, BenchIteration>(); } }
    }

    public abstract partial class ProtocolModule
    {
        /// <summary>The codec of the micro-benchmark cases of this payload size (the catalog's
        /// <c>Protocol.bench_codec</c>); default: the protocol's defaults.</summary>
        public virtual CodecSpec BenchSpec(int payload) { return CodecSpec.Named(Name); }
    }
}
