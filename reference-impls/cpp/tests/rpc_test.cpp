// The rpc module (spec/rpc.md): the worked examples of §12 byte for byte, the decoder under every
// split, the error classes and offsets of §11, the limit judged from the header alone, the client
// matcher (RPC-ID-*, RPC-MATCH-*) and both echo endpoints (RPC-ECHO-*, RPC-STREAM-*).
#include <gtest/gtest.h>

#include <random>

#include "frameproof/rpc.hpp"
#include "test_util.hpp"

namespace {

using fpt::bytes;
using fpt::hex;

struct Got {
  std::vector<fp::RpcFrame> frames;  // views into `keep`
  std::vector<fp::Bytes> keep;
  std::optional<fp::ProtocolError> error;
};

// Decodes `chunks` and keeps owned copies of every frame's fields.
struct Owned {
  std::uint32_t type, flags, id, error_code;
  std::string service, method;
  fp::Bytes payload;
};

std::pair<std::vector<Owned>, std::optional<fp::ProtocolError>> decode(const fp::Rpc& proto,
                                                                      const std::vector<fp::Bytes>& chunks) {
  std::vector<Owned> out;
  fp::RpcDecoder dec(proto, 64);
  auto on = [&](const fp::RpcFrame& f) {
    out.push_back({f.type, f.flags, f.id, f.error_code, std::string(f.service.begin(), f.service.end()),
                   std::string(f.method.begin(), f.method.end()), fp::Bytes(f.payload.begin(), f.payload.end())});
  };
  for (const auto& c : chunks)
    if (auto e = dec.feed(c, on)) return {out, e};
  return {out, dec.finish()};
}

fp::Bytes encode(const fp::RpcFrame& f, const fp::Rpc& proto = fp::Rpc()) {
  fp::Bytes out;
  if (auto e = proto.encode(f, out)) throw std::runtime_error("encode: " + e->requirement);
  return out;
}

fp::RpcFrame request(std::uint32_t id, const fp::Bytes& payload, std::string_view service = "frameproof.Echo",
                     std::string_view method = "echo", std::uint32_t flags = 4) {
  fp::RpcFrame f;
  f.type = fp::rpc::kRequest;
  f.flags = flags;
  f.id = id;
  f.service = {reinterpret_cast<const std::uint8_t*>(service.data()), service.size()};
  f.method = {reinterpret_cast<const std::uint8_t*>(method.data()), method.size()};
  f.payload = payload;
  return f;
}

fp::RpcFrame control(std::uint32_t type, std::uint32_t id, const fp::Bytes& payload = {}) {
  fp::RpcFrame f;
  f.type = type;
  f.flags = 0;
  f.id = id;
  f.payload = payload;
  return f;
}

// spec §12: the unary echo of "hello" (service BenchEchoService) and the conformance echo call
TEST(Rpc, WorkedExamplesEncode) {
  const fp::Bytes hello = bytes("hello");
  EXPECT_EQ(encode(request(1, hello, "BenchEchoService")),
            hex("47525043 01 01 04 00 00000001 0000001d 0010 42656e63684563686f53657276696365 0004 6563686f "
                "68656c6c6f"));
  fp::RpcFrame resp;
  resp.type = fp::rpc::kResponse;
  resp.id = 1;
  resp.payload = hello;
  EXPECT_EQ(encode(resp), hex("47525043 01 02 04 00 00000001 00000007 0000 68656c6c6f"));
  EXPECT_EQ(encode(request(0, bytes("hi"))),
            hex("47525043 01 01 04 00 00000000 00000019 000f 6672616d6570726f6f662e4563686f 0004 6563686f 6869"));
  EXPECT_EQ(encode(control(fp::rpc::kInitAck, 7)), hex("47525043 01 11 00 00 00000007 00000000"));
}

TEST(Rpc, DecodeAnySplit) {
  fp::Bytes stream = encode(request(1, bytes("hello"), "BenchEchoService"));
  stream = fpt::cat(stream, encode(control(fp::rpc::kData, 7, bytes("abc"))));
  stream = fpt::cat(stream, encode(control(fp::rpc::kEnd, 7)));
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    auto [frames, err] = decode(fp::Rpc(), fpt::split_at(stream, {cut}));
    ASSERT_FALSE(err) << cut;
    ASSERT_EQ(frames.size(), 3u) << cut;
    EXPECT_EQ(frames[0].service, "BenchEchoService");
    EXPECT_EQ(frames[0].method, "echo");
    EXPECT_EQ(frames[0].payload, bytes("hello"));
    EXPECT_EQ(frames[0].flags, 4u);
    EXPECT_EQ(frames[1].type, fp::rpc::kData);
    EXPECT_EQ(frames[1].payload, bytes("abc"));
    EXPECT_EQ(frames[2].type, fp::rpc::kEnd);
  }
  auto [frames, err] = decode(fp::Rpc(), fpt::bytewise(stream));
  EXPECT_EQ(frames.size(), 3u);
  EXPECT_FALSE(err);
}

TEST(Rpc, HeaderErrorsWithOffsets) {
  const fp::Bytes good = encode(request(1, bytes("a")));
  struct Case {
    const char* hdr;
    const char* req;
  } cases[] = {
      {"47525044 01 01 04 00 00000001 00000000", "RPC-HDR-2"},
      {"47525043 02 01 04 00 00000001 00000000", "RPC-HDR-3"},
      {"47525043 01 55 04 00 00000001 00000000", "RPC-HDR-4"},
      {"47525043 01 13 00 00 00000001 00000003", "RPC-BODY-5"},
      {"47525043 01 12 00 00 00000001 01000001", "RPC-LIM-1"},
  };
  for (const Case& c : cases) {
    auto [frames, err] = decode(fp::Rpc(), {fpt::cat(good, hex(c.hdr))});  // no body follows: judged from the header
    ASSERT_TRUE(err) << c.req;
    EXPECT_EQ(err->requirement, c.req);
    EXPECT_EQ(err->offset, good.size());
    EXPECT_EQ(frames.size(), 1u);
  }
  // a stream ending inside the header is truncated, whatever its bytes (§11)
  auto [f2, e2] = decode(fp::Rpc(), {fpt::cat(good, hex("47525044 01"))});
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->requirement, "RPC-STR-3");
  EXPECT_EQ(e2->offset, good.size());
}

TEST(Rpc, BodyErrorsOnceTheBodyIsThere) {
  // REQUEST with a service length beyond the body; RESPONSE with a 1-byte body; INIT body of 1 byte
  auto [f1, e1] = decode(fp::Rpc(), {hex("47525043 01 01 04 00 00000001 00000004 0005 6162")});
  ASSERT_TRUE(e1);
  EXPECT_EQ(e1->requirement, "RPC-BODY-1");
  auto [f2, e2] = decode(fp::Rpc(), {hex("47525043 01 02 04 00 00000001 00000001 00")});
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->requirement, "RPC-BODY-2");
  auto [f3, e3] = decode(fp::Rpc(), {hex("47525043 01 10 00 00 00000001 00000001 00")});
  ASSERT_TRUE(e3);
  EXPECT_EQ(e3->requirement, "RPC-BODY-3");
  // the same REQUEST cut inside its body is truncated, not malformed
  auto [f4, e4] = decode(fp::Rpc(), {hex("47525043 01 01 04 00 00000001 00000004 0005 61")});
  ASSERT_TRUE(e4);
  EXPECT_EQ(e4->requirement, "RPC-STR-3");
}

TEST(Rpc, LimitFromTheHeaderWithoutBuffering) {
  const fp::Rpc proto(100);
  fp::RpcDecoder dec(proto, 64);
  // a header promising 4 GiB - 1: rejected at once, the buffer never grows towards it (RPC-LIM-3)
  auto e = dec.feed(hex("47525043 01 12 00 00 00000001 ffffffff"), [](const fp::RpcFrame&) {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "RPC-LIM-1");
  EXPECT_LE(dec.capacity(), 64u + 16u + 100u);
  // exactly the limit is accepted
  fp::Bytes body(100, 0x5a);
  auto [frames, err] = decode(proto, {encode(control(fp::rpc::kData, 2, body), proto)});
  EXPECT_FALSE(err);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].payload, body);
}

TEST(Rpc, EncoderRefusals) {
  const fp::Rpc proto(10);
  fp::Bytes out;
  auto code = [&](fp::RpcFrame f) {
    auto e = proto.encode(f, out);
    return e ? e->requirement : std::string("ok");
  };
  fp::RpcFrame v2 = request(1, {});
  v2.version = 2;
  EXPECT_EQ(code(v2), "RPC-HDR-3");
  EXPECT_EQ(code(control(0x55, 1)), "RPC-HDR-4");
  EXPECT_EQ(code(control(fp::rpc::kEnd, 1, bytes("x"))), "RPC-BODY-5");
  fp::RpcFrame r = control(fp::rpc::kResponse, 1);
  r.error_code = 65536;
  EXPECT_EQ(code(r), "RPC-BODY-2");
  EXPECT_EQ(code(control(fp::rpc::kData, 1, fp::Bytes(11))), "RPC-LIM-2");
  EXPECT_EQ(code(control(fp::rpc::kData, 1, fp::Bytes(10))), "ok");
  const std::string long_name(65536, 'n');
  EXPECT_EQ(fp::Rpc().encode(request(1, {}, long_name), out)->requirement, "RPC-BODY-6");
}

TEST(Rpc, MatcherIdsAndOrder) {
  fp::ClientConnection<fp::Rpc> c(fp::Rpc(), 100);
  std::vector<fp::Completion> done;
  const fp::Bytes a = c.send(bytes("a"), false, done);
  const fp::Bytes b = c.send(bytes("b"), false, done);
  EXPECT_EQ(a, encode(request(0, bytes("a"))));  // RPC-ID-1: ids 0, 1 ...
  EXPECT_EQ(b, encode(request(1, bytes("b"))));
  EXPECT_TRUE(c.send(bytes("x"), true, done).empty());  // no one-way call
  const fp::Bytes pa = bytes("A"), pb = bytes("B");  // the frames' payload views point here
  fp::RpcFrame r1 = control(fp::rpc::kResponse, 1, pb);
  r1.flags = 4;
  fp::RpcFrame r0 = control(fp::rpc::kResponse, 0, pa);
  r0.flags = 4;
  r0.error_code = 3;
  fp::RpcFrame r9 = control(fp::rpc::kResponse, 9);
  // out of order (RPC-MATCH-1), an error code (RPC-MATCH-5), an unknown id (RPC-MATCH-2), a DATA (RPC-MATCH-4)
  c.receive(fpt::cat(fpt::cat(encode(r1), encode(r0)), fpt::cat(encode(r9), encode(control(fp::rpc::kData, 0)))), done);
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[0].kind, fp::Completion::Kind::Refused);
  EXPECT_EQ(done[1].kind, fp::Completion::Kind::Reply);
  EXPECT_EQ(*done[1].request, 1u);
  EXPECT_EQ(done[2].kind, fp::Completion::Kind::Reply);
  EXPECT_EQ(*done[2].request, 0u);
  EXPECT_EQ(done[2].frame["rpc"]["error_code"], 3);
  EXPECT_EQ(done[3].kind, fp::Completion::Kind::Unmatched);
}

TEST(Rpc, MatcherSendFrameAndTimeout) {
  fp::ClientConnection<fp::Rpc> c(fp::Rpc(), 100);
  std::vector<fp::Completion> done;
  // a call with its own service, method and mode; the id is the client's (RPC-ID-1)
  const fp::Bytes sent = c.send_frame(request(77, bytes("p"), "S", "m", 2), done);
  EXPECT_EQ(sent, encode(request(0, bytes("p"), "S", "m", 2)));
  EXPECT_TRUE(c.send_frame(control(fp::rpc::kData, 0), done).empty());  // a client sends REQUESTs only
  c.advance(99, done);
  c.advance(1, done);  // RPC-MATCH-3: timed out at the timeout, not before
  fp::RpcFrame late = control(fp::rpc::kResponse, 0);
  late.flags = 6;
  c.receive(encode(late), done);  // the late response is unmatched and the id is free again
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].kind, fp::Completion::Kind::Refused);
  EXPECT_EQ(*done[0].request, 1u);
  EXPECT_EQ(done[1].kind, fp::Completion::Kind::Timeout);
  EXPECT_EQ(*done[1].request, 0u);
  EXPECT_EQ(done[2].kind, fp::Completion::Kind::Unmatched);
}

struct Sink {
  fp::Bytes out;
  int frames = 0;
  template <class F>
  void frame(const F&) {
    ++frames;
  }
  void reply(fp::ByteView h, fp::ByteView p) {
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), p.begin(), p.end());
  }
};

TEST(Rpc, UnaryEndpoint) {
  fp::RpcSession s(fp::Rpc(), "unary");
  Sink sink;
  const fp::Bytes in = fpt::cat(fpt::cat(encode(request(20, bytes("a"), "BenchEchoService")),
                                         encode(request(21, bytes("b"), "frameproof.Echo", "nope", 1))),
                                encode(request(22, bytes("c"), "frameproof.Echo", "echo", 0xFD)));
  for (const auto& ch : fpt::bytewise(in)) ASSERT_TRUE(s.feed(ch, sink));
  EXPECT_EQ(sink.out, hex("47525043 01 02 04 00 00000014 00000002 0002"
                          "47525043 01 02 05 00 00000015 00000002 0003"
                          "47525043 01 02 05 00 00000016 00000003 0000 63"));
  // a non-REQUEST closes after the replies before it (RPC-ECHO-4), at that frame's offset
  sink.out.clear();
  EXPECT_FALSE(s.feed(fpt::cat(encode(request(1, bytes("x"))), encode(control(fp::rpc::kInit, 2))), sink));
  EXPECT_EQ(sink.out, hex("47525043 01 02 04 00 00000001 00000003 0000 78"));
  ASSERT_TRUE(s.error());
  EXPECT_EQ(s.error()->requirement, "RPC-ECHO-4");
  EXPECT_EQ(s.error()->offset, in.size() + encode(request(1, bytes("x"))).size());
}

// RPC-ECHO-8, RPC-MODE-1/2: `unary_only` is echoed in call mode 0 and METHOD_NOT_FOUND (empty payload, the id,
// the mode with END_STREAM) in modes 1-3; `echo` after it in every mode; a STREAM_INIT naming it is cancelled
// (RPC-STREAM-6).
TEST(Rpc, UnaryOnlyRoutedByCallMode) {
  fp::Bytes in;
  for (std::uint32_t fl : {0u, 4u, 1u, 5u, 2u, 6u, 3u, 7u})
    in = fpt::cat(in, encode(request(0x80000000u | fl, bytes("pay"), "frameproof.Echo", "unary_only", fl)));
  in = fpt::cat(in, encode(request(9, bytes("e"), "frameproof.Echo", "echo", 2)));
  const fp::Bytes want = hex(
      "47525043 01 02 04 00 80000000 00000005 0000 706179"
      "47525043 01 02 04 00 80000004 00000005 0000 706179"
      "47525043 01 02 05 00 80000001 00000002 0003"
      "47525043 01 02 05 00 80000005 00000002 0003"
      "47525043 01 02 06 00 80000002 00000002 0003"
      "47525043 01 02 06 00 80000006 00000002 0003"
      "47525043 01 02 07 00 80000003 00000002 0003"
      "47525043 01 02 07 00 80000007 00000002 0003"
      "47525043 01 02 06 00 00000009 00000003 0000 65");
  for (const char* ep : {static_cast<const char*>("unary"), static_cast<const char*>(nullptr)}) {
    for (bool bytewise : {false, true}) {
      std::optional<fp::RpcSession> s;
      if (ep) s.emplace(fp::Rpc(), ep);
      else s.emplace(fp::Rpc());
      Sink sink;
      if (bytewise) {
        for (const auto& ch : fpt::bytewise(in)) ASSERT_TRUE(s->feed(ch, sink));
      } else {
        ASSERT_TRUE(s->feed(in, sink));
      }
      EXPECT_EQ(sink.out, want) << (ep ? ep : "auto") << (bytewise ? " bytewise" : "");
      s->end_of_input();
      EXPECT_FALSE(s->error());
    }
  }
  fp::RpcFrame init = request(7, {}, "frameproof.Echo", "unary_only", 0);
  init.type = fp::rpc::kInit;
  for (const char* ep : {static_cast<const char*>("stream"), static_cast<const char*>(nullptr)}) {
    std::optional<fp::RpcSession> s;
    if (ep) s.emplace(fp::Rpc(), ep);
    else s.emplace(fp::Rpc());
    Sink sink;
    EXPECT_TRUE(s->feed(encode(init), sink));
    EXPECT_EQ(sink.out, hex("47525043 01 14 00 00 00000007 00000000")) << (ep ? ep : "auto");
  }
}

TEST(Rpc, StreamEndpointAndAutoSelection) {
  for (const char* ep : {static_cast<const char*>("stream"), static_cast<const char*>(nullptr)}) {  // nullptr: the network connection (RPC-ECHO-7)
    std::optional<fp::RpcSession> s;
    if (ep) s.emplace(fp::Rpc(), ep);
    else s.emplace(fp::Rpc());
    Sink sink;
    fp::RpcFrame init = request(7, {}, "frameproof.Echo", "echo", 0);
    init.type = fp::rpc::kInit;
    fp::Bytes in = encode(control(fp::rpc::kData, 8, bytes("early")));  // waiting: cancelled (RPC-STREAM-5)
    if (!ep) in.clear();  // the first frame picks the endpoint: start with the INIT
    in = fpt::cat(in, encode(init));
    in = fpt::cat(in, encode(control(fp::rpc::kData, 99, bytes("abc"))));  // echoed with id 7 (RPC-STREAM-2)
    in = fpt::cat(in, encode(init));                                       // second INIT: cancel (RPC-STREAM-7)
    in = fpt::cat(in, encode(init));                                       // opens again
    in = fpt::cat(in, encode(control(fp::rpc::kCancel, 7)));               // nothing (RPC-STREAM-4)
    in = fpt::cat(in, encode(init));
    in = fpt::cat(in, encode(control(fp::rpc::kEnd, 3)));                  // END with id 7 (RPC-STREAM-3)
    EXPECT_TRUE(s->feed(in, sink));
    fp::Bytes want = ep ? hex("47525043 01 14 00 00 00000008 00000000") : fp::Bytes{};
    want = fpt::cat(want, hex("47525043 01 11 00 00 00000007 00000000"
                              "47525043 01 12 00 00 00000007 00000003 616263"
                              "47525043 01 14 00 00 00000007 00000000"
                              "47525043 01 11 00 00 00000007 00000000"
                              "47525043 01 11 00 00 00000007 00000000"
                              "47525043 01 13 00 00 00000007 00000000"));
    EXPECT_EQ(sink.out, want) << (ep ? ep : "auto");
    s->end_of_input();
    EXPECT_TRUE(s->closed());
    EXPECT_FALSE(s->error());
  }
}

TEST(Rpc, CodecJson) {
  auto p = std::get<fp::Rpc>(fp::parse_codec(std::string_view(R"({"protocol": "rpc", "rpc": {"max_body": 64}})")));
  EXPECT_EQ(p.max_body(), 64u);
  EXPECT_EQ(std::get<fp::Rpc>(fp::parse_codec(std::string_view(R"({"protocol": "rpc"})"))).max_body(), 16u << 20);
  EXPECT_THROW(fp::parse_codec(std::string_view(R"({"protocol": "rpc", "rpc": {"max": 1}})")), fp::CodecError);
  EXPECT_THROW(fp::parse_codec(std::string_view(R"({"protocol": "rpc", "limits": {"max_payload": 5}})")), fp::CodecError);
}

// Seeded property: random frames of every type encode, and any split of the stream decodes back to
// exactly those frames (RPC-STR-1, RPC-STR-2, RPC-BODY-7, RPC-HDR-5..7).
TEST(RpcProperty, RoundTripUnderRandomSplits) {
  std::mt19937_64 rng(1234);
  const std::uint32_t types[] = {1, 2, 3, 4, 0x10, 0x11, 0x12, 0x13, 0x14};
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<fp::Bytes> names, payloads;  // storage for the frames' views
    std::vector<fp::RpcFrame> frames;
    const int count = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < count; ++k) {
      fp::RpcFrame f;
      f.type = types[rng() % 9];
      f.flags = static_cast<std::uint32_t>(rng() & 0xFF);
      f.reserved = static_cast<std::uint32_t>(rng() & 0xFF);
      f.id = static_cast<std::uint32_t>(rng());
      names.push_back(fpt::pattern(rng() % 20, static_cast<std::uint8_t>(rng())));
      names.push_back(fpt::pattern(rng() % 5, static_cast<std::uint8_t>(rng())));
      payloads.push_back(fp::rpc::control_type(f.type) ? fp::Bytes{} : fpt::pattern(rng() % 300, static_cast<std::uint8_t>(rng())));
      if (fp::rpc::named_type(f.type)) {
        f.service = names[names.size() - 2];
        f.method = names.back();
      }
      if (f.type == fp::rpc::kResponse) f.error_code = static_cast<std::uint32_t>(rng() & 0xFFFF);
      f.payload = payloads.back();
      frames.push_back(f);
    }
    fp::Bytes stream;
    for (const auto& f : frames) stream = fpt::cat(stream, encode(f));
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0; at < stream.size(); at += 1 + rng() % 40) cuts.push_back(at);
    auto [got, err] = decode(fp::Rpc(), fpt::split_at(stream, cuts));
    ASSERT_FALSE(err) << iter << " " << err->requirement;
    ASSERT_EQ(got.size(), frames.size()) << iter;
    ASSERT_GT(cuts.size(), stream.size() / 41);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(got[i].type, frames[i].type);
      EXPECT_EQ(got[i].flags, frames[i].flags);
      EXPECT_EQ(got[i].id, frames[i].id);
      EXPECT_EQ(got[i].error_code, frames[i].error_code);
      EXPECT_EQ(got[i].service, std::string(frames[i].service.begin(), frames[i].service.end()));
      EXPECT_EQ(got[i].method, std::string(frames[i].method.begin(), frames[i].method.end()));
      EXPECT_EQ(got[i].payload, fp::Bytes(frames[i].payload.begin(), frames[i].payload.end()));
    }
  }
}

}  // namespace
