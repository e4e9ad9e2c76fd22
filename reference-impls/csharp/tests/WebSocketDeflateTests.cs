using System;
using System.Collections.Generic;
using System.Text;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>permessage-deflate in the websocket server (spec/websocket-deflate.md): the negotiation
    /// (WSD-NEG-1..4), framing (WSD-FRM-*), compression with the RFC 7692 worked examples (WSD-CMP-*),
    /// context takeover (WSD-CTX-1) and the limit on the inflated size (WSD-LIM-1).</summary>
    [TestFixture]
    public class WebSocketDeflateTests
    {
        const string DeflateCodec = "{\"protocol\": \"websocket\", \"websocket\": {\"permessage_deflate\": true}}";

        static string Agreed(params string[] headers)
        {
            DeflateParams p = WsDeflateNegotiation.Accept(headers);
            return p == null ? null : p.Header();
        }

        [TestCase("permessage-deflate", "permessage-deflate")]
        [TestCase("PerMessage-Deflate", "permessage-deflate")]
        [TestCase("permessage-deflate; client_max_window_bits", "permessage-deflate; client_max_window_bits=15")]
        [TestCase("permessage-deflate;Client_Max_Window_Bits", "permessage-deflate; client_max_window_bits=15")]
        [TestCase("permessage-deflate ; \tclient_max_window_bits = 10 ", "permessage-deflate; client_max_window_bits=10")]
        [TestCase("permessage-deflate; server_max_window_bits=\"10\"", "permessage-deflate; server_max_window_bits=10")]
        [TestCase("permessage-deflate; server_max_window_bits = \"1\\0\"", "permessage-deflate; server_max_window_bits=10")]
        [TestCase("permessage-deflate; SERVER_NO_CONTEXT_TAKEOVER; client_no_context_takeover",
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover")]
        [TestCase("permessage-deflate; server_max_window_bits=15", "permessage-deflate; server_max_window_bits=15")]
        [TestCase("permessage-deflate; server_max_window_bits=9; client_max_window_bits=8",
            "permessage-deflate; server_max_window_bits=9; client_max_window_bits=8")]
        [TestCase(", x-webkit-deflate-frame,permessage-deflate; client_no_context_takeover ,", "permessage-deflate; client_no_context_takeover")]
        public void Offer_Spellings_WsdNeg1(string offer, string expected)
        {
            Assert.AreEqual(expected, Agreed(offer), "WSD-NEG-1/3");
        }

        [Test]
        public void Offers_Over_Several_Headers_In_Order_WsdNeg1()
        {
            Assert.AreEqual("permessage-deflate; server_no_context_takeover",
                Agreed("x-foo", "permessage-deflate; server_no_context_takeover", "permessage-deflate"));
            Assert.AreEqual("permessage-deflate; client_max_window_bits=9",
                Agreed("permessage-deflate; foo", "permessage-deflate; client_max_window_bits=9"));
        }

        [TestCase("permessage-deflate; foo")]
        [TestCase("permessage-deflate; server_max_window_bits")]
        [TestCase("permessage-deflate; server_max_window_bits=08")]
        [TestCase("permessage-deflate; server_max_window_bits=7")]
        [TestCase("permessage-deflate; server_max_window_bits=16")]
        [TestCase("permessage-deflate; server_max_window_bits=8")]   // zlib compresses with 9 at least (WSD-NEG-4)
        [TestCase("permessage-deflate; client_max_window_bits=0x0f")]
        [TestCase("permessage-deflate; client_max_window_bits=\"\"")]
        [TestCase("permessage-deflate; server_no_context_takeover=1")]
        [TestCase("permessage-deflate; client_no_context_takeover=\"x\"")]
        [TestCase("permessage-deflate; server_no_context_takeover; Server_No_Context_Takeover")]
        [TestCase("permessage-deflate; client_max_window_bits; client_max_window_bits=10")]
        [TestCase("permessage-deflate; server_max_window_bits=\"1 0\"")]
        [TestCase("permessage-deflate; server_max_window_bits=\"10")]
        [TestCase("permessage-deflate;")]
        [TestCase("permessage-deflate x")]
        [TestCase("x-webkit-deflate-frame")]
        public void Declines_WsdNeg2(string offer)
        {
            Assert.IsNull(Agreed(offer), "WSD-NEG-2/4");
        }

        [Test]
        public void Declined_Offer_Does_Not_Decline_The_Next_WsdNeg2()
        {
            Assert.AreEqual("permessage-deflate; client_no_context_takeover", Agreed(
                "permessage-deflate; server_max_window_bits=8, permessage-deflate; bar=1, permessage-deflate; client_no_context_takeover, permessage-deflate"));
        }

        // ---------------------------------------------------------------- sessions

        static string Ascii(WsEchoSession s) { string r = Encoding.ASCII.GetString(s.Output.ToArray()); s.ClearOutput(); return r; }

        /// <summary>A server session after an opening handshake that offered <paramref name="offer"/>
        /// (null: none); <paramref name="answer"/> is the 101's head.</summary>
        static WsEchoSession Open(string codecJson, string offer, out string answer)
        {
            var codec = (WebSocketCodec)Registry.Create(CodecJson.Parse(codecJson));
            var s = (WsEchoSession)codec.NewSession(false);
            string key;
            string req = WsHandshake.Request("h", "/", out key);
            if (offer != null) req = req.Replace("\r\n\r\n", "\r\nSec-WebSocket-Extensions: " + offer + "\r\n\r\n");
            s.Receive(Encoding.ASCII.GetBytes(req));
            answer = Ascii(s);
            StringAssert.StartsWith("HTTP/1.1 101 ", answer);
            return s;
        }

        static readonly byte[] Key = { 0x37, 0xfa, 0x21, 0x3d };

        /// <summary>A masked client frame (unmasked: a server's), RSV1 set when <paramref name="rsv1"/>.</summary>
        static byte[] Frame(bool fin, bool rsv1, byte opcode, byte[] payload, bool masked = true)
        {
            var b = new byte[WsEncoder.HeaderLength(payload.Length, masked) + payload.Length];
            WsEncoder.Write(fin, opcode, masked ? Key : new byte[0], payload, b);
            if (rsv1) b[0] |= 0x40;
            return b;
        }

        sealed class Log : IWsFrameHandler
        {
            public readonly List<WsFrameCopy> Frames = new List<WsFrameCopy>();
            public bool OnFrame(ref WsFrame f)
            {
                Frames.Add(new WsFrameCopy { Fin = f.Fin, Rsv = f.Rsv, Opcode = f.Opcode, Payload = f.Payload.ToArray() });
                return true;
            }
        }

        sealed class WsFrameCopy
        {
            public bool Fin;
            public uint Rsv;
            public byte Opcode;
            public byte[] Payload;
        }

        /// <summary>A session's output as frames (RSV1 allowed); clears it. A server's output is read in
        /// the client role (unmasked frames), a <paramref name="client"/>'s in the server role (they must be masked).</summary>
        static List<WsFrameCopy> Out(WsEchoSession s, bool client = false)
        {
            var log = new Log();
            using (var d = new WsDecoder(client) { AllowRsv1 = true })
                Assert.IsTrue(d.Feed(s.Output, log), "the " + (client ? "client" : "server") + "'s output decodes: " + d.Error.Message);
            s.ClearOutput();
            return log.Frames;
        }

        static int CloseCode(WsFrameCopy f) { return f.Payload[0] << 8 | f.Payload[1]; }

        [Test]
        public void Default_Declines_And_Rsv1_Is_1002()
        {
            string answer;
            using (WsEchoSession s = Open("{\"protocol\": \"websocket\"}", "permessage-deflate; client_max_window_bits", out answer))
            {
                StringAssert.DoesNotContain("Extensions", answer, "WS-HS-5: declined without websocket.permessage_deflate");
                Assert.IsNull(s.PerMessageDeflate);
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                List<WsFrameCopy> f = Out(s);
                Assert.AreEqual(1002, CloseCode(f[f.Count - 1]));
                Assert.AreEqual("WS-HDR-2", s.Error.Requirement);
            }
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate; foo", out answer))
            {
                StringAssert.DoesNotContain("Extensions", answer, "every offer declined");
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                Assert.AreEqual(1002, CloseCode(Out(s)[0]));
            }
        }

        /// <summary>RFC 7692 §7.2.3.1/2: "Hello" twice with context takeover (the second a back-reference
        /// into the first), fragmented at any byte, a stored block, a final block (WSD-CMP-5), each inflated;
        /// the echoes go uncompressed, RSV1 clear: "Hello" compressed (7 bytes) is longer than itself
        /// (WSD-FRM-3). A compressible message's echoes are compressed, the second referring back.</summary>
        [Test]
        public void RoundTrip_ContextTakeover_RfcExamples()
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate; client_max_window_bits", out answer))
            {
                StringAssert.Contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=15\r\n", answer);
                Assert.AreEqual(0, s.HeldState, "WSD-LIM-3: no zlib state before the first compressed message");
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                Assert.Greater(s.HeldState, 0, "WSD-LIM-2: the state is counted");
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f200110000")));
                List<WsFrameCopy> f = Out(s), all = new List<WsFrameCopy>(f);
                Assert.AreEqual(2, f.Count);
                Assert.AreEqual(0u, f[0].Rsv, "WSD-FRM-3: F248CDC9C90700 is longer than Hello");
                Assert.AreEqual("Hello", Encoding.UTF8.GetString(f[0].Payload));
                // fragmented at every byte: F2 | 48 CD | C9 C9 07 | 00, with a ping between
                s.Receive(T.Concat(Frame(false, true, WsOpcodes.Binary, T.Hex("f2")), Frame(false, false, 0, T.Hex("48cd")),
                    Frame(true, false, WsOpcodes.Ping, T.Hex("01")), Frame(false, false, 0, T.Hex("c9c907")), Frame(true, false, 0, T.Hex("00"))));
                f = Out(s);
                Assert.AreEqual(WsOpcodes.Pong, f[0].Opcode);
                Assert.AreEqual(0u, f[0].Rsv, "WSD-FRM-1: never on a control frame");
                Assert.AreEqual(WsOpcodes.Binary, f[1].Opcode);
                all.Add(f[1]);
                // a stored block (§7.2.3.3), a final block (BFINAL 1, the rest ignored: WSD-CMP-5), then a new stream
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("0005 00faff 48656c6c6f 00")));
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f348cdc9c90700 ffff")));
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f200110000")));
                s.Receive(Frame(true, false, WsOpcodes.Text, T.Ascii("plain")));   // uncompressed (WSD-CTX-3)
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("00")));          // empty message
                f = Out(s);
                Assert.AreEqual(5, f.Count);
                all.AddRange(f);
                // each echo, inflated as the client would (with the server's context), is the message sent
                string[] expect = { "Hello", "Hello", "Hello", "Hello", "Hello", "Hello", "plain", "" };
                using (var inflate = new PerMessageDeflate(new DeflateParams(), 0))
                using (var msg = new NativeBuffer())
                {
                    for (int i = 0; i < all.Count; i++)
                    {
                        Assert.AreEqual(0u, all[i].Rsv, "WSD-FRM-3: every echo shorter uncompressed");
                        Assert.AreEqual(expect[i], Encoding.UTF8.GetString(all[i].Payload), "echo " + i);
                    }
                    // a compressible message, twice: compressed (WSD-FRM-1, CMP-1), the second echo a
                    // back-reference into the first (WSD-CTX-1: the server keeps its context)
                    byte[] text = T.Ascii("Hello, Hello, Hello, Hello, Hello");
                    using (var client = new PerMessageDeflate(new DeflateParams(), 0, true))
                    {
                        s.Receive(Frame(true, true, WsOpcodes.Text, client.Compress(text).ToArray()));
                        s.Receive(Frame(true, true, WsOpcodes.Text, client.Compress(text).ToArray()));
                    }
                    f = Out(s);
                    Assert.AreEqual(2, f.Count);
                    Assert.Less(f[1].Payload.Length, f[0].Payload.Length, "WSD-CTX-1");
                    foreach (WsFrameCopy e in f)
                    {
                        Assert.AreEqual(4u, e.Rsv, "WSD-FRM-1");
                        CollectionAssert.AreEqual(text, Inflate(inflate, msg, e.Payload));
                    }
                }
                Assert.IsFalse(s.Closed);
            }
        }

        /// <summary>"the same words again and again " 20 times: 620 bytes that compress well.</summary>
        static byte[] Words20()
        {
            var b = new StringBuilder();
            for (int i = 0; i < 20; i++) b.Append("the same words again and again ");
            return T.Ascii(b.ToString());
        }

        /// <summary>One compressed message's payload inflated by <paramref name="inflate"/> (its window kept or
        /// not as it was made).</summary>
        static byte[] Inflate(PerMessageDeflate inflate, NativeBuffer msg, byte[] payload)
        {
            inflate.BeginMessage();
            int n = 0;
            string why;
            Assert.AreEqual(0, inflate.InflateFrame(payload, true, msg, ref n, out why), why);
            return msg.Slice(0, n).ToArray();
        }

        /// <summary>WSD-FRM-3: random bytes, sent compressed, are echoed uncompressed (RSV1 clear, the plain
        /// message, no longer than it) and the server's compressor is reset; the next compressible message is
        /// echoed compressed again and inflates at a client that kept its window.</summary>
        [Test]
        public void Incompressible_Echo_Goes_Uncompressed_WsdFrm3()
        {
            string answer;
            byte[] words = Words20();
            var random = new byte[100000];
            new Random(5).NextBytes(random);
            byte[] after = T.Concat(random.AsSpan(random.Length - 100).ToArray(), words);
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate", out answer))
            using (var client = new PerMessageDeflate(new DeflateParams(), 0, true))
            using (var reader = new PerMessageDeflate(new DeflateParams(), 0))
            using (var msg = new NativeBuffer())
            {
                s.Receive(Frame(true, true, WsOpcodes.Binary, client.Compress(words).ToArray()));
                List<WsFrameCopy> f = Out(s);
                Assert.AreEqual(4u, f[0].Rsv);
                CollectionAssert.AreEqual(words, Inflate(reader, msg, f[0].Payload));
                s.Receive(Frame(true, true, WsOpcodes.Binary, client.Compress(random).ToArray()));
                f = Out(s);
                Assert.AreEqual(1, f.Count);
                Assert.AreEqual(0u, f[0].Rsv, "WSD-FRM-3: RSV1 clear");
                CollectionAssert.AreEqual(random, f[0].Payload);
                s.Receive(Frame(true, true, WsOpcodes.Binary, client.Compress(after).ToArray()));
                f = Out(s);
                Assert.AreEqual(4u, f[0].Rsv, "compressed again");
                Assert.Less(f[0].Payload.Length, after.Length);
                CollectionAssert.AreEqual(after, Inflate(reader, msg, f[0].Payload), "valid for a client that kept its window");
                Assert.IsFalse(s.Closed);
            }
        }

        [Test]
        public void Payload_Of_An_Incompressible_Message_Is_The_Message_And_Resets_WsdFrm3()
        {
            var random = new byte[100000];
            new Random(7).NextBytes(random);
            byte[] words = Words20();
            foreach (int bits in new[] { 9, 15 })
            using (var p = new PerMessageDeflate(new DeflateParams { ServerMaxWindowBits = bits }, 0))
            using (var fresh = new PerMessageDeflate(new DeflateParams { ServerMaxWindowBits = bits }, 0))
            {
                bool compressed;
                Assert.Less(p.Payload(words, out compressed).Length, words.Length);
                Assert.IsTrue(compressed);
                Assert.Greater(fresh.Compress(random).Length, random.Length, "what the rule avoids");
                byte[] got = p.Payload(random, out compressed).ToArray();
                Assert.IsFalse(compressed);
                CollectionAssert.AreEqual(random, got);
                Assert.Less(p.StateBytes, 256 * 1024, "the deflater freed (made again at the next message)");
                p.EndMessage();
                Assert.AreEqual(0, p.StateBytes);
                byte[] after = T.Concat(random.AsSpan(random.Length - 100).ToArray(), words);
                got = p.Payload(after, out compressed).ToArray();
                Assert.IsTrue(compressed);
                using (var again = new PerMessageDeflate(new DeflateParams { ServerMaxWindowBits = bits }, 0))
                    CollectionAssert.AreEqual(again.Compress(after).ToArray(), got, "refers to nothing earlier");
                Assert.AreEqual(0, p.Payload(new byte[0], out compressed).Length);
                Assert.IsFalse(compressed, "an empty message: 0x00 is longer");
                p.Payload(T.Ascii("Hello"), out compressed);
                Assert.IsFalse(compressed, "Hello: 7 bytes compressed");
            }
        }

        /// <summary>The load client with permessage-deflate agreed: a compressible request goes compressed
        /// (RSV1), an incompressible one (random bytes) uncompressed with RSV1 clear (WSD-FRM-3); both echoes
        /// are matched.</summary>
        [Test]
        public void LoadChannel_Sends_Incompressible_Requests_Uncompressed_WsdFrm3()
        {
            var codec = (WebSocketCodec)Registry.Create(CodecJson.Parse(DeflateCodec));
            var log = new ClientLog((flag, payload) => payload.Length.ToString());
            ClientChannel ch = codec.NewClientChannel(log, 1000, 0);
            using (var server = (WsEchoSession)codec.NewSession(false))
            {
                Assert.IsTrue(server.Receive(ch.OpeningRequest("127.0.0.1")));
                string error;
                Assert.AreEqual(server.OutputLength, ch.AcceptOpening(server.Output, out error), error);
                server.ClearOutput();
                byte[] words = Words20();
                var random = new byte[100000];
                new Random(3).NextBytes(random);
                byte[][] requests = { words, random };
                for (int i = 0; i < 2; i++)
                {
                    var output = new SendBuffer();
                    Assert.IsTrue(ch.TryRequest(new RequestId(i), null, 0, requests[i], output));
                    byte[] wire = new ReadOnlySpan<byte>(output.Buffer, 0, output.Length).ToArray();
                    Assert.AreEqual(i == 0 ? 0xC2 : 0x82, wire[0], "RSV1 only on the compressible request");
                    if (i == 1) Assert.Less(wire.Length, random.Length + 16, "the plain payload");
                    Assert.IsTrue(server.Receive(wire));
                    Assert.IsTrue(ch.Feed(server.Output));
                    server.ClearOutput();
                    output.Dispose();
                }
                CollectionAssert.AreEqual(new[] { "reply 0 " + words.Length, "reply 1 " + random.Length }, log.Log);
            }
            ch.Dispose();
        }


        [Test]
        public void RoundTrip_No_Context_Takeover_Both_Directions()
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10", out answer))
            {
                StringAssert.Contains("permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10\r\n", answer);
                // a compressible message (Hello alone goes uncompressed, WSD-FRM-3), compressed afresh each time
                byte[] text = T.Ascii("Hello, Hello, Hello, Hello, Hello");
                byte[] z;
                using (var client = new PerMessageDeflate(new DeflateParams(), 0, true)) z = client.Compress(text).ToArray();
                for (int i = 0; i < 3; i++) s.Receive(Frame(true, true, WsOpcodes.Text, z));
                List<WsFrameCopy> echoes = Out(s);
                Assert.AreEqual(3, echoes.Count);
                foreach (WsFrameCopy f in echoes)
                {
                    Assert.AreEqual(4u, f.Rsv);
                    Assert.AreEqual(T.ToHex(echoes[0].Payload), T.ToHex(f.Payload), "WSD-CTX-1: the server resets after every message");
                }
                // a message referring back into the previous one cannot be inflated after a reset
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f200110000")));
                List<WsFrameCopy> o = Out(s);
                Assert.AreEqual(1007, CloseCode(o[o.Count - 1]), "WSD-CMP-3");
                Assert.AreEqual("WSD-CMP-3", s.Error.Requirement);
            }
        }

        [Test]
        public void Larger_Messages_Round_Trip_Through_A_Client_Side_Compressor()
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate; client_max_window_bits=9", out answer))
            using (var client = new PerMessageDeflate(new DeflateParams { ClientMaxWindowBits = 9 }, 0, true))   // the client's compressor (9 bits)
            using (var reader = new PerMessageDeflate(new DeflateParams(), 0))
            using (var msg = new NativeBuffer())
            {
                var rnd = new Random(7);
                for (int m = 0; m < 20; m++)
                {
                    byte[] plain = Words(rnd, 20000, 300);
                    byte[] c = client.Compress(plain).ToArray();
                    int cut = c.Length / 2;
                    s.Receive(T.Concat(Frame(false, true, WsOpcodes.Text, c.AsSpan(0, cut).ToArray()), Frame(true, false, 0, c.AsSpan(cut).ToArray())));
                    List<WsFrameCopy> f = Out(s);
                    Assert.AreEqual(1, f.Count, "message " + m);
                    reader.BeginMessage();
                    int n = 0;
                    string why;
                    Assert.AreEqual(0, reader.InflateFrame(f[0].Payload, true, msg, ref n, out why), why);
                    CollectionAssert.AreEqual(plain, msg.Slice(0, n).ToArray(), "message " + m);
                }
            }
        }

        /// <summary>Up to <paramref name="most"/> words "wN " (N below <paramref name="vocabulary"/>): text that compresses.</summary>
        static byte[] Words(Random rnd, int most, int vocabulary)
        {
            var text = new StringBuilder();
            int words = rnd.Next(0, most);
            for (int w = 0; w < words; w++) text.Append("w").Append(rnd.Next(0, vocabulary)).Append(' ');
            return Encoding.UTF8.GetBytes(text.ToString());
        }

        [TestCase("continuation")]
        [TestCase("ping")]
        public void Rsv1_On_Continuation_Or_Control_Is_1002_WsdFrm2(string where)
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate", out answer))
            {
                s.Receive(Frame(false, true, WsOpcodes.Text, T.Hex("f248")));
                s.Receive(where == "ping" ? Frame(true, true, WsOpcodes.Ping, T.Hex("")) : Frame(true, true, 0, T.Hex("cdc9c90700")));
                List<WsFrameCopy> f = Out(s);
                Assert.AreEqual(1002, CloseCode(f[f.Count - 1]));
                Assert.AreEqual("WSD-FRM-2", s.Error.Requirement);
                Assert.IsTrue(s.Closed);
            }
        }

        [Test]
        public void Invalid_Deflate_1007_And_Inflated_Utf8_1007()
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate", out answer))
            {
                s.Receive(Frame(true, true, WsOpcodes.Binary, T.Hex("ff")));   // BTYPE 11: reserved
                Assert.AreEqual(1007, CloseCode(Out(s)[0]), "WSD-CMP-3");
            }
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate", out answer))
            {
                // a stored block holding C3 28 (not UTF-8) as text; the compressed bytes themselves are no UTF-8 either way
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("000200fdff c328")));
                Assert.AreEqual(1007, CloseCode(Out(s)[0]), "WSD-CMP-4");
                Assert.AreEqual("WSD-CMP-4", s.Error.Requirement);
            }
        }

        /// <summary>WSD-LIM-1: ~1 KiB on the wire inflating to 1 MiB, against a 100 KiB limit: 1009 as soon
        /// as the limit is passed, never more than the limit plus one 64 KiB step inflated.</summary>
        [Test]
        public void Bomb_Stops_At_The_Limit_1009_WsdLim1()
        {
            byte[] bomb;
            using (var c = new PerMessageDeflate(new DeflateParams(), 0)) bomb = c.Compress(new byte[1 << 20]).ToArray();
            Assert.Less(bomb.Length, 2048);
            const int max = 100 * 1024;
            string answer;
            using (WsEchoSession s = Open("{\"protocol\": \"websocket\", \"websocket\": {\"permessage_deflate\": true, \"max_message\": " + max + "}}",
                "permessage-deflate", out answer))
            {
                // fragmented in 64-byte frames: the limit is passed inside one of them
                var parts = new List<byte[]>();
                for (int i = 0; i < bomb.Length; i += 64)
                    parts.Add(Frame(i + 64 >= bomb.Length, i == 0, i == 0 ? WsOpcodes.Binary : (byte)0, bomb.AsSpan(i, Math.Min(64, bomb.Length - i)).ToArray()));
                s.Receive(T.Concat(parts.ToArray()));
                List<WsFrameCopy> f = Out(s);
                Assert.AreEqual(1, f.Count, "no echo");
                Assert.AreEqual(1009, CloseCode(f[0]));
                Assert.AreEqual("WSD-LIM-1", s.Error.Requirement);
                Assert.Greater(s.PerMessageDeflate.Inflated, max);
                Assert.LessOrEqual(s.PerMessageDeflate.Inflated, max + 64 * 1024, "never more than the limit plus one step");
            }
            using (WsEchoSession s = Open("{\"protocol\": \"websocket\", \"websocket\": {\"permessage_deflate\": true, \"max_message\": " + max + "}}",
                "permessage-deflate", out answer))
            {
                s.Receive(Frame(true, true, WsOpcodes.Binary, bomb));   // in one frame
                Assert.AreEqual(1009, CloseCode(Out(s)[0]));
                Assert.LessOrEqual(s.PerMessageDeflate.Inflated, max + 64 * 1024);
            }
        }

        [Test]
        public void ZStream_Is_Laid_Out_For_64_Bit_Linux()
        {
            if (IntPtr.Size != 8) Assert.Ignore("z_stream layout is written for 64-bit Linux");
            Assert.AreEqual(112, System.Runtime.InteropServices.Marshal.SizeOf(typeof(Zlib.ZStream)));
            Assert.AreEqual(88, (int)System.Runtime.InteropServices.Marshal.OffsetOf(typeof(Zlib.ZStream), "DataType"));
        }

        [Test]
        public void Dispose_Frees_The_Native_State()
        {
            var p = new PerMessageDeflate(new DeflateParams(), 0);
            Assert.AreEqual(0, p.StateBytes, "lazy");
            p.Compress(T.Ascii("Hello"));
            Assert.Greater(p.StateBytes, 256 * 1024, "WSD-LIM-2: a 15-bit deflater counts 256 KiB and more");
            p.Dispose();
            p.Dispose();   // idempotent
            Assert.AreEqual(0, p.StateBytes);
            Assert.Throws<ObjectDisposedException>(() => p.Compress(T.Ascii("x")));
        }

        [Test]
        public void CodecJson_Key()
        {
            var on = (WebSocketCodec)Registry.Create(CodecJson.Parse(DeflateCodec));
            Assert.IsTrue(on.PermessageDeflate);
            Assert.IsFalse(((WebSocketCodec)Registry.Create(CodecSpec.Named("websocket"))).PermessageDeflate);
            Assert.Throws<FormatException>(() => CodecJson.Parse("{\"protocol\": \"websocket\", \"websocket\": {\"permessage_deflate\": 1}}"));
        }
            // ---------------------------------------------------------------- the client's side (WSD-NEG-5)

        static DeflateParams Response(DeflateParams offer, string value, out string error)
        {
            return WsDeflateNegotiation.CheckResponse(value == null ? new string[0] : new[] { value }, offer, out error);
        }

        [Test]
        public void Client_Offer_Header()
        {
            string key;
            string req = WsHandshake.Request("h", "/", out key, null, WsDeflateNegotiation.ClientOffer());
            StringAssert.Contains("\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n", req);
            StringAssert.DoesNotContain("Extensions", WsHandshake.Request("h", "/", out key));
            // the server side reads the client's offer as the client means it
            Assert.AreEqual("permessage-deflate; client_max_window_bits=15", Agreed(WsDeflateNegotiation.ClientOffer().Header()));
        }

        [TestCase(null, null)]
        [TestCase("", null)]
        [TestCase("permessage-deflate", "permessage-deflate")]
        [TestCase("PerMessage-Deflate ;Client_Max_Window_Bits = \"9\"", "permessage-deflate; client_max_window_bits=9")]
        [TestCase("permessage-deflate; client_max_window_bits=15; server_no_context_takeover",
            "permessage-deflate; server_no_context_takeover; client_max_window_bits=15")]
        [TestCase("permessage-deflate; client_no_context_takeover; server_max_window_bits=10",
            "permessage-deflate; client_no_context_takeover; server_max_window_bits=10")]
        [TestCase("permessage-deflate; client_max_window_bits=8", "permessage-deflate; client_max_window_bits=8")]
        public void Client_Accepts_Responses_WsdNeg5(string response, string expected)
        {
            string error;
            DeflateParams p = Response(WsDeflateNegotiation.ClientOffer(), response, out error);
            Assert.IsNull(error, "WSD-NEG-5: parameters it did not ask for are accepted and followed");
            Assert.AreEqual(expected, p == null ? null : p.Header());
        }

        [TestCase("permessage-deflate; foo")]
        [TestCase("permessage-deflate; server_no_context_takeover; server_no_context_takeover")]
        [TestCase("permessage-deflate; server_max_window_bits=16")]
        [TestCase("permessage-deflate; server_max_window_bits=010")]
        [TestCase("permessage-deflate; server_max_window_bits")]
        [TestCase("permessage-deflate; client_no_context_takeover=1")]
        [TestCase("permessage-deflate; client_max_window_bits")]            // a response must give the value
        [TestCase("permessage-deflate; client_max_window_bits=7")]
        [TestCase("permessage-deflate, permessage-deflate")]
        [TestCase("permessage-deflate, x-foo")]
        [TestCase("x-webkit-deflate-frame")]
        [TestCase("permessage-deflate;")]
        [TestCase("permessage-deflate; server_max_window_bits=\"10")]
        public void Client_Refuses_Responses_WsdNeg5(string response)
        {
            string error;
            Assert.IsNull(Response(WsDeflateNegotiation.ClientOffer(), response, out error));
            Assert.IsNotNull(error, "WSD-NEG-5: '" + response + "' fails the connection");
        }

        [Test]
        public void Client_Refuses_Windows_It_Did_Not_Offer_WsdNeg5()
        {
            string error;
            Assert.IsNull(Response(new DeflateParams(), "permessage-deflate; client_max_window_bits=15", out error));
            StringAssert.Contains("not in the offer", error);
            Assert.IsNull(Response(new DeflateParams { ClientMaxWindowBits = 10 }, "permessage-deflate; client_max_window_bits=11", out error));
            StringAssert.Contains("larger than", error);
            Assert.IsNull(Response(new DeflateParams { ServerMaxWindowBits = 10 }, "permessage-deflate; server_max_window_bits=11", out error));
            StringAssert.Contains("larger than", error);
            DeflateParams p = Response(new DeflateParams { ClientNoContextTakeover = true }, "permessage-deflate", out error);
            Assert.IsTrue(p.ClientNoContextTakeover, "the offer's client_no_context_takeover binds the client");
        }

        static string Answer101(string key, string extensions)
        {
            return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
                + WsHandshake.AcceptFor(key) + "\r\n" + (extensions == null ? "" : "Sec-WebSocket-Extensions: " + extensions + "\r\n");
        }

        [Test]
        public void Client_Checks_The_101_And_Fails_The_Connection_With_1002_WsdNeg5()
        {
            string key;
            WsHandshake.Request("h", "/", out key);
            DeflateParams agreed;
            bool fail;
            Assert.IsNull(WsHandshake.CheckAnswer(Answer101(key, "permessage-deflate; server_no_context_takeover"), key, null,
                WsDeflateNegotiation.ClientOffer(), out agreed, out fail));
            Assert.IsTrue(agreed.ServerNoContextTakeover);
            Assert.IsNull(WsHandshake.CheckAnswer(Answer101(key, null), key, null, WsDeflateNegotiation.ClientOffer(), out agreed, out fail));
            Assert.IsNull(agreed, "declined");
            // not offered: any extension is refused (WS-HS-7)
            StringAssert.Contains("WS-HS-7", WsHandshake.CheckAnswer(Answer101(key, "permessage-deflate"), key));
            // offered, an invalid response: the connection is failed with 1002 and nothing else
            string error = WsHandshake.CheckAnswer(Answer101(key, "permessage-deflate; foo"), key, null,
                WsDeflateNegotiation.ClientOffer(), out agreed, out fail);
            StringAssert.Contains("WSD-NEG-5", error);
            Assert.IsTrue(fail);
            using (var c = new WsEchoSession(true, 0, 0, false, false))
            {
                c.FailConnection(new ProtocolError("WSD-NEG-5", 0, error));
                List<WsFrameCopy> f = Out(c, true);
                Assert.AreEqual(1, f.Count);
                Assert.AreEqual(WsOpcodes.Close, f[0].Opcode);
                Assert.AreEqual(1002, CloseCode(f[0]));
                Assert.IsTrue(c.Closed);
            }
        }

        /// <summary>An unmasked (server) frame.</summary>
        static byte[] ServerFrame(bool fin, bool rsv1, byte opcode, byte[] payload) { return Frame(fin, rsv1, opcode, payload, false); }

        /// <summary>A client echo session after a 101 that agreed <paramref name="response"/>.</summary>
        static WsEchoSession Client(string response, long maxMessage = 0)
        {
            string error;
            DeflateParams p = Response(WsDeflateNegotiation.ClientOffer(), response, out error);
            Assert.IsNull(error);
            var c = new WsEchoSession(true, 0, maxMessage, false, false);
            c.Agree(p);
            return c;
        }

        /// <summary>From the client: a compressible message twice with context takeover, the second echo a
        /// back-reference into the first; with client_no_context_takeover both echoes are the same bytes. (The
        /// RFC's "Hello" would be echoed uncompressed: compressed, it is longer than itself, WSD-FRM-3.)</summary>
        [TestCase("permessage-deflate", true)]
        [TestCase("permessage-deflate; client_no_context_takeover", false)]
        [TestCase("permessage-deflate; client_max_window_bits=9", true)]
        public void Client_Echoes_Compressed_And_Masked_WsdFrm1_Ctx1(string response, bool context)
        {
            byte[] text = T.Ascii("Hello, Hello, Hello, Hello, Hello");
            byte[] z1, z2;
            using (var server = new PerMessageDeflate(new DeflateParams(), 0))
            {
                z1 = server.Compress(text).ToArray();
                z2 = server.Compress(text).ToArray();
            }
            using (WsEchoSession c = Client(response))
            using (var reader = new PerMessageDeflate(new DeflateParams { ClientNoContextTakeover = !context }, 0))
            using (var msg = new NativeBuffer())
            {
                c.Receive(ServerFrame(true, true, WsOpcodes.Text, z1));
                // fragmented, with a ping between the fragments
                c.Receive(T.Concat(ServerFrame(false, true, WsOpcodes.Text, z2.AsSpan(0, 2).ToArray()), ServerFrame(true, false, WsOpcodes.Ping, T.Hex("01")),
                    ServerFrame(true, false, 0, z2.AsSpan(2).ToArray())));
                List<WsFrameCopy> f = Out(c, true);
                Assert.AreEqual(3, f.Count);
                Assert.AreEqual(4u, f[0].Rsv, "WSD-FRM-1");
                CollectionAssert.AreEqual(text, Inflate(reader, msg, f[0].Payload), "WSD-CMP-1");
                Assert.AreEqual(WsOpcodes.Pong, f[1].Opcode);
                Assert.AreEqual(0u, f[1].Rsv, "never RSV1 on a control frame");
                Assert.AreEqual(4u, f[2].Rsv);
                if (context) Assert.Less(f[2].Payload.Length, f[0].Payload.Length, "WSD-CTX-1");
                else Assert.AreEqual(T.ToHex(f[0].Payload), T.ToHex(f[2].Payload), "WSD-CTX-1");
                CollectionAssert.AreEqual(text, Inflate(reader, msg, f[2].Payload));
                Assert.IsFalse(c.Closed);
            }
        }

        [Test]
        public void Client_Resets_Its_Inflater_With_Server_No_Context_Takeover_WsdCtx1()
        {
            using (WsEchoSession c = Client("permessage-deflate"))
            {
                c.Receive(ServerFrame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                c.Receive(ServerFrame(true, true, WsOpcodes.Text, T.Hex("f200110000")));   // refers back: fine
                Assert.AreEqual(2, Out(c, true).Count);
            }
            using (WsEchoSession c = Client("permessage-deflate; server_no_context_takeover"))
            {
                c.Receive(ServerFrame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                c.Receive(ServerFrame(true, true, WsOpcodes.Text, T.Hex("f200110000")));
                List<WsFrameCopy> f = Out(c, true);
                Assert.AreEqual(1007, CloseCode(f[f.Count - 1]), "WSD-CMP-3: the window was reset, the reference is invalid");
            }
        }

        /// <summary>A decoder without a message limit (the load client's: long.MaxValue) reads a compressed
        /// message: the allowance for DEFLATE's overhead saturates instead of overflowing.</summary>
        [Test]
        public void Unbounded_Decoder_Reads_Compressed_Messages()
        {
            var log = new Log();
            using (var d = new WsDecoder(false, long.MaxValue, long.MaxValue) { AllowRsv1 = true })
                Assert.IsTrue(d.Feed(ServerFrame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")), log), d.Error.Message);
            Assert.AreEqual(4u, log.Frames[0].Rsv);
        }

        /// <summary>zlib cannot keep to a 256-byte window (WSD-NEG-4): held to 8 bits, the client sends
        /// its messages uncompressed (WSD-FRM-1) and still inflates the server's.</summary>
        [Test]
        public void Client_With_Eight_Window_Bits_Sends_Uncompressed()
        {
            using (WsEchoSession c = Client("permessage-deflate; client_max_window_bits=8"))
            {
                c.Receive(ServerFrame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                List<WsFrameCopy> f = Out(c, true);
                Assert.AreEqual(0u, f[0].Rsv);
                Assert.AreEqual("Hello", Encoding.UTF8.GetString(f[0].Payload));
                Assert.IsFalse(c.PerMessageDeflate.Compresses);
            }
        }

        [Test]
        public void Client_Invalid_Deflate_1007_And_Bomb_1009()
        {
            using (WsEchoSession c = Client("permessage-deflate"))
            {
                c.Receive(ServerFrame(true, true, WsOpcodes.Binary, T.Hex("ff")));
                Assert.AreEqual(1007, CloseCode(Out(c, true)[0]), "WSD-CMP-3");
            }
            byte[] bomb;
            using (var z = new PerMessageDeflate(new DeflateParams(), 0)) bomb = z.Compress(new byte[1 << 20]).ToArray();
            const int max = 100 * 1024;
            using (WsEchoSession c = Client("permessage-deflate", max))
            {
                c.Receive(ServerFrame(true, true, WsOpcodes.Binary, bomb));
                List<WsFrameCopy> f = Out(c, true);
                Assert.AreEqual(1, f.Count, "no echo");
                Assert.AreEqual(1009, CloseCode(f[0]), "WSD-LIM-1");
                Assert.LessOrEqual(c.PerMessageDeflate.Inflated, max + 64 * 1024);
            }
        }

        /// <summary>A client and a server session back to back, in every context mode and window: messages
        /// of up to 200 KB bounce between them, each compressed by one and inflated by the other.</summary>
        [TestCase("permessage-deflate; client_max_window_bits")]
        [TestCase("permessage-deflate; client_max_window_bits=9; client_no_context_takeover")]
        [TestCase("permessage-deflate; client_max_window_bits=12; server_max_window_bits=9")]
        [TestCase("permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits")]
        public void Client_And_Server_Sessions_Round_Trip(string offer)
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, offer, out answer))
            {
                const string name = "Sec-WebSocket-Extensions: ";
                string ext = null;
                foreach (string line in answer.Split(new[] { "\r\n" }, StringSplitOptions.None))
                    if (line.StartsWith(name, StringComparison.Ordinal)) ext = line.Substring(name.Length);
                Assert.IsNotNull(ext);
                string error;
                DeflateParams o = WsDeflateNegotiation.OfferParams(WsDeflateNegotiation.Parse(new[] { offer })[0].Params);
                DeflateParams agreed = WsDeflateNegotiation.CheckResponse(new[] { ext }, o, out error);
                Assert.IsNull(error);
                using (var c = new WsEchoSession(true, 0, 0, false, false))
                {
                    c.Agree(agreed);
                    var rnd = new Random(11);
                    for (int m = 0; m < 8; m++)
                    {
                        byte[] plain = Words(rnd, 30000, 500);
                        // sent uncompressed (it enters no window, WSD-CTX-3), then echoed compressed both ways
                        byte[] wire = ServerFrame(true, false, WsOpcodes.Text, plain);
                        for (int hop = 0; hop < 4; hop++)   // client -> server -> client -> server
                        {
                            WsEchoSession to = hop % 2 == 0 ? c : s;
                            Assert.IsTrue(to.Receive(wire), "message " + m + " hop " + hop + ": " + to.Error.Message);
                            wire = to.Output.ToArray();
                            List<WsFrameCopy> f = hop % 2 == 0 ? Out(to, true) : Out(to);
                            Assert.AreEqual(1, f.Count);
                            Assert.AreEqual(4u, f[0].Rsv, "every echo compressed");
                        }
                        // the last echo, read by the client, is the message
                        c.Collected = new List<byte[]>();
                        Assert.IsTrue(c.Receive(wire));
                        CollectionAssert.AreEqual(plain, c.Collected[0], "message " + m);
                        c.Collected = null;
                    }
                }
            }
        }
    }
}
