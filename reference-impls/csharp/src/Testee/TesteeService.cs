using System;
using System.Collections.Generic;
using Frameproof.Codec;

namespace Frameproof.Testee
{
    /// <summary>Answers testee requests (spec/testee.md, harness v1 to v3) with the protocols of the
    /// <see cref="Registry"/>; nothing here depends on which protocol a request is about.</summary>
    public static class TesteeService
    {
        public const string Name = "frameproof-csharp";
        public const string Version = "0.1.0";
        /// <summary>The highest harness version this testee speaks.</summary>
        public const uint MaxHarnessVersion = 3;

        public static TesteeResponseMsg Handle(TesteeRequestMsg req)
        {
            try
            {
                switch (req.Kind)
                {
                    case RequestKind.Hello: return Hello(req);
                    case RequestKind.Decode: return Decode(req);
                    case RequestKind.Encode: return Encode(req);
                    case RequestKind.Match: return Match(req);
                    case RequestKind.Serve: return Serve(req);
                    case RequestKind.Discovery: return Discovery(req);
                    case RequestKind.LongStream: return LongStream.Run(req.LongStream);
                    default: return Skipped("unknown request");
                }
            }
            catch (Exception e)
            {
                return new TesteeResponseMsg { Kind = ResponseKind.RuntimeError, Text = e.GetType().Name + ": " + e.Message };
            }
        }

        static TesteeResponseMsg Skipped(string why) { return new TesteeResponseMsg { Kind = ResponseKind.Skipped, Text = why }; }

        /// <summary>The highest version both speak (the runner's max_harness_version, at least 1).</summary>
        static TesteeResponseMsg Hello(TesteeRequestMsg req)
        {
            uint version = Math.Max(1u, Math.Min(req.MaxHarnessVersion, MaxHarnessVersion));
            var r = new TesteeResponseMsg { Kind = ResponseKind.Hello, HarnessVersion = version, Name = Name, Version = Version };
            r.Protocols.AddRange(Registry.Names);
            r.Features.Add("decode"); r.Features.Add("encode"); r.Features.Add("match");
            if (version >= 2) { r.Features.Add("serve"); r.Features.Add("discovery"); r.Features.Add("discovery-etcd"); }
            // the rpc unary endpoint registers "unary_only" for call mode 0 only (RPC-ECHO-8)
            if (version >= 2) r.Features.Add("rpc-unary-only");
            if (version >= 3) r.Features.Add("long-stream");
            return r;
        }

        /// <summary>A registry script (spec/testee.md, "discovery") on a fresh in-process registry, or
        /// with <c>etcd</c> set on a fresh etcd-backed one (feature discovery-etcd).</summary>
        static TesteeResponseMsg Discovery(TesteeRequestMsg req)
        {
            if (req.Discovery.HasEtcd)
                return new TesteeResponseMsg { Kind = ResponseKind.Discovery, Discovery = DiscoveryScript.RunEtcd(req.Discovery) };
            return new TesteeResponseMsg { Kind = ResponseKind.Discovery, Discovery = DiscoveryScript.Run(req.Discovery.Ops) };
        }

        /// <summary>The request's codec, or null (then <paramref name="skipped"/> is the answer).</summary>
        static FrameCodec CodecOf(TesteeRequestMsg req, out TesteeResponseMsg skipped)
        {
            FrameCodec codec = Registry.Create(req.Codec.ToSpec());
            skipped = codec == null ? Skipped("protocol '" + req.Codec.Protocol + "' not implemented") : null;
            return codec;
        }

        sealed class Collector : IFrameHandler
        {
            public readonly List<FrameMsg> Frames = new List<FrameMsg>();
            public void OnFrame(byte flag, byte sequence, ReadOnlySpan<byte> payload)
            {
                Frames.Add(new FrameMsg { Flag = flag, Sequence = sequence, Payload = payload.ToArray() });
            }
        }

        static TesteeResponseMsg Decode(TesteeRequestMsg req)
        {
            TesteeResponseMsg skipped;
            FrameCodec codec = CodecOf(req, out skipped);
            if (codec == null) return skipped;
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Decode };
            if (codec.ConfigError.IsSet) { resp.Error = ErrorMsg.From(codec.ConfigError); return resp; }
            if (codec.Typed != null)
            {
                DecodeOutcome d = codec.Typed.Decode(req.Chunks);
                foreach (FrameValue f in d.Frames) resp.Frames.Add(FrameMsg.From(f));
                if (d.Error.IsSet) resp.Error = ErrorMsg.From(d.Error);
                return resp;
            }
            using (FrameDecoder dec = codec.NewDecoder())
            {
                var sink = new Collector();
                bool ok = true;
                foreach (byte[] chunk in req.Chunks)
                {
                    if (!dec.Feed(chunk, sink)) { ok = false; break; }
                }
                if (ok) ok = dec.Finish();
                resp.Frames = sink.Frames;
                if (!ok) resp.Error = ErrorMsg.From(dec.Error);
            }
            return resp;
        }

        static TesteeResponseMsg Encode(TesteeRequestMsg req)
        {
            TesteeResponseMsg skipped;
            FrameCodec codec = CodecOf(req, out skipped);
            if (codec == null) return skipped;
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Encode };
            byte[] payload = req.Frame.Payload ?? new byte[0];
            if (codec.Typed != null && !codec.ConfigError.IsSet)
            {
                EncodeOutcome e = codec.Typed.Encode(req.Frame.ToValue());
                if (e.Skipped != null) return Skipped(e.Skipped);
                if (e.Error.IsSet) resp.Error = ErrorMsg.From(e.Error);
                else resp.Encoded = e.Encoded;
                return resp;
            }
            if (req.Frame.HeaderField != 0) return Skipped("frame header field " + req.Frame.HeaderField + " does not apply to " + codec.Protocol);
            string why = codec.UnsupportedHeader(req.Frame.Flag, req.Frame.Sequence);
            if (why != null) return Skipped(why);
            ProtocolError err = codec.ConfigError;
            if (err.IsSet || !codec.CheckPayload(payload.Length, out err)) { resp.Error = ErrorMsg.From(err); return resp; }
            if (codec.EncoderUnsupported != null) return Skipped(codec.EncoderUnsupported);
            resp.Encoded = codec.Encode((byte)req.Frame.Flag, (byte)req.Frame.Sequence, payload);
            return resp;
        }

        /// <summary>Records completions in order for the match response.</summary>
        sealed class MatchRecorder : IMatchObserver
        {
            public readonly List<CompletionMsg> Completions = new List<CompletionMsg>();

            public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload)
            {
                Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Reply, Request = (uint)id.Value,
                    Frame = new FrameMsg { Flag = flag, Sequence = sequence, Payload = payload.ToArray() } });
            }
            public void OnTimeout(RequestId id, object state)
            {
                Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Timeout, Request = (uint)id.Value });
            }
            public void OnFailed(RequestId id, object state)
            {
                Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Failed, Request = (uint)id.Value });
            }
            public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload)
            {
                Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Unmatched,
                    Frame = new FrameMsg { Flag = flag, Sequence = sequence, Payload = payload.ToArray() } });
            }
            public void Refused(uint request)
            {
                Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Refused, Request = request });
            }
        }

        static bool IsSend(MatchEventMsg e) { return e.Kind == MatchEventKind.Send || e.Kind == MatchEventKind.SendOneWay; }

        static TesteeResponseMsg Match(TesteeRequestMsg req)
        {
            TesteeResponseMsg skipped;
            FrameCodec codec = CodecOf(req, out skipped);
            if (codec == null) return skipped;
            if (codec.Typed != null && !codec.ConfigError.IsSet) return TypedMatch(codec.Typed, req);
            foreach (MatchEventMsg e in req.Events)
                if (e.Kind == MatchEventKind.SendFrame) return Skipped("send_frame does not apply to " + codec.Protocol);
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Match };
            if (codec.ConfigError.IsSet)
            {
                // Refused before any byte is written or read: every send is REFUSED.
                resp.Error = ErrorMsg.From(codec.ConfigError);
                uint k = 0;
                foreach (MatchEventMsg e in req.Events)
                {
                    if (!IsSend(e)) continue;
                    resp.Sent.Add(new byte[0]);
                    resp.Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Refused, Request = k++ });
                }
                return resp;
            }
            if (codec.EncoderUnsupported != null) return Skipped(codec.EncoderUnsupported);

            var rec = new MatchRecorder();
            IRequestMatcher matcher = codec.NewMatcher(rec, req.TimeoutMs);
            long now = 0;
            uint next = 0;
            bool failed = false;
            using (FrameDecoder dec = codec.NewDecoder())
            {
                foreach (MatchEventMsg e in req.Events)
                {
                    if (IsSend(e))
                    {
                        uint n = next++;
                        byte[] payload = e.Bytes;
                        ProtocolError err;
                        bool oneWay = e.Kind == MatchEventKind.SendOneWay;
                        byte seq = 0;
                        // An unencodable payload is refused and does not advance the sequence counter.
                        bool ok = !failed && codec.CheckPayload(payload.Length, out err)
                            && (oneWay ? matcher.TryOneWay(out seq) : matcher.TryRequest(new RequestId(n), null, now, out seq));
                        if (!ok)
                        {
                            rec.Refused(n);
                            resp.Sent.Add(new byte[0]);
                            continue;
                        }
                        var bytes = new byte[codec.EncodedLength(payload.Length)];
                        if (oneWay) codec.WriteOneWay(seq, payload, bytes);
                        else codec.WriteRequest(seq, payload, bytes);
                        resp.Sent.Add(bytes);
                    }
                    else if (e.Kind == MatchEventKind.Receive)
                    {
                        if (failed || matcher.Failed) continue;
                        if (!dec.Feed(e.Bytes, matcher))
                        {
                            resp.Error = ErrorMsg.From(dec.Error);
                            matcher.FailAll();
                            failed = true;
                        }
                    }
                    else if (e.Kind == MatchEventKind.AdvanceMs)
                    {
                        now += e.AdvanceMs;
                        if (!failed) matcher.Expire(now);
                    }
                }
            }
            resp.Completions = rec.Completions;
            return resp;
        }

        /// <summary>match for protocols with typed frames: the script runs in the protocol's module.</summary>
        static TesteeResponseMsg TypedMatch(ITypedFrames typed, TesteeRequestMsg req)
        {
            var steps = new List<MatchStep>();
            foreach (MatchEventMsg e in req.Events)
            {
                var s = new MatchStep { Bytes = e.Bytes ?? new byte[0], AdvanceMs = e.AdvanceMs };
                switch (e.Kind)
                {
                    case MatchEventKind.Send: s.Kind = MatchStepKind.Send; break;
                    case MatchEventKind.SendOneWay: s.Kind = MatchStepKind.SendOneWay; break;
                    case MatchEventKind.SendFrame: s.Kind = MatchStepKind.SendFrame; s.Frame = (e.Frame ?? new FrameMsg()).ToValue(); break;
                    case MatchEventKind.Receive: s.Kind = MatchStepKind.Receive; break;
                    case MatchEventKind.AdvanceMs: s.Kind = MatchStepKind.AdvanceMs; break;
                    default: continue;
                }
                steps.Add(s);
            }
            MatchOutcome m = typed.Match(req.TimeoutMs, steps);
            if (m.Skipped != null) return Skipped(m.Skipped);
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Match };
            resp.Sent.AddRange(m.Sent);
            foreach (MatchCompletion c in m.Completions)
                resp.Completions.Add(new CompletionMsg { Kind = (CompletionKindMsg)(int)c.Kind, Request = c.Request, Frame = c.Frame == null ? null : FrameMsg.From(c.Frame) });
            if (m.Error.IsSet) resp.Error = ErrorMsg.From(m.Error);
            return resp;
        }

        /// <summary>serve (v2): the codec's server session, fed chunk by chunk, offline.</summary>
        static TesteeResponseMsg Serve(TesteeRequestMsg req)
        {
            TesteeResponseMsg skipped;
            FrameCodec codec = CodecOf(req, out skipped);
            if (codec == null) return skipped;
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Serve };
            if (codec.ConfigError.IsSet)
            {
                // The endpoint cannot be created: it closes before reading anything.
                resp.Closed = true;
                resp.Error = ErrorMsg.From(codec.ConfigError);
                return resp;
            }
            if (codec.EncoderUnsupported != null) return Skipped(codec.EncoderUnsupported);
            ServerSession endpoint = codec.NewSession(req.Endpoint, false);
            if (endpoint == null) return Skipped("endpoint '" + req.Endpoint + "' not implemented for " + codec.Protocol);
            using (ServerSession session = endpoint)
            {
                foreach (byte[] chunk in req.Chunks)
                {
                    session.Receive(chunk);
                    resp.Written.Add(TakeOutput(session));
                    if (session.Closed) break;
                }
                if (req.HalfClose && !session.Closed)
                {
                    session.EndOfInput();
                    resp.Written.Add(TakeOutput(session));
                }
                resp.Closed = session.Closed;
                if (session.Error.IsSet) resp.Error = ErrorMsg.From(session.Error);
            }
            return resp;
        }

        static byte[] TakeOutput(ServerSession s)
        {
            byte[] r = s.Output.ToArray();
            s.ClearOutput();
            return r;
        }
    }
}
