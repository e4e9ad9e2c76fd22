// The websocket module (spec/websocket.md): masking against a byte-wise XOR, UTF-8 fail-fast
// positions, the RFC 6455 §5.7 examples, fragments with control frames between them, the error
// classes with their close codes, the echo session (ping, close handshake, errors) and the
// opening handshake (WS-HS-*).
#include <gtest/gtest.h>

#include <random>

#include "frameproof/registry.hpp"
#include "frameproof/websocket.hpp"
#include "test_util.hpp"

namespace {

using fpt::bytes;
using fpt::hex;

struct Owned {
  bool fin;
  std::uint32_t opcode;
  bool masked;
  fp::Bytes payload;
};

std::pair<std::vector<Owned>, std::optional<fp::ProtocolError>> decode(const fp::WebSocket& proto,
                                                                      const std::vector<fp::Bytes>& chunks) {
  std::vector<Owned> out;
  fp::WsDecoder dec(proto, 64);
  auto on = [&](const fp::WsFrame& f) {
    out.push_back({f.fin, f.opcode, f.masked, fp::Bytes(f.payload.begin(), f.payload.end())});
  };
  for (const auto& c : chunks)
    if (auto e = dec.feed(c, on)) return {out, e};
  return {out, dec.finish()};
}

fp::Bytes frame(std::uint32_t opcode, const fp::Bytes& payload, bool fin = true, bool masked = true,
                std::array<std::uint8_t, 4> key = {0x37, 0xfa, 0x21, 0x3d}) {
  fp::WsFrame f;
  f.fin = fin;
  f.opcode = opcode;
  f.masked = masked;
  f.key = key;
  f.key_len = masked ? 4 : 0;
  f.payload = payload;
  fp::Bytes out;
  if (auto e = fp::WebSocket(fp::Limits{1ull << 40}).encode(f, out)) throw std::runtime_error(e->requirement);
  return out;
}

const fp::WebSocket kServer;
const fp::WebSocket kClient(fp::Limits{}, true);

TEST(WebSocket, MaskMatchesBytewiseXor) {
  std::mt19937 rng(7);
  for (std::size_t n : {0u, 1u, 3u, 7u, 8u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 128u, 129u, 161u, 200u, 4099u}) {  // 128+: AVX2 blocks
    for (std::size_t phase = 0; phase < 4; ++phase) {
      fp::Bytes data(n + 3);
      for (auto& b : data) b = static_cast<std::uint8_t>(rng());
      const std::uint8_t key[4] = {0x11, 0x9c, 0x40, 0xe7};
      for (std::size_t off = 0; off < 3; ++off) {  // unaligned starts too
        fp::Bytes want = data;
        for (std::size_t i = 0; i < n; ++i) want[off + i] ^= key[(i + phase) % 4];
        fp::Bytes got = data;
        fp::ws::mask(got.data() + off, n, key, phase);
        ASSERT_EQ(got, want) << n << " " << phase << " " << off;
      }
    }
  }
}

TEST(WebSocket, Utf8FailsFastAtTheRightByte) {
  struct Case {
    const char* hex;
    std::size_t at;  // Utf8::kOk: a valid prefix
  } cases[] = {
      {"48656c6c6f", fp::ws::Utf8::kOk}, {"cebae1bdb9cf83cebcceb5", fp::ws::Utf8::kOk},
      {"eda0", 1},  // a surrogate: the A0 (ED allows 80..9F)
      {"c0", 0},    {"e080", 1}, {"f4908080", 1}, {"f5", 0}, {"80", 0}, {"e2", fp::ws::Utf8::kOk},
      {"e282ac41", fp::ws::Utf8::kOk}, {"e28241", 2},
  };
  for (const Case& c : cases) {
    const fp::Bytes b = hex(c.hex);
    fp::ws::Utf8 u;
    EXPECT_EQ(u.feed(b.data(), b.size()), c.at) << c.hex;
  }
  // split anywhere: the same verdict
  const fp::Bytes euro = hex("e282ac");
  for (std::size_t cut = 0; cut <= 3; ++cut) {
    fp::ws::Utf8 u;
    EXPECT_EQ(u.feed(euro.data(), cut), fp::ws::Utf8::kOk);
    EXPECT_EQ(u.feed(euro.data() + cut, 3 - cut), fp::ws::Utf8::kOk);
    EXPECT_TRUE(u.complete());
  }
}

TEST(WebSocket, Rfc6455Examples) {
  EXPECT_EQ(frame(fp::ws::kText, bytes("Hello"), true, false), hex("81 05 48 65 6c 6c 6f"));
  EXPECT_EQ(frame(fp::ws::kText, bytes("Hello")), hex("81 85 37 fa 21 3d 7f 9f 4d 51 58"));
  EXPECT_EQ(fp::Bytes(frame(fp::ws::kBinary, fp::Bytes(256), true, false)).size(), 4u + 256u);
  EXPECT_EQ(fp::Bytes(frame(fp::ws::kBinary, fp::Bytes(256), true, false)).at(1), 0x7e);
  EXPECT_EQ(fp::Bytes(frame(fp::ws::kBinary, fp::Bytes(65536), true, false)).at(1), 0x7f);
  // a client receives the unmasked "Hello" in any split
  const fp::Bytes s = hex("01 03 48 65 6c 89 05 48 65 6c 6c 6f 80 02 6c 6f");  // "Hel", ping, "lo"
  for (const auto& chunks : {std::vector<fp::Bytes>{s}, fpt::bytewise(s)}) {
    auto [frames, err] = decode(kClient, chunks);
    ASSERT_FALSE(err) << err->requirement;
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[1].opcode, fp::ws::kPing);  // between fragments (WS-CTL-3)
    EXPECT_EQ(frames[2].payload, bytes("lo"));
  }
  // a server receives the masked one
  auto [frames, err] = decode(kServer, {hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")});
  ASSERT_FALSE(err);
  EXPECT_EQ(frames.at(0).payload, bytes("Hello"));
}

TEST(WebSocket, ErrorsAndCloseCodes) {
  struct Case {
    fp::Bytes stream;
    const char* req;
    std::uint16_t code;
  } cases[] = {
      {hex("c1 80 00000000"), "WS-HDR-2", 1002},
      {hex("83 80 00000000"), "WS-HDR-3", 1002},
      {hex("09 80 00000000"), "WS-CTL-1", 1002},
      {hex("81 00"), "WS-MASK-1", 1002},
      {hex("89 fe 007e 00000000"), "WS-CTL-2", 1002},
      {hex("82 fe 007d 00000000"), "WS-LEN-3", 1002},
      {hex("82 ff 8000000000000000 00000000"), "WS-LEN-4", 1002},
      {hex("80 80 00000000"), "WS-FRAG-2", 1002},
      {fpt::cat(frame(1, bytes("a"), false), frame(2, bytes("b"))), "WS-FRAG-3", 1002},
      {frame(1, hex("eda0")), "WS-UTF8-1", 1007},
      {frame(1, hex("eda0"), false), "WS-UTF8-2", 1007},
      {frame(1, hex("e282")), "WS-UTF8-1", 1007},  // the message ends inside a code point
      {frame(8, hex("03")), "WS-CLOSE-1", 1002},
      {frame(8, hex("03ed")), "WS-CLOSE-2", 1002},
      {frame(8, hex("03e8 ff")), "WS-CLOSE-3", 1007},
      {hex("82 ff 0000000000a00001 00000000"), "WS-LIM-1", 1009},
  };
  for (const auto& c : cases) {
    auto [frames, err] = decode(kServer, {c.stream});
    ASSERT_TRUE(err) << c.req;
    EXPECT_EQ(err->requirement, c.req);
    EXPECT_EQ(fp::ws::close_code_for(err->requirement), c.code) << c.req;
  }
  // fail fast: invalid text is reported before the frame is complete, not as truncation
  const fp::Bytes partial = frame(1, fpt::cat(hex("c0"), fp::Bytes(100, 'a')));
  auto [f1, e1] = decode(kServer, {fp::Bytes(partial.begin(), partial.begin() + 10)});
  ASSERT_TRUE(e1);
  EXPECT_EQ(e1->requirement, "WS-UTF8-1");
  // the message limit counts the fragments so far
  const fp::WebSocket small(fp::Limits{}, false, 10);
  auto [f2, e2] = decode(small, {fpt::cat(frame(2, fp::Bytes(6), false), frame(0, fp::Bytes(5)))});
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->requirement, "WS-LIM-2");
  EXPECT_EQ(e2->offset, frame(2, fp::Bytes(6), false).size());
  // a masked frame to a client
  auto [f3, e3] = decode(kClient, {frame(2, bytes("x"))});
  ASSERT_TRUE(e3);
  EXPECT_EQ(e3->requirement, "WS-MASK-2");
  // truncated: no close code, and nothing after a close frame is read
  auto [f4, e4] = decode(kServer, {hex("82 85 00")});
  ASSERT_TRUE(e4);
  EXPECT_EQ(e4->requirement, "WS-STR-3");
  auto [f5, e5] = decode(kServer, {fpt::cat(frame(8, hex("03e8")), hex("ff ff ff"))});
  EXPECT_FALSE(e5);
  EXPECT_EQ(f5.size(), 1u);
}

using Sink = fpt::WsSink;

TEST(WebSocket, EchoSession) {
  fp::WsSession s(kServer, "");
  Sink sink;
  // fragmented text with a ping between the fragments, a binary message, an unsolicited pong
  const fp::Bytes in = fpt::cat(fpt::cat(frame(1, bytes("Hel"), false), frame(9, bytes("p"))),
                                fpt::cat(fpt::cat(frame(0, bytes("lo")), frame(2, bytes("bin"))), frame(10, bytes("x"))));
  for (const auto& ch : fpt::bytewise(in)) ASSERT_TRUE(s.feed(ch, sink));
  EXPECT_EQ(sink.out, hex("8a 01 70  81 05 48656c6c6f  82 03 62696e"));
  sink.out.clear();
  EXPECT_FALSE(s.feed(frame(8, hex("0fa0 6279")), sink));  // close 4000 "by": answered 4000, no reason
  EXPECT_EQ(sink.out, hex("88 02 0fa0"));
  EXPECT_TRUE(s.closed());
  EXPECT_FALSE(s.error());

  fp::WsSession bad(kServer, "");
  sink.out.clear();
  EXPECT_FALSE(bad.feed(fpt::cat(frame(2, bytes("ok")), hex("81 05 48656c6c6f")), sink));  // unmasked
  EXPECT_EQ(sink.out, hex("82 02 6f6b  88 02 03ea"));  // the echo, then close 1002
  ASSERT_TRUE(bad.error());
  EXPECT_EQ(bad.error()->requirement, "WS-MASK-1");
}

TEST(WebSocket, OpeningHandshake) {
  EXPECT_EQ(fp::ws::accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");  // WS-HS-2
  auto run = [](const std::string& req) {
    fp::WsSession s(kServer);
    Sink sink;
    s.feed(fp::ByteView(reinterpret_cast<const std::uint8_t*>(req.data()), req.size()), sink);
    return std::make_pair(std::string(sink.out.begin(), sink.out.end()), s.closed());
  };
  const std::string good =
      "GET /any HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
  auto [ok, closed] = run(good + "Sec-WebSocket-Protocol: chat, frameproof.echo\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
  EXPECT_FALSE(closed);
  EXPECT_EQ(ok.rfind("HTTP/1.1 101 ", 0), 0u);
  EXPECT_NE(ok.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), std::string::npos);
  EXPECT_NE(ok.find("Sec-WebSocket-Protocol: frameproof.echo\r\n"), std::string::npos);  // WS-HS-4
  EXPECT_EQ(ok.find("Extensions"), std::string::npos);                                   // WS-HS-5
  auto [plain, c2] = run(good + "\r\n");
  EXPECT_EQ(plain.find("Sec-WebSocket-Protocol"), std::string::npos);
  auto [v8, c3] = run("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n");
  EXPECT_EQ(v8.rfind("HTTP/1.1 426 ", 0), 0u);  // WS-HS-3
  EXPECT_NE(v8.find("Sec-WebSocket-Version: 13\r\n"), std::string::npos);
  EXPECT_TRUE(c3);
  auto [nokey, c4] = run("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n\r\n");
  EXPECT_EQ(nokey.rfind("HTTP/1.1 400 ", 0), 0u);  // WS-HS-1: not 16 bytes
  auto [post, c5] = run("POST / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.1 400 ", 0), 0u);
  // the client side checks the accept key
  const fp::WsClientOpening o = fp::WsClientOpening::make("127.0.0.1:1", "/");
  const std::string answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: " + fp::ws::accept_key(o.key) + "\r\n\r\n";
  EXPECT_EQ(o.check(answer), "");
  EXPECT_NE(o.check(ok), "");
}

// WS-HS-7 (RFC 6455 §4.1, the client's checks 1-6): the load client's check of the server's answer
// accepts every legal spelling and refuses a wrong status, a missing Upgrade or Connection token, a
// missing or wrong accept, and any extension or subprotocol (it offers none).
TEST(WebSocketHandshake, ClientChecksTheAnswer) {
  const fp::WsClientOpening o = fp::WsClientOpening::make("127.0.0.1:1", "/");
  const std::string accept = "Sec-WebSocket-Accept: " + fp::ws::accept_key(o.key) + "\r\n";
  const std::string status = "HTTP/1.1 101 Switching Protocols\r\n";
  const std::string upgrade = "Upgrade: websocket\r\n", connection = "Connection: Upgrade\r\n";
  auto with = [&](const std::string& extra) { return status + upgrade + connection + accept + extra + "\r\n"; };
  // accepted spellings
  EXPECT_EQ(o.check(with("")), "");
  EXPECT_EQ(o.check("HTTP/1.1 101\r\n" + upgrade + connection + accept + "\r\n"), "");   // no reason phrase
  EXPECT_EQ(o.check("HTTP/1.1 101 \r\n" + upgrade + connection + accept + "\r\n"), "");  // an empty one
  EXPECT_EQ(o.check(status + "uPgRaDe:\tWebSocket \r\nCONNECTION:keep-alive ,\tuPGRADE\r\n" + accept + "\r\n"), "");
  EXPECT_EQ(o.check(status + upgrade + "Connection: keep-alive\r\nconnection: x-token, Upgrade\r\n" + accept +
                    "Server: x\r\nSec-WebSocket-Version: 13\r\n\r\n"),
            "");  // Connection spread over repeated headers, unknown headers
  EXPECT_EQ(o.check(with("Sec-WebSocket-Extensions:\r\nSec-WebSocket-Protocol: \r\n")), "");  // empty lists name none
  // refused
  EXPECT_NE(o.check("HTTP/1.1 200 OK\r\n" + upgrade + connection + accept + "\r\n"), "");
  EXPECT_NE(o.check("HTTP/1.1 1010 Switching Protocols\r\n" + upgrade + connection + accept + "\r\n"), "");
  EXPECT_NE(o.check(status + connection + accept + "\r\n"), "");                          // no Upgrade
  EXPECT_NE(o.check(status + "Upgrade: h2c\r\n" + connection + accept + "\r\n"), "");     // Upgrade not websocket
  EXPECT_NE(o.check(status + upgrade + accept + "\r\n"), "");                              // no Connection
  EXPECT_NE(o.check(status + upgrade + "Connection: keep-alive\r\n" + accept + "\r\n"), "");  // no upgrade token
  EXPECT_NE(o.check(status + upgrade + "Connection: upgraded\r\n" + accept + "\r\n"), "");   // not the token
  EXPECT_NE(o.check(status + upgrade + connection + "\r\n"), "");                          // no accept
  EXPECT_NE(o.check(status + upgrade + connection + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"), "");
  EXPECT_NE(o.check(with("Sec-WebSocket-Extensions: permessage-deflate\r\n")), "");
  EXPECT_NE(o.check(with("sec-websocket-extensions: , permessage-deflate\r\n")), "");
  EXPECT_NE(o.check(with("Sec-WebSocket-Protocol: chat\r\n")), "");
  EXPECT_NE(o.check(with("Sec-WebSocket-Protocol:\r\nSEC-WEBSOCKET-PROTOCOL: frameproof.echo\r\n")), "");
}

// Seeded property: random messages (text of random code points or binary), each cut into random
// fragments with pings and pongs between them, masked with random keys; fed to the echo session in
// random splits, the output decodes (client role) to one pong per ping and one FIN frame per
// message with its opcode and whole payload, in order (WS-FRAG-1, WS-CTL-3, WS-ECHO-1, WS-STR-1).
TEST(WebSocketProperty, EchoOfFragmentedMessagesUnderRandomSplits) {
  std::mt19937_64 rng(99);
  auto utf8_text = [&](std::size_t cps) {
    std::string t;
    for (std::size_t i = 0; i < cps; ++i) {
      std::uint32_t cp;
      do cp = static_cast<std::uint32_t>(rng() % 4 == 0 ? rng() % 0x110000 : rng() % 0x80);
      while (cp >= 0xD800 && cp <= 0xDFFF);
      if (cp < 0x80) t += static_cast<char>(cp);
      else if (cp < 0x800) t += {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 63))};
      else if (cp < 0x10000)
        t += {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 63)), static_cast<char>(0x80 | (cp & 63))};
      else
        t += {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 63)),
              static_cast<char>(0x80 | ((cp >> 6) & 63)), static_cast<char>(0x80 | (cp & 63))};
    }
    return fp::Bytes(t.begin(), t.end());
  };
  std::size_t total = 0, fragmented = 0;
  for (int iter = 0; iter < 200; ++iter) {
    fp::Bytes in, want;
    const int messages = 1 + static_cast<int>(rng() % 4);
    for (int m = 0; m < messages; ++m) {
      const bool text = rng() % 2;
      const fp::Bytes payload = text ? utf8_text(rng() % 200) : fpt::pattern(rng() % 70000, static_cast<std::uint8_t>(rng()));
      std::size_t at = 0;
      bool first = true;
      while (true) {
        const std::size_t n = std::min<std::size_t>(payload.size() - at, rng() % 3 == 0 ? payload.size() : rng() % 50);
        const bool fin = at + n == payload.size();
        std::array<std::uint8_t, 4> key;
        for (auto& k : key) k = static_cast<std::uint8_t>(rng());
        in = fpt::cat(in, frame(first ? (text ? 1 : 2) : 0, fp::Bytes(payload.begin() + at, payload.begin() + at + n), fin,
                                true, key));
        if (!first || !fin) ++fragmented;
        first = false;
        at += n;
        if (fin) break;
        if (rng() % 3 == 0) {  // a control frame between the fragments
          const bool ping = rng() % 2;
          const fp::Bytes body = fpt::pattern(rng() % 126, 3);
          in = fpt::cat(in, frame(ping ? 9 : 10, body, true, true, key));
          if (ping) want = fpt::cat(want, frame(10, body, true, false));
        }
      }
      want = fpt::cat(want, frame(text ? 1 : 2, payload, true, false));
    }
    fp::WsSession s(kServer, "");
    Sink sink;
    for (std::size_t at = 0; at < in.size();) {
      const std::size_t n = std::min<std::size_t>(in.size() - at, 1 + rng() % 3000);
      ASSERT_TRUE(s.feed(fp::ByteView(in).subspan(at, n), sink)) << iter << " " << s.error()->requirement;
      at += n;
    }
    ASSERT_EQ(sink.out, want) << iter;
    total += in.size();
  }
  EXPECT_GT(total, 1000000u);   // the generator makes big messages
  EXPECT_GT(fragmented, 1000u);  // and fragmented ones
}

}  // namespace

// fp-load (client role): a ping from the server is answered with a masked pong carrying its payload
// (WS-PING-1), a pong is taken and not answered (WS-PING-2), any other frame is left to the caller.
TEST(WebSocketLoad, ControlFramesFromTheServer) {
  const fp::WebSocket client = fp::WebSocket().as_client();
  static const std::uint8_t text[] = {'a', 'r', 'e', ' ', 'y', 'o', 'u'};
  fp::WsFrame ping;
  ping.opcode = fp::ws::kPing;
  ping.payload = fp::ByteView(text, sizeof text);
  fp::Bytes out;
  ASSERT_TRUE(client.answer_control(ping, out));
  ASSERT_EQ(out.size(), 2u + 4u + sizeof text);
  EXPECT_EQ(out[0], 0x8A);                   // FIN, pong
  EXPECT_EQ(out[1], 0x80 | sizeof text);     // masked (WS-MASK-3), length
  for (std::size_t i = 0; i < sizeof text; ++i) EXPECT_EQ(out[6 + i] ^ out[2 + i % 4], text[i]);
  fp::WsFrame pong;
  pong.opcode = fp::ws::kPong;
  pong.payload = fp::ByteView(text, 3);
  out.clear();
  EXPECT_TRUE(client.answer_control(pong, out));
  EXPECT_TRUE(out.empty());
  fp::WsFrame data;
  EXPECT_FALSE(client.answer_control(data, out));
  data.opcode = fp::ws::kClose;
  EXPECT_FALSE(client.answer_control(data, out));
  EXPECT_TRUE(out.empty());
}

// The echo service at its own path with its own subprotocol (websocket.path, websocket.subprotocol,
// spec/websocket.md §13): another path gets 404, the configured subprotocol is selected when offered;
// the load client asks for the path, offers the subprotocol and takes an answer selecting it only.
TEST(WebSocketHandshake, EndpointPathAndSubprotocol) {
  const auto any = fp::parse_codec(std::string_view(R"({"protocol": "websocket", "websocket": {"path": "/ws/echo", "subprotocol": "echo.v1"}})"));
  const fp::WebSocket p = std::get<fp::WebSocket>(any);
  const fp::WsClientOpening o = p.opening("127.0.0.1:1");
  EXPECT_EQ(o.request.rfind("GET /ws/echo HTTP/1.1\r\n", 0), 0u);
  EXPECT_NE(o.request.find("Sec-WebSocket-Protocol: echo.v1\r\n"), std::string::npos);
  auto run = [&](const std::string& req) {
    fp::WsSession s(p);
    Sink sink;
    s.feed(fp::ByteView(reinterpret_cast<const std::uint8_t*>(req.data()), req.size()), sink);
    return std::string(sink.out.begin(), sink.out.end());
  };
  const std::string answer = run(o.request);
  EXPECT_NE(answer.find("Sec-WebSocket-Protocol: echo.v1\r\n"), std::string::npos);
  EXPECT_EQ(o.check(answer), "");
  std::string other = answer;
  other.replace(other.find("echo.v1"), 7, "echo.v2");
  EXPECT_NE(o.check(other), "");
  std::string elsewhere = o.request;
  elsewhere.replace(4, 8, "/ws");
  EXPECT_EQ(run(elsewhere).rfind("HTTP/1.1 404 ", 0), 0u);
  EXPECT_THROW(fp::parse_codec(std::string_view(R"({"protocol": "websocket", "websocket": {"path": "ws"}})")), fp::CodecError);
  EXPECT_THROW(fp::parse_codec(std::string_view(R"({"protocol": "websocket", "websocket": {"subprotocol": "a, b"}})")), fp::CodecError);
}

TEST(WebSocketLoad, ProsePayloadsAreTheContracts) {
  // the Python reference's text (conformance/frameproof/protocols/websocket/load.py, prose)
  const std::pair<std::uint64_t, std::string_view> cases[] = {
      {0, "0 into what of him that have are she the"},
      {12345, "12345 for with it are there or it what when other are had th"},
      {~0ull, "18446744073709551615 has more his what up so two"}};
  const fp::WebSocket ws;
  for (const auto& [index, want] : cases) {
    std::string got(want.size(), '\0');
    ws.request_payload(2, index, reinterpret_cast<std::uint8_t*>(got.data()), got.size());
    EXPECT_EQ(got, want);
    std::string cut(5, '\0');  // cut inside the digits
    fp::ws::prose_payload(index, reinterpret_cast<std::uint8_t*>(cut.data()), cut.size());
    EXPECT_EQ(cut, want.substr(0, 5));
  }
  EXPECT_EQ(fp::WebSocket::variants()[2], "prose");
  EXPECT_EQ(ws.variant_request(2).opcode, fp::ws::kText);
}
