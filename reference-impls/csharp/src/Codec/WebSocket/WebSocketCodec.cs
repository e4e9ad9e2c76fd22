using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Text;

namespace Frameproof.Codec
{
    /// <summary>`websocket` with its configuration: limits.max_payload (one frame), websocket.role and
    /// websocket.max_message. Frames carry a typed header (<see cref="Typed"/>); the byte-level
    /// (flag, sequence) members of <see cref="FrameCodec"/> do not apply and say so.</summary>
    public sealed class WebSocketCodec : FrameCodec, ITypedFrames
    {
        public readonly bool Client;
        public readonly long MaxFrame, MaxMessage;
        /// <summary>The echo service's path and subprotocol (websocket.path, websocket.subprotocol; null: not set).</summary>
        public readonly string Path, Subprotocol;
        /// <summary>websocket.permessage_deflate: the network server accepts permessage-deflate (spec/websocket-deflate.md).</summary>
        public readonly bool PermessageDeflate;

        public WebSocketCodec(CodecSpec spec) : base(spec)
        {
            var p = spec.Params as WebSocketParams;
            Client = p != null && p.Client;
            MaxFrame = spec.MaxPayload <= 0 ? WsOpcodes.DefaultMaxFrame : spec.MaxPayload;
            MaxMessage = p == null || p.MaxMessage <= 0 ? WsOpcodes.DefaultMaxMessage : p.MaxMessage;
            Path = p == null ? null : p.Path;
            Subprotocol = p == null ? null : p.Subprotocol;
            PermessageDeflate = p != null && p.PermessageDeflate;
        }

        public override ITypedFrames Typed { get { return this; } }

        /// <summary>The largest message the server accepts (websocket.max_message, WS-RES-1).</summary>
        public override long LargestInput { get { return MaxMessage; } }

        // ---------------------------------------------------------------- byte-level members

        const string NotByteLevel = "websocket frames carry a typed header: use WsDecoder / WsEncoder (FrameCodec.Typed)";

        public override FrameDecoder NewDecoder() { throw new NotSupportedException(NotByteLevel); }

        /// <summary>A data frame with a payload of this length fits the frame limit (WS-LIM-3).</summary>
        public override bool CheckPayload(long payloadLength, out ProtocolError error)
        {
            return WsEncoder.Check(true, 0, WsOpcodes.Binary, true, 4, payloadLength, MaxFrame, out error);
        }

        /// <summary>A masked (client) data frame with this payload.</summary>
        public override int EncodedLength(int payloadLength) { return WsEncoder.HeaderLength(payloadLength, true) + payloadLength; }

        /// <summary>An unmasked FIN frame with opcode <paramref name="flag"/>.</summary>
        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return WsEncoder.Write(true, flag, ReadOnlySpan<byte>.Empty, payload, dest);
        }

        public override IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException(NotByteLevel); }

        // ---------------------------------------------------------------- micro-benchmarks (tools/bench/microbench.md)

        /// <summary>The mask key of the benchmark catalog's websocket cases (tools/bench/microbench.md).</summary>
        static readonly byte[] CatalogMaskKey = { 0x12, 0x34, 0x56, 0x78 };

        /// <summary>One FIN binary frame, masked with the catalog's key 12 34 56 78.</summary>
        public override byte[] BenchRequest(long index, ReadOnlySpan<byte> payload)
        {
            var r = new byte[WsEncoder.HeaderLength(payload.Length, true) + payload.Length];
            WsEncoder.Write(true, WsOpcodes.Binary, CatalogMaskKey, payload, r);
            return r;
        }

        sealed class BenchWsDecoder : BenchDecoder, IWsFrameHandler
        {
            readonly WsDecoder _d;
            public BenchWsDecoder(long maxFrame, long maxMessage) { _d = new WsDecoder(true, maxFrame, maxMessage); }
            public override bool Feed(ReadOnlySpan<byte> data) { return _d.Feed(data, this); }
            public bool OnFrame(ref WsFrame f)
            {
                // Consume(f.Payload), inlined: Mono does not inline a call that passes a Span on.
                int n = f.Payload.Length;
                Frames++;
                Checksum += n + (n > 0 ? f.Payload[0] : 0);
                return true;
            }
            public override void Dispose() { _d.Dispose(); }
        }

        /// <summary>The server role's decoder (masked frames in, payloads unmasked).</summary>
        public override BenchDecoder NewBenchDecoder() { return new BenchWsDecoder(MaxFrame, MaxMessage); }

        public override int BenchReplyLength(int payloadLength) { return WsEncoder.HeaderLength(payloadLength, false) + payloadLength; }

        /// <summary>The echo: one unmasked FIN binary frame (WsEchoSession's reply path).</summary>
        public override unsafe int WriteBenchReply(long index, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return WsEncoder.Write(true, WsOpcodes.Binary, null, payload, dest, offset);
        }

        /// <summary>mask/1024/1 (WsMask, the decoder's unmasking routine) and utf8/67/1, utf8/71/1 (the
        /// validator of text messages), with the catalog's key and texts.</summary>
        public override IDictionary<string, BenchIteration> BenchExtraCases
        {
            get
            {
                var buf = new byte[1024];
                for (int i = 0; i < buf.Length; i++) buf[i] = (byte)i;
                byte[] ascii = Encoding.UTF8.GetBytes("Hello World! This is a test message for UTF-8 validation benchmark.");
                byte[] mixed = Encoding.UTF8.GetBytes("Hello \u4e16\u754c! \u8fd9\u662f\u4e00\u4e2a\u7528\u4e8e UTF-8 \u9a8c\u8bc1\u7684\u6d4b\u8bd5\u6d88\u606f, mixed ok.");
                return new Dictionary<string, BenchIteration>
                {
                    { "mask/" + buf.Length + "/1", () => { WsMask.Apply(buf, buf, CatalogMaskKey, 0); return buf[buf.Length - 1]; } },
                    { "utf8/" + ascii.Length + "/1", () => Utf8Validator.IsValid(ascii) ? 1 : 0 },
                    { "utf8/" + mixed.Length + "/1", () => Utf8Validator.IsValid(mixed) ? 1 : 0 },
                };
            }
        }
        /// <summary>The load client's bound on pipelined messages: the pending bound of the FIFO
        /// matcher that pairs its echoes (<see cref="WsClientChannel"/>).</summary>
        public override int MaxInFlight { get { return FifoMatcher.DefaultPendingBound; } }

        // ---------------------------------------------------------------- load client

        /// <summary>binary (default): the load payloads as they are; text: the lowercase hex of them;
        /// prose: English words (<see cref="ProsePayload"/>).</summary>
        public override string[] LoadVariants { get { return new[] { "binary", "text", "prose" }; } }

        public override ClientChannel NewClientChannel(IClientObserver observer, long timeoutMs, int variant)
        {
            return new WsClientChannel(this, observer, timeoutMs, variant != 0);
        }

        [ThreadStatic] static byte[] _binary;

        /// <summary>text: the first <c>dst.Length</c> characters of the lowercase hex of the binary
        /// payload of that index (valid UTF-8, unique per index).</summary>
        public override void FillLoadPayload(int variant, long index, Span<byte> dst)
        {
            if (variant == 2) { ProsePayload.Fill(index, dst); return; }
            if (variant != 1) { base.FillLoadPayload(variant, index, dst); return; }
            if (_binary == null || _binary.Length < dst.Length) _binary = new byte[Math.Max(64, dst.Length)];
            Span<byte> b = new Span<byte>(_binary, 0, dst.Length);
            Payloads.Fill(index, b);
            for (int i = 0; i < dst.Length; i++)
            {
                int v = (b[i >> 1] >> ((i & 1) == 0 ? 4 : 0)) & 15;
                dst[i] = (byte)(v < 10 ? '0' + v : 'a' + v - 10);
            }
        }

        public override bool VerifyLoadPayload(int variant, long index, int length, ReadOnlySpan<byte> payload)
        {
            if (variant == 2) return ProsePayload.Matches(index, length, payload);
            if (variant != 1) return base.VerifyLoadPayload(variant, index, length, payload);
            if (payload.Length != length) return false;
            var expect = new byte[length];
            FillLoadPayload(variant, index, expect);
            return payload.SequenceEqual(expect);
        }

        // ---------------------------------------------------------------- server

        /// <summary>The network server's session: opening handshake, then the echo service (server role).</summary>
        public override ServerSession NewSession(bool sink)
        {
            return new WsEchoSession(false, MaxFrame, MaxMessage, true, sink) { Path = Path, Subprotocol = Subprotocol ?? WsHandshake.Subprotocol, Deflate = PermessageDeflate && !sink };
        }

        /// <summary>serve: the echo endpoint ("" or "echo"), server role, after the handshake.</summary>
        public override ServerSession NewSession(string endpoint, bool sink)
        {
            return endpoint == "" || endpoint == "echo" ? new WsEchoSession(false, MaxFrame, MaxMessage, false, sink) : null;
        }

        // ---------------------------------------------------------------- typed frames (testee)

        sealed class Forward : IWsFrameHandler
        {
            public Action<FrameValue> To;
            public bool OnFrame(ref WsFrame f) { To(f.ToValue()); return true; }
        }

        /// <summary>decode: receives as the codec's role.</summary>
        public ProtocolError DecodeReads(IEnumerable<ArraySegment<byte>> reads, Action<FrameValue> onFrame, bool finish)
        {
            var c = new Forward { To = onFrame };
            using (var d = new WsDecoder(!Client, MaxFrame, MaxMessage))
            {
                foreach (ArraySegment<byte> ch in reads)
                    if (!d.Feed(new ReadOnlySpan<byte>(ch.Array, ch.Offset, ch.Count), c)) return d.Error;
                return finish && !d.Finish() ? d.Error : default(ProtocolError);
            }
        }

        /// <summary>encode: the frame exactly as given, its MASK bit and key included.</summary>
        public EncodeOutcome Encode(FrameValue frame)
        {
            var r = new EncodeOutcome();
            WebSocketHeader h = frame.Header as WebSocketHeader ?? new WebSocketHeader();
            byte[] p = frame.Payload ?? new byte[0];
            byte[] key = h.MaskKey ?? new byte[0];
            ProtocolError err;
            if (!WsEncoder.Check(h.Fin, h.Rsv, h.Opcode, h.Masked, key.Length, p.Length, MaxFrame, out err)) { r.Error = err; return r; }
            var bytes = new byte[WsEncoder.HeaderLength(p.Length, h.Masked) + p.Length];
            WsEncoder.Write(h.Fin, (byte)h.Opcode, key, p, bytes);
            r.Encoded = bytes;
            return r;
        }

        public MatchOutcome Match(long timeoutMs, IList<MatchStep> steps)
        {
            return new MatchOutcome { Skipped = "websocket has no client-side request matching (spec/websocket.md §1)" };
        }
    }
}
