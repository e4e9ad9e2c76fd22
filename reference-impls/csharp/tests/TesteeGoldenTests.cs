using System;
using System.Collections.Generic;
using System.IO;
using Frameproof.Codec;
using Frameproof.Testee;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>
    /// The hand-written protobuf codec (src/Testee/TesteeProto.cs, src/Codec/ProtoWire.cs and the
    /// protocols' oneof members, ProtocolModule.OneofMember) against golden bytes serialized by
    /// the protobuf runtime: conformance/testee-golden.json, written by tools/gen_testee_golden.py
    /// (the values below are the ones that script sets). Every entry is parsed and its fields are
    /// checked; the messages this codec can write are re-encoded and compared byte for byte.
    /// </summary>
    [TestFixture]
    public class TesteeGoldenTests
    {
        sealed class Entry { public string Name, Message; public byte[] Bytes; }

        static List<Entry> _entries;

        static string FindGolden()
        {
            string dir = Path.GetDirectoryName(typeof(TesteeGoldenTests).Assembly.Location);
            for (; dir != null; dir = Path.GetDirectoryName(dir))
            {
                string p = Path.Combine(dir, "conformance", "testee-golden.json");
                if (File.Exists(p)) return p;
            }
            throw new FileNotFoundException("conformance/testee-golden.json above " + typeof(TesteeGoldenTests).Assembly.Location);
        }

        static List<Entry> Entries()
        {
            if (_entries != null) return _entries;
            var list = new List<Entry>();
            JsonValue root = JsonValue.Parse(File.ReadAllText(FindGolden()));
            foreach (JsonValue e in root.Items)
            {
                JsonValue name, message, hex;
                var m = e.AsObject("entry");
                bool ok = CodecJson.TryGet(m, "name", out name);
                ok &= CodecJson.TryGet(m, "message", out message);
                ok &= CodecJson.TryGet(m, "hex", out hex);
                Assert.IsTrue(ok, "entry keys");
                list.Add(new Entry { Name = name.AsString("name"), Message = message.AsString("message"), Bytes = T.Hex(hex.AsString("hex")) });
            }
            return _entries = list;
        }

        static Entry Get(string name)
        {
            foreach (Entry e in Entries()) if (e.Name == name) return e;
            throw new AssertionException("no golden entry '" + name + "'");
        }

        static TesteeRequestMsg Req(string name)
        {
            Entry e = Get(name);
            Assert.AreEqual("TesteeRequest", e.Message, name);
            return TesteeRequestMsg.Parse(e.Bytes);
        }

        static TesteeResponseMsg Resp(string name)
        {
            Entry e = Get(name);
            Assert.AreEqual("TesteeResponse", e.Message, name);
            return TesteeResponseMsg.Parse(e.Bytes);
        }

        static void Bytes(byte[] expected, byte[] actual, string what) { Assert.AreEqual(T.ToHex(expected), T.ToHex(actual), what); }

        static void BytesList(List<byte[]> actual, string what, params byte[][] expected)
        {
            Assert.AreEqual(expected.Length, actual.Count, what + " count");
            for (int i = 0; i < expected.Length; i++) Bytes(expected[i], actual[i], what + " " + i);
        }

        static void Frame(FrameMsg f, uint flag, uint seq, byte[] payload, string what)
        {
            Assert.AreEqual(flag, f.Flag, what + ".flag");
            Assert.AreEqual(seq, f.Sequence, what + ".sequence");
            Bytes(payload, f.Payload, what + ".payload");
        }

        static void Error(ErrorMsg e, string requirement, ulong offset, string message, string what)
        {
            Assert.IsNotNull(e, what);
            Assert.AreEqual(requirement, e.Requirement, what + ".requirement");
            Assert.AreEqual(offset, e.Offset, what + ".offset");
            Assert.AreEqual(message, e.Message, what + ".message");
        }

        /// <summary>Entries parsed but not re-encoded: none (the rpc and websocket members are read and
        /// written too).</summary>
        static readonly string[] ParseOnly = { };

        static readonly string[] Checked =
        {
            "hello_request", "decode_request", "decode_request_rpc_params", "decode_request_websocket_params",
            "encode_request", "encode_request_rpc_header", "encode_request_websocket_header", "match_request",
            "serve_request", "hello_response", "decode_response", "decode_response_rpc_detail",
            "decode_response_websocket_detail", "decode_response_header_frames", "encode_response_encoded",
            "encode_response_encoded_empty", "encode_response_error", "match_response", "serve_response",
            "serve_response_open", "skipped", "runtime_error",
        };

        [Test]
        public void EveryGoldenEntry_IsCheckedHere()
        {
            var names = new List<string>();
            foreach (Entry e in Entries()) names.Add(e.Name);
            CollectionAssert.AreEqual(Checked, names, "a new golden entry needs a test below");
        }

        [Test]
        public void ReEncoding_GivesTheGoldenBytes()
        {
            int n = 0;
            foreach (Entry e in Entries())
            {
                if (Array.IndexOf(ParseOnly, e.Name) >= 0) continue;
                byte[] again = e.Message == "TesteeRequest" ? TesteeRequestMsg.Parse(e.Bytes).ToBytes() : TesteeResponseMsg.Parse(e.Bytes).ToBytes();
                Bytes(e.Bytes, again, e.Name);
                n++;
            }
            Assert.AreEqual(Checked.Length - ParseOnly.Length, n);
        }

        [Test]
        public void HelloRequest()
        {
            TesteeRequestMsg r = Req("hello_request");
            Assert.AreEqual(RequestKind.Hello, r.Kind);
            Assert.AreEqual(1, r.HarnessVersion);
            Assert.AreEqual(258, r.MaxHarnessVersion);
        }

        [Test]
        public void DecodeRequest_LengthFieldCodec()
        {
            TesteeRequestMsg r = Req("decode_request");
            Assert.AreEqual(RequestKind.Decode, r.Kind);
            Assert.AreEqual("length-field", r.Codec.Protocol);
            Assert.IsTrue(r.Codec.HasLimits);
            Assert.AreEqual(0x123456789UL, r.Codec.MaxPayload);
            Assert.AreEqual(3, r.Codec.ParamsField);
            var lf = (LengthFieldProfile)r.Codec.Params;
            Assert.AreEqual(300, lf.Offset);
            Assert.AreEqual(-1000, lf.Size);
            BytesList(r.Chunks, "chunk", T.Hex("010203"), new byte[0], T.Pattern(200, 2));
            CodecSpec spec = r.Codec.ToSpec();
            Assert.AreEqual(0x123456789L, spec.MaxPayload);
            Assert.AreEqual("length_field", spec.ParamsKey);
        }

        [Test]
        public void DecodeRequest_OtherProtocolsParams_Skipped()
        {
            TesteeRequestMsg r = Req("decode_request_rpc_params");
            Assert.AreEqual("rpc", r.Codec.Protocol);
            Assert.AreEqual(1000, r.Codec.MaxPayload);
            Assert.AreEqual(4, r.Codec.ParamsField);
            Assert.AreEqual(70000, ((RpcParams)r.Codec.Params).MaxBody);
            Assert.AreEqual("rpc", r.Codec.ToSpec().ParamsKey);
            Assert.AreEqual(1, r.Chunks.Count);
            Bytes(T.Hex("AA"), r.Chunks[0], "chunk");
            TesteeResponseMsg d = TesteeService.Handle(r);
            Assert.AreEqual(ResponseKind.Decode, d.Kind);
            Assert.AreEqual("RPC-STR-3", d.Error.Requirement, "one byte of a header");

            r = Req("decode_request_websocket_params");
            Assert.AreEqual("websocket", r.Codec.Protocol);
            Assert.IsFalse(r.Codec.HasLimits);
            Assert.AreEqual(5, r.Codec.ParamsField);
            var ws = (WebSocketParams)r.Codec.Params;
            Assert.IsTrue(ws.Client, "role CLIENT");
            Assert.AreEqual(1L << 40, ws.MaxMessage);
            Bytes(T.Hex("BBCC"), r.Chunks[0], "chunk");
        }

        [Test]
        public void EncodeRequest()
        {
            TesteeRequestMsg r = Req("encode_request");
            Assert.AreEqual(RequestKind.Encode, r.Kind);
            Assert.AreEqual("standard", r.Codec.Protocol);
            Assert.AreEqual(70000, r.Codec.MaxPayload);
            Assert.AreEqual(0, r.Codec.ParamsField);
            Assert.IsNull(r.Codec.Params);
            Frame(r.Frame, 0xC1, 200, T.Pattern(130, 1), "frame");
            Assert.AreEqual(0, r.Frame.HeaderField);
        }

        [Test]
        public void EncodeRequest_OtherProtocolsHeaders_Skipped()
        {
            TesteeRequestMsg r = Req("encode_request_rpc_header");
            Assert.AreEqual("rpc", r.Codec.Protocol);
            Frame(r.Frame, 0x81, 300, T.Ascii("body"), "frame");
            Assert.AreEqual(4, r.Frame.HeaderField);
            var h = (RpcHeader)r.Frame.Header;
            Assert.AreEqual(1, h.Version); Assert.AreEqual(0x12, h.Type); Assert.AreEqual(5, h.Flags); Assert.AreEqual(7, h.Reserved);
            Assert.AreEqual(0x12345678u, h.Id); Assert.AreEqual(70000, h.ErrorCode);
            Bytes(T.Ascii("svc.Echo"), h.Service, "service"); Bytes(T.Ascii("Call"), h.Method, "method");
            r = Req("encode_request_websocket_header");
            Frame(r.Frame, 0, 0, T.Ascii("hi"), "frame");
            Assert.AreEqual(5, r.Frame.HeaderField);
            var w = (WebSocketHeader)r.Frame.Header;
            Assert.IsTrue(w.Fin); Assert.AreEqual(5, w.Rsv); Assert.AreEqual(0x0A, w.Opcode); Assert.IsTrue(w.Masked);
            Bytes(T.Hex("01020304"), w.MaskKey, "mask_key");
        }

        [Test]
        public void MatchRequest_EveryEventKind()
        {
            TesteeRequestMsg r = Req("match_request");
            Assert.AreEqual(RequestKind.Match, r.Kind);
            Assert.AreEqual("standard", r.Codec.Protocol);
            Assert.AreEqual(70000, r.TimeoutMs);
            Assert.AreEqual(7, r.Events.Count);
            Assert.AreEqual(MatchEventKind.Send, r.Events[0].Kind); Bytes(T.Pattern(3, 3), r.Events[0].Bytes, "send");
            Assert.AreEqual(MatchEventKind.Send, r.Events[1].Kind); Bytes(new byte[0], r.Events[1].Bytes, "empty send");
            Assert.AreEqual(MatchEventKind.SendOneWay, r.Events[2].Kind); Bytes(T.Pattern(140, 4), r.Events[2].Bytes, "send_one_way");
            Assert.AreEqual(MatchEventKind.Receive, r.Events[3].Kind); Bytes(T.Hex("81010300616263"), r.Events[3].Bytes, "receive");
            Assert.AreEqual(MatchEventKind.AdvanceMs, r.Events[4].Kind); Assert.AreEqual(150000, r.Events[4].AdvanceMs);
            Assert.AreEqual(MatchEventKind.AdvanceMs, r.Events[5].Kind); Assert.AreEqual(0, r.Events[5].AdvanceMs);
            Assert.AreEqual(MatchEventKind.SendFrame, r.Events[6].Kind); Frame(r.Events[6].Frame, 0x41, 129, T.Ascii("sf"), "send_frame");
        }

        [Test]
        public void ServeRequest()
        {
            TesteeRequestMsg r = Req("serve_request");
            Assert.AreEqual(RequestKind.Serve, r.Kind);
            Assert.AreEqual("length-field", r.Codec.Protocol);
            Assert.AreEqual(3, r.Codec.ParamsField);
            var lf = (LengthFieldProfile)r.Codec.Params;
            Assert.AreEqual(1, lf.Offset);
            Assert.AreEqual(-2, lf.Size);
            Assert.AreEqual("unary", r.Endpoint);
            BytesList(r.Chunks, "chunk", T.Pattern(129, 5), new byte[0]);
            Assert.IsTrue(r.HalfClose);
        }

        [Test]
        public void HelloResponse()
        {
            TesteeResponseMsg r = Resp("hello_response");
            Assert.AreEqual(ResponseKind.Hello, r.Kind);
            Assert.AreEqual(3, r.HarnessVersion);
            Assert.AreEqual("frameproof-csharp", r.Name);
            Assert.AreEqual("0.1.0", r.Version);
            CollectionAssert.AreEqual(new[] { "standard", "length-field" }, r.Protocols);
            CollectionAssert.AreEqual(new[] { "decode", "encode", "match", "serve", "long-stream" }, r.Features);
        }

        [Test]
        public void DecodeResponse()
        {
            TesteeResponseMsg r = Resp("decode_response");
            Assert.AreEqual(ResponseKind.Decode, r.Kind);
            Assert.AreEqual(3, r.Frames.Count);
            Frame(r.Frames[0], 0x81, 255, T.Pattern(131, 6), "frame 0");
            Frame(r.Frames[1], 0, 0, new byte[0], "frame 1");
            Frame(r.Frames[2], 0x3F, 0, T.Hex("00"), "frame 2");
            Error(r.Error, "STD-STR-3", 0x100000001UL, "stream ended \u00fcnexpectedly", "error");
            Assert.AreEqual(0, r.Error.DetailField);
            Assert.IsNull(r.Error.Detail);
        }

        [Test]
        public void DecodeResponse_OtherProtocolsDetailAndHeaders_Skipped()
        {
            TesteeResponseMsg r = Resp("decode_response_rpc_detail");
            Assert.AreEqual(0, r.Frames.Count);
            Error(r.Error, "RPC-HDR-1", 16, "m", "error");
            Assert.AreEqual(4, r.Error.DetailField);
            Assert.AreEqual(300, ((RpcErrorDetail)r.Error.Detail).ErrorCode);
            r = Resp("decode_response_websocket_detail");
            Frame(r.Frames[0], 0, 0, T.Ascii("z"), "frame");
            Error(r.Error, "WS-FRM-1", 2, "", "error");
            Assert.AreEqual(5, r.Error.DetailField);
            Assert.AreEqual(1002, ((WebSocketCloseDetail)r.Error.Detail).Code);
            r = Resp("decode_response_header_frames");
            Assert.AreEqual(2, r.Frames.Count);
            Frame(r.Frames[0], 1, 0, T.Ascii("r"), "frame 0");
            Assert.AreEqual(4, r.Frames[0].HeaderField);
            var h = (RpcHeader)r.Frames[0].Header;
            Assert.AreEqual(9, h.Id); Assert.AreEqual(0, h.Version); Bytes(T.Ascii("s"), h.Service, "service");
            Frame(r.Frames[1], 0, 0, T.Ascii("w"), "frame 1");
            Assert.AreEqual(5, r.Frames[1].HeaderField);
            var w = (WebSocketHeader)r.Frames[1].Header;
            Assert.IsTrue(w.Fin); Assert.AreEqual(2, w.Opcode); Assert.IsFalse(w.Masked);
            Assert.IsNull(r.Error);
        }

        [Test]
        public void EncodeResponses()
        {
            TesteeResponseMsg r = Resp("encode_response_encoded");
            Assert.AreEqual(ResponseKind.Encode, r.Kind);
            Bytes(T.Pattern(300, 7), r.Encoded, "encoded");
            Assert.IsNull(r.Error);
            r = Resp("encode_response_encoded_empty");
            Assert.IsNotNull(r.Encoded, "an empty oneof member is present");
            Assert.AreEqual(0, r.Encoded.Length);
            r = Resp("encode_response_error");
            Assert.IsNull(r.Encoded);
            Error(r.Error, "LF-LIM-2", 0, "payload of 70000 bytes exceeds the maximum 65535", "error");
        }

        [Test]
        public void MatchResponse_EveryCompletionKind()
        {
            TesteeResponseMsg r = Resp("match_response");
            Assert.AreEqual(ResponseKind.Match, r.Kind);
            BytesList(r.Sent, "sent", T.Pattern(5, 8), new byte[0], T.Pattern(150, 9));
            Assert.AreEqual(6, r.Completions.Count);
            CompletionMsg c = r.Completions[0];
            Assert.AreEqual(CompletionKindMsg.Reply, c.Kind); Assert.AreEqual(0, c.Request); Frame(c.Frame, 0x81, 1, T.Ascii("abc"), "reply");
            c = r.Completions[1];
            Assert.AreEqual(CompletionKindMsg.Timeout, c.Kind); Assert.AreEqual(300, c.Request); Assert.IsNull(c.Frame);
            c = r.Completions[2];
            Assert.AreEqual(CompletionKindMsg.Unmatched, c.Kind); Assert.AreEqual(0, c.Request); Frame(c.Frame, 0x82, 130, new byte[0], "unmatched");
            c = r.Completions[3];
            Assert.AreEqual(CompletionKindMsg.Failed, c.Kind); Assert.AreEqual(2, c.Request);
            c = r.Completions[4];
            Assert.AreEqual(CompletionKindMsg.Refused, c.Kind); Assert.AreEqual(100000, c.Request);
            c = r.Completions[5];
            Assert.AreEqual(CompletionKindMsg.Unspecified, c.Kind); Assert.AreEqual(0, c.Request); Assert.IsNull(c.Frame);
            Error(r.Error, "STD-LEN-3", 129, "non-canonical", "error");
        }

        [Test]
        public void ServeResponses()
        {
            TesteeResponseMsg r = Resp("serve_response");
            Assert.AreEqual(ResponseKind.Serve, r.Kind);
            BytesList(r.Written, "written", T.Pattern(133, 10), new byte[0], T.Hex("81050000"));
            Assert.IsTrue(r.Closed);
            Error(r.Error, "LF-STR-3", 200, "eof", "error");
            r = Resp("serve_response_open");
            BytesList(r.Written, "written", T.Ascii("x"));
            Assert.IsFalse(r.Closed);
            Assert.IsNull(r.Error);
        }

        [Test]
        public void SkippedAndRuntimeError()
        {
            TesteeResponseMsg r = Resp("skipped");
            Assert.AreEqual(ResponseKind.Skipped, r.Kind);
            Assert.AreEqual("protocol 'rpc' not implemented", r.Text);
            r = Resp("runtime_error");
            Assert.AreEqual(ResponseKind.RuntimeError, r.Kind);
            Assert.AreEqual("InvalidOperationException: \u00e9t\u00e9", r.Text);
        }

        /// <summary>What the testee itself writes for hello, byte for byte as the protobuf runtime would.</summary>
        [Test]
        public void TheTesteesOwnHello_IsTheGoldenOne()
        {
            // The golden hello lists the two protocols of harness v1; this testee lists its registry.
            TesteeResponseMsg hello = TesteeService.Handle(Req("hello_request"));
            CollectionAssert.AreEqual(Registry.Names, hello.Protocols);
            hello.Protocols = new List<string> { "standard", "length-field" };
            // ... and the features "discovery" and "discovery-etcd" (the registry scripts) and "rpc-unary-only"
            // (RPC-ECHO-8), which the golden hello predates.
            Assert.IsTrue(hello.Features.Remove("discovery"), "feature discovery listed");
            Assert.IsTrue(hello.Features.Remove("discovery-etcd"), "feature discovery-etcd listed");
            Assert.IsTrue(hello.Features.Remove("rpc-unary-only"), "feature rpc-unary-only listed");
            Bytes(Get("hello_response").Bytes, hello.ToBytes(), "hello response for max_harness_version 258");
        }
    }
}
