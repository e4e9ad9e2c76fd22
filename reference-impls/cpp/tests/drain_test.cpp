// The in-place fast path of fp-server's echo sessions (Decoder::drain_complete, codec.hpp, and
// WsDecoder::drain_complete): read by read, drain_complete() then next() delivers exactly the
// frames and the error (ID and offset) that next() alone does, for valid streams, garbage and
// any split, and it does take the common frames (else the server would not be faster).
#include <gtest/gtest.h>

#include <random>

#include "frameproof/websocket.hpp"
#include "test_util.hpp"

using fpt::OwnedFrame;

namespace {

constexpr std::int32_t kSizes[] = {1, 2, 4, -2, -4, 0};

std::vector<fp::Bytes> random_split(std::mt19937_64& rng, const fp::Bytes& s) {
  std::vector<std::size_t> cuts;
  const std::size_t step = rng() % 3 == 0 ? 1 + rng() % 5 : 1 + rng() % 400;
  for (std::size_t at = step; at < s.size(); at += 1 + rng() % step) cuts.push_back(at);
  return fpt::split_at(s, cuts);
}

// The server's way (fp-server, EchoSession::process): every read lands in the buffer, then
// drain_complete, then next() until it wants more. `drained` counts the fast path's frames.
template <class P>
fpt::Decoded drain_chunks(const P& proto, const std::vector<fp::Bytes>& chunks, std::size_t read_chunk,
                          std::size_t& drained) {
  fpt::Decoded d;
  fp::Decoder<P> dec(proto, read_chunk);
  auto on = [&](const fp::Frame& f) {
    d.frames.push_back({f.flag, f.sequence, fp::Bytes(f.payload.begin(), f.payload.end())});
  };
  auto process = [&]() -> bool {
    drained += dec.drain_complete(on);
    fp::Frame f;
    typename fp::Decoder<P>::Status st;
    while ((st = dec.next(f)) == fp::Decoder<P>::Status::Frame) on(f);
    if (st == fp::Decoder<P>::Status::Error) {
      d.error = dec.error();
      return false;
    }
    return true;
  };
  for (const auto& c : chunks) {
    fp::ByteView rest(c);
    while (!rest.empty()) {
      auto space = dec.prepare();
      const std::size_t n = std::min(space.size(), rest.size());
      std::copy_n(rest.data(), n, space.data());
      dec.commit(n);
      rest = rest.subspan(n);
      if (!process()) return d;
    }
  }
  d.error = dec.finish();
  return d;
}

// The drained decode against next() alone: the same frames, and the same error (requirement and
// offset) if any; counts the errors seen.
template <class D>
void expect_same(const D& got, const D& want, int iter, std::size_t& errors) {
  ASSERT_EQ(got.frames, want.frames) << iter;
  ASSERT_EQ(got.error.has_value(), want.error.has_value()) << iter;
  if (want.error) {
    ++errors;
    EXPECT_EQ(got.error->requirement, want.error->requirement) << iter;
    EXPECT_EQ(got.error->offset, want.error->offset) << iter;
  }
}

}  // namespace

TEST(DrainComplete, SameFramesAndErrorsAsNext) {
  std::mt19937_64 rng(0xD4A1Au);
  std::size_t drained = 0, errors = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    fp::AnyProtocol cfg;
    const std::uint64_t limit = rng() % 3 == 0 ? 1 + rng() % 64 : 0;
    if (rng() % 2) cfg = fpt::standard(limit);
    else cfg = fpt::lf(static_cast<std::uint32_t>(rng() % 4 == 0 ? rng() % 5 : 0), kSizes[rng() % 6], limit);
    const std::uint64_t max = std::visit([](const auto& p) { return p.max_payload(); }, cfg);
    // valid frames, now and then a garbage byte or an extended length
    fp::Bytes s;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      if (rng() % 10 == 0) {
        s.push_back(static_cast<std::uint8_t>(rng() % 3 == 0 ? 0xFF : rng()));
        continue;
      }
      OwnedFrame f;
      if (std::holds_alternative<fp::Standard>(cfg)) {
        f.flag = static_cast<std::uint8_t>(rng());
        f.sequence = static_cast<std::uint8_t>(rng());
      }
      const std::size_t len = rng() % 8 == 0 ? 65535 + rng() % 3 : rng() % 100;
      f.payload = fpt::pattern(static_cast<std::size_t>(std::min<std::uint64_t>(len, max)), static_cast<std::uint8_t>(i));
      ASSERT_FALSE(fpt::encode(cfg, f, s));
    }
    const auto chunks = rng() % 2 ? std::vector<fp::Bytes>{s} : random_split(rng, s);
    const std::size_t read_chunk = rng() % 2 ? 64 * 1024 : 16 + rng() % 200;
    const auto want = fpt::decode_chunks(cfg, chunks, read_chunk);
    const auto got = std::visit(
        [&](const auto& p) {
          if constexpr (fpt::kPlain<std::decay_t<decltype(p)>>) return drain_chunks(p, chunks, read_chunk, drained);
          else return fpt::Decoded{};  // not generated
        },
        cfg);
    expect_same(got, want, iter, errors);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(drained, 2000u);
  EXPECT_GT(errors, 200u);
}

namespace {

struct WsOwned {
  bool fin;
  std::uint32_t opcode;
  bool masked;
  std::array<std::uint8_t, 4> key;
  fp::Bytes payload;
  bool operator==(const WsOwned&) const = default;
};

struct WsDecoded {
  std::vector<WsOwned> frames;
  std::optional<fp::ProtocolError> error;
};

// next() alone (feed), or the server's way (drain_complete, then next() until a frame of another
// kind has been delivered, again).
WsDecoded ws_decode(const fp::WebSocket& proto, const std::vector<fp::Bytes>& chunks, bool drain, std::size_t& drained) {
  WsDecoded d;
  fp::WsDecoder dec(proto, 64);
  auto on = [&](const fp::WsFrame& f) {
    d.frames.push_back({f.fin, f.opcode, f.masked, f.key, fp::Bytes(f.payload.begin(), f.payload.end())});
  };
  if (!drain) {
    for (const auto& c : chunks)
      if (auto e = dec.feed(c, on)) return {d.frames, e};
    return {d.frames, dec.finish()};
  }
  for (const auto& c : chunks) {
    fp::ByteView rest(c);
    while (!rest.empty() && !dec.closed()) {
      auto space = dec.prepare();
      const std::size_t n = std::min(space.size(), rest.size());
      std::copy_n(rest.data(), n, space.data());
      dec.commit(n);
      rest = rest.subspan(n);
      while (true) {
        drained += dec.drain_complete(on);
        fp::WsFrame f;
        const auto st = dec.next(f);
        if (st == fp::WsDecoder::Status::Error) return {d.frames, dec.error()};
        if (st == fp::WsDecoder::Status::NeedMore) break;
        on(f);
      }
    }
  }
  return {d.frames, dec.finish()};
}

fp::Bytes ws_frame(std::mt19937_64& rng, std::uint8_t byte0, bool masked, std::size_t len) {
  fp::WsFrame f;
  f.fin = byte0 & 0x80;
  f.rsv = (byte0 >> 4) & 7;
  f.opcode = byte0 & 0x0F;
  f.masked = masked;
  f.key_len = masked ? 4 : 0;
  for (auto& k : f.key) k = static_cast<std::uint8_t>(rng());
  const fp::Bytes p = fpt::pattern(len, static_cast<std::uint8_t>(rng()));
  f.payload = p;
  fp::Bytes out;
  const std::size_t at = out.size();
  out.resize(at + fp::ws::kMaxHeader + len);
  const std::size_t h = fp::WebSocket(fp::Limits{1ull << 40}).write_header(out.data() + at, f, len);
  std::copy(p.begin(), p.end(), out.begin() + static_cast<std::ptrdiff_t>(at + h));
  if (masked) fp::ws::mask(out.data() + at + h, len, f.key.data());
  out.resize(at + h + len);
  return out;
}

}  // namespace

TEST(DrainComplete, WebSocketSameFramesAndErrorsAsNext) {
  std::mt19937_64 rng(0x3E6Bu);
  std::size_t drained = 0, errors = 0;
  // mostly binary FIN frames, among text, fragments, control frames, wrong masks and RSV bits
  const std::uint8_t kinds[] = {0x81, 0x02, 0x00, 0x80, 0x89, 0x8A, 0x88, 0xA2, 0x83};
  for (int iter = 0; iter < 1500; ++iter) {
    const bool server = rng() % 4 != 0;
    const std::uint64_t limit = rng() % 3 == 0 ? 1 + rng() % 300 : 0;
    const fp::WebSocket proto(fp::Limits{limit}, !server);
    fp::Bytes s;
    const int n = static_cast<int>(rng() % 10);
    for (int i = 0; i < n; ++i) {
      const std::uint8_t byte0 = rng() % 4 ? 0x82 : kinds[rng() % std::size(kinds)];
      const bool masked = rng() % 40 == 0 ? !server : server;
      const std::size_t len = byte0 & 0x08 ? rng() % 20 : rng() % 8 == 0 ? 126 + rng() % 400 : rng() % 130;
      const fp::Bytes f = ws_frame(rng, byte0, masked, len);
      s.insert(s.end(), f.begin(), f.end());
    }
    if (rng() % 8 == 0) {  // a non-minimal 16-bit length (WS-LEN-3)
      const fp::Bytes bad = {0x82, static_cast<std::uint8_t>((server ? 0x80 : 0) | 126), 0, 5};
      s.insert(s.end(), bad.begin(), bad.end());
    }
    const auto chunks = rng() % 2 ? std::vector<fp::Bytes>{s} : random_split(rng, s);
    std::size_t unused = 0;
    const WsDecoded want = ws_decode(proto, chunks, false, unused);
    const WsDecoded got = ws_decode(proto, chunks, true, drained);
    expect_same(got, want, iter, errors);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_GT(drained, 500u);
  EXPECT_GT(errors, 100u);
}
