using System;
using System.Collections.Generic;
using System.Text;
using Frameproof.Codec;
using NUnit.Framework;

namespace Frameproof.Tests
{
    /// <summary>The websocket module (src/Codec/WebSocket/) against spec/websocket.md.</summary>
    [TestFixture]
    public class WebSocketTests
    {
        sealed class Log : IWsFrameHandler
        {
            public readonly List<string> Frames = new List<string>();
            public bool OnFrame(ref WsFrame f)
            {
                Frames.Add((f.Fin ? "F" : "-") + " op" + f.Opcode + (f.Masked ? " k" + T.ToHex(f.MaskKey.ToArray()) : "") + " @" + f.Offset + " " + T.ToHex(f.Payload.ToArray()));
                return true;
            }
        }

        static string Decode(bool server, string hex, out List<string> frames, long maxFrame = 0, long maxMessage = 0, int chunk = int.MaxValue)
        {
            byte[] b = T.Hex(hex);
            var log = new Log();
            using (var d = new WsDecoder(server, maxFrame, maxMessage))
            {
                bool ok = true;
                for (int i = 0; i < b.Length && ok; i += chunk)
                    ok = d.Feed(new ReadOnlySpan<byte>(b, i, Math.Min(chunk, b.Length - i)), log);
                if (ok) ok = d.Finish();
                frames = log.Frames;
                if (ok) return "";
                var detail = d.Error.Detail as WebSocketCloseDetail;
                return d.Error.Requirement + "@" + d.Error.Offset + (detail != null ? " " + detail.Code : "");
            }
        }

        // RFC 6455 §5.7 examples.
        const string RfcUnmaskedHello = "810548656c6c6f";
        const string RfcMaskedHello = "818537fa213d7f9f4d5158";
        const string RfcFragmented = "010348656c 80026c6f";

        [Test]
        public void Rfc_Examples_AnySplit()
        {
            List<string> f;
            for (int c = 1; c <= 11; c++)
            {
                Assert.AreEqual("", Decode(false, RfcUnmaskedHello, out f, chunk: c));
                CollectionAssert.AreEqual(new[] { "F op1 @0 48656C6C6F" }, f);
                Assert.AreEqual("", Decode(true, RfcMaskedHello, out f, chunk: c));
                CollectionAssert.AreEqual(new[] { "F op1 k37FA213D @0 48656C6C6F" }, f, "WS-MASK-3 unmasked payload");
                Assert.AreEqual("", Decode(false, RfcFragmented, out f, chunk: c));
                CollectionAssert.AreEqual(new[] { "- op1 @0 48656C", "F op0 @5 6C6F" }, f);
            }
        }

        [TestCase(true, "c1 80 00000000", "WS-HDR-2@0 1002")]
        [TestCase(true, "83 80 00000000", "WS-HDR-3@0 1002")]
        [TestCase(true, "09 80 00000000", "WS-CTL-1@0 1002")]
        [TestCase(true, "81 00", "WS-MASK-1@0 1002")]
        [TestCase(false, "81 80 00000000", "WS-MASK-2@0 1002")]
        [TestCase(false, "89 7e 007e", "WS-CTL-2@0 1002")]
        [TestCase(false, "82 7e 007d", "WS-LEN-3@0 1002")]
        [TestCase(false, "82 7f 000000000000ffff", "WS-LEN-3@0 1002")]
        [TestCase(false, "82 7f 8000000000000000", "WS-LEN-4@0 1002")]
        [TestCase(false, "80 00", "WS-FRAG-2@0 1002")]
        [TestCase(false, "02 00 81 00", "WS-FRAG-3@2 1002")]
        [TestCase(false, "81 02 c0 80", "WS-UTF8-1@0 1007")]
        [TestCase(false, "01 02 ed a0", "WS-UTF8-2@0 1007")]
        [TestCase(false, "01 01 e2 80 01 82", "WS-UTF8-1@3 1007")]
        [TestCase(false, "88 01 03", "WS-CLOSE-1@0 1002")]
        [TestCase(false, "88 02 03ed", "WS-CLOSE-2@0 1002")]
        [TestCase(false, "88 03 03e8 ff", "WS-CLOSE-3@0 1007")]
        [TestCase(false, "82 05 0102", "WS-STR-3@0")]
        [TestCase(false, "82", "WS-STR-3@0")]
        public void Errors_Classified(bool server, string hex, string expected)
        {
            List<string> f;
            Assert.AreEqual(expected, Decode(server, hex, out f));
        }

        [Test]
        public void Utf8_FailsFast_InsideAPartialFrame()
        {
            // A text frame of 10 bytes whose second byte is already invalid: rejected before the rest arrives.
            var log = new Log();
            using (var d = new WsDecoder(false))
            {
                Assert.IsFalse(d.Feed(T.Hex("81 0a 41 ff"), log));
                Assert.AreEqual("WS-UTF8-1", d.Error.Requirement);
            }
            List<string> f;
            Assert.AreEqual("", Decode(false, "01 01 e2 89 00 80 02 82 ac", out f), "WS-CTL-3: a ping between the fragments of a split code point");
            Assert.AreEqual(3, f.Count);
        }

        [Test]
        public void Limits_FromTheHeader()
        {
            List<string> f;
            Assert.AreEqual("WS-LIM-1@0 1009", Decode(false, "82 0b", out f, maxFrame: 10));
            Assert.AreEqual("WS-LIM-2@12 1009", Decode(false, "02 0a 00112233445566778899 80 01", out f, maxMessage: 10));
            Assert.AreEqual("", Decode(false, "02 0a 00112233445566778899 89 00 80 00", out f, maxMessage: 10), "control frames do not count");
            using (var d = new WsDecoder(false))
            {
                Assert.IsFalse(d.Feed(T.Hex("82 7f 7fffffffffffffff"), new Log()));
                Assert.AreEqual("WS-LIM-1", d.Error.Requirement);
                Assert.AreEqual(0, d.BufferedBytes, "nothing buffered for the promised length");
            }
        }

        [Test]
        public void NothingReadAfterClose()
        {
            List<string> f;
            Assert.AreEqual("", Decode(false, "88 02 03e8 ffff", out f), "WS-CLOSE-4: bytes after the close are not read");
            Assert.AreEqual(1, f.Count);
        }

        [Test]
        public void Mask_VectorScalarAndPhase_AgreeWithTheDefinition()
        {
            byte[] key = T.Hex("37fa213d");
            // 64 and more: the SIMD blocks of 64 and 16 bytes, then the word and byte loops
            foreach (int n in new[] { 0, 1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 79, 80, 81, 100, 129, 1000 })
                for (int phase = 0; phase < 4; phase++)
                {
                    byte[] src = T.Pattern(n, n);
                    var dst = new byte[n];
                    WsMask.Apply(src, dst, key, phase);
                    for (int i = 0; i < n; i++) Assert.AreEqual((byte)(src[i] ^ key[(phase + i) % 4]), dst[i], "n " + n + " phase " + phase + " i " + i);
                    WsMask.Apply(dst, dst, key, phase);
                    CollectionAssert.AreEqual(src, dst, "in place, twice = identity");
                }
        }

        [Test]
        public void Encoder_MinimalLengths_Masking_Refusals()
        {
            var codec = (WebSocketCodec)Registry.Create(CodecSpec.Named("websocket"));
            Func<WebSocketHeader, int, EncodeOutcome> enc = (h, n) => codec.Encode(new FrameValue { Header = h, Payload = T.Pattern(n) });
            Assert.AreEqual("817D", T.ToHex(enc(new WebSocketHeader { Fin = true, Opcode = 1 }, 125).Encoded).Substring(0, 4));
            Assert.AreEqual("827E007E", T.ToHex(enc(new WebSocketHeader { Fin = true, Opcode = 2 }, 126).Encoded).Substring(0, 8));
            Assert.AreEqual("027EFFFF", T.ToHex(enc(new WebSocketHeader { Opcode = 2 }, 65535).Encoded).Substring(0, 8));
            Assert.AreEqual("827F0000000000010000", T.ToHex(enc(new WebSocketHeader { Fin = true, Opcode = 2 }, 65536).Encoded).Substring(0, 20));
            byte[] m = codec.Encode(new FrameValue { Header = new WebSocketHeader { Fin = true, Opcode = 1, Masked = true, MaskKey = T.Hex("37fa213d") }, Payload = T.Ascii("Hello") }).Encoded;
            Assert.AreEqual(T.ToHex(T.Hex(RfcMaskedHello)), T.ToHex(m));
            Assert.AreEqual("WS-HDR-2", enc(new WebSocketHeader { Fin = true, Opcode = 2, Rsv = 4 }, 0).Error.Requirement);
            Assert.AreEqual("WS-HDR-3", enc(new WebSocketHeader { Fin = true, Opcode = 3 }, 0).Error.Requirement);
            Assert.AreEqual("WS-CTL-1", enc(new WebSocketHeader { Opcode = 9 }, 0).Error.Requirement);
            Assert.AreEqual("WS-CTL-2", enc(new WebSocketHeader { Fin = true, Opcode = 9 }, 126).Error.Requirement);
            Assert.AreEqual("WS-MASK-4", enc(new WebSocketHeader { Fin = true, Opcode = 2, Masked = true, MaskKey = T.Hex("0102") }, 1).Error.Requirement);
            Assert.AreEqual("WS-MASK-4", enc(new WebSocketHeader { Fin = true, Opcode = 2, MaskKey = T.Hex("01020304") }, 1).Error.Requirement);
            var small = (WebSocketCodec)Registry.Create(CodecJson.Parse("{\"protocol\": \"websocket\", \"limits\": {\"max_payload\": 4}}"));
            Assert.AreEqual("WS-LIM-3", small.Encode(new FrameValue { Header = new WebSocketHeader { Fin = true, Opcode = 2 }, Payload = new byte[5] }).Error.Requirement);
        }

        static string Serve(WsEchoSession s, string hex)
        {
            s.Receive(T.Hex(hex));
            string r = T.ToHex(s.Output.ToArray());
            s.ClearOutput();
            return r;
        }

        [Test]
        public void Echo_Messages_Pings_Close()
        {
            using (var s = new WsEchoSession(false, 0, 0, false, false))
            {
                Assert.AreEqual(T.ToHex(T.Hex("810548656c6c6f")), Serve(s, RfcMaskedHello), "WS-ECHO-1");
                // fragmented text "Hel" + ping "x" + "lo": pong first, then the whole message.
                string frag = "01 83 00000000 48656c" + "89 81 00000000 78" + "80 82 00000000 6c6f";
                Assert.AreEqual(T.ToHex(T.Hex("8a0178 810548656c6c6f")), Serve(s, frag), "WS-CTL-3, WS-PING-1");
                Assert.AreEqual("", Serve(s, "8a 80 00000000"), "WS-PING-2");
                Assert.AreEqual(T.ToHex(T.Hex("880203e9")), Serve(s, "88 84 00000000 03e9 6869"), "WS-CLOSE-5: the code, no reason");
                Assert.IsTrue(s.Closed);
                Assert.IsFalse(s.Error.IsSet);
            }
        }

        [Test]
        public void Echo_ErrorWritesTheCloseCode_EofWritesNothing()
        {
            using (var s = new WsEchoSession(false, 0, 0, false, false))
            {
                Assert.AreEqual(T.ToHex(T.Hex("810548656c6c6f 880203ea")), Serve(s, RfcMaskedHello + "82 00"), "WS-ECHO-2, WS-MASK-1 → 1002");
                Assert.AreEqual("WS-MASK-1", s.Error.Requirement);
                Assert.AreEqual(11, s.Error.Offset);
            }
            using (var s = new WsEchoSession(false, 0, 0, false, false))
            {
                Assert.AreEqual(T.ToHex(T.Hex("880203ef")), Serve(s, "81 82 00000000 c0af"), "1007");
            }
            using (var s = new WsEchoSession(false, 0, 0, false, false))
            {
                Serve(s, "82 85 00000000 01");
                s.EndOfInput();
                Assert.AreEqual(0, s.OutputLength, "WS-ECHO-3");
                Assert.AreEqual("WS-STR-3", s.Error.Requirement);
            }
        }

        static string Ascii(WsEchoSession s) { string r = Encoding.ASCII.GetString(s.Output.ToArray()); s.ClearOutput(); return r; }

        /// <summary>The echo service at its own path with its own subprotocol (websocket.path,
        /// websocket.subprotocol, spec/websocket.md §13): another path gets 404, the configured
        /// subprotocol is selected when offered; the client offers it and takes an answer selecting it only.</summary>
        [Test]
        public void Handshake_Endpoint_Path_And_Subprotocol()
        {
            var codec = (WebSocketCodec)Registry.Create(CodecJson.Parse(
                "{\"protocol\": \"websocket\", \"websocket\": {\"path\": \"/ws/echo\", \"subprotocol\": \"echo.v1\"}}"));
            string key;
            string req = WsHandshake.Request("h", codec.Path, out key, codec.Subprotocol);
            StringAssert.StartsWith("GET /ws/echo HTTP/1.1\r\n", req);
            StringAssert.Contains("Sec-WebSocket-Protocol: echo.v1\r\n", req);
            using (var s = (WsEchoSession)codec.NewSession(false))
            {
                s.Receive(Encoding.ASCII.GetBytes(req));
                string answer = Ascii(s);
                StringAssert.Contains("Sec-WebSocket-Protocol: echo.v1\r\n", answer, "WS-HS-4");
                string head = answer.Substring(0, answer.IndexOf("\r\n\r\n"));
                Assert.IsNull(WsHandshake.CheckAnswer(head, key, "echo.v1"));
                Assert.IsNotNull(WsHandshake.CheckAnswer(head.Replace("echo.v1", "echo.v2"), key, "echo.v1"));
                Assert.IsNotNull(WsHandshake.CheckAnswer(head, key), "not offered");
            }
            using (var s = (WsEchoSession)codec.NewSession(false))
            {
                s.Receive(Encoding.ASCII.GetBytes(req.Replace("GET /ws/echo ", "GET /ws ")));
                StringAssert.StartsWith("HTTP/1.1 404 ", Ascii(s));
            }
            Assert.Throws<FormatException>(() => CodecJson.Parse("{\"protocol\": \"websocket\", \"websocket\": {\"path\": \"ws\"}}"));
            Assert.Throws<FormatException>(() => CodecJson.Parse("{\"protocol\": \"websocket\", \"websocket\": {\"subprotocol\": \"a, b\"}}"));
        }

        [Test]
        public void Handshake_Rfc_Accept_Subprotocol_Errors()
        {
            Assert.AreEqual("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", WsHandshake.AcceptFor("dGhlIHNhbXBsZSBub25jZQ=="), "WS-HS-2");
            string req = "GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Protocol: chat, frameproof.echo\r\nSec-WebSocket-Version: 13\r\n\r\n";
            using (var s = new WsEchoSession(false, 0, 0, true, false))
            {
                byte[] b = T.Concat(Encoding.ASCII.GetBytes(req), T.Hex(RfcMaskedHello));
                for (int i = 0; i < b.Length; i++) s.Receive(new ReadOnlySpan<byte>(b, i, 1));   // dribbled
                string answer = Encoding.ASCII.GetString(s.Output.ToArray());
                StringAssert.StartsWith("HTTP/1.1 101 Switching Protocols\r\n", answer);
                StringAssert.Contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n", answer);
                StringAssert.Contains("Sec-WebSocket-Protocol: frameproof.echo\r\n", answer, "WS-HS-4");
                StringAssert.DoesNotContain("Extensions", answer, "WS-HS-5");
                StringAssert.EndsWith("0D0A0D0A" + T.ToHex(T.Hex(RfcUnmaskedHello)), T.ToHex(s.Output.ToArray()), "the frame after the head answered");
            }
            using (var s = new WsEchoSession(false, 0, 0, true, false))
            {
                s.Receive(Encoding.ASCII.GetBytes(req.Replace("Version: 13", "Version: 8")));
                StringAssert.StartsWith("HTTP/1.1 426 ", Ascii(s), "WS-HS-3");
                Assert.IsTrue(s.Closed);
            }
            using (var s = new WsEchoSession(false, 0, 0, true, false))
            {
                s.Receive(Encoding.ASCII.GetBytes(req.Replace("Upgrade: WebSocket\r\n", "")));
                StringAssert.StartsWith("HTTP/1.1 400 ", Ascii(s), "WS-HS-1");
                Assert.AreEqual("WS-HS-1", s.Error.Requirement);
            }
            string key;
            string creq = WsHandshake.Request("h", "/", out key);
            using (var s = new WsEchoSession(false, 0, 0, true, false))
            {
                s.Receive(Encoding.ASCII.GetBytes(creq));
                string ans = Ascii(s);
                Assert.IsNull(WsHandshake.CheckAnswer(ans.Substring(0, ans.Length - 4), key), "our client accepts our server");
                Assert.IsNotNull(WsHandshake.CheckAnswer(ans.Substring(0, ans.Length - 4), "AAAAAAAAAAAAAAAAAAAAAA=="));
            }
        }

        [Test]
        public void CheckAnswer_ClientChecksOfTheResponse_WsHs7()
        {
            string key;
            WsHandshake.Request("h", "/", out key);
            string accept = "Sec-WebSocket-Accept: " + WsHandshake.AcceptFor(key) + "\r\n";
            const string status = "HTTP/1.1 101 Switching Protocols\r\n", upgrade = "Upgrade: websocket\r\n", connection = "Connection: Upgrade\r\n";
            Func<string, string> with = extra => status + upgrade + connection + accept + extra;
            // CheckAnswer takes the head without its blank line; accepted spellings
            Assert.IsNull(WsHandshake.CheckAnswer(with(""), key));
            Assert.IsNull(WsHandshake.CheckAnswer("HTTP/1.1 101\r\n" + upgrade + connection + accept, key), "no reason phrase");
            Assert.IsNull(WsHandshake.CheckAnswer("HTTP/1.1 101 \r\n" + upgrade + connection + accept, key), "an empty reason phrase");
            Assert.IsNull(WsHandshake.CheckAnswer(status + "uPgRaDe:\tWebSocket \r\nCONNECTION:keep-alive ,\tuPGRADE\r\n" + accept, key));
            Assert.IsNull(WsHandshake.CheckAnswer(status + upgrade + "Connection: keep-alive\r\nconnection: x-token, Upgrade\r\n" + accept
                + "Server: x\r\nSec-WebSocket-Version: 13\r\n", key), "Connection spread over repeated headers, unknown headers");
            Assert.IsNull(WsHandshake.CheckAnswer(with("Sec-WebSocket-Extensions:\r\nSec-WebSocket-Protocol: \r\n"), key), "empty lists name nothing");
            // refused (RFC 6455 §4.1, checks 1-6)
            Assert.IsNotNull(WsHandshake.CheckAnswer("HTTP/1.1 200 OK\r\n" + upgrade + connection + accept, key));
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + connection + accept, key), "no Upgrade");
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + "Upgrade: h2c\r\n" + connection + accept, key), "Upgrade: h2c");
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + upgrade + accept, key), "no Connection");
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + upgrade + "Connection: keep-alive\r\n" + accept, key), "no upgrade token");
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + upgrade + "Connection: upgraded\r\n" + accept, key), "not the token");
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + upgrade + connection, key), "no accept");
            Assert.IsNotNull(WsHandshake.CheckAnswer(status + upgrade + connection + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n", key), "another key's accept");
            Assert.IsNotNull(WsHandshake.CheckAnswer(with("Sec-WebSocket-Extensions: permessage-deflate\r\n"), key), "extension not offered");
            Assert.IsNotNull(WsHandshake.CheckAnswer(with("sec-websocket-extensions: , permessage-deflate\r\n"), key), "extension not offered");
            Assert.IsNotNull(WsHandshake.CheckAnswer(with("Sec-WebSocket-Protocol: chat\r\n"), key), "subprotocol not offered");
            Assert.IsNotNull(WsHandshake.CheckAnswer(with("Sec-WebSocket-Protocol:\r\nSEC-WEBSOCKET-PROTOCOL: frameproof.echo\r\n"), key), "subprotocol not offered");
        }

        [Test]
        public void LoadChannel_UnsolicitedPongIsNoReplyNorError()
        {
            var codec = (WebSocketCodec)Registry.Create(CodecSpec.Named("websocket"));
            var log = new ClientLog((flag, payload) => "op" + flag + " " + Encoding.ASCII.GetString(payload));
            ClientChannel ch = codec.NewClientChannel(log, 1000, 0);
            // the 101 and, in the same read, an unsolicited pong (WS-PING-2)
            string req = Encoding.ASCII.GetString(ch.OpeningRequest("127.0.0.1"));
            string key = req.Substring(req.IndexOf("Sec-WebSocket-Key: ", StringComparison.Ordinal) + 19, 24);
            byte[] answer = Encoding.ASCII.GetBytes("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
                + WsHandshake.AcceptFor(key) + "\r\n\r\n");
            byte[] got = T.Concat(answer, T.Hex("8A026670"));
            string error;
            Assert.AreEqual(answer.Length, ch.AcceptOpening(got, out error), error);
            Assert.IsTrue(ch.Feed(new ReadOnlySpan<byte>(got, answer.Length, got.Length - answer.Length)));
            CollectionAssert.IsEmpty(log.Log, "a pong completes nothing");
            Assert.IsFalse(ch.Error.IsSet);
            Assert.AreEqual(0, ch.PendingCount);
            ch.Dispose();
        }

        [Test]
        public void ClientRole_EchoIsMasked()
        {
            using (var s = new WsEchoSession(true, 0, 0, false, false))
            {
                s.Receive(T.Hex(RfcUnmaskedHello));
                byte[] o = s.Output.ToArray();
                List<string> f;
                Assert.AreEqual("", Decode(true, T.ToHex(o), out f), "a server accepts it");
                StringAssert.EndsWith("48656C6C6F", f[0]);
            }
        }

        [Test]
        public void LoadChannel_HandshakeTextFifoClose_AgainstTheServerSession()
        {
            var codec = (WebSocketCodec)Registry.Create(CodecSpec.Named("websocket"));
            CollectionAssert.AreEqual(new[] { "binary", "text", "prose" }, codec.LoadVariants);
            var log = new ClientLog((flag, payload) => "op" + flag + " " + Encoding.ASCII.GetString(payload));
            ClientChannel ch = codec.NewClientChannel(log, 1000, 1);
            using (var server = (WsEchoSession)codec.NewSession(false))
            {
                Assert.IsTrue(server.Receive(ch.OpeningRequest("127.0.0.1")));
                string error;
                Assert.AreEqual(server.OutputLength, ch.AcceptOpening(server.Output, out error), error);
                server.ClearOutput();
                var output = new SendBuffer();
                var p = new byte[20];
                for (int i = 0; i < 3; i++)
                {
                    codec.FillLoadPayload(1, i, p);
                    Assert.IsTrue(Utf8Validator.IsValid(p), "text payloads are UTF-8");
                    Assert.IsTrue(ch.TryRequest(new RequestId(i), null, 0, p, output));
                }
                byte[] wire = new ReadOnlySpan<byte>(output.Buffer, 0, output.Length).ToArray();
                Assert.AreEqual(0x81, wire[0]);
                Assert.AreEqual(0x80, wire[1] & 0x80, "masked (WS-MASK-4)");
                Assert.IsTrue(server.Receive(wire));
                Assert.IsTrue(ch.Feed(server.Output));
                server.ClearOutput();
                Assert.AreEqual(3, log.Log.Count);
                codec.FillLoadPayload(1, 2, p);
                Assert.AreEqual("reply 2 op1 " + Encoding.ASCII.GetString(p), log.Log[2], "FIFO, opcode 1");
                Assert.IsTrue(codec.VerifyLoadPayload(1, 2, 20, p));
                Assert.IsFalse(codec.VerifyLoadPayload(1, 1, 20, p));
                Assert.IsFalse(server.Receive(ch.ClosingFrame()), "the session closes on a close frame");
                Assert.IsTrue(server.Closed);
                Assert.IsFalse(ch.PeerClosed);
                ch.Feed(server.Output);
                Assert.IsTrue(ch.PeerClosed, "the server's close answers ours");
                Assert.AreEqual("880203E8", T.ToHex(server.Output.ToArray()), "code 1000 echoed");
            }
            ch.Dispose();
        }

        [Test]
        public void CodecJson_RoleAndMessageLimit()
        {
            var c = (WebSocketCodec)Registry.Create(CodecJson.Parse("{\"protocol\": \"websocket\", \"limits\": {\"max_payload\": 100}, \"websocket\": {\"role\": \"client\", \"max_message\": 1000}}"));
            Assert.IsTrue(c.Client);
            Assert.AreEqual(100, c.MaxFrame);
            Assert.AreEqual(1000, c.MaxMessage);
            Assert.Throws<FormatException>(() => CodecJson.Parse("{\"protocol\": \"websocket\", \"websocket\": {\"role\": \"proxy\"}}"));
        }
    }
}
