// Property tests with a seeded generator (deterministic, so a failure reproduces):
//  - round trip: random frames in random profiles, encoded, concatenated and split at random
//    points (including single bytes) decode to the same frames (STD-STR-1/2, LF-STR-1/2);
//  - split independence on arbitrary input: for random byte strings (mostly garbage), every split
//    gives the same frames and the same error (ID and offset) as one read;
//  - bounded memory: the decoder buffer never exceeds the largest legal frame plus one read chunk
//    (STD-LIM-3, LF-LIM-3).
#include <gtest/gtest.h>

#include <random>

#include "frameproof/histogram.hpp"
#include "test_util.hpp"

using fpt::OwnedFrame;

namespace {

constexpr std::int32_t kSizes[] = {1, 2, 4, -2, -4, 0};

// A random protocol and profile; `small_limit`: a maximum of 1..64 bytes, so that LIM errors are
// likely.
fp::AnyProtocol random_config(std::mt19937_64& rng, bool small_limit = false) {
  auto limit = [&](std::uint64_t drawn) { return small_limit ? 1 + rng() % 64 : drawn; };
  if (rng() % 3 == 0) return fpt::standard(limit(rng() % 2 ? 0 : 1 + rng() % 70000));
  const auto offset = static_cast<std::uint32_t>(rng() % 4 == 0 ? rng() % 9 : 0);
  const std::int32_t size = kSizes[rng() % 6];
  return fpt::lf(offset, size, limit(rng() % 2 ? 0 : 1 + rng() % 70000));
}

std::uint64_t max_payload(const fp::AnyProtocol& p) {
  return std::visit([](const auto& proto) { return proto.max_payload(); }, p);
}

std::size_t random_len(std::mt19937_64& rng, std::uint64_t max) {
  std::size_t n;
  switch (rng() % 4) {
    case 0: n = rng() % 4; break;
    case 1: n = rng() % 300; break;
    case 2: n = 65530 + rng() % 10; break;  // around the standard extended-length boundary
    default: n = rng() % 70000; break;
  }
  return static_cast<std::size_t>(std::min<std::uint64_t>(n, max));
}

std::vector<fp::Bytes> random_split(std::mt19937_64& rng, const fp::Bytes& s) {
  std::vector<std::size_t> cuts;
  if (s.empty()) return {s};
  const int mode = static_cast<int>(rng() % 3);
  if (mode == 0) {
    if (s.size() < 4000) return fpt::bytewise(s);
  }
  std::size_t pos = 0;
  while (true) {
    const std::size_t step = mode == 1 ? 1 + rng() % 7 : 1 + rng() % 9000;
    pos += step;
    if (pos >= s.size()) break;
    cuts.push_back(pos);
  }
  return fpt::split_at(s, cuts);
}

}  // namespace

TEST(Property, RoundTripAnySplit) {
  std::mt19937_64 rng(0xF4A3E5u);
  for (int iter = 0; iter < 300; ++iter) {
    const fp::AnyProtocol cfg = random_config(rng);
    const std::uint64_t max = max_payload(cfg);
    fp::Bytes stream;
    std::vector<OwnedFrame> want;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      OwnedFrame f;
      if (std::holds_alternative<fp::Standard>(cfg)) {  // the only protocol with header fields
        f.flag = static_cast<std::uint8_t>(rng());
        f.sequence = static_cast<std::uint8_t>(rng());
      }
      f.payload = fpt::pattern(random_len(rng, max), static_cast<std::uint8_t>(rng()));
      ASSERT_FALSE(fpt::encode(cfg, f, stream)) << iter;
      want.push_back(std::move(f));
    }
    const std::size_t chunk = rng() % 2 ? 64 * 1024 : 16 + rng() % 100;
    auto d = fpt::decode_chunks(cfg, random_split(rng, stream), chunk);
    ASSERT_FALSE(d.error) << iter << " " << d.error->requirement << " @" << d.error->offset;
    ASSERT_EQ(d.frames.size(), want.size()) << iter;
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(d.frames[i] == want[i]) << iter << " frame " << i;
  }
}

TEST(Property, GarbageSplitIndependence) {
  std::mt19937_64 rng(0xBADC0DEu);
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    const fp::AnyProtocol cfg = random_config(rng, rng() % 2);
    fp::Bytes s(rng() % 48);
    for (auto& b : s) {
      // bias towards bytes that make interesting headers
      switch (rng() % 5) {
        case 0: b = 0xFF; break;
        case 1: b = 0x80 | static_cast<std::uint8_t>(rng() % 4); break;
        case 2: b = static_cast<std::uint8_t>(rng() % 4); break;
        default: b = static_cast<std::uint8_t>(rng()); break;
      }
    }
    const auto whole = fpt::decode_all(cfg, s);
    const auto split = fpt::decode_chunks(cfg, random_split(rng, s), 16);
    ASSERT_EQ(whole.frames, split.frames) << iter;
    ASSERT_EQ(whole.error.has_value(), split.error.has_value()) << iter;
    if (whole.error) {
      ++errors;
      EXPECT_EQ(whole.error->requirement, split.error->requirement) << iter;
      EXPECT_EQ(whole.error->offset, split.error->offset) << iter;
      // the offset is a frame boundary: the sum of the delivered frames' wire sizes
      fp::Bytes re;
      for (const auto& f : whole.frames) ASSERT_FALSE(fpt::encode(cfg, f, re));
      if (!std::holds_alternative<fp::LengthField>(cfg) || std::get<fp::LengthField>(cfg).size() != 0) {
        // fixed-width fields re-encode byte for byte (up to ignored header bytes)
        EXPECT_EQ(whole.error->offset, re.size()) << iter;
      } else {
        EXPECT_LE(whole.error->offset, s.size());
      }
    }
  }
  EXPECT_GT(errors, 500);  // the generator does produce errors of every kind
}

TEST(Property, BoundedBuffer) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 200; ++iter) {
    const fp::AnyProtocol cfg = random_config(rng);
    const std::size_t chunk = 1024;
    fp::Bytes garbage(200000);
    for (auto& b : garbage) b = static_cast<std::uint8_t>(rng() % 3 == 0 ? 0xFF : rng());
    std::visit(
        [&](const auto& proto) {
          if constexpr (fpt::kPlain<std::decay_t<decltype(proto)>>) {
          fp::Decoder dec(proto, chunk);
          const std::uint64_t bound = proto.max_header_size() + proto.max_payload() + chunk;
          std::size_t pos = 0;
          while (pos < garbage.size()) {
            const std::size_t n = std::min<std::size_t>(1 + rng() % 5000, garbage.size() - pos);
            auto e = dec.feed(fp::ByteView(garbage).subspan(pos, n), [](const fp::Frame&) {});
            ASSERT_LE(dec.capacity(), bound) << iter;
            if (e) break;
            pos += n;
          }
          }
        },
        cfg);
  }
}

// fp-load's latency histogram: exact below 64, relative error of a percentile <= 1/128.
TEST(Histogram, Precision) {
  fp::Histogram h;
  EXPECT_EQ(h.quantile(0.5), 0.0);
  for (std::uint64_t v = 0; v < 64; ++v) h.record(v);
  EXPECT_EQ(h.quantile(0.5), 31.0);
  EXPECT_EQ(h.quantile(1.0), 63.0);
  EXPECT_EQ(h.max(), 63u);

  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t v = rng() >> (rng() % 60);
    fp::Histogram one;
    one.record(v);
    one.record(v);
    const double q = one.quantile(0.5);
    EXPECT_LE(std::abs(q - static_cast<double>(v)), static_cast<double>(v) / 128.0 + 0.5) << v;
    EXPECT_EQ(one.max(), v);
    EXPECT_GE(fp::Histogram::index(v), fp::Histogram::index(v / 2));
    EXPECT_LE(fp::Histogram::lower(fp::Histogram::index(v)), v);
  }
}

TEST(Histogram, PercentilesOfKnownDistribution) {
  fp::Histogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_NEAR(h.quantile(0.5), 50000, 50000 / 128.0 + 1);
  EXPECT_NEAR(h.quantile(0.99), 99000, 99000 / 128.0 + 1);
  EXPECT_NEAR(h.quantile(0.999), 99900, 99900 / 128.0 + 1);
  EXPECT_LE(h.quantile(1.0), 100000.0);
  fp::Histogram other;
  other.record(1'000'000);
  h.merge(other);
  EXPECT_EQ(h.max(), 1'000'000u);
  EXPECT_EQ(h.count(), 100001u);
}
