using System;
using System.Collections.Generic;
using Frameproof.Codec;
using Frameproof.Testee;
using NUnit.Framework;

namespace Frameproof.Tests
{
    [TestFixture]
    public class ProtoWireTests
    {
        [TestCase(0UL, "00")]
        [TestCase(1UL, "01")]
        [TestCase(127UL, "7F")]
        [TestCase(128UL, "8001")]
        [TestCase(300UL, "AC02")]
        [TestCase(10485760UL, "80808005")]
        [TestCase(0xFFFFFFFFUL, "FFFFFFFF0F")]
        [TestCase(ulong.MaxValue, "FFFFFFFFFFFFFFFFFF01")]
        public void Varint_EncodeDecode(ulong v, string hex)
        {
            var w = new ProtoWriter();
            w.WriteVarintRaw(v);
            Assert.AreEqual(T.Hex(hex), w.ToArray());
            Assert.AreEqual(v, new ProtoReader(T.Hex(hex)).ReadVarint());
        }

        [Test]
        public void TruncatedOrOverlongInput_Throws()
        {
            Assert.Throws<ProtoFormatException>(() => new ProtoReader(T.Hex("80")).ReadVarint());
            Assert.Throws<ProtoFormatException>(() => new ProtoReader(T.Hex("FFFFFFFFFFFFFFFFFF7F")).ReadVarint());
            Assert.Throws<ProtoFormatException>(() => TesteeRequestMsg.Parse(T.Hex("1205")));       // decode, length 5, no bytes
            Assert.Throws<ProtoFormatException>(() => TesteeRequestMsg.Parse(T.Hex("0800")));       // field 1 as varint
        }

        [Test]
        public void HelloRequest_ByteExact()
        {
            // TesteeRequest{hello{harness_version:1}} = 0A 02 08 01
            TesteeRequestMsg m = TesteeRequestMsg.Parse(T.Hex("0A020801"));
            Assert.AreEqual(RequestKind.Hello, m.Kind);
            Assert.AreEqual(1, m.HarnessVersion);
            Assert.AreEqual(T.Hex("0A020801"), m.ToBytes());
            // An empty hello (version 0 omitted by proto3) is still a hello.
            Assert.AreEqual(RequestKind.Hello, TesteeRequestMsg.Parse(T.Hex("0A00")).Kind);
        }

        [Test]
        public void HelloResponse_ByteExact()
        {
            var r = new TesteeResponseMsg { Kind = ResponseKind.Hello, HarnessVersion = 1, Name = "n", Version = "v" };
            r.Protocols.Add("s"); r.Features.Add("d");
            // 0A len { 08 01 | 12 01 'n' | 1A 01 'v' | 22 01 's' | 2A 01 'd' }
            Assert.AreEqual(T.Hex("0A0E 0801 12016E 1A0176 220173 2A0164"), r.ToBytes());
        }

        [Test]
        public void DecodeRequest_WithUnknownFieldsAndSint32Size()
        {
            // codec{protocol:"length-field" limits{max_payload:300} length_field{offset:2 size:-4 (zigzag 7)}} chunks:"" chunks:"AB"
            var c = new CodecConfig { Protocol = "length-field", MaxPayload = 300, Params = new LengthFieldProfile(2, -4) };
            var req = new TesteeRequestMsg { Kind = RequestKind.Decode, Codec = c };
            req.Chunks.Add(new byte[0]);
            req.Chunks.Add(T.Hex("AB"));
            byte[] bytes = req.ToBytes();
            StringAssert.Contains("1A0408021007", T.ToHex(bytes), "LengthFieldParams offset 2, size -4 as zigzag 7");
            // Append an unknown varint field 15 and an unknown fixed32 field 14 at the top level.
            byte[] withUnknown = T.Concat(bytes, T.Hex("7801 7501020304"));
            TesteeRequestMsg back = TesteeRequestMsg.Parse(withUnknown);
            Assert.AreEqual(RequestKind.Decode, back.Kind);
            Assert.AreEqual("length-field", back.Codec.Protocol);
            Assert.AreEqual(300, back.Codec.MaxPayload);
            Assert.AreEqual(3, back.Codec.ParamsField);
            Assert.AreEqual(2, ((LengthFieldProfile)back.Codec.Params).Offset);
            Assert.AreEqual(-4, ((LengthFieldProfile)back.Codec.Params).Size);
            Assert.AreEqual(2, back.Chunks.Count);
            Assert.AreEqual(0, back.Chunks[0].Length);
            Assert.AreEqual(T.Hex("AB"), back.Chunks[1]);
        }

        [Test]
        public void MatchRequest_RoundTrip_KeepsEmptyOneofBytes()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Match, Codec = new CodecConfig { Protocol = "standard" }, TimeoutMs = 250 };
            req.Events.Add(new MatchEventMsg { Kind = MatchEventKind.Send, Bytes = new byte[0] });
            req.Events.Add(new MatchEventMsg { Kind = MatchEventKind.SendOneWay, Bytes = T.Hex("01") });
            req.Events.Add(new MatchEventMsg { Kind = MatchEventKind.Receive, Bytes = T.Hex("81010000") });
            req.Events.Add(new MatchEventMsg { Kind = MatchEventKind.AdvanceMs, AdvanceMs = 300 });
            TesteeRequestMsg back = TesteeRequestMsg.Parse(req.ToBytes());
            Assert.AreEqual(250, back.TimeoutMs);
            Assert.AreEqual(4, back.Events.Count);
            Assert.AreEqual(MatchEventKind.Send, back.Events[0].Kind, "empty send payload is still a send");
            Assert.AreEqual(MatchEventKind.SendOneWay, back.Events[1].Kind);
            Assert.AreEqual(T.Hex("81010000"), back.Events[2].Bytes);
            Assert.AreEqual(MatchEventKind.AdvanceMs, back.Events[3].Kind);
            Assert.AreEqual(300, back.Events[3].AdvanceMs);
            Assert.AreEqual(0, back.Codec.ParamsField);
        }

        [Test]
        public void EncodeResponse_EmptyEncodedIsPresent_ErrorRoundTrips()
        {
            var r = new TesteeResponseMsg { Kind = ResponseKind.Encode, Encoded = new byte[0] };
            Assert.AreEqual(T.Hex("1A02 0A00"), r.ToBytes());
            var e = new TesteeResponseMsg { Kind = ResponseKind.Encode, Error = new ErrorMsg { Requirement = "LF-LEN-1", Offset = 0, Message = "m" } };
            TesteeResponseMsg back = TesteeResponseMsg.Parse(e.ToBytes());
            Assert.AreEqual(ResponseKind.Encode, back.Kind);
            Assert.IsNull(back.Encoded);
            Assert.AreEqual("LF-LEN-1", back.Error.Requirement);
        }

        [Test]
        public void MatchAndDecodeResponses_RoundTrip()
        {
            var r = new TesteeResponseMsg { Kind = ResponseKind.Match };
            r.Sent.Add(new byte[0]);
            r.Sent.Add(T.Hex("01010000"));
            r.Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Reply, Request = 3, Frame = new FrameMsg { Flag = 0x81, Sequence = 1, Payload = T.Hex("AA") } });
            r.Completions.Add(new CompletionMsg { Kind = CompletionKindMsg.Refused, Request = 0 });
            r.Error = new ErrorMsg { Requirement = "STD-LEN-3", Offset = 70000, Message = "x" };
            TesteeResponseMsg back = TesteeResponseMsg.Parse(r.ToBytes());
            Assert.AreEqual(2, back.Sent.Count);
            Assert.AreEqual(0, back.Sent[0].Length);
            Assert.AreEqual(CompletionKindMsg.Reply, back.Completions[0].Kind);
            Assert.AreEqual(3, back.Completions[0].Request);
            Assert.AreEqual(0x81, back.Completions[0].Frame.Flag);
            Assert.AreEqual(CompletionKindMsg.Refused, back.Completions[1].Kind);
            Assert.IsNull(back.Completions[1].Frame);
            Assert.AreEqual(70000, back.Error.Offset);

            var d = new TesteeResponseMsg { Kind = ResponseKind.Decode };
            d.Frames.Add(new FrameMsg());
            TesteeResponseMsg db = TesteeResponseMsg.Parse(d.ToBytes());
            Assert.AreEqual(1, db.Frames.Count, "an all-default frame is still a frame");
            Assert.IsNull(db.Error);
            Assert.AreEqual(T.Hex("1202 0A00"), d.ToBytes());
        }

        [Test]
        public void SkippedAndRuntimeError()
        {
            Assert.AreEqual(T.Hex("2A0178"), new TesteeResponseMsg { Kind = ResponseKind.Skipped, Text = "x" }.ToBytes());
            Assert.AreEqual(ResponseKind.RuntimeError, TesteeResponseMsg.Parse(new TesteeResponseMsg { Kind = ResponseKind.RuntimeError, Text = "boom" }.ToBytes()).Kind);
        }
    }

    [TestFixture]
    public class TesteeServiceTests
    {
        static TesteeResponseMsg Run(TesteeRequestMsg req)
        {
            // Through the wire format both ways, like the runner.
            return TesteeResponseMsg.Parse(TesteeService.Handle(TesteeRequestMsg.Parse(req.ToBytes())).ToBytes());
        }

        static CodecConfig Std() { return new CodecConfig { Protocol = "standard" }; }
        static CodecConfig Lf(int offset, int size) { return new CodecConfig { Protocol = "length-field", Params = new LengthFieldProfile(offset, size) }; }

        [Test]
        public void Hello_V1Runner_GetsV1()
        {
            TesteeResponseMsg r = Run(new TesteeRequestMsg { Kind = RequestKind.Hello, HarnessVersion = 1 });
            Assert.AreEqual(ResponseKind.Hello, r.Kind);
            Assert.AreEqual(1, r.HarnessVersion);
            CollectionAssert.AreEquivalent(Registry.Names, r.Protocols);
            CollectionAssert.AreEquivalent(new[] { "decode", "encode", "match" }, r.Features);
        }

        [TestCase(2u, 2u)]
        [TestCase(3u, 3u)]
        [TestCase(4u, 3u)]
        [TestCase(1u, 1u)]
        public void Hello_Negotiates(uint max, uint expected)
        {
            TesteeResponseMsg r = Run(new TesteeRequestMsg { Kind = RequestKind.Hello, HarnessVersion = 1, MaxHarnessVersion = max });
            Assert.AreEqual(expected, r.HarnessVersion);
            Assert.AreEqual(expected >= 2, r.Features.Contains("serve"), "serve is a v2 feature");
            Assert.AreEqual(expected >= 3, r.Features.Contains("long-stream"), "long-stream is a v3 feature");
            Assert.AreEqual(expected >= 2, r.Features.Contains("rpc-unary-only"), "rpc-unary-only (RPC-ECHO-8) is listed with serve");
            CollectionAssert.AreEqual(new List<string>(Registry.Names), r.Protocols, "the registry's protocols");
        }

        [Test]
        public void Decode_FramesThenError()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Decode, Codec = Std() };
            req.Chunks.Add(T.Hex("01010400 4F70"));
            req.Chunks.Add(T.Hex("656E 0102FFFF 10"));
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual(1, r.Frames.Count);
            Assert.AreEqual(1, r.Frames[0].Flag);
            Assert.AreEqual(T.Ascii("Open"), r.Frames[0].Payload);
            Assert.AreEqual("STD-STR-3", r.Error.Requirement);
            Assert.AreEqual(8, r.Error.Offset);
        }

        [Test]
        public void Decode_UnsupportedProfile_IsLfFmt3AtZero()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Decode, Codec = Lf(0, 3) };
            req.Chunks.Add(T.Hex("0300616263"));
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual(0, r.Frames.Count);
            Assert.AreEqual("LF-FMT-3", r.Error.Requirement);
            Assert.AreEqual(0, r.Error.Offset);
        }

        [Test]
        public void Decode_AbsentLengthFieldMeansDefaultProfile_AndMaxPayloadLimit()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Decode, Codec = new CodecConfig { Protocol = "length-field", MaxPayload = 2 } };
            req.Chunks.Add(T.Hex("0200 6162 0300"));
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual(1, r.Frames.Count);
            Assert.AreEqual(0, r.Frames[0].Flag);
            Assert.AreEqual("LF-LIM-1", r.Error.Requirement);
            Assert.AreEqual(4, r.Error.Offset);
        }

        [Test]
        public void Encode_BothProtocolsAndRefusals()
        {
            TesteeResponseMsg r = Run(new TesteeRequestMsg { Kind = RequestKind.Encode, Codec = Std(), Frame = new FrameMsg { Flag = 0xC1, Sequence = 1, Payload = T.Ascii("abc") } });
            Assert.AreEqual(T.Hex("C1010300616263"), r.Encoded);
            r = Run(new TesteeRequestMsg { Kind = RequestKind.Encode, Codec = Lf(2, 2), Frame = new FrameMsg { Payload = T.Ascii("abc") } });
            Assert.AreEqual(T.Hex("00000300616263"), r.Encoded);
            r = Run(new TesteeRequestMsg { Kind = RequestKind.Encode, Codec = Lf(0, 1), Frame = new FrameMsg { Payload = new byte[256] } });
            Assert.AreEqual("LF-LEN-1", r.Error.Requirement);
            r = Run(new TesteeRequestMsg { Kind = RequestKind.Encode, Codec = new CodecConfig { Protocol = "standard", MaxPayload = 2 }, Frame = new FrameMsg { Payload = T.Ascii("abc") } });
            Assert.AreEqual("STD-LIM-2", r.Error.Requirement);
            r = Run(new TesteeRequestMsg { Kind = RequestKind.Encode, Codec = Lf(0, -1), Frame = new FrameMsg { Payload = T.Ascii("abc") } });
            Assert.AreEqual("LF-FMT-3", r.Error.Requirement);
            r = Run(new TesteeRequestMsg { Kind = RequestKind.Encode, Codec = Std(), Frame = new FrameMsg { Flag = 1, Sequence = 1 } });
            Assert.AreEqual(T.Hex("01010000"), r.Encoded);
        }

        [Test]
        public void UnknownProtocol_IsSkipped()
        {
            TesteeResponseMsg r = Run(new TesteeRequestMsg { Kind = RequestKind.Decode, Codec = new CodecConfig { Protocol = "http2" } });
            Assert.AreEqual(ResponseKind.Skipped, r.Kind);
        }

        static MatchEventMsg Send(string hex) { return new MatchEventMsg { Kind = MatchEventKind.Send, Bytes = T.Hex(hex) }; }
        static MatchEventMsg OneWay(string hex) { return new MatchEventMsg { Kind = MatchEventKind.SendOneWay, Bytes = T.Hex(hex) }; }
        static MatchEventMsg Recv(string hex) { return new MatchEventMsg { Kind = MatchEventKind.Receive, Bytes = T.Hex(hex) }; }
        static MatchEventMsg Advance(uint ms) { return new MatchEventMsg { Kind = MatchEventKind.AdvanceMs, AdvanceMs = ms }; }

        static string Summary(TesteeResponseMsg r)
        {
            var parts = new List<string>();
            foreach (CompletionMsg c in r.Completions)
                parts.Add(c.Kind + (c.Kind == CompletionKindMsg.Unmatched ? "" : " " + c.Request) + (c.Frame != null ? " " + T.ToHex(c.Frame.Payload) : ""));
            return string.Join("; ", parts);
        }

        [Test]
        public void Match_Standard_Scenario()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Match, Codec = Std(), TimeoutMs = 100 };
            req.Events.Add(Send("AA"));                 // 0: seq 1
            req.Events.Add(OneWay("BB"));               // 1: seq 2, one-way
            req.Events.Add(Send("CC"));                 // 2: seq 3
            req.Events.Add(Recv("8103 0100 C3 8101"));  // reply to 2, then half a header
            req.Events.Add(Recv("0100 A1 0102 0000"));  // reply to 0; a request from the peer (ignored)
            req.Events.Add(Recv("8109 0000"));          // unmatched
            req.Events.Add(Send("DD"));                 // 3: seq 4
            req.Events.Add(Advance(100));               // 3 times out
            req.Events.Add(Recv("8104 0000"));          // late: unmatched
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual(4, r.Sent.Count);
            Assert.AreEqual(T.Hex("010101 00AA"), r.Sent[0]);
            Assert.AreEqual(T.Hex("410201 00BB"), r.Sent[1]);
            Assert.AreEqual(T.Hex("010301 00CC"), r.Sent[2]);
            Assert.AreEqual(T.Hex("010401 00DD"), r.Sent[3]);
            Assert.AreEqual("Reply 2 C3; Reply 0 A1; Unmatched ; Timeout 3; Unmatched ", Summary(r));
            Assert.IsNull(r.Error);
        }

        [Test]
        public void Match_Standard_RefusalAndDecodeErrorFailsPending()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Match, Codec = Std() };
            for (int i = 0; i < 256; i++) req.Events.Add(Send(""));
            req.Events.Add(Send(""));                       // 256: seq 1 still pending → refused
            req.Events.Add(Recv("8101 0000 0102FFFF 00000000")); // reply to 0, then STD-LEN-3
            req.Events.Add(Send(""));                       // connection failed → refused
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual(258, r.Sent.Count);
            Assert.AreEqual(0, r.Sent[256].Length);
            Assert.AreEqual(0, r.Sent[257].Length);
            Assert.AreEqual(CompletionKindMsg.Refused, r.Completions[0].Kind);
            Assert.AreEqual(256, r.Completions[0].Request);
            Assert.AreEqual(CompletionKindMsg.Reply, r.Completions[1].Kind);
            Assert.AreEqual(0, r.Completions[1].Request);
            Assert.AreEqual(CompletionKindMsg.Failed, r.Completions[2].Kind);
            Assert.AreEqual(1, r.Completions[2].Request, "oldest pending first");
            Assert.AreEqual(CompletionKindMsg.Refused, r.Completions[r.Completions.Count - 1].Kind);
            Assert.AreEqual(257, r.Completions[r.Completions.Count - 1].Request);
            Assert.AreEqual(1 + 1 + 255 + 1, r.Completions.Count);
            Assert.AreEqual("STD-LEN-3", r.Error.Requirement);
            Assert.AreEqual(4, r.Error.Offset);
        }

        [Test]
        public void Match_LengthField_FifoTimeoutFailsTheRest()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Match, Codec = Lf(0, 2), TimeoutMs = 50 };
            req.Events.Add(Send("01"));
            req.Events.Add(Send("02"));
            req.Events.Add(Recv("0100 11"));     // → 0 (FIFO)
            req.Events.Add(Advance(10));
            req.Events.Add(Send("03"));          // deadline 60
            req.Events.Add(Advance(45));         // now 55: 1 times out (deadline 50), 2 fails
            req.Events.Add(Recv("0100 22"));     // ignored: connection failed
            req.Events.Add(Send("04"));          // refused
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual("Reply 0 11; Timeout 1; Failed 2; Refused 3", Summary(r));
            Assert.AreEqual(T.Hex("010001"), r.Sent[0]);
            Assert.AreEqual(0, r.Sent[3].Length);
        }

        [Test]
        public void Match_UnsupportedProfile_RefusesEverySend()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Match, Codec = Lf(0, 3) };
            req.Events.Add(Send("01"));
            req.Events.Add(Recv("0100 11"));
            req.Events.Add(Send("02"));
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual("LF-FMT-3", r.Error.Requirement);
            Assert.AreEqual(2, r.Sent.Count);
            Assert.AreEqual(0, r.Sent[0].Length + r.Sent[1].Length);
            Assert.AreEqual("Refused 0; Refused 1", Summary(r));
        }

        [Test]
        public void Match_LengthField_UnmatchedAndBound()
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Match, Codec = Lf(0, 0) };
            req.Events.Add(Recv("01 FF"));
            for (int i = 0; i < 257; i++) req.Events.Add(Send(""));
            TesteeResponseMsg r = Run(req);
            Assert.AreEqual(CompletionKindMsg.Unmatched, r.Completions[0].Kind);
            Assert.AreEqual(T.Hex("FF"), r.Completions[0].Frame.Payload);
            Assert.AreEqual(CompletionKindMsg.Refused, r.Completions[1].Kind);
            Assert.AreEqual(256, r.Completions[1].Request);
            Assert.AreEqual(T.Hex("00"), r.Sent[0]);
        }
    }
}
