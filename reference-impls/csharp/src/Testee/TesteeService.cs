using System;
using System.Collections.Generic;
using Frameproof.Codec;

namespace Frameproof.Testee
{
    /// <summary>Answers testee requests (spec/testee.md) with the codec library.</summary>
    public static class TesteeService
    {
        public const string Name = "frameproof-csharp";
        public const string Version = "0.1.0";
        const long MaxEncodeOffset = 64L * 1024 * 1024;

        public static TesteeResponseMsg Handle(TesteeRequestMsg req)
        {
            try
            {
                switch (req.Kind)
                {
                    case RequestKind.Hello: return Hello();
                    case RequestKind.Decode: return Decode(req);
                    case RequestKind.Encode: return Encode(req);
                    case RequestKind.Match: return Match(req);
                    default: return Skipped("unknown request");
                }
            }
            catch (Exception e)
            {
                return new TesteeResponseMsg { Kind = ResponseKind.RuntimeError, Text = e.GetType().Name + ": " + e.Message };
            }
        }

        static TesteeResponseMsg Skipped(string why) { return new TesteeResponseMsg { Kind = ResponseKind.Skipped, Text = why }; }

        static TesteeResponseMsg Hello()
        {
            var r = new TesteeResponseMsg { Kind = ResponseKind.Hello, HarnessVersion = 1, Name = Name, Version = Version };
            r.Protocols.Add("standard"); r.Protocols.Add("length-field");
            r.Features.Add("decode"); r.Features.Add("encode"); r.Features.Add("match");
            return r;
        }

        static long MaxPayload(CodecConfig c)
        {
            return c.MaxPayload > (ulong)long.MaxValue ? long.MaxValue : (long)c.MaxPayload;
        }

        static LengthFieldProfile Profile(CodecConfig c)
        {
            return c.HasLengthField ? new LengthFieldProfile(c.LfOffset, c.LfSize) : LengthFieldProfile.Default;
        }

        static ErrorMsg ToMsg(ProtocolError e)
        {
            return new ErrorMsg { Requirement = e.Requirement, Offset = (ulong)e.Offset, Message = e.Message ?? "" };
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
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Decode };
            FrameDecoder dec;
            if (req.Codec.Protocol == "standard") dec = new StandardDecoder(MaxPayload(req.Codec));
            else if (req.Codec.Protocol == "length-field")
            {
                LengthFieldProfile p = Profile(req.Codec);
                if (!p.IsValid)
                {
                    resp.Error = new ErrorMsg { Requirement = "LF-FMT-3", Offset = 0, Message = "unsupported size " + p.Size };
                    return resp;
                }
                dec = new LengthFieldDecoder(p, MaxPayload(req.Codec));
            }
            else return Skipped("protocol '" + req.Codec.Protocol + "' not implemented");

            using (dec)
            {
                var sink = new Collector();
                bool ok = true;
                foreach (byte[] chunk in req.Chunks)
                {
                    if (!dec.Feed(chunk, sink)) { ok = false; break; }
                }
                if (ok) ok = dec.Finish();
                resp.Frames = sink.Frames;
                if (!ok) resp.Error = ToMsg(dec.Error);
            }
            return resp;
        }

        static TesteeResponseMsg Encode(TesteeRequestMsg req)
        {
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Encode };
            byte[] payload = req.Frame.Payload ?? new byte[0];
            ProtocolError err;
            if (req.Codec.Protocol == "standard")
            {
                if (req.Frame.Flag > 255 || req.Frame.Sequence > 255) return Skipped("flag/sequence above 255 cannot be written in one byte");
                if (!StandardEncoder.Check(payload.Length, MaxPayload(req.Codec), out err)) { resp.Error = ToMsg(err); return resp; }
                resp.Encoded = StandardEncoder.Encode((byte)req.Frame.Flag, (byte)req.Frame.Sequence, payload, MaxPayload(req.Codec));
                return resp;
            }
            if (req.Codec.Protocol == "length-field")
            {
                LengthFieldProfile p = Profile(req.Codec);
                if (!LengthFieldEncoder.Check(p, payload.Length, MaxPayload(req.Codec), out err)) { resp.Error = ToMsg(err); return resp; }
                if (p.Offset > MaxEncodeOffset) return Skipped("header offset above 64 MiB not supported by this encoder");
                resp.Encoded = LengthFieldEncoder.Encode(p, payload, MaxPayload(req.Codec));
                return resp;
            }
            return Skipped("protocol '" + req.Codec.Protocol + "' not implemented");
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

        static TesteeResponseMsg Match(TesteeRequestMsg req)
        {
            bool standard = req.Codec.Protocol == "standard";
            if (!standard && req.Codec.Protocol != "length-field") return Skipped("protocol '" + req.Codec.Protocol + "' not implemented");
            var resp = new TesteeResponseMsg { Kind = ResponseKind.Match };
            long max = MaxPayload(req.Codec);
            LengthFieldProfile profile = Profile(req.Codec);
            if (!standard && !profile.IsValid)
            {
                // LF-FMT-3: refused before any byte is written or read: every send is REFUSED.
                resp.Error = new ErrorMsg { Requirement = "LF-FMT-3", Offset = 0, Message = "unsupported size " + profile.Size };
                uint k = 0;
                foreach (MatchEventMsg e in req.Events)
                {
                    if (e.Kind != MatchEventKind.Send && e.Kind != MatchEventKind.SendOneWay) continue;
                    resp.Sent.Add(new byte[0]);
                    resp.Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Refused, Request = k++ });
                }
                return resp;
            }
            if (!standard && profile.Offset > MaxEncodeOffset) return Skipped("header offset above 64 MiB not supported by this encoder");

            var rec = new MatchRecorder();
            FrameDecoder dec = standard ? (FrameDecoder)new StandardDecoder(max) : new LengthFieldDecoder(profile, max);
            IRequestMatcher matcher = standard
                ? (IRequestMatcher)new StandardMatcher(rec, req.TimeoutMs)
                : new FifoMatcher(rec, req.TimeoutMs);
            long now = 0;
            uint next = 0;
            bool failed = false;

            foreach (MatchEventMsg e in req.Events)
            {
                switch (e.Kind)
                {
                    case MatchEventKind.Send:
                    case MatchEventKind.SendOneWay:
                        {
                            uint n = next++;
                            byte[] payload = e.Bytes;
                            ProtocolError err;
                            bool encodable = standard
                                ? StandardEncoder.Check(payload.Length, max, out err)
                                : LengthFieldEncoder.Check(profile, payload.Length, max, out err);
                            byte seq = 0;
                            bool oneWay = e.Kind == MatchEventKind.SendOneWay;
                            bool ok = !failed && !matcher.Failed && encodable;
                            if (ok)
                            {
                                if (oneWay)
                                {
                                    if (standard) seq = ((StandardMatcher)matcher).NextOneWay();
                                }
                                else
                                {
                                    ok = matcher.TryRequest(new RequestId(n), null, now, out seq);
                                }
                            }
                            if (!ok)
                            {
                                rec.Refused(n);
                                resp.Sent.Add(new byte[0]);
                                break;
                            }
                            resp.Sent.Add(standard
                                ? StandardEncoder.Encode(oneWay ? StandardFlags.OneWay : StandardFlags.Request, seq, payload, max)
                                : LengthFieldEncoder.Encode(profile, payload, max));
                            break;
                        }
                    case MatchEventKind.Receive:
                        if (failed || matcher.Failed) break;
                        if (!dec.Feed(e.Bytes, matcher))
                        {
                            resp.Error = ToMsg(dec.Error);
                            matcher.FailAll();
                            failed = true;
                        }
                        break;
                    case MatchEventKind.AdvanceMs:
                        now += e.AdvanceMs;
                        if (!failed) matcher.Expire(now);
                        break;
                }
            }
            dec.Dispose();
            resp.Completions = rec.Completions;
            return resp;
        }
    }
}
