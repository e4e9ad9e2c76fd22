using System;
using System.Collections.Generic;
using Frameproof.Codec;
using Frameproof.Testee;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>The registry and the protocol abstraction, generic over every registered protocol.</summary>
    [TestFixture]
    public class RegistryTests
    {
        [Test]
        public void Names_AreTheProtocols_InRegistrationOrder()
        {
            CollectionAssert.AreEqual(new[] { "standard", "length-field", "rpc", "websocket" }, new List<string>(Registry.Names));
        }

        [Test]
        public void Unknown_IsNull()
        {
            Assert.IsNull(Registry.Find("http2"));
            Assert.IsNull(Registry.Create(CodecSpec.Named("http2")));
            Assert.IsNull(Registry.Find("Standard"), "names are exact");
        }

        [Test]
        public void ParamsKeys()
        {
            Assert.IsTrue(Registry.IsParamsKey("length_field"));
            Assert.IsFalse(Registry.IsParamsKey("limits"));
            Assert.IsTrue(Registry.IsParamsKey("rpc"));
            Assert.IsFalse(Registry.IsParamsKey("max_body"));
            Assert.IsNull(Registry.Find("standard").ParamsKey);
        }

        /// <summary>The testee's per-protocol oneof members: one field number per protocol and oneof,
        /// in the range schemas/testee.proto gives protocols, found by field number and by object.</summary>
        [Test]
        public void OneofMembers_DistinctFields_FoundByFieldAndByObject()
        {
            int members = 0;
            foreach (TesteeOneof oneof in new[] { TesteeOneof.Params, TesteeOneof.Header, TesteeOneof.Detail })
            {
                var fields = new HashSet<int>();
                foreach (string name in Registry.Names)
                {
                    TesteeMember m = Registry.Find(name).OneofMember(oneof);
                    if (m == null) continue;
                    members++;
                    Assert.IsTrue(fields.Add(m.Field), oneof + ": field " + m.Field + " twice");
                    Assert.That(m.Field, Is.InRange(3, 15), oneof + " " + name);
                    Assert.AreSame(m, Registry.OneofMember(oneof, m.Field));
                    object v = m.Read(new ProtoReader(new byte[0]));
                    Assert.IsTrue(m.Holds(v), oneof + " " + name + " holds what it reads");
                    ProtocolModule owner;
                    Assert.AreSame(m, Registry.OneofMemberHolding(oneof, v, out owner));
                    Assert.AreEqual(name, owner.Name);
                    var w = new ProtoWriter();
                    m.Write(v, w);
                    Assert.AreEqual(0, w.ToArray().Length, oneof + " " + name + ": a member read from nothing writes nothing");
                }
            }
            Assert.AreEqual(7, members, "length_field; rpc and websocket in all three oneofs");
            Assert.IsNull(Registry.OneofMember(TesteeOneof.Header, 3));
            ProtocolModule none;
            Assert.IsNull(Registry.OneofMemberHolding(TesteeOneof.Detail, "not a detail", out none));
            Assert.IsNull(none);
        }

        sealed class Observer : IMatchObserver
        {
            public readonly List<string> Log = new List<string>();
            public void OnReply(RequestId id, object state, byte flag, byte sequence, ReadOnlySpan<byte> payload) { Log.Add("reply " + id + " " + T.ToHex(payload.ToArray())); }
            public void OnTimeout(RequestId id, object state) { Log.Add("timeout " + id); }
            public void OnFailed(RequestId id, object state) { Log.Add("failed " + id); }
            public void OnUnmatched(byte flag, byte sequence, ReadOnlySpan<byte> payload) { Log.Add("unmatched"); }
        }

        /// <summary>The registered protocols whose frames are (flag, sequence, payload): the ones the
        /// byte-level decoder / matcher API serves (typed protocols have their own tests).</summary>
        public static IEnumerable<string> ByteLevel()
        {
            foreach (string name in Registry.Names)
                if (Registry.Create(CodecSpec.Named(name)).Typed == null) yield return name;
        }

        /// <summary>Every byte-level protocol: requests written by its client side, answered by its
        /// server session, decoded by its decoder and matched by its matcher, in order.</summary>
        [Test]
        public void EveryProtocol_ClientSessionDecoderMatcher_RoundTrip()
        {
            CollectionAssert.AreEqual(new[] { "standard", "length-field" }, new List<string>(ByteLevel()));
            foreach (string name in ByteLevel())
            {
                FrameCodec codec = Registry.Create(CodecSpec.Named(name));
                Assert.AreEqual(name, codec.Protocol);
                Assert.IsFalse(codec.ConfigError.IsSet, name);
                Assert.IsNull(codec.EncoderUnsupported, name);
                Assert.That(codec.MaxInFlight, Is.GreaterThanOrEqualTo(1));
                var obs = new Observer();
                IRequestMatcher matcher = codec.NewMatcher(obs, 1000);
                var wire = new List<byte>();
                for (int i = 0; i < 5; i++)
                {
                    byte seq;
                    Assert.IsTrue(matcher.TryRequest(new RequestId(i), null, 0, out seq), name);
                    byte[] payload = T.Pattern(i * 3, i);
                    var b = new byte[codec.EncodedLength(payload.Length)];
                    Assert.AreEqual(b.Length, codec.WriteRequest(seq, payload, b));
                    wire.AddRange(b);
                }
                using (ServerSession s = codec.NewSession(false))
                using (FrameDecoder dec = codec.NewDecoder())
                {
                    Assert.IsTrue(s.Receive(wire.ToArray()));
                    Assert.AreEqual(5, s.Frames);
                    Assert.IsTrue(dec.Feed(s.Output, matcher), name + ": " + dec.Error);
                }
                var expected = new List<string>();
                for (int i = 0; i < 5; i++) expected.Add("reply " + i + " " + T.ToHex(T.Pattern(i * 3, i)));
                CollectionAssert.AreEqual(expected, obs.Log, name);
                Assert.AreEqual(0, matcher.PendingCount);
            }
        }

        [Test]
        public void EveryProtocol_EncodeChecksTheLimit()
        {
            foreach (string name in ByteLevel())
            {
                FrameCodec codec = Registry.Create(new CodecSpec { Protocol = name, MaxPayload = 10 });
                ProtocolError err;
                Assert.IsTrue(codec.CheckPayload(10, out err), name);
                Assert.IsFalse(codec.CheckPayload(11, out err), name);
                StringAssert.EndsWith("-LIM-2", err.Requirement);
                Assert.Throws<FrameproofException>(() => codec.Encode(0x01, 1, new byte[11]));
            }
        }
    }

    [TestFixture]
    public class CodecJsonTests
    {
        [Test]
        public void Standard_NameOnly()
        {
            CodecSpec s = CodecJson.Parse("{\"protocol\":\"standard\"}");
            Assert.AreEqual("standard", s.Protocol);
            Assert.AreEqual(0, s.MaxPayload);
            Assert.IsNull(s.Params);
            Assert.AreEqual("{\"protocol\": \"standard\"}", s.Json);
            Assert.AreEqual(Limits.DefaultMaxPayload, Registry.Create(s).MaxPayload);
        }

        [Test]
        public void LengthField_AllKeys_AndTheJsonAsGiven()
        {
            CodecSpec s = CodecJson.Parse(" {\n \"protocol\" : \"length-field\", \"limits\": {\"max_payload\": 1048576},\t\"length_field\": {\"offset\": 2, \"size\": -4} } ");
            Assert.AreEqual(1048576, s.MaxPayload);
            Assert.AreEqual("length_field", s.ParamsKey);
            var codec = (LengthFieldCodec)Registry.Create(s);
            Assert.AreEqual(2, codec.Profile.Offset);
            Assert.AreEqual(-4, codec.Profile.Size);
            Assert.AreEqual(1048576, codec.MaxPayload);
            Assert.AreEqual("{\"protocol\": \"length-field\", \"limits\": {\"max_payload\": 1048576}, \"length_field\": {\"offset\": 2, \"size\": -4}}", s.Json);
        }

        [TestCase("{\"protocol\": \"length-field\"}", 0, 2)]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {}}", 0, 2)]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 3}}", 3, 2)]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"size\": 0}}", 0, 0)]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 4294967295, \"size\": 1}}", 4294967295L, 1)]
        public void LengthField_Defaults(string json, long offset, int size)
        {
            var codec = (LengthFieldCodec)Registry.Create(CodecJson.Parse(json));
            Assert.AreEqual(offset, codec.Profile.Offset);
            Assert.AreEqual(size, codec.Profile.Size);
        }

        [Test]
        public void UnsupportedSize_IsNotAJsonError_ButTheCodecsConfigError()
        {
            FrameCodec codec = Registry.Create(CodecJson.Parse("{\"protocol\": \"length-field\", \"length_field\": {\"size\": 3}}"));
            Assert.AreEqual("LF-FMT-3", codec.ConfigError.Requirement);
            Assert.AreEqual(0, codec.ConfigError.Offset);
        }

        [TestCase("", "unexpected end")]
        [TestCase("{", "expected a member name")]
        [TestCase("[]", "must be a JSON object")]
        [TestCase("\"standard\"", "must be a JSON object")]
        [TestCase("{\"protocol\": \"standard\",}", "expected a member name")]
        [TestCase("{\"protocol\": \"standard\"} x", "unexpected text")]
        [TestCase("{'protocol': 'standard'}", "expected a member name")]
        [TestCase("{\"protocol\": \"standard\", \"protocol\": \"standard\"}", "duplicate key")]
        [TestCase("{}", "needs \"protocol\"")]
        [TestCase("{\"protocol\": 1}", "must be a string")]
        [TestCase("{\"protocol\": null}", "must be a string")]
        [TestCase("{\"protocol\": \"rpc2\"}", "unknown protocol 'rpc2'")]
        [TestCase("{\"protocol\": \"standard\", \"extra\": 1}", "unknown key \"extra\"")]
        [TestCase("{\"protocol\": \"standard\", \"limits\": {\"max\": 1}}", "unknown key \"limits\".\"max\"")]
        [TestCase("{\"protocol\": \"standard\", \"limits\": {\"max_payload\": -1}}", "between 0 and")]
        [TestCase("{\"protocol\": \"standard\", \"limits\": {\"max_payload\": 1.5}}", "must be an integer")]
        [TestCase("{\"protocol\": \"standard\", \"limits\": {\"max_payload\": \"16\"}}", "must be an integer")]
        [TestCase("{\"protocol\": \"standard\", \"limits\": null}", "must be a JSON object")]
        [TestCase("{\"protocol\": \"standard\", \"length_field\": {}}", "does not apply to protocol \"standard\"")]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 1, \"sz\": 2}}", "unknown key \"sz\" in \"length_field\"")]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": -1}}", "between 0 and")]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 4294967296}}", "between 0 and")]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": null}", "must be a JSON object")]
        [TestCase("{\"protocol\": \"length-field\", \"length_field\": {\"size\": true}}", "must be an integer")]
        [TestCase("{\"protocol\": \"standard\\u0000\"}", "unknown protocol")]
        [TestCase("{\"protocol\": \"std\" \"x\"}", "expected ',' or '}'")]
        [TestCase("{\"protocol\": 01}", "expected ',' or '}'")]
        public void Bad(string json, string why)
        {
            var e = Assert.Throws<FormatException>(() => CodecJson.Parse(json));
            StringAssert.Contains(why, e.Message);
        }

        [Test]
        public void Nesting_IsBounded()
        {
            string deep = "{\"protocol\": \"standard\", \"x\": " + new string('[', 100) + new string(']', 100) + "}";
            var e = Assert.Throws<FormatException>(() => CodecJson.Parse(deep));
            StringAssert.Contains("nested too deeply", e.Message);
        }

        static readonly string[] Flags = new string[0];
        static readonly string[] Values = { "codec", "protocol", "x" };

        [Test]
        public void Options_CodecOrProtocol_ExactlyOne()
        {
            Assert.AreEqual("standard", new Options(new[] { "--protocol", "standard" }, Flags, Values).Codec().Protocol);
            Assert.AreEqual("{\"protocol\": \"length-field\"}", new Options(new[] { "--protocol=length-field" }, Flags, Values).Codec().Json);
            Assert.AreEqual("length-field", new Options(new[] { "--codec", "{\"protocol\": \"length-field\"}" }, Flags, Values).Codec().Protocol);
            var e = Assert.Throws<UsageException>(() => new Options(new[] { "--protocol", "standard", "--codec", "{\"protocol\": \"standard\"}" }, Flags, Values).Codec());
            StringAssert.Contains("not both", e.Message);
            e = Assert.Throws<UsageException>(() => new Options(new[] { "--x", "1" }, Flags, Values).Codec());
            StringAssert.Contains("is required", e.Message);
            e = Assert.Throws<UsageException>(() => new Options(new[] { "--protocol", "nope" }, Flags, Values).Codec());
            StringAssert.StartsWith("--protocol: unknown protocol 'nope'", e.Message);
            e = Assert.Throws<UsageException>(() => new Options(new[] { "--codec", "{\"protocol\": \"standard\", \"a\": 1}" }, Flags, Values).Codec());
            StringAssert.StartsWith("--codec: unknown key \"a\"", e.Message);
            e = Assert.Throws<UsageException>(() => new Options(new[] { "--codec", "{\"protocol\": \"length-field\", \"length_field\": {\"size\": 5}}" }, Flags, Values).CreateCodec());
            StringAssert.Contains("LF-FMT-3", e.Message);
        }

        [Test]
        public void Options_UnknownOrRepeatedOrValuelessOptions()
        {
            StringAssert.Contains("unknown option --lf-size", Assert.Throws<UsageException>(() => new Options(new[] { "--lf-size", "2" }, Flags, Values)).Message);
            StringAssert.Contains("given twice", Assert.Throws<UsageException>(() => new Options(new[] { "--x", "1", "--x", "2" }, Flags, Values)).Message);
            StringAssert.Contains("needs a value", Assert.Throws<UsageException>(() => new Options(new[] { "--x" }, Flags, Values)).Message);
            StringAssert.Contains("unexpected argument", Assert.Throws<UsageException>(() => new Options(new[] { "x" }, Flags, Values)).Message);
            StringAssert.Contains("takes no value", Assert.Throws<UsageException>(() => new Options(new[] { "--sink=1" }, new[] { "sink" }, Values)).Message);
            Assert.IsTrue(Options.WantsHelp(new[] { "--protocol", "standard", "--help" }));
        }
    }

    /// <summary>The server sessions (STD-ECHO-*, LF-ECHO-*), driven offline, and the testee's serve.</summary>
    [TestFixture]
    public class ServeSessionTests
    {
        static FrameCodec Std(long max = 0) { return Registry.Create(new CodecSpec { Protocol = "standard", MaxPayload = max }); }
        static FrameCodec Lf(int offset, int size)
        {
            return Registry.Create(CodecJson.Parse("{\"protocol\": \"length-field\", \"length_field\": {\"offset\": " + offset + ", \"size\": " + size + "}}"));
        }

        /// <summary>What a fresh session writes for the whole input, fed at once (no EOF).</summary>
        static byte[] Whole(FrameCodec codec, byte[] input, int length)
        {
            using (ServerSession s = codec.NewSession(false))
            {
                s.Receive(new ReadOnlySpan<byte>(input, 0, length));
                return s.Output.ToArray();
            }
        }

        // Standard: request, one-way (no reply), reply frame (no reply), request of 300 bytes, empty request.
        static readonly byte[] StdStream = T.Concat(T.Hex("01010400 4F70656E 41020100 AA 81030100 BB"),
            StandardEncoder.Encode(0x07, 4, T.Pattern(300)), T.Hex("01050000"));
        static readonly byte[] LfStream = T.Concat(T.Hex("FFFF 8100 61"), T.Hex("0000 00"), T.Hex("0000 03 626364"));

        static IEnumerable<TestCaseData> Streams()
        {
            yield return new TestCaseData("standard", StdStream);
            yield return new TestCaseData("length-field(2,0)", LfStream);
        }

        static FrameCodec CodecFor(string label) { return label == "standard" ? Std() : Lf(2, 0); }

        /// <summary>Every split into two and three chunks (cuts near the start exhaustively): after each
        /// chunk, the output so far is exactly what a session writes for that prefix, i.e. every reply
        /// is written as soon as its frame is complete, and the total does not depend on the split.</summary>
        [TestCaseSource("Streams")]
        public void EverySplit_SameOutput_RepliesAsSoonAsComplete(string label, byte[] stream)
        {
            FrameCodec codec = CodecFor(label);
            var prefixOutput = new byte[stream.Length + 1][];
            for (int k = 0; k <= stream.Length; k++) prefixOutput[k] = Whole(codec, stream, k);
            int limit = Math.Min(stream.Length, 40);
            int runs = 0;
            for (int a = 0; a <= limit; a++)
                for (int b = a; b <= stream.Length; b += (b < limit ? 1 : 37))
                {
                    int[] cuts = { a, b, stream.Length };
                    using (ServerSession s = codec.NewSession(false))
                    {
                        var got = new List<byte>();
                        int prev = 0;
                        foreach (int c in cuts)
                        {
                            Assert.IsTrue(s.Receive(new ReadOnlySpan<byte>(stream, prev, c - prev)), label);
                            got.AddRange(s.Output.ToArray());
                            s.ClearOutput();
                            Assert.AreEqual(T.ToHex(prefixOutput[c]), T.ToHex(got.ToArray()), label + ": after the chunk ending at " + c + " (cuts " + a + ", " + b + ")");
                            prev = c;
                        }
                        s.EndOfInput();
                        Assert.IsTrue(s.Closed);
                        Assert.IsFalse(s.Error.IsSet, label + ": clean EOF");
                        Assert.AreEqual(0, s.OutputLength, "nothing owed at EOF");
                        runs++;
                    }
                }
            Assert.That(runs, Is.GreaterThan(100));
        }

        [Test]
        public void Standard_WholeStream_Replies()
        {
            byte[] expected = T.Concat(T.Hex("81010400 4F70656E"), StandardEncoder.Encode(0x87, 4, T.Pattern(300)), T.Hex("81050000"));
            Assert.AreEqual(T.ToHex(expected), T.ToHex(Whole(Std(), StdStream, StdStream.Length)));
        }

        [Test]
        public void LengthField_WholeStream_SameProfile_HeaderZeroed_MinimalVarint()
        {
            Assert.AreEqual("00000161000000000003626364", T.ToHex(Whole(Lf(2, 0), LfStream, LfStream.Length)));
        }

        [Test]
        public void Error_ClosesAfterTheEarlierReplies()
        {
            using (ServerSession s = Std(100).NewSession(false))
            {
                Assert.IsTrue(s.Receive(T.Hex("01010100 41 0102")));
                Assert.AreEqual("8101010041", T.ToHex(s.Output.ToArray()));
                s.ClearOutput();
                // the second frame completes, the third declares 101 > 100 (STD-LIM-1 at its start, offset 11)
                Assert.IsFalse(s.Receive(T.Hex("0200 4243 01036500 00")));
                Assert.AreEqual("810202004243", T.ToHex(s.Output.ToArray()));
                Assert.IsTrue(s.Closed);
                Assert.AreEqual("STD-LIM-1", s.Error.Requirement);
                Assert.AreEqual(11, s.Error.Offset);
                s.ClearOutput();
                Assert.IsFalse(s.Receive(T.Hex("01040000")), "closed: no more input taken");
                Assert.AreEqual(0, s.OutputLength);
                s.EndOfInput();
                Assert.AreEqual("STD-LIM-1", s.Error.Requirement, "the error stays");
            }
        }

        [TestCase("standard", "01010100 41 010205", "STD-STR-3", 5, "8101010041")]
        [TestCase("length-field(2,0)", "0000 01 61 FFFF", "LF-STR-3", 4, "00000161")]
        [TestCase("length-field(2,0)", "0000 01 61 0000 85", "LF-STR-3", 4, "00000161")]
        public void Eof_WithAPartialFrame_IsTruncation(string label, string hex, string req, long offset, string replies)
        {
            using (ServerSession s = CodecFor(label).NewSession(false))
            {
                Assert.IsTrue(s.Receive(T.Hex(hex)));
                Assert.AreEqual(replies, T.ToHex(s.Output.ToArray()));
                s.ClearOutput();
                s.EndOfInput();
                Assert.IsTrue(s.Closed);
                Assert.AreEqual(req, s.Error.Requirement);
                Assert.AreEqual(offset, s.Error.Offset);
                Assert.AreEqual(0, s.OutputLength);
            }
        }

        [Test]
        public void Sink_CountsAndWritesNothing()
        {
            using (ServerSession s = Std().NewSession(true))
            {
                Assert.IsTrue(s.Receive(StdStream));
                Assert.AreEqual(5, s.Frames);
                Assert.AreEqual(4 + 1 + 1 + 300 + 0, s.PayloadBytes);
                Assert.AreEqual(0, s.OutputLength);
            }
        }

        [Test]
        public void EchoPath_AllocatesNothingPerRead()
        {
            foreach (string name in RegistryTests.ByteLevel())
            {
                FrameCodec codec = Registry.Create(CodecSpec.Named(name));
                var frame = new byte[codec.EncodedLength(28)];
                codec.WriteRequest(1, T.Pattern(28), frame);
                var read = new byte[frame.Length * 100 + 3];
                for (int i = 0; i < 100; i++) Buffer.BlockCopy(frame, 0, read, i * frame.Length, frame.Length);
                Buffer.BlockCopy(frame, 0, read, 100 * frame.Length, 3); // a frame split across reads
                var rest = new byte[frame.Length - 3];
                Buffer.BlockCopy(frame, 3, rest, 0, rest.Length);
                using (ServerSession s = codec.NewSession(false))
                {
                    for (int warm = 0; warm < 3; warm++) { s.Receive(read); s.Receive(rest); s.ClearOutput(); }
                    long before = GC.GetAllocatedBytesForCurrentThread();
                    for (int i = 0; i < 200; i++) { s.Receive(read); s.Receive(rest); s.ClearOutput(); }
                    long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
                    Assert.AreEqual(0, allocated, name + ": bytes allocated for 200 reads");
                    Assert.IsFalse(s.Closed);
                    Assert.AreEqual(203 * 101, s.Frames);
                }
            }
        }

        // ---------------------------------------------------------------- testee serve

        static TesteeResponseMsg Serve(CodecConfig codec, bool halfClose, params string[] chunks)
        {
            var req = new TesteeRequestMsg { Kind = RequestKind.Serve, Codec = codec, HalfClose = halfClose };
            foreach (string c in chunks) req.Chunks.Add(T.Hex(c));
            return TesteeResponseMsg.Parse(TesteeService.Handle(TesteeRequestMsg.Parse(req.ToBytes())).ToBytes());
        }

        static string Written(TesteeResponseMsg r)
        {
            var parts = new List<string>();
            foreach (byte[] w in r.Written) parts.Add(T.ToHex(w));
            return string.Join("|", parts);
        }

        [Test]
        public void Testee_Serve_PerChunk_ThenHalfClose()
        {
            TesteeResponseMsg r = Serve(new CodecConfig { Protocol = "standard" }, true, "0101", "0100 41 0102", "0000", "");
            Assert.AreEqual(ResponseKind.Serve, r.Kind);
            Assert.AreEqual("|8101010041|81020000||", Written(r), "one entry per chunk, then one for the EOF");
            Assert.IsTrue(r.Closed);
            Assert.IsNull(r.Error);
        }

        [Test]
        public void Testee_Serve_NoHalfClose_StaysOpen()
        {
            TesteeResponseMsg r = Serve(new CodecConfig { Protocol = "length-field" }, false, "0100 61 02");
            Assert.AreEqual("010061", Written(r));
            Assert.IsFalse(r.Closed);
            Assert.IsNull(r.Error);
        }

        [Test]
        public void Testee_Serve_StopsAfterTheChunkThatCloses()
        {
            TesteeResponseMsg r = Serve(new CodecConfig { Protocol = "standard" }, true, "01010100 41", "0102FFFF 00000000 01030000", "01040000");
            Assert.AreEqual("8101010041|", Written(r), "no entry for the chunk after the close, none for EOF");
            Assert.IsTrue(r.Closed);
            Assert.AreEqual("STD-LEN-3", r.Error.Requirement);
            Assert.AreEqual(5, r.Error.Offset);
        }

        [Test]
        public void Testee_Serve_EofInsideAFrame()
        {
            TesteeResponseMsg r = Serve(new CodecConfig { Protocol = "length-field", Params = new LengthFieldProfile(0, -2) }, true, "0001 61 0002 62");
            Assert.AreEqual("000161|", Written(r));
            Assert.IsTrue(r.Closed);
            Assert.AreEqual("LF-STR-3", r.Error.Requirement);
            Assert.AreEqual(3, r.Error.Offset);
        }

        [Test]
        public void Testee_Serve_BadProfile_UnknownEndpoint_UnknownProtocol()
        {
            TesteeResponseMsg r = Serve(new CodecConfig { Protocol = "length-field", Params = new LengthFieldProfile(0, 3) }, true, "0100 61");
            Assert.AreEqual(ResponseKind.Serve, r.Kind);
            Assert.IsTrue(r.Closed);
            Assert.AreEqual(0, r.Written.Count);
            Assert.AreEqual("LF-FMT-3", r.Error.Requirement);

            var req = new TesteeRequestMsg { Kind = RequestKind.Serve, Codec = new CodecConfig { Protocol = "standard" }, Endpoint = "stream" };
            Assert.AreEqual(ResponseKind.Skipped, TesteeService.Handle(TesteeRequestMsg.Parse(req.ToBytes())).Kind);
            req = new TesteeRequestMsg { Kind = RequestKind.Serve, Codec = new CodecConfig { Protocol = "rpc" }, Endpoint = "bidi" };
            Assert.AreEqual(ResponseKind.Skipped, TesteeService.Handle(TesteeRequestMsg.Parse(req.ToBytes())).Kind);
            Assert.AreEqual(ResponseKind.Skipped, Serve(new CodecConfig { Protocol = "http2" }, true, "00").Kind);
        }

        [Test]
        public void Testee_OtherProtocolsParams_AreSkippedNotMisread()
        {
            // Codec with rpc params (field 4) for protocol "length-field": the oneof member is not
            // length_field, so the default profile applies.
            byte[] codec = T.Hex("0A0C6C656E6774682D6669656C64 2202 0810");
            byte[] body = T.Concat(T.Hex("0A"), new[] { (byte)codec.Length }, codec, T.Hex("1A03 0100 61"));
            byte[] msg = T.Concat(T.Hex("2A"), new[] { (byte)body.Length }, body);
            TesteeRequestMsg req = TesteeRequestMsg.Parse(msg);
            Assert.AreEqual(RequestKind.Serve, req.Kind);
            Assert.AreEqual(4, req.Codec.ParamsField);
            Assert.IsInstanceOf<RpcParams>(req.Codec.Params);
            TesteeResponseMsg r = TesteeService.Handle(req);
            Assert.AreEqual("010061", Written(r));
        }
    }
}
