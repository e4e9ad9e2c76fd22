using System;
using System.Collections.Generic;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>The rpc module (src/Codec/Rpc/) against spec/rpc.md: decoder, encoder, matcher, sessions.</summary>
    [TestFixture]
    public class RpcTests
    {
        // spec/rpc.md §12: upstream's unary echo of "hello" (BenchEchoService/echo, id 1, flags 0x04).
        const string UpstreamRequest = "47525043 01 01 04 00 00000001 0000001d 0010 42656e63684563686f53657276696365 0004 6563686f 68656c6c6f";
        const string UpstreamResponse = "47525043 01 02 04 00 00000001 00000007 0000 68656c6c6f";
        // The conformance service's own call, id 0, payload "hi".
        const string EchoCall = "47525043 01 01 04 00 00000000 00000019 000f 6672616d6570726f6f662e4563686f 0004 6563686f 6869";

        sealed class Log : IRpcFrameHandler
        {
            public readonly List<string> Frames = new List<string>();
            public int StopAfter = int.MaxValue;
            public bool OnFrame(ref RpcFrame f)
            {
                Frames.Add(Describe(ref f));
                return Frames.Count < StopAfter;
            }
        }

        static string Describe(ref RpcFrame f)
        {
            return "v" + f.Version + " t" + f.Type.ToString("x2") + " f" + f.Flags.ToString("x2") + " r" + f.Reserved + " id" + f.Id
                + " @" + f.Offset + " " + T.ToHex(f.Service.ToArray()) + "/" + T.ToHex(f.Method.ToArray()) + " c" + f.ErrorCode
                + " " + T.ToHex(f.Payload.ToArray());
        }

        /// <summary>Decodes the stream cut at the given offsets; returns the frames and the error ("" if none).</summary>
        static string Decode(byte[] stream, long maxBody, out List<string> frames, params int[] cuts)
        {
            var log = new Log();
            using (var d = new RpcDecoder(maxBody))
            {
                int prev = 0;
                bool ok = true;
                var all = new List<int>(cuts) { stream.Length };
                foreach (int c in all)
                {
                    if (!d.Feed(new ReadOnlySpan<byte>(stream, prev, c - prev), log)) { ok = false; break; }
                    prev = c;
                }
                if (ok) ok = d.Finish();
                frames = log.Frames;
                return ok ? "" : d.Error.Requirement + "@" + d.Error.Offset;
            }
        }

        [Test]
        public void Upstream_Request_EverySplit_SameFrame()
        {
            byte[] b = T.Hex(UpstreamRequest);
            List<string> whole;
            Assert.AreEqual("", Decode(b, 0, out whole));
            Assert.AreEqual(1, whole.Count);
            Assert.AreEqual("v1 t01 f04 r0 id1 @0 " + T.ToHex(T.Ascii("BenchEchoService")) + "/" + T.ToHex(T.Ascii("echo")) + " c0 " + T.ToHex(T.Ascii("hello")), whole[0]);
            for (int i = 1; i < b.Length; i++)
                for (int j = i; j < b.Length; j += 7)
                {
                    List<string> split;
                    Assert.AreEqual("", Decode(b, 0, out split, i, j), "RPC-STR-1 cut " + i + "," + j);
                    CollectionAssert.AreEqual(whole, split);
                }
        }

        [Test]
        public void Response_ErrorCodeAndPayload_ManyFramesOneChunk()
        {
            byte[] b = T.Concat(T.Hex(UpstreamResponse), T.Hex("47525043 01 02 05 09 ffffffff 00000003 ffff 6d"), T.Hex("47525043 01 13 00 00 00000007 00000000"));
            List<string> f;
            Assert.AreEqual("", Decode(b, 0, out f));
            Assert.AreEqual(3, f.Count, "RPC-STR-2");
            Assert.AreEqual("v1 t02 f04 r0 id1 @0 / c0 68656C6C6F", f[0]);
            Assert.AreEqual("v1 t02 f05 r9 id4294967295 @23 / c65535 6D", f[1], "RPC-HDR-5/6/7, RPC-ERR-1: delivered unchanged");
            Assert.AreEqual("v1 t13 f00 r0 id7 @42 / c0 ", f[2]);
        }

        [TestCase("47525058 01 01 00 00 00000001 00000000", "RPC-HDR-2@0")]
        [TestCase("47525043 02 01 00 00 00000001 00000000", "RPC-HDR-3@0")]
        [TestCase("47525043 01 05 00 00 00000001 00000000", "RPC-HDR-4@0")]
        [TestCase("47525043 01 13 00 00 00000001 00000001 00", "RPC-BODY-5@0")]
        [TestCase("47525043 01 01 00 00 00000001 00000001 00", "RPC-BODY-1@0")]
        [TestCase("47525043 01 01 00 00 00000001 00000004 0001 41 00", "RPC-BODY-1@0")]
        [TestCase("47525043 01 10 00 00 00000001 00000005 0001 41 0002 42", "RPC-BODY-3@0")]
        [TestCase("47525043 01 02 00 00 00000001 00000001 00", "RPC-BODY-2@0")]
        [TestCase("47525043 01 01 00 00 00000001 00000010 0000", "RPC-STR-3@0")]
        [TestCase("47525043 01 01 00", "RPC-STR-3@0")]
        [TestCase("47525058", "RPC-STR-3@0")]
        public void Errors_Classified(string hex, string expected)
        {
            List<string> f;
            Assert.AreEqual(expected, Decode(T.Hex(hex), 0, out f));
            Assert.AreEqual(0, f.Count);
        }

        [Test]
        public void Errors_AtTheOffendingFrame_FramesBeforeDelivered_NothingAfter()
        {
            byte[] b = T.Concat(T.Hex(UpstreamResponse), T.Hex("47525043 01 55 00 00 00000001 00000000"), T.Hex(UpstreamResponse));
            List<string> f;
            Assert.AreEqual("RPC-HDR-4@23", Decode(b, 0, out f, 30));
            Assert.AreEqual(1, f.Count, "RPC-STR-4");
        }

        [Test]
        public void Limit_RejectedFromTheHeader_NothingBuffered()
        {
            // A header promising 4 GiB - 1 is refused as soon as byte 16 arrives (RPC-LIM-1, RPC-LIM-3).
            var log = new Log();
            using (var d = new RpcDecoder())
            {
                byte[] h = T.Hex("47525043 01 12 00 00 00000001 ffffffff");
                Assert.IsTrue(d.Feed(new ReadOnlySpan<byte>(h, 0, 15), log));
                Assert.IsFalse(d.Feed(new ReadOnlySpan<byte>(h, 15, 1), log));
                Assert.AreEqual("RPC-LIM-1", d.Error.Requirement);
                Assert.AreEqual(0, d.BufferedBytes);
            }
            List<string> f;
            Assert.AreEqual("RPC-LIM-1@0", Decode(T.Hex("47525043 01 12 00 00 00000001 0000000b"), 10, out f), "max_body 10");
            Assert.AreEqual("", Decode(T.Hex("47525043 01 12 00 00 00000001 0000000a 00112233445566778899"), 10, out f), "at the limit");
        }

        [Test]
        public void SplitBody_BufferGrowsWithTheBytesReceived()
        {
            byte[] payload = T.Pattern(70000);
            byte[] frame = new byte[16 + payload.Length];
            RpcEncoder.WriteSimple(RpcTypes.StreamData, 5, payload, frame);
            var log = new Log();
            using (var d = new RpcDecoder())
            {
                Assert.IsTrue(d.Feed(new ReadOnlySpan<byte>(frame, 0, 100), log));
                Assert.That(d.BufferedBytes, Is.LessThanOrEqualTo(100));
                Assert.IsTrue(d.Feed(new ReadOnlySpan<byte>(frame, 100, frame.Length - 100), log));
                Assert.IsTrue(d.Finish());
            }
            Assert.AreEqual(1, log.Frames.Count);
            StringAssert.EndsWith(T.ToHex(payload), log.Frames[0]);
        }

        [Test]
        public void Handler_CanStopTheDecoder()
        {
            var log = new Log { StopAfter = 1 };
            using (var d = new RpcDecoder())
            {
                Assert.IsFalse(d.Feed(T.Concat(T.Hex(UpstreamResponse), T.Hex(UpstreamResponse)), log));
                Assert.IsFalse(d.Failed);
            }
            Assert.AreEqual(1, log.Frames.Count);
        }

        [Test]
        public void Encoder_UpstreamBytes_AndRefusals()
        {
            byte[] bytes;
            ProtocolError err;
            var h = new RpcHeader { Type = RpcTypes.Request, Flags = 4, Id = 1, Service = T.Ascii("BenchEchoService"), Method = T.Ascii("echo") };
            Assert.IsTrue(RpcEncoder.Encode(h, T.Ascii("hello"), 0, out bytes, out err));
            Assert.AreEqual(T.ToHex(T.Hex(UpstreamRequest)), T.ToHex(bytes));
            h = new RpcHeader { Type = RpcTypes.Response, Flags = 4, Id = 1 };
            Assert.IsTrue(RpcEncoder.Encode(h, T.Ascii("hello"), 0, out bytes, out err));
            Assert.AreEqual(T.ToHex(T.Hex(UpstreamResponse)), T.ToHex(bytes));

            Assert.IsFalse(RpcEncoder.Encode(new RpcHeader { Version = 2, Type = 1 }, new byte[0], 0, out bytes, out err)); Assert.AreEqual("RPC-HDR-3", err.Requirement);
            Assert.IsFalse(RpcEncoder.Encode(new RpcHeader { Type = 0x55 }, new byte[0], 0, out bytes, out err)); Assert.AreEqual("RPC-HDR-4", err.Requirement);
            Assert.IsFalse(RpcEncoder.Encode(new RpcHeader { Type = RpcTypes.StreamEnd }, new byte[1], 0, out bytes, out err)); Assert.AreEqual("RPC-BODY-5", err.Requirement);
            Assert.IsFalse(RpcEncoder.Encode(new RpcHeader { Type = 1, Method = new byte[65536] }, new byte[0], 0, out bytes, out err)); Assert.AreEqual("RPC-BODY-6", err.Requirement);
            Assert.IsFalse(RpcEncoder.Encode(new RpcHeader { Type = 2, ErrorCode = 65536 }, new byte[0], 0, out bytes, out err)); Assert.AreEqual("RPC-BODY-2", err.Requirement);
            Assert.IsFalse(RpcEncoder.Encode(new RpcHeader { Type = 2 }, new byte[9], 10, out bytes, out err)); Assert.AreEqual("RPC-LIM-2", err.Requirement);
            Assert.IsTrue(RpcEncoder.Encode(new RpcHeader { Type = 2 }, new byte[8], 10, out bytes, out err));
        }

        sealed class Outcomes : IRpcMatchObserver
        {
            public readonly List<string> Log = new List<string>();
            public void OnReply(long request, object state, ref RpcFrame f) { Log.Add("reply " + request + " code " + f.ErrorCode + " " + T.ToHex(f.Payload.ToArray()) + St(state)); }
            public void OnTimeout(long request, object state) { Log.Add("timeout " + request + St(state)); }
            public void OnFailed(long request, object state) { Log.Add("failed " + request + St(state)); }
            static string St(object state) { return state == null ? "" : " " + state; }
            public void OnUnmatched(ref RpcFrame f) { Log.Add("unmatched id " + f.Id); }
        }

        static byte[] Response(uint id, ushort code, string payloadHex, byte flags = 4)
        {
            byte[] p = T.Hex(payloadHex);
            var b = new byte[18 + p.Length];
            RpcEncoder.Write(RpcTypes.Response, flags, 0, id, code, ReadOnlySpan<byte>.Empty, ReadOnlySpan<byte>.Empty, p, b);
            return b;
        }

        [Test]
        public void Matcher_IdsFrom0_MatchedById_UnmatchedAndOtherTypes()
        {
            var o = new Outcomes();
            var m = new RpcMatcher(o, 100);
            uint id;
            for (long r = 0; r < 3; r++)
            {
                Assert.IsTrue(m.TryNextId(out id));
                Assert.AreEqual((uint)r, id, "RPC-ID-1");
                m.Sent(id, r, r == 1 ? "s1" : null, 0);
            }
            using (var d = new RpcDecoder())
            {
                Assert.IsTrue(d.Feed(T.Concat(Response(2, 0, "02", 0x05), T.Hex("47525043 01 12 00 00 00000000 00000000"), Response(0, 3, ""), Response(7, 0, "07"), Response(2, 0, "")), m));
            }
            CollectionAssert.AreEqual(new[] { "reply 2 code 0 02", "reply 0 code 3 ", "unmatched id 7", "unmatched id 2" }, o.Log,
                "RPC-MATCH-1 (flags not compared), -4 (DATA ignored), -5 (code 3), -2");
            Assert.AreEqual(1, m.PendingCount);
            m.Expire(99);
            Assert.AreEqual(1, m.PendingCount);
            m.Expire(100);
            Assert.AreEqual("timeout 1 s1", o.Log[o.Log.Count - 1], "RPC-MATCH-3, with the caller's state");
        }

        [Test]
        public void Matcher_RefusesAPendingId_CounterNotAdvanced()
        {
            var o = new Outcomes();
            var m = new RpcMatcher(o);
            uint id;
            Assert.IsTrue(m.TryNextId(out id));
            m.Sent(0xFFFFFFFF, 0, null, 0);                 // the counter wraps to 0 (RPC-ID-1)
            Assert.IsTrue(m.TryNextId(out id));
            Assert.AreEqual(0u, id);
            m.Sent(0, 1, null, 0);
            Assert.IsTrue(m.TryNextId(out id));
            Assert.AreEqual(1u, id);
            // Force the next id onto a pending one: 0xFFFFFFFF is pending.
            m.Sent(0xFFFFFFFE, 2, "s2", 0);
            Assert.IsFalse(m.TryNextId(out id), "RPC-ID-2");
            Assert.AreEqual(0xFFFFFFFFu, id);
            m.FailAll();
            CollectionAssert.AreEqual(new[] { "failed 0", "failed 1", "failed 2 s2" }, o.Log);
            Assert.IsFalse(m.TryNextId(out id), "failed connection");
        }

        [Test]
        public void Matcher_ManyPending_AnyOrder_SlotsReused()
        {
            var o = new Outcomes();
            var m = new RpcMatcher(o, 1000);
            uint id;
            for (int round = 0; round < 3; round++)
            {
                var ids = new List<uint>();
                for (int i = 0; i < 1000; i++)
                {
                    Assert.IsTrue(m.TryNextId(out id));
                    m.Sent(id, round * 1000 + i, null, 0);
                    ids.Add(id);
                }
                Assert.AreEqual(1000, m.PendingCount);
                using (var d = new RpcDecoder())
                    for (int i = ids.Count - 1; i >= 0; i--)
                        Assert.IsTrue(d.Feed(Response(ids[i], 0, ""), m));
                Assert.AreEqual(0, m.PendingCount);
            }
            Assert.AreEqual(3000, o.Log.Count);
            Assert.AreEqual("reply 2999 code 0 ", o.Log[2000], "newest first of round 3");
            Assert.AreEqual("reply 2000 code 0 ", o.Log[2999]);
            Assert.AreEqual(long.MaxValue, m.NextDeadline);
        }

        static string Serve(RpcSession.Endpoint ep, string hex, bool eof, out RpcSession session)
        {
            session = new RpcSession(0, ep, false);
            session.Receive(T.Hex(hex));
            if (eof) session.EndOfInput();
            string r = T.ToHex(session.Output.ToArray());
            return r;
        }

        [Test]
        public void Unary_Echo_CodesAndModes()
        {
            RpcSession s;
            Assert.AreEqual(T.ToHex(T.Hex("47525043 01 02 04 00 00000000 00000004 0000 6869")), Serve(RpcSession.Endpoint.Unary, EchoCall, false, out s), "RPC-ECHO-1");
            Assert.IsFalse(s.Closed);
            Assert.AreEqual(T.ToHex(T.Hex("47525043 01 02 05 00 00000001 00000002 0002")),
                Serve(RpcSession.Endpoint.Unary, UpstreamRequest.Replace("01 01 04 00", "01 01 01 00"), false, out s), "RPC-ECHO-2 code 2, RPC-MODE-2 flags 0x05");
            string otherMethod = "47525043 01 01 03 00 00000014 00000015 000f 6672616d6570726f6f662e4563686f 0002 6563";
            Assert.AreEqual(T.ToHex(T.Hex("47525043 01 02 07 00 00000014 00000002 0003")), Serve(RpcSession.Endpoint.Unary, otherMethod, false, out s), "code 3");
            Assert.IsFalse(s.Closed, "RPC-ECHO-2: stays open");
        }

        /// <summary>RPC-ECHO-8, RPC-MODE-1/2: "unary_only" is echoed in call mode 0 and METHOD_NOT_FOUND (empty
        /// payload, the id, the mode with END_STREAM) in modes 1-3; echo after it in every mode; whole (the
        /// decoder's REQUEST hot path) and byte by byte; a STREAM_INIT naming it is cancelled (RPC-STREAM-6).</summary>
        [Test]
        public void Unary_UnaryOnly_RoutedByCallMode()
        {
            string input = "", want = "";
            foreach (int fl in new[] { 0, 4, 1, 5, 2, 6, 3, 7 })
            {
                string id = (0x80000000u | (uint)fl).ToString("x8");
                input += "47525043 01 01 " + fl.ToString("x2") + " 00 " + id
                    + " 00000020 000f 6672616d6570726f6f662e4563686f 000a 756e6172795f6f6e6c79 706179";
                string flags = ((fl & 3) | 4).ToString("x2");
                want += (fl & 3) == 0 ? "47525043 01 02 " + flags + " 00 " + id + " 00000005 0000 706179"
                                      : "47525043 01 02 " + flags + " 00 " + id + " 00000002 0003";
            }
            input += EchoCall.Replace("01 01 04 00", "01 01 02 00");
            want += "47525043 01 02 06 00 00000000 00000004 0000 6869";
            foreach (RpcSession.Endpoint ep in new[] { RpcSession.Endpoint.Unary, RpcSession.Endpoint.Auto })
            {
                RpcSession s;
                Assert.AreEqual(T.ToHex(T.Hex(want)), Serve(ep, input, false, out s), ep + ": whole");
                Assert.IsFalse(s.Closed);
                s = new RpcSession(0, ep, false);
                foreach (byte b in T.Hex(input)) Assert.IsTrue(s.Receive(new[] { b }));
                Assert.AreEqual(T.ToHex(T.Hex(want)), T.ToHex(s.Output.ToArray()), ep + ": byte by byte");
            }
            string init = Init7.Replace("00000017", "0000001d").Replace("0004 6563686f", "000a 756e6172795f6f6e6c79");
            foreach (RpcSession.Endpoint ep in new[] { RpcSession.Endpoint.Stream, RpcSession.Endpoint.Auto })
            {
                RpcSession s;
                Assert.AreEqual(T.ToHex(T.Hex(Cancel7)), Serve(ep, init, false, out s), ep + ": STREAM_INIT of unary_only");
            }
        }

        [Test]
        public void Unary_NonRequest_ClosesAfterTheRepliesBefore()
        {
            RpcSession s;
            string r = Serve(RpcSession.Endpoint.Unary, EchoCall + "47525043 01 12 00 00 00000000 00000000" + EchoCall, false, out s);
            Assert.AreEqual(T.ToHex(T.Hex("47525043 01 02 04 00 00000000 00000004 0000 6869")), r);
            Assert.IsTrue(s.Closed);
            Assert.AreEqual("RPC-ECHO-4", s.Error.Requirement);
            Assert.AreEqual(41, s.Error.Offset);
            Assert.IsFalse(s.Receive(T.Hex(EchoCall)));
        }

        [Test]
        public void Unary_Eof_TruncatedOrClean()
        {
            RpcSession s;
            Serve(RpcSession.Endpoint.Unary, EchoCall + "4752", true, out s);
            Assert.IsTrue(s.Closed);
            Assert.AreEqual("RPC-STR-3", s.Error.Requirement);
            Assert.AreEqual(41, s.Error.Offset);
            Serve(RpcSession.Endpoint.Unary, EchoCall, true, out s);
            Assert.IsTrue(s.Closed);
            Assert.IsFalse(s.Error.IsSet, "RPC-ECHO-5");
        }

        const string Init7 = "47525043 01 10 00 00 00000007 00000017 000f 6672616d6570726f6f662e4563686f 0004 6563686f";
        const string Ack7 = "47525043 01 11 00 00 00000007 00000000";
        const string Data9 = "47525043 01 12 00 00 00000009 00000003 616263";
        const string Data7 = "47525043 01 12 00 00 00000007 00000003 616263";
        const string End7 = "47525043 01 13 00 00 00000007 00000000";
        const string Cancel7 = "47525043 01 14 00 00 00000007 00000000";

        [Test]
        public void Stream_StateMachine()
        {
            RpcSession s;
            Assert.AreEqual(T.ToHex(T.Hex(Ack7 + Data7 + End7)), Serve(RpcSession.Endpoint.Stream, Init7 + Data9 + End7, false, out s),
                "RPC-STREAM-1, -2 (the open stream's id), -3");
            Assert.AreEqual(T.ToHex(T.Hex("47525043 01 14 00 00 00000009 00000000")), Serve(RpcSession.Endpoint.Stream, Data9, false, out s), "RPC-STREAM-5");
            Assert.AreEqual(T.ToHex(T.Hex(Ack7)), Serve(RpcSession.Endpoint.Stream, Init7 + Cancel7, false, out s), "RPC-STREAM-4: no answer to CANCEL");
            Assert.AreEqual(T.ToHex(T.Hex(Ack7 + Cancel7 + Ack7)), Serve(RpcSession.Endpoint.Stream, Init7 + Init7 + Init7, false, out s), "RPC-STREAM-7, then waiting");
            string otherInit = Init7.Replace("0004 6563686f", "0004 65636821");
            Assert.AreEqual(T.ToHex(T.Hex(Cancel7)), Serve(RpcSession.Endpoint.Stream, otherInit, false, out s), "RPC-STREAM-6");
            Serve(RpcSession.Endpoint.Stream, Init7 + Data7, true, out s);
            Assert.IsTrue(s.Closed);
            Assert.IsFalse(s.Error.IsSet, "RPC-STREAM-8: EOF with an open stream, nothing more");
        }

        [Test]
        public void Auto_FirstFramePicksTheEndpoint()
        {
            RpcSession s;
            Assert.AreEqual(T.ToHex(T.Hex(Ack7 + Data7)), Serve(RpcSession.Endpoint.Auto, Init7 + Data9, false, out s), "RPC-ECHO-7: stream");
            Assert.AreEqual(T.ToHex(T.Hex("47525043 01 02 04 00 00000000 00000004 0000 6869")),
                Serve(RpcSession.Endpoint.Auto, EchoCall + Init7, false, out s), "unary, then a STREAM_INIT closes it");
            Assert.AreEqual("RPC-ECHO-4", s.Error.Requirement);
        }

        [Test]
        public void Sink_CountsFramesAnswersNothing()
        {
            var s = new RpcSession(0, RpcSession.Endpoint.Auto, true);
            Assert.IsTrue(s.Receive(T.Hex(EchoCall + EchoCall)));
            Assert.AreEqual(2, s.Frames);
            Assert.AreEqual(4, s.PayloadBytes);
            Assert.AreEqual(0, s.OutputLength);
        }

        [Test]
        public void LoadChannel_VariantsAgainstTheSession_AndRejectedReplies()
        {
            var codec = (RpcCodec)Registry.Create(CodecSpec.Named("rpc"));
            CollectionAssert.AreEqual(new[] { "unary", "client-stream", "server-stream", "bidi" }, codec.LoadVariants);
            for (int mode = 0; mode < 4; mode++)
            {
                var log = new ClientLog((flag, payload) => T.ToHex(payload));
                ClientChannel ch = codec.NewClientChannel(log, 1000, mode);
                var output = new SendBuffer();
                Assert.IsTrue(ch.TryRequest(new RequestId(100), null, 0, T.Hex("0a0b"), output));
                Assert.IsTrue(ch.TryRequest(new RequestId(101), null, 0, T.Hex("0c"), output));
                byte[] wire = new ReadOnlySpan<byte>(output.Buffer, 0, output.Length).ToArray();
                Assert.AreEqual(mode | 4, wire[6], "flags = call mode | END_STREAM");
                Assert.AreEqual(T.ToHex(T.Hex("00000000")), T.ToHex(new ReadOnlySpan<byte>(wire, 8, 4).ToArray()), "first id 0 (RPC-ID-1)");
                using (var s = new RpcSession(0, RpcSession.Endpoint.Auto, false))
                {
                    Assert.IsTrue(s.Receive(wire));
                    Assert.IsTrue(ch.Feed(s.Output));
                }
                CollectionAssert.AreEqual(new[] { "reply 100 0A0B", "reply 101 0C" }, log.Log, "mode " + mode);
                Assert.AreEqual(0, ch.PendingCount);
                ch.Dispose();
            }
            var l2 = new ClientLog((flag, payload) => T.ToHex(payload));
            ClientChannel c2 = codec.NewClientChannel(l2, 1000, 3);
            var o2 = new SendBuffer();
            c2.TryRequest(new RequestId(7), null, 0, T.Hex("01"), o2);
            c2.TryRequest(new RequestId(8), null, 0, T.Hex("02"), o2);
            Assert.IsTrue(c2.Feed(T.Concat(Response(0, 2, ""), Response(1, 0, "02", 0x04))));
            Assert.AreEqual(2, l2.Log.Count);
            StringAssert.StartsWith("rejected 7: RESPONSE id 0 has error code 2", l2.Log[0]);
            StringAssert.StartsWith("rejected 8: RESPONSE id 1 has flags 0x04, expected 0x07", l2.Log[1]);
        }

        [Test]
        public void StreamClient_AgainstTheSession()
        {
            StreamClient sc = Registry.Create(CodecSpec.Named("rpc")).NewStreamClient(0);
            Assert.IsNotNull(sc);
            Assert.IsNull(Registry.Create(CodecSpec.Named("standard")).NewStreamClient(0), "standard has no streams");
            var output = new SendBuffer();
            long a = sc.Open(output);
            Assert.IsTrue(sc.Data(a, T.Hex("aa"), output));
            sc.End(a, output);
            long b = sc.Open(output);
            Assert.AreEqual(a + 1, b, "ids from one counter");
            using (var s = new RpcSession(0, RpcSession.Endpoint.Auto, false))
            {
                Assert.IsTrue(s.Receive(new ReadOnlySpan<byte>(output.Buffer, 0, output.Length)));
                Assert.IsTrue(sc.Feed(s.Output));
            }
            var got = new List<string>();
            StreamEventKind k; long id; byte[] p;
            while (sc.TryTake(out k, out id, out p)) got.Add(k + " " + id + (p == null ? "" : " " + T.ToHex(p)));
            CollectionAssert.AreEqual(new[] { "Ack 0", "Data 0 AA", "End 0", "Ack 1" }, got);
        }

        [Test]
        public void CodecJson_MaxBody_AndNoLimits()
        {
            CodecSpec spec = CodecJson.Parse("{\"protocol\": \"rpc\", \"rpc\": {\"max_body\": 100}}");
            var codec = (RpcCodec)Registry.Create(spec);
            Assert.AreEqual(100, codec.MaxBody);
            Assert.AreEqual(RpcTypes.DefaultMaxBody, ((RpcCodec)Registry.Create(CodecSpec.Named("rpc"))).MaxBody);
            Assert.Throws<FormatException>(() => CodecJson.Parse("{\"protocol\": \"rpc\", \"limits\": {\"max_payload\": 5}}"));
            Assert.Throws<FormatException>(() => CodecJson.Parse("{\"protocol\": \"rpc\", \"rpc\": {\"max\": 5}}"));
            ProtocolError err;
            Assert.IsTrue(codec.CheckPayload(100 - 23, out err));
            Assert.IsFalse(codec.CheckPayload(100 - 22, out err));
            Assert.AreEqual("RPC-LIM-2", err.Requirement);
        }
    }
}
