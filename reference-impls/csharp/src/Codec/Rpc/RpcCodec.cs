using System;
using System.Buffers;
using System.Buffers.Binary;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Frameproof.Codec
{
    /// <summary>`rpc` with its configuration (rpc.max_body). Its frames carry a typed header, so the
    /// testee uses <see cref="Typed"/>; the byte-level (flag, sequence) members of
    /// <see cref="FrameCodec"/> do not apply to it and say so.</summary>
    public sealed class RpcCodec : FrameCodec, ITypedFrames
    {
        public readonly long MaxBody;

        public RpcCodec(CodecSpec spec) : base(spec)
        {
            var p = spec.Params as RpcParams;
            MaxBody = p == null || p.MaxBody <= 0 ? RpcTypes.DefaultMaxBody : p.MaxBody;
        }

        public override ITypedFrames Typed { get { return this; } }

        /// <summary>The largest frame body the server accepts (rpc.max_body).</summary>
        public override long LargestInput { get { return MaxBody; } }

        // ---------------------------------------------------------------- byte-level members

        const string NotByteLevel = "rpc frames carry a typed header: use RpcDecoder / RpcMatcher (FrameCodec.Typed)";

        public override FrameDecoder NewDecoder() { throw new NotSupportedException(NotByteLevel); }

        /// <summary>A REQUEST to frameproof.Echo/echo with a payload of this length fits the limit.</summary>
        public override bool CheckPayload(long payloadLength, out ProtocolError error)
        {
            return RpcEncoder.Check(1, RpcTypes.Request, 0, RpcTypes.EchoService.Length, RpcTypes.EchoMethod.Length, payloadLength, MaxBody, out error);
        }

        /// <summary>Length of an echo REQUEST with this payload.</summary>
        public override int EncodedLength(int payloadLength)
        {
            return RpcTypes.HeaderLength + (int)RpcEncoder.BodyLength(RpcTypes.Request, RpcTypes.EchoService.Length, RpcTypes.EchoMethod.Length, payloadLength);
        }

        /// <summary>An echo REQUEST with flags = <paramref name="flag"/> and id = <paramref name="sequence"/>.</summary>
        public override int Write(byte flag, byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return WriteEchoRequest(sequence, flag, payload, dest);
        }

        public static int WriteEchoRequest(uint id, uint flags, ReadOnlySpan<byte> payload, Span<byte> dest)
        {
            return RpcEncoder.Write(RpcTypes.Request, flags, 0, id, 0, RpcTypes.EchoService, RpcTypes.EchoMethod, payload, dest);
        }

        public override IRequestMatcher NewMatcher(IMatchObserver observer, long timeoutMs) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteRequest(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException(NotByteLevel); }
        public override int WriteOneWay(byte sequence, ReadOnlySpan<byte> payload, Span<byte> dest) { throw new NotSupportedException("rpc has no one-way call"); }

        // ---------------------------------------------------------------- micro-benchmarks (tools/bench/microbench.md)

        /// <summary>A unary echo REQUEST with id <paramref name="index"/>, flags 0, as fp-load sends it.</summary>
        public override byte[] BenchRequest(long index, ReadOnlySpan<byte> payload)
        {
            var r = new byte[EncodedLength(payload.Length)];
            WriteEchoRequest((uint)index, 0, payload, r);
            return r;
        }

        sealed class BenchRpcDecoder : BenchDecoder, IRpcFrameHandler
        {
            readonly RpcDecoder _d;
            public BenchRpcDecoder(long maxBody) { _d = new RpcDecoder(maxBody); }
            public override bool Feed(ReadOnlySpan<byte> data) { return _d.Feed(data, this); }
            public bool OnFrame(ref RpcFrame f)
            {
                // Consume(f.Payload), inlined: Mono does not inline a call that passes a Span on.
                int n = f.Payload.Length;
                Frames++;
                Checksum += n + (n > 0 ? f.Payload[0] : 0);
                return true;
            }
            public override void Dispose() { _d.Dispose(); }
        }

        public override BenchDecoder NewBenchDecoder() { return new BenchRpcDecoder(MaxBody); }

        public override int BenchReplyLength(int payloadLength) { return RpcTypes.HeaderLength + 2 + payloadLength; }

        /// <summary>The unary endpoint's RESPONSE: code 0, flags END_STREAM, the request's id (RpcSession's reply path).</summary>
        public override int WriteBenchReply(long index, ReadOnlySpan<byte> payload, byte[] dest, int offset)
        {
            return RpcEncoder.WriteResponse(RpcTypes.EndStream, (uint)index, RpcTypes.CodeOk, payload, dest, offset);
        }
        public override int MaxInFlight { get { return 1 << 16; } }

        // ---------------------------------------------------------------- load client

        /// <summary>The call modes 0..3 (spec/rpc.md §7, RPC-MODE-1).</summary>
        public override string[] LoadVariants { get { return new[] { "unary", "client-stream", "server-stream", "bidi" }; } }

        public override ClientChannel NewClientChannel(IClientObserver observer, long timeoutMs, int variant)
        {
            return new RpcClientChannel(this, observer, timeoutMs, variant);
        }

        /// <summary>RPC-MATCH-2: an unmatched RESPONSE is neither a reply nor an error of the load client.</summary>
        public override bool UnmatchedIsLoadError { get { return false; } }

        public override StreamClient NewStreamClient(int variant) { return new RpcStreamClient(MaxBody); }

        // ---------------------------------------------------------------- server

        /// <summary>The network server's session: the first frame picks the endpoint (RPC-ECHO-7).</summary>
        public override ServerSession NewSession(bool sink) { return new RpcSession(MaxBody, RpcSession.Endpoint.Auto, sink); }

        /// <summary>serve endpoints: "" and "unary" (the default), "stream".</summary>
        public override ServerSession NewSession(string endpoint, bool sink)
        {
            if (endpoint == "" || endpoint == "unary") return new RpcSession(MaxBody, RpcSession.Endpoint.Unary, sink);
            if (endpoint == "stream") return new RpcSession(MaxBody, RpcSession.Endpoint.Stream, sink);
            return null;
        }

        // ---------------------------------------------------------------- typed frames (testee)

        sealed class Forward : IRpcFrameHandler
        {
            public Action<FrameValue> To;
            public bool OnFrame(ref RpcFrame f) { To(f.ToValue()); return true; }
        }

        public ProtocolError DecodeReads(IEnumerable<ArraySegment<byte>> reads, Action<FrameValue> onFrame, bool finish)
        {
            var c = new Forward { To = onFrame };
            using (var d = new RpcDecoder(MaxBody))
            {
                foreach (ArraySegment<byte> ch in reads)
                    if (!d.Feed(new ReadOnlySpan<byte>(ch.Array, ch.Offset, ch.Count), c)) return d.Error;
                return finish && !d.Finish() ? d.Error : default(ProtocolError);
            }
        }

        static RpcHeader HeaderOf(FrameValue f)
        {
            return f.Header as RpcHeader ?? new RpcHeader { Version = 0, Type = 0 };
        }

        public EncodeOutcome Encode(FrameValue frame)
        {
            var r = new EncodeOutcome();
            byte[] bytes;
            ProtocolError err;
            if (RpcEncoder.Encode(HeaderOf(frame), frame.Payload ?? new byte[0], MaxBody, out bytes, out err)) r.Encoded = bytes;
            else r.Error = err;
            return r;
        }

        sealed class Recorder : IRpcMatchObserver
        {
            public MatchOutcome Out;
            public void OnReply(long request, object state, ref RpcFrame f)
            {
                Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Reply, Request = (uint)request, Frame = f.ToValue() });
            }
            public void OnTimeout(long request, object state) { Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Timeout, Request = (uint)request }); }
            public void OnFailed(long request, object state) { Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Failed, Request = (uint)request }); }
            public void OnUnmatched(ref RpcFrame f) { Out.Completions.Add(new MatchCompletion { Kind = CompletionKind.Unmatched, Frame = f.ToValue() }); }
        }

        /// <summary>spec/testee.md match for rpc: <c>send(p)</c> is a plain call (frameproof.Echo/echo,
        /// flags 0x04), <c>send_frame(f)</c> a REQUEST with f's service, method and flags (another
        /// type is refused), <c>send_one_way</c> is refused. A refused send takes no id.</summary>
        public MatchOutcome Match(long timeoutMs, IList<MatchStep> steps)
        {
            var rec = new Recorder { Out = new MatchOutcome() };
            MatchOutcome r = rec.Out;
            var m = new RpcMatcher(rec, timeoutMs);
            long now = 0;
            uint index = 0;
            using (var dec = new RpcDecoder(MaxBody))
            {
                foreach (MatchStep s in steps)
                {
                    switch (s.Kind)
                    {
                        case MatchStepKind.Send:
                        case MatchStepKind.SendOneWay:
                        case MatchStepKind.SendFrame:
                            {
                                uint n = index++;
                                byte[] bytes = null;
                                uint id;
                                if (s.Kind != MatchStepKind.SendOneWay && m.TryNextId(out id))
                                {
                                    RpcHeader h;
                                    byte[] payload;
                                    if (s.Kind == MatchStepKind.Send)
                                    {
                                        h = new RpcHeader { Type = RpcTypes.Request, Flags = RpcTypes.EndStream, Service = RpcTypes.EchoService, Method = RpcTypes.EchoMethod };
                                        payload = s.Bytes;
                                    }
                                    else
                                    {
                                        RpcHeader g = HeaderOf(s.Frame);
                                        h = g.Type == RpcTypes.Request ? new RpcHeader { Type = RpcTypes.Request, Flags = g.Flags, Service = g.Service, Method = g.Method } : null;
                                        payload = s.Frame.Payload ?? new byte[0];
                                    }
                                    ProtocolError err;
                                    if (h != null)
                                    {
                                        h.Id = id;
                                        if (RpcEncoder.Encode(h, payload, MaxBody, out bytes, out err)) m.Sent(id, n, null, now);
                                        else bytes = null;
                                    }
                                }
                                if (bytes == null)
                                {
                                    r.Sent.Add(new byte[0]);
                                    r.Completions.Add(new MatchCompletion { Kind = CompletionKind.Refused, Request = n });
                                }
                                else r.Sent.Add(bytes);
                                break;
                            }
                        case MatchStepKind.Receive:
                            if (m.Failed) break;
                            if (!dec.Feed(s.Bytes, m))
                            {
                                r.Error = dec.Error;
                                m.FailAll();
                            }
                            break;
                        case MatchStepKind.AdvanceMs:
                            now += s.AdvanceMs;
                            if (!m.Failed) m.Expire(now);
                            break;
                    }
                }
            }
            return r;
        }
    }
}
