// The generic streaming decoder (codec.hpp: FrameBuffer, Decoder<P>) with every protocol: the same
// frames whatever the split of the stream (STD-STR-1, LF-STR-1), with a small read buffer so that
// compaction and growth happen, and a buffer that grows to one big frame, no more, and is given
// back afterwards. (Formerly codec_first_helper_test.cpp; its per-protocol cases that duplicated
// standard_test.cpp and length_field_test.cpp were merged there.)
#include <gtest/gtest.h>

#include <random>

#include "test_util.hpp"

using fpt::decode_all;
using fpt::decode_chunks;
using fpt::enc_std;
using fpt::lf;
using fpt::OwnedFrame;

namespace {

// Eight frames of sizes 0 .. 40000 (cut to what the protocol can carry), each with other header
// fields where the protocol has them.
fp::Bytes sample_stream(const fp::AnyProtocol& proto) {
  fp::Bytes s;
  const std::vector<std::size_t> sizes = {0, 1, 5, 127, 128, 300, 40000, 3};
  const std::uint64_t max = std::visit([](const auto& p) { return p.max_payload(); }, proto);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    fp::Bytes p(std::min<std::uint64_t>(sizes[i], max));
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = static_cast<std::uint8_t>(k + i);
    EXPECT_FALSE(fpt::encode(proto, {static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i * 3), p}, s));
  }
  return s;
}

void check_split_independence(const fp::AnyProtocol& proto) {
  const fp::Bytes stream = sample_stream(proto);
  const auto whole = decode_all(proto, stream);
  ASSERT_FALSE(whole.error);
  ASSERT_EQ(whole.frames.size(), 8u);
  // Every two-way split, with a small read buffer so that compaction and growth happen.
  for (std::size_t cut = 0; cut <= stream.size(); cut += (cut < 400 ? 1 : 997)) {
    const auto d = decode_chunks(proto, fpt::split_at(stream, {cut}), 64);
    ASSERT_FALSE(d.error) << "cut " << cut;
    ASSERT_EQ(d.frames, whole.frames) << "cut " << cut;
  }
  // Random splits into many chunks, including one-byte dribbles.
  std::mt19937 rng(42);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0;;) {
      at += 1 + rng() % (round % 2 ? 7 : 5000);
      if (at >= stream.size()) break;
      cuts.push_back(at);
    }
    const auto d = decode_chunks(proto, fpt::split_at(stream, cuts), round % 3 ? 64 : 4096);
    ASSERT_FALSE(d.error);
    ASSERT_EQ(d.frames, whole.frames) << "round " << round;
  }
}

}  // namespace

TEST(SplitIndependence, Standard) { check_split_independence(fpt::standard()); }
TEST(SplitIndependence, LengthFieldDefault) { check_split_independence(lf(0, 2)); }
TEST(SplitIndependence, LengthFieldVarintWithOffset) { check_split_independence(lf(3, 0)); }
TEST(SplitIndependence, LengthFieldBigEndian4) { check_split_independence(lf(1, -4)); }
TEST(SplitIndependence, LengthFieldU8) { check_split_independence(lf(0, 1)); }

TEST(Decoder, BufferStaysBoundedAndShrinks) {
  fp::Decoder dec(fpt::standard(), 4096);
  const fp::Bytes big = enc_std(1, 1, fp::Bytes(200000, 9));
  std::size_t frames = 0;
  std::size_t max_cap = 0;
  for (std::size_t at = 0; at < big.size(); at += 1000) {
    const fp::Bytes chunk(big.begin() + static_cast<std::ptrdiff_t>(at),
                          big.begin() + static_cast<std::ptrdiff_t>(std::min(big.size(), at + 1000)));
    ASSERT_FALSE(dec.feed(chunk, [&](const fp::Frame& f) {
      ++frames;
      EXPECT_EQ(f.payload.size(), 200000u);
    }));
    max_cap = std::max(max_cap, dec.capacity());
  }
  EXPECT_EQ(frames, 1u);
  EXPECT_LE(max_cap, big.size());  // grew to exactly one frame, not more
  // Many small frames afterwards: the big buffer is given back.
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(dec.feed(enc_std(1, 2, fp::Bytes(10)), [&](const fp::Frame&) { ++frames; }));
  EXPECT_EQ(frames, 101u);
  EXPECT_LE(dec.capacity(), 4096u);
  EXPECT_FALSE(dec.finish());
}
