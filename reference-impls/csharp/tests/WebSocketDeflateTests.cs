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

        /// <summary>A masked client frame, RSV1 set when <paramref name="rsv1"/>.</summary>
        static byte[] Frame(bool fin, bool rsv1, byte opcode, byte[] payload)
        {
            var b = new byte[WsEncoder.HeaderLength(payload.Length, true) + payload.Length];
            WsEncoder.Write(fin, opcode, Key, payload, b);
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

        /// <summary>The server's output as frames (client role, RSV1 allowed); clears it.</summary>
        static List<WsFrameCopy> Out(WsEchoSession s)
        {
            var log = new Log();
            using (var d = new WsDecoder(false) { AllowRsv1 = true })
                Assert.IsTrue(d.Feed(s.Output, log), "the server's output decodes: " + d.Error.Message);
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
        /// into the first), fragmented at any byte, a stored block, a final block (WSD-CMP-5); the echoes
        /// are compressed with RSV1 on their frame, the second one referring back too.</summary>
        [Test]
        public void RoundTrip_ContextTakeover_RfcExamples()
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate; client_max_window_bits", out answer))
            {
                StringAssert.Contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=15\r\n", answer);
                Assert.AreEqual(0, s.HeldState, "WSD-LIM-2: no zlib state before the first compressed message");
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                Assert.Greater(s.HeldState, 0, "WSD-LIM-2: the state is counted");
                s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f200110000")));
                List<WsFrameCopy> f = Out(s), all = new List<WsFrameCopy>(f);
                Assert.AreEqual(2, f.Count);
                Assert.AreEqual(4u, f[0].Rsv, "WSD-FRM-1");
                Assert.AreEqual("F248CDC9C90700", T.ToHex(f[0].Payload), "WSD-CMP-1");
                Assert.AreEqual("F200110000", T.ToHex(f[1].Payload), "WSD-CTX-1: the server keeps its context");
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
                        Assert.AreEqual(4u, all[i].Rsv, "WSD-FRM-1: every echo compressed");
                        inflate.BeginMessage();
                        int n = 0;
                        string why;
                        Assert.AreEqual(0, inflate.InflateFrame(all[i].Payload, true, msg, ref n, out why), why);
                        Assert.AreEqual(expect[i], Encoding.UTF8.GetString(msg.Slice(0, n).ToArray()), "echo " + i);
                    }
                }
                Assert.IsFalse(s.Closed);
            }
        }


        [Test]
        public void RoundTrip_No_Context_Takeover_Both_Directions()
        {
            string answer;
            using (WsEchoSession s = Open(DeflateCodec, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10", out answer))
            {
                StringAssert.Contains("permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10\r\n", answer);
                for (int i = 0; i < 3; i++) s.Receive(Frame(true, true, WsOpcodes.Text, T.Hex("f248cdc9c90700")));
                foreach (WsFrameCopy f in Out(s))
                    Assert.AreEqual("F248CDC9C90700", T.ToHex(f.Payload), "WSD-CTX-1: the server resets after every message");
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
            using (var client = new PerMessageDeflate(new DeflateParams { ServerMaxWindowBits = 9 }, 0))   // the client's compressor (9 bits)
            using (var reader = new PerMessageDeflate(new DeflateParams(), 0))
            using (var msg = new NativeBuffer())
            {
                var rnd = new Random(7);
                for (int m = 0; m < 20; m++)
                {
                    var text = new StringBuilder();
                    int words = rnd.Next(0, 20000);
                    for (int w = 0; w < words; w++) text.Append("w").Append(rnd.Next(0, 300)).Append(' ');
                    byte[] plain = Encoding.UTF8.GetBytes(text.ToString());
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
    }
}
