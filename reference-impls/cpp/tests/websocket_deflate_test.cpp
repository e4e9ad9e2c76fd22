// permessage-deflate (spec/websocket-deflate.md, WSD-*): the offer grammar in its legal spellings
// (WSD-NEG-1), declined offers (WSD-NEG-2/4), the response (WSD-NEG-3), the RFC 7692 examples, round
// trips with and without context takeover (WSD-CTX-1), RSV1 where it may not be (WSD-FRM-2), and a
// bomb stopped at max_message (WSD-LIM-1), through the codec and through fp-server's echo session.
#include <gtest/gtest.h>

#include <random>

#include "frameproof/registry.hpp"
#include "frameproof/websocket.hpp"
#include "frameproof/websocket_deflate.hpp"
#include "test_util.hpp"

namespace {

using fpt::bytes;
using fpt::hex;

std::optional<std::string> answer(std::vector<std::string_view> values) {
  const auto a = fp::wsd::accept(values);
  if (!a) return std::nullopt;
  return a->header;
}

TEST(WsDeflateNegotiation, EverySpellingReadsTheSame) {  // WSD-NEG-1
  const std::string want = "permessage-deflate; server_max_window_bits=10; client_max_window_bits=15";
  for (std::string_view v : {
           "permessage-deflate; server_max_window_bits=10; client_max_window_bits",
           "PerMessage-Deflate;Server_Max_Window_Bits=10;CLIENT_MAX_WINDOW_BITS",
           "permessage-deflate \t;  server_max_window_bits = 10 ;client_max_window_bits  ",
           "permessage-deflate; server_max_window_bits=\"10\"; client_max_window_bits",
           "permessage-deflate; server_max_window_bits=\"1\\0\"; client_max_window_bits",  // an escaped octet
           ", x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=10; client_max_window_bits",
       })
    EXPECT_EQ(answer({v}), want) << v;
  // several headers are one list, in order
  EXPECT_EQ(answer({"x-other; a=1", "permessage-deflate; server_max_window_bits=10; client_max_window_bits"}), want);
  const auto parsed = fp::wsd::parse_extensions({"a; b=\"c\" , d"});
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].params[0].value, "c");
  EXPECT_TRUE((*parsed)[1].params.empty());
  // the parameters a response carries (WSD-NEG-3)
  EXPECT_EQ(answer({"permessage-deflate"}), "permessage-deflate");
  EXPECT_EQ(answer({"permessage-deflate; server_no_context_takeover; client_no_context_takeover"}),
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover");
  EXPECT_EQ(answer({"permessage-deflate; client_max_window_bits=8"}), "permessage-deflate; client_max_window_bits=8");
  EXPECT_EQ(answer({"permessage-deflate; server_max_window_bits=9"}), "permessage-deflate; server_max_window_bits=9");
}

TEST(WsDeflateNegotiation, DeclinesInvalidOffersAndTakesTheNext) {  // WSD-NEG-2, WSD-NEG-4
  for (std::string_view v : {
           "permessage-deflate; foo", "permessage-deflate; server_max_window_bits=10; server_max_window_bits=10",
           "permessage-deflate; server_no_context_takeover; SERVER_NO_CONTEXT_TAKEOVER",
           "permessage-deflate; server_max_window_bits=08", "permessage-deflate; server_max_window_bits=16",
           "permessage-deflate; server_max_window_bits=7", "permessage-deflate; server_max_window_bits",
           "permessage-deflate; client_max_window_bits=0x0f", "permessage-deflate; server_no_context_takeover=1",
           "permessage-deflate; client_no_context_takeover=\"\"", "permessage-deflate; server_max_window_bits=\"1 0\"",
           "permessage-deflate; server_max_window_bits=8",  // zlib cannot use 8 bits (WSD-NEG-4)
           "permessage-deflate; server_max_window_bits=\"10",  // unterminated
           "permessage-deflate server_max_window_bits=10",      // not a list
           "permessage-deflate;", "x-foo",
       })
    EXPECT_EQ(answer({v}), std::nullopt) << v;
  EXPECT_EQ(answer({"permessage-deflate; server_max_window_bits=8, permessage-deflate; bogus, "
                    "permessage-deflate; client_no_context_takeover, permessage-deflate"}),
            "permessage-deflate; client_no_context_takeover");
}

// The RFC 7692 §7.2.3 examples, inflated frame by frame and at every split.
TEST(WsDeflateCodec, RfcExamples) {
  struct Case {
    const char* hex;
  } cases[] = {{"f248cdc9c90700"}, {"0005 00faff 48656c6c6f 00"}, {"f24805000000ffff cac9c90700"}, {"f348cdc9c90700"}};
  for (const auto& c : cases) {
    const fp::Bytes in = hex(c.hex);
    for (std::size_t cut = 0; cut <= in.size(); ++cut) {
      fp::wsd::Inflater inf;
      fp::Bytes out;
      ASSERT_FALSE(inf.feed(fp::ByteView(in).first(cut), false, out));
      ASSERT_FALSE(inf.feed(fp::ByteView(in).subspan(cut), true, out)) << c.hex;
      EXPECT_EQ(out, bytes("Hello")) << c.hex << " cut " << cut;
    }
  }
  // context takeover: the second "Hello" refers back to the first (§7.2.3.2)
  fp::wsd::Inflater inf;
  fp::Bytes out;
  ASSERT_FALSE(inf.feed(hex("f248cdc9c90700"), true, out));
  ASSERT_FALSE(inf.feed(hex("f200110000"), true, out));
  EXPECT_EQ(out, bytes("HelloHello"));
  // after a final block (WSD-CMP-5) the next message is a new stream with the old window
  fp::wsd::Inflater fin;
  out.clear();
  ASSERT_FALSE(fin.feed(hex("f348cdc9c90700 ffff"), true, out));  // the rest after BFINAL ignored
  ASSERT_FALSE(fin.feed(hex("f200110000"), true, out));            // refers back into the ended stream
  EXPECT_EQ(out, bytes("HelloHello"));
  fp::wsd::Deflater d;
  fp::Bytes z;
  d.compress(bytes("Hello"), z);
  EXPECT_EQ(z, hex("f248cdc9c90700"));  // WSD-CMP-1
  d.compress(bytes("Hello"), z);
  EXPECT_EQ(z, hex("f200110000"));
  d.compress({}, z);
  EXPECT_EQ(z, hex("00"));  // an empty message after a sync flush
  // invalid DEFLATE: a reserved block type, a stored length that does not match
  for (const char* bad : {"ff", "0005 0000ff 48656c6c6f"}) {
    fp::wsd::Inflater i;
    fp::Bytes o;
    const auto e = i.feed(hex(bad), true, o);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->code, 1007);
  }
}

TEST(WsDeflateCodec, RoundTripWithAndWithoutContextTakeover) {  // WSD-CTX-1
  for (bool reset : {false, true}) {
    for (int wbits : {9, 12, 15}) {
      fp::wsd::Deflater d(wbits, reset);
      fp::wsd::Inflater i(reset, 1 << 20);
      std::size_t first = 0, second = 0;
      for (int m = 0; m < 4; ++m) {
        const fp::Bytes msg = fpt::cat(bytes("the same sentence, again and again: "), fpt::pattern(200 + m * 3000, 7));
        fp::Bytes z, out;
        d.compress(msg, z);
        (m == 0 ? first : second) = z.size();
        ASSERT_FALSE(i.feed(z, true, out));
        ASSERT_EQ(out, msg) << reset << " " << wbits << " " << m;
      }
      (void)first;
      (void)second;
      EXPECT_EQ(d.held() == 0, reset);  // no context: the state is freed after every message
      EXPECT_EQ(i.held() == 0, reset);
    }
  }
  // with context, a repeated message costs almost nothing; without, it costs what the first did
  for (bool reset : {false, true}) {
    fp::wsd::Deflater d(15, reset);
    const fp::Bytes msg = fpt::pattern(4000, 3);
    fp::Bytes a, b;
    d.compress(msg, a);
    d.compress(msg, b);
    if (reset) EXPECT_EQ(a, b);
    else EXPECT_LT(b.size(), a.size() / 8);
  }
}

TEST(WsDeflateCodec, BombStopsAtTheLimit) {  // WSD-LIM-1
  fp::wsd::Deflater d(15, false, 9);
  fp::Bytes bomb;
  d.compress(fp::Bytes(1 << 20, 0), bomb);  // 1 MiB of zeros
  EXPECT_LT(bomb.size(), 1200u);
  const std::uint64_t limit = 200 * 1024;
  fp::wsd::Inflater i(false, limit);
  fp::Bytes out;
  const auto e = i.feed(bomb, true, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 1009);
  EXPECT_STREQ(e->requirement, "WSD-LIM-1");
  EXPECT_GT(out.size(), limit);
  EXPECT_LE(out.size(), limit + fp::wsd::kStep);
  EXPECT_EQ(i.held(), 0u);
  // the same limit lets a message of exactly max_message through
  fp::wsd::Inflater ok(false, limit);
  fp::Bytes z;
  fp::wsd::Deflater().compress(fp::Bytes(limit, 'a'), z);
  out.clear();
  EXPECT_FALSE(ok.feed(z, true, out));
  EXPECT_EQ(out.size(), limit);
}

// Random bytes (std::mt19937, seeded): DEFLATE expands them, about 5 octets a 16 KiB block.
fp::Bytes noise(std::size_t n, unsigned seed = 7) {
  std::mt19937 g(seed);
  fp::Bytes out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(g() >> 24);
  return out;
}

fp::Bytes repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return bytes(out);
}

TEST(WsDeflateCodec, IncompressibleMessageGoesUncompressed) {  // WSD-FRM-3
  for (int wbits : {9, 15}) {
    const fp::Bytes words = repeat("the same words again and again ", 20);
    const fp::Bytes random = noise(100000);
    fp::Bytes z;
    fp::wsd::Deflater().compress(random, z);
    EXPECT_GT(z.size(), random.size());  // what the rule avoids
    fp::wsd::Deflater d(wbits);
    fp::wsd::Inflater receiver(false, 1 << 20);  // keeps its window
    fp::Bytes out;
    ASSERT_TRUE(d.payload(words, z));
    EXPECT_LT(z.size(), words.size());
    ASSERT_FALSE(receiver.feed(z, true, out));
    EXPECT_EQ(out, words);
    EXPECT_FALSE(d.payload(random, z)) << wbits;  // to go uncompressed, RSV1 clear
    EXPECT_TRUE(z.empty());
    EXPECT_EQ(d.held(), 0u);  // the compressor reset: its state made again at the next message
    const fp::Bytes after = fpt::cat(fp::Bytes(random.end() - 100, random.end()), words);
    ASSERT_TRUE(d.payload(after, z));
    fp::Bytes fresh;
    fp::wsd::Deflater(wbits).compress(after, fresh);
    EXPECT_EQ(z, fresh);  // refers to nothing earlier
    out.clear();
    ASSERT_FALSE(receiver.feed(z, true, out));  // valid at a receiver that kept its window
    EXPECT_EQ(out, after);
    EXPECT_FALSE(d.payload({}, z));  // an empty message: 0x00 is longer
    EXPECT_FALSE(d.payload(bytes("Hello"), z));  // 7 bytes compressed
  }
}

// ------------------------------------------------------------------ through fp-server's session

using Sink = fpt::WsSink;

struct Frame {
  std::uint8_t byte0;
  fp::Bytes payload;
};

// A client's frame: byte 0 as given (FIN, RSV, opcode), masked.
fp::Bytes client_frame(std::uint8_t byte0, const fp::Bytes& payload) {
  fp::Bytes out(14);
  const std::size_t h = fp::ws::put_header(out.data(), byte0, true, payload.size());
  out.resize(h);
  const std::uint8_t key[4] = {0x9a, 0x01, 0x7e, 0xc3};
  out.insert(out.end(), key, key + 4);
  const std::size_t at = out.size();
  out.insert(out.end(), payload.begin(), payload.end());
  fp::ws::mask(out.data() + at, payload.size(), key);
  return out;
}

// The server's unmasked frames in `b`.
std::vector<Frame> frames(fp::ByteView b) {
  std::vector<Frame> out;
  while (b.size() >= 2) {
    std::size_t n = b[1] & 0x7f, h = 2;
    if (n == 126) n = (b[2] << 8) | b[3], h = 4;
    else if (n == 127) {
      n = 0;
      for (int i = 0; i < 8; ++i) n = (n << 8) | b[2 + i];
      h = 10;
    }
    out.push_back({b[0], fp::Bytes(b.begin() + h, b.begin() + h + n)});
    b = b.subspan(h + n);
  }
  return out;
}

struct Conn {
  fp::WsSession s;
  Sink sink;
  std::string head;
  explicit Conn(const fp::WebSocket& p, const std::string& extensions) : s(p) {
    const std::string req = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
                            extensions + "\r\n";
    s.feed(fp::ByteView(reinterpret_cast<const std::uint8_t*>(req.data()), req.size()), sink);
    head.assign(sink.out.begin(), sink.out.end());
    sink.out.clear();
  }
  std::vector<Frame> send(const fp::Bytes& in) {
    sink.out.clear();
    s.feed(in, sink);
    return frames(sink.out);
  }
};

fp::WebSocket proto(const char* websocket) {
  return std::get<fp::WebSocket>(fp::parse_codec(std::string_view(std::string(R"({"protocol": "websocket", "websocket": )") + websocket + "}")));
}

TEST(WsDeflateSession, OptInAndHandshake) {
  const std::string offer = "Sec-WebSocket-Extensions: x-foo\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";
  Conn off(fp::WebSocket(), offer);  // the default: every offer declined, RSV1 is WS-HDR-2
  EXPECT_EQ(off.head.find("Extensions"), std::string::npos);
  auto r = off.send(client_frame(0xC1, hex("f248cdc9c90700")));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].payload, hex("03ea"));
  EXPECT_EQ(off.s.error()->requirement, "WS-HDR-2");
  Conn on(proto(R"({"permessage_deflate": true})"), offer);
  EXPECT_NE(on.head.find("\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=15\r\n"), std::string::npos);
  Conn plain(fp::WebSocket(), "");
  EXPECT_EQ(on.s.held(), plain.s.held());  // no zlib state before the first compressed message (WSD-LIM-3)
  EXPECT_THROW(proto(R"({"permessage_deflate": 1})"), fp::CodecError);
}

TEST(WsDeflateSession, EchoesCompressedWithAndWithoutContextTakeover) {
  for (bool nct : {false, true}) {
    Conn c(proto(R"({"permessage_deflate": true})"),
           nct ? "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n"
               : "Sec-WebSocket-Extensions: permessage-deflate\r\n");
    fp::wsd::Inflater client(nct);
    fp::wsd::Deflater sender;  // the client's, context kept
    const fp::Bytes text = bytes("Hello, Hello, Hello, Hello, Hello");  // compressible ("Hello" is not: WSD-FRM-3)
    fp::Bytes alone;
    fp::wsd::Deflater().compress(text, alone);
    for (int m = 0; m < 3; ++m) {
      // compressed, the first time as one frame, then fragmented (RSV1 on the first only)
      fp::Bytes z;
      sender.compress(text, z);
      fp::Bytes in = m == 0 ? client_frame(0xC1, z)
                            : fpt::cat(client_frame(0x41, fp::Bytes(z.begin(), z.begin() + 2)),
                                       fpt::cat(client_frame(0x89, bytes("p")),
                                                client_frame(0x80, fp::Bytes(z.begin() + 2, z.end()))));
      auto r = c.send(in);
      ASSERT_EQ(r.size(), m == 0 ? 1u : 2u) << nct << m;
      const Frame& echo = r.back();
      EXPECT_EQ(echo.byte0, 0xC1);  // FIN, RSV1, text (WSD-FRM-1)
      fp::Bytes out;
      ASSERT_FALSE(client.feed(echo.payload, true, out));
      EXPECT_EQ(out, text);
      if (nct) {
        EXPECT_EQ(echo.payload, alone);
      } else if (m > 0) {
        EXPECT_LT(echo.payload.size(), alone.size());  // refers back into the previous echo
      }
    }
    EXPECT_GT(c.s.held(), 0u);  // the inflater (and, with context, the deflater) counted
    // an uncompressed message is echoed uncompressed and leaves the windows alone (WSD-CTX-3)
    auto r = c.send(client_frame(0x82, bytes("raw")));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].byte0, 0x82);
    EXPECT_FALSE(c.s.error());
  }
}

TEST(WsDeflateSession, ErrorsAndCloseCodes) {
  const fp::WebSocket p = proto(R"({"permessage_deflate": true, "max_message": 204800})");
  const std::string offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n";
  struct Case {
    fp::Bytes in;
    const char* requirement;
    const char* close;
  };
  fp::wsd::Deflater d(15, false, 9);
  fp::Bytes bomb, bad_text;
  d.compress(fp::Bytes(4 << 20, 'x'), bomb);  // ~4 KiB inflating to 4 MiB, far past 200 KiB
  fp::wsd::Deflater().compress(hex("48c0"), bad_text);
  const Case cases[] = {
      {fpt::cat(client_frame(0x41, hex("f248")), client_frame(0xC0, hex("cdc9c90700"))), "WSD-FRM-2", "03ea"},
      {client_frame(0xC9, bytes("p")), "WSD-FRM-2", "03ea"},  // a control frame
      {client_frame(0xA2, hex("00")), "WS-HDR-2", "03ea"},    // RSV2
      {client_frame(0xC2, hex("ff")), "WSD-CMP-3", "03ef"},   // a reserved block type
      {client_frame(0xC1, bad_text), "WS-UTF8-1", "03ef"},    // inflated text not UTF-8 (WSD-CMP-4)
      {client_frame(0xC2, bomb), "WSD-LIM-1", "03f1"},
  };
  for (const auto& c : cases) {
    Conn conn(p, offer);
    auto r = conn.send(c.in);
    ASSERT_FALSE(r.empty()) << c.requirement;
    EXPECT_EQ(r.back().byte0, 0x88) << c.requirement;
    EXPECT_EQ(r.back().payload, hex(c.close)) << c.requirement;
    ASSERT_TRUE(conn.s.error());
    EXPECT_EQ(conn.s.error()->requirement, c.requirement);
    EXPECT_TRUE(conn.s.closed());
  }
  // text that is UTF-8 only once inflated is fine; an empty compressed message too
  Conn ok(p, offer);
  fp::Bytes z;
  fp::wsd::Deflater().compress(bytes("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"), z);
  auto r = ok.send(fpt::cat(client_frame(0xC1, z), client_frame(0xC1, hex("00"))));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(ok.s.error());
}

TEST(WsDeflateSession, IncompressibleEchoGoesUncompressed) {  // WSD-FRM-3
  Conn c(proto(R"({"permessage_deflate": true})"), "Sec-WebSocket-Extensions: permessage-deflate\r\n");
  fp::wsd::Deflater sender;
  fp::wsd::Inflater client(false);  // keeps its window
  const fp::Bytes words = repeat("the same words again and again ", 20);
  const fp::Bytes random = noise(100000, 5);
  const fp::Bytes after = fpt::cat(fp::Bytes(random.end() - 100, random.end()), words);
  fp::Bytes z, out;
  sender.compress(words, z);
  auto r = c.send(client_frame(0xC2, z));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].byte0, 0xC2);
  ASSERT_FALSE(client.feed(r[0].payload, true, out));
  EXPECT_EQ(out, words);
  sender.compress(random, z);
  r = c.send(client_frame(0xC2, z));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].byte0, 0x82);  // RSV1 clear: the plain message, no longer than it
  EXPECT_EQ(r[0].payload, random);
  sender.compress(after, z);
  r = c.send(client_frame(0xC2, z));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].byte0, 0xC2);  // compressed again, from a reset compressor
  EXPECT_LT(r[0].payload.size(), after.size());
  out.clear();
  ASSERT_FALSE(client.feed(r[0].payload, true, out));
  EXPECT_EQ(out, after);
  EXPECT_FALSE(c.s.error());
}


// ------------------------------------------------------------------ the client's side (fp-autobahn-client)

TEST(WsDeflateClient, ChecksTheResponse) {  // WSD-NEG-5
  using fp::wsd::check_response;
  const auto& offer = fp::wsd::kClientOffer;
  EXPECT_EQ(offer.header(), "permessage-deflate; client_max_window_bits");
  auto r = check_response(offer, {});
  EXPECT_TRUE(r.error.empty() && !r.agreed);
  r = check_response(offer, {"permessage-deflate"});
  ASSERT_TRUE(r.agreed) << r.error;
  EXPECT_FALSE(r.agreed->client_no_context_takeover);
  EXPECT_FALSE(r.agreed->server_no_context_takeover);
  // a response may add client_no_context_takeover unasked (WSD-NEG-5); an offer's hint binds
  EXPECT_TRUE(check_response(offer, {"permessage-deflate; client_no_context_takeover"}).agreed->client_no_context_takeover);
  EXPECT_TRUE(check_response(fp::wsd::Params{false, true, 0, fp::wsd::kBare}, {"permessage-deflate"}).agreed->client_no_context_takeover);
  r = check_response(offer, {"PerMessage-Deflate ; server_no_context_takeover;client_max_window_bits=\"9\"; "
                             "server_max_window_bits=10"});
  ASSERT_TRUE(r.agreed) << r.error;
  EXPECT_TRUE(r.agreed->server_no_context_takeover);
  EXPECT_EQ(r.agreed->client_max_window_bits, 9);
  EXPECT_EQ(r.agreed->server_max_window_bits, 10);
  for (const char* bad : {"permessage-deflate; foo",
                          "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                          "permessage-deflate; server_max_window_bits=16", "permessage-deflate; server_max_window_bits=010",
                          "permessage-deflate; server_max_window_bits", "permessage-deflate; client_no_context_takeover=1",
                          "permessage-deflate; client_max_window_bits", "permessage-deflate, permessage-deflate",
                          "x-webkit-deflate-frame", "permessage-deflate; "}) {
    EXPECT_FALSE(check_response(offer, {bad}).error.empty()) << bad;
  }
  const fp::wsd::Params plain;
  EXPECT_FALSE(check_response(plain, {"permessage-deflate; client_max_window_bits=15"}).error.empty());
  const fp::wsd::Params small{false, false, 10, 10};
  EXPECT_FALSE(check_response(small, {"permessage-deflate; client_max_window_bits=11"}).error.empty());
  EXPECT_FALSE(check_response(small, {"permessage-deflate; server_max_window_bits=11"}).error.empty());
  EXPECT_TRUE(check_response(small, {"permessage-deflate; server_max_window_bits=10"}).error.empty());
}

TEST(WsDeflateClient, OpeningOffersAndReadsTheAgreement) {
  const auto o = fp::WsClientOpening::make("127.0.0.1:1", "/", {}, true);
  EXPECT_NE(o.request.find("\r\nSec-WebSocket-Extensions: " + fp::wsd::kClientOffer.header() + "\r\n"), std::string::npos);
  Sink sink;
  fp::WsSession server(proto(R"({"permessage_deflate": true})"));
  server.feed(fp::ByteView(reinterpret_cast<const std::uint8_t*>(o.request.data()), o.request.size()), sink);
  const std::string head(sink.out.begin(), sink.out.end());
  std::optional<fp::wsd::Params> agreed;
  EXPECT_EQ(o.check(head, &agreed), "");
  ASSERT_TRUE(agreed);
  EXPECT_EQ(agreed->client_max_window_bits, 15);
  const auto with = [&](const std::string& ext) {
    std::string h = head;
    h.insert(h.size() - 2, "Sec-WebSocket-Extensions: " + ext + "\r\n");
    return h;
  };
  EXPECT_NE(o.check(with("permessage-deflate; foo"), &agreed).find("WSD-NEG-5"), std::string::npos);
  const auto plain = fp::WsClientOpening::make("127.0.0.1:1", "/");
  EXPECT_EQ(plain.request.find("Extensions"), std::string::npos);
}

// The client's masked frames in `b` (payload unmasked).
std::vector<Frame> masked_frames(fp::ByteView b) {
  std::vector<Frame> out;
  while (b.size() >= 6) {
    EXPECT_TRUE(b[1] & 0x80);
    std::size_t n = b[1] & 0x7f, h = 2;
    if (n == 126) n = (b[2] << 8) | b[3], h = 4;
    else if (n == 127) {
      n = 0;
      for (int i = 0; i < 8; ++i) n = (n << 8) | b[2 + i];
      h = 10;
    }
    const std::uint8_t* key = b.data() + h;
    fp::Bytes p(b.begin() + h + 4, b.begin() + h + 4 + n);
    fp::ws::mask(p.data(), p.size(), key);
    out.push_back({b[0], std::move(p)});
    b = b.subspan(h + 4 + n);
  }
  return out;
}

TEST(WsDeflateClient, SessionInflatesAndEchoesMaskedCompressed) {  // WSD-FRM-1, WSD-CTX-1, WSD-NEG-4
  for (int client_bits : {0, 9, 8}) {
    const fp::WebSocket p(fp::Limits{1 << 20}, /*client=*/true, 1 << 20);
    fp::WsSession s(p, /*own_role=*/true);
    const bool reset = client_bits == 9;  // client_no_context_takeover agreed, or the context kept
    s.enable_deflate(fp::wsd::Params{false, reset, 0, client_bits});
    fp::wsd::Deflater server(15, false);
    fp::wsd::Inflater reader(reset);
    const fp::Bytes text = bytes(std::string(40, 'a') + "a message with context, a message with context");
    for (int m = 0; m < 3; ++m) {
      fp::Bytes z;
      server.compress(text, z);
      fp::Bytes in(10);
      in.resize(fp::ws::put_header(in.data(), 0xC1, false, z.size()));
      in.insert(in.end(), z.begin(), z.end());
      Sink sink;
      s.feed(in, sink);
      ASSERT_FALSE(s.error()) << s.error()->message;
      const auto r = masked_frames(sink.out);
      ASSERT_EQ(r.size(), 1u);
      EXPECT_EQ(r[0].byte0, client_bits == 8 ? 0x81 : 0xC1) << client_bits;  // uncompressed at 8 bits
      fp::Bytes out;
      if (client_bits == 8) out = r[0].payload;
      else ASSERT_FALSE(reader.feed(r[0].payload, true, out));
      EXPECT_EQ(out, text) << client_bits << " " << m;
    }
  }
}

TEST(WsDeflateLoad, IncompressibleRequestGoesUncompressed) {  // WSD-FRM-3, fp-load's requests
  const fp::WebSocket server = proto(R"({"permessage_deflate": true})");
  fp::WebSocket p = server.as_client();
  fp::WsDecoder dec(p);
  p.opened(fp::wsd::Params{}, dec);
  for (std::size_t variant : {0u, 2u}) {  // pseudo-random binary (incompressible), prose
    const std::size_t len = 100000;
    fp::WsFrame h = p.variant_request(variant);
    fp::Bytes wire(p.request_bound(h, len));
    wire.resize(p.write_request(wire.data(), h, variant, 3, len));
    const auto r = masked_frames(wire);
    ASSERT_EQ(r.size(), 1u);
    fp::Bytes plain(len);
    p.request_payload(variant, 3, plain.data(), len);
    if (variant == 0) {
      EXPECT_EQ(r[0].byte0, 0x82);  // RSV1 clear, the plain payload
      EXPECT_EQ(r[0].payload, plain);
    } else {
      EXPECT_EQ(r[0].byte0, 0xC1);
      EXPECT_LT(r[0].payload.size(), len);
      fp::wsd::Inflater i(false, 1 << 20);
      fp::Bytes out;
      ASSERT_FALSE(i.feed(r[0].payload, true, out));  // the reset compressor's output: valid for it
      EXPECT_EQ(out, plain);
    }
  }
}

}  // namespace
