// Unit tests of the codec: the spec's worked examples, every error class with its offset, error
// precedence, and independence from how the stream is split into chunks.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "frameproof/codec.hpp"

using namespace fp;

namespace {

Bytes hex(const std::string& s) {
  Bytes out;
  std::string digits;
  for (char c : s)
    if (std::isxdigit(static_cast<unsigned char>(c))) digits += c;
  for (std::size_t i = 0; i + 1 < digits.size(); i += 2)
    out.push_back(static_cast<std::uint8_t>(std::stoul(digits.substr(i, 2), nullptr, 16)));
  return out;
}

Bytes str_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

struct Decoded {
  struct F {
    std::uint8_t flag, seq;
    Bytes payload;
    bool operator==(const F&) const = default;
  };
  std::vector<F> frames;
  std::optional<ProtocolError> error;
};

Decoded decode_chunks(const CodecConfig& cfg, const std::vector<Bytes>& chunks, std::size_t read_chunk = 64 * 1024) {
  Decoded d;
  if (auto e = cfg.validate()) {
    d.error = e;
    return d;
  }
  Decoder dec(cfg, read_chunk);
  auto on = [&](const Frame& f) { d.frames.push_back({f.flag, f.sequence, Bytes(f.payload.begin(), f.payload.end())}); };
  for (const Bytes& c : chunks) {
    if (auto e = dec.feed(c, on)) {
      d.error = e;
      return d;
    }
  }
  d.error = dec.finish();
  return d;
}

Decoded decode(const CodecConfig& cfg, const Bytes& stream) { return decode_chunks(cfg, {stream}); }

CodecConfig std_cfg(std::uint64_t max = 0) { return CodecConfig{Protocol::Standard, max, {}}; }
CodecConfig lf_cfg(std::uint32_t offset, std::int32_t size, std::uint64_t max = 0) {
  return CodecConfig{Protocol::LengthField, max, LfProfile{offset, size}};
}

Bytes enc_std(std::uint8_t flag, std::uint8_t seq, const Bytes& payload, std::uint64_t max = 0) {
  Bytes out;
  auto e = encode_standard(flag, seq, payload, max, out);
  EXPECT_FALSE(e) << e->requirement;
  return out;
}

Bytes enc_lf(std::uint32_t offset, std::int32_t size, const Bytes& payload, std::uint64_t max = 0) {
  Bytes out;
  auto e = encode_length_field(LfProfile{offset, size}, payload, max, out);
  EXPECT_FALSE(e) << e->requirement;
  return out;
}

void expect_error(const Decoded& d, const std::string& req, std::uint64_t offset) {
  ASSERT_TRUE(d.error.has_value()) << "expected " << req;
  EXPECT_EQ(d.error->requirement, req);
  EXPECT_EQ(d.error->offset, offset);
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

// ------------------------------------------------------------------ standard: worked examples (§8)

TEST(StandardEncode, SpecExamples) {
  EXPECT_EQ(enc_std(0x01, 1, str_bytes("Open")), hex("01 01 04 00 4F 70 65 6E"));
  EXPECT_EQ(enc_std(0x81, 1, str_bytes("\xE6\x89\xA7\xE8\xA1\x8C\xE6\x88\x90\xE5\x8A\x9F")),
            hex("81 01 0C 00 E6 89 A7 E8 A1 8C E6 88 90 E5 8A 9F"));
  EXPECT_EQ(enc_std(0x81, 1, str_bytes("OK")), hex("81 01 02 00 4F 4B"));
  EXPECT_EQ(enc_std(0x41, 1, str_bytes("abc")), hex("41 01 03 00 61 62 63"));
  EXPECT_EQ(enc_std(0xC1, 1, str_bytes("abc")), hex("C1 01 03 00 61 62 63"));
  EXPECT_EQ(enc_std(0x01, 1, {}), hex("01 01 00 00"));
}

TEST(StandardEncode, LengthFormBoundaries) {
  const Bytes p65534(65534, 7), p65535(65535, 7), p70000(70000, 7);
  Bytes e = enc_std(1, 1, p65534);
  EXPECT_EQ(Bytes(e.begin(), e.begin() + 4), hex("01 01 FE FF"));
  EXPECT_EQ(e.size(), 4u + 65534u);
  e = enc_std(1, 1, p65535);
  EXPECT_EQ(Bytes(e.begin(), e.begin() + 8), hex("01 01 FF FF FF FF 00 00"));
  EXPECT_EQ(e.size(), 8u + 65535u);
  e = enc_std(1, 1, p70000);
  EXPECT_EQ(Bytes(e.begin(), e.begin() + 8), hex("01 01 FF FF 70 11 01 00"));
}

TEST(StandardEncode, RefusesAboveMaximum) {
  Bytes out;
  auto e = encode_standard(1, 1, Bytes(101), 100, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "STD-LIM-2");
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(encode_standard(1, 1, Bytes(100), 100, out));
}

TEST(StandardDecode, SpecExamplesRoundTrip) {
  for (std::size_t n : {0u, 1u, 65534u, 65535u, 70000u}) {
    Bytes payload(n);
    for (std::size_t i = 0; i < n; ++i) payload[i] = static_cast<std::uint8_t>(i * 7);
    const Decoded d = decode(std_cfg(), enc_std(0x3F, 200, payload));
    ASSERT_FALSE(d.error) << n;
    ASSERT_EQ(d.frames.size(), 1u);
    EXPECT_EQ(d.frames[0].flag, 0x3F);
    EXPECT_EQ(d.frames[0].seq, 200);
    EXPECT_EQ(d.frames[0].payload, payload);
  }
}

TEST(StandardDecode, StickyPacket) {
  const Bytes stream = concat({enc_std(1, 0x10, str_bytes("sticky-first-message")),
                               enc_std(1, 0x11, str_bytes("sticky-second-message"))});
  ASSERT_EQ(stream.size(), 49u);
  const Decoded d = decode(std_cfg(), stream);
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 2u);
  EXPECT_EQ(d.frames[0].payload, str_bytes("sticky-first-message"));
  EXPECT_EQ(d.frames[1].seq, 0x11);
  EXPECT_EQ(d.frames[1].payload, str_bytes("sticky-second-message"));
}

TEST(StandardDecode, FlagBitsDeliveredVerbatim) {
  for (int flag = 0; flag < 256; ++flag) {
    const Decoded d = decode(std_cfg(), enc_std(static_cast<std::uint8_t>(flag), 9, str_bytes("x")));
    ASSERT_EQ(d.frames.size(), 1u);
    EXPECT_EQ(d.frames[0].flag, flag);
  }
}

// ------------------------------------------------------------------ standard: errors (§8a)

TEST(StandardDecode, NonCanonicalExtendedIsLen3AtFrameStart) {
  const Bytes good = enc_std(1, 1, str_bytes("ok"));
  const Decoded d = decode(std_cfg(), concat({good, hex("01 09 FF FF 05 00 00 00 31 32 33 34 35")}));
  ASSERT_EQ(d.frames.size(), 1u);  // the frame before the error is delivered
  expect_error(d, "STD-LEN-3", good.size());
  expect_error(decode(std_cfg(), hex("01 09 FF FF FE FF 00 00")), "STD-LEN-3", 0);
}

TEST(StandardDecode, Bit31IsLen4) {
  expect_error(decode(std_cfg(), hex("01 09 FF FF 00 00 00 80")), "STD-LEN-4", 0);
  expect_error(decode(std_cfg(), hex("01 09 FF FF FF FF FF FF")), "STD-LEN-4", 0);
}

TEST(StandardDecode, OversizeRejectedFromHeaderAlone) {
  // Only the header of a 2^31-1 byte frame: rejected at once, nothing allocated for it.
  const Decoded d = decode(std_cfg(), hex("01 09 FF FF FF FF FF 7F"));
  expect_error(d, "STD-LIM-1", 0);
  // A configured limit: 101 > 100, short form.
  expect_error(decode(std_cfg(100), hex("01 01 65 00")), "STD-LIM-1", 0);
  EXPECT_FALSE(decode(std_cfg(100), concat({hex("01 01 64 00"), Bytes(100)})).error);
}

TEST(StandardDecode, OversizeDoesNotGrowBuffer) {
  Decoder dec(std_cfg());
  std::size_t frames = 0;
  auto e = dec.feed(hex("01 09 FF FF 01 00 A0 00"), [&](const Frame&) { ++frames; });  // 10 MiB + 1
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "STD-LIM-1");
  EXPECT_LE(dec.capacity(), 64u * 1024u);
}

TEST(StandardDecode, PrecedenceLenBeforeLim) {
  // Non-canonical and, with max 10, also "above the limit": LEN-3 wins.
  expect_error(decode(std_cfg(10), hex("01 09 FF FF 00 01 00 00")), "STD-LEN-3", 0);
  // Bit 31 set is above any limit too: LEN-4 wins.
  expect_error(decode(std_cfg(10), hex("01 09 FF FF 00 00 00 80")), "STD-LEN-4", 0);
}

TEST(StandardDecode, PrecedenceLimBeforeTruncation) {
  // Header complete, payload missing, declared length above the max: LIM-1, not STR-3.
  expect_error(decode(std_cfg(10), hex("01 01 0B 00 61")), "STD-LIM-1", 0);
}

TEST(StandardDecode, TruncationIsStr3AtPartialFrameStart) {
  const Bytes good = enc_std(1, 1, str_bytes("ok"));
  for (std::size_t cut : {1u, 3u, 4u, 6u}) {
    Bytes partial = enc_std(1, 2, str_bytes("never-finished"));
    partial.resize(cut);
    const Decoded d = decode(std_cfg(), concat({good, partial}));
    EXPECT_EQ(d.frames.size(), 1u);
    expect_error(d, "STD-STR-3", good.size());
  }
  // Inside the extended length field.
  expect_error(decode(std_cfg(), hex("01 01 FF FF 00 00")), "STD-STR-3", 0);
  // Empty stream is fine.
  EXPECT_FALSE(decode(std_cfg(), {}).error);
}

TEST(StandardDecode, NoFrameAfterError) {
  Decoder dec(std_cfg(10));
  std::size_t frames = 0;
  auto on = [&](const Frame&) { ++frames; };
  ASSERT_TRUE(dec.feed(hex("01 01 0B 00"), on));
  EXPECT_TRUE(dec.feed(enc_std(1, 2, str_bytes("later")), on));
  EXPECT_EQ(frames, 0u);
  EXPECT_EQ(dec.finish()->requirement, "STD-LIM-1");
}

// ------------------------------------------------------------------ length-field

TEST(LengthFieldEncode, SpecExamplesEveryProfile) {
  const Bytes abc = str_bytes("abc");
  EXPECT_EQ(enc_lf(0, 2, abc), hex("03 00 61 62 63"));
  EXPECT_EQ(enc_lf(0, -2, abc), hex("00 03 61 62 63"));
  EXPECT_EQ(enc_lf(0, 4, abc), hex("03 00 00 00 61 62 63"));
  EXPECT_EQ(enc_lf(0, -4, abc), hex("00 00 00 03 61 62 63"));
  EXPECT_EQ(enc_lf(0, 1, abc), hex("03 61 62 63"));
  EXPECT_EQ(enc_lf(0, 0, abc), hex("03 61 62 63"));
  EXPECT_EQ(enc_lf(2, 2, abc), hex("00 00 03 00 61 62 63"));
  const Bytes v = enc_lf(0, 0, Bytes(300));
  EXPECT_EQ(Bytes(v.begin(), v.begin() + 2), hex("AC 02"));
  const Bytes bm = enc_lf(0, 2, Bytes(30));
  EXPECT_EQ(Bytes(bm.begin(), bm.begin() + 2), hex("1E 00"));
}

TEST(LengthFieldEncode, RefusalsInOrder) {
  Bytes out;
  auto e = encode_length_field({0, 3}, Bytes(1000), 10, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-FMT-3");  // before LEN-1 and LIM-2
  e = encode_length_field({0, 1}, Bytes(256), 10, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-LEN-1");  // before LIM-2
  e = encode_length_field({0, -2}, Bytes(65536), 0, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-LEN-1");
  e = encode_length_field({0, 2}, Bytes(11), 10, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-LIM-2");
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(encode_length_field({0, 1}, Bytes(255), 0, out));
  EXPECT_FALSE(encode_length_field({0, 2}, Bytes(65535), 0, out));
}

TEST(LengthFieldDecode, RoundTripEveryProfile) {
  for (std::int32_t size : {1, 2, 4, -2, -4, 0}) {
    for (std::uint32_t offset : {0u, 3u}) {
      for (std::size_t n : {0u, 1u, 127u, 128u, 255u}) {
        Bytes payload(n, static_cast<std::uint8_t>(n));
        const Bytes stream = concat({enc_lf(offset, size, payload), enc_lf(offset, size, str_bytes("next"))});
        const Decoded d = decode(lf_cfg(offset, size), stream);
        ASSERT_FALSE(d.error) << size << " " << offset << " " << n;
        ASSERT_EQ(d.frames.size(), 2u);
        EXPECT_EQ(d.frames[0].payload, payload);
        EXPECT_EQ(d.frames[0].flag, 0);
        EXPECT_EQ(d.frames[1].payload, str_bytes("next"));
      }
    }
  }
}

TEST(LengthFieldDecode, HeaderBytesIgnored) {
  const Decoded d = decode(lf_cfg(2, 2), hex("AB CD 03 00 61 62 63"));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0].payload, str_bytes("abc"));
}

TEST(LengthFieldDecode, UnsupportedSizeIsFmt3) {
  for (std::int32_t size : {-1, 3, 5, 8, -8}) expect_error(decode(lf_cfg(0, size), hex("03 61 62 63")), "LF-FMT-3", 0);
}

TEST(LengthFieldDecode, VarintErrors) {
  // Six bytes: too long.
  expect_error(decode(lf_cfg(0, 0), hex("FF FF FF FF FF 01")), "LF-LEN-2", 0);
  // Five bytes, value 2^31: too big.
  expect_error(decode(lf_cfg(0, 0), hex("80 80 80 80 08")), "LF-LEN-2", 0);
  // 2^31-1 is a valid length (then above the 10 MiB maximum: LIM-1).
  expect_error(decode(lf_cfg(0, 0), hex("FF FF FF FF 07")), "LF-LIM-1", 0);
  // Non-minimal varints are accepted (LF-LEN-4, MAY).
  const Decoded d = decode(lf_cfg(0, 0), hex("80 00 83 00 61 62 63"));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 2u);
  EXPECT_TRUE(d.frames[0].payload.empty());
  EXPECT_EQ(d.frames[1].payload, str_bytes("abc"));
}

TEST(LengthFieldDecode, Bit31IsLen3) {
  expect_error(decode(lf_cfg(0, 4), hex("00 00 00 80")), "LF-LEN-3", 0);
  expect_error(decode(lf_cfg(0, -4), hex("80 00 00 00")), "LF-LEN-3", 0);
  const Bytes good = enc_lf(1, -4, str_bytes("g"));
  const Decoded d = decode(lf_cfg(1, -4), concat({good, hex("00 FF FF FF FF")}));
  EXPECT_EQ(d.frames.size(), 1u);
  expect_error(d, "LF-LEN-3", good.size());
}

TEST(LengthFieldDecode, LimitFromLengthFieldAlone) {
  expect_error(decode(lf_cfg(0, 2, 10), hex("0B 00")), "LF-LIM-1", 0);
  expect_error(decode(lf_cfg(0, 4), hex("01 00 A0 00")), "LF-LIM-1", 0);  // 10 MiB + 1
  EXPECT_FALSE(decode(lf_cfg(0, 2, 10), concat({hex("0A 00"), Bytes(10)})).error);
}

TEST(LengthFieldDecode, TruncationIsStr3) {
  const Bytes good = enc_lf(3, 0, str_bytes("ok"));
  for (const Bytes& partial : {hex("00"), hex("00 00 00"), hex("00 00 00 AC"), hex("00 00 00 AC 02 61")}) {
    const Decoded d = decode(lf_cfg(3, 0), concat({good, partial}));
    EXPECT_EQ(d.frames.size(), 1u);
    expect_error(d, "LF-STR-3", good.size());
  }
}

TEST(LengthFieldDecode, PrecedenceLenBeforeLimBeforeTruncation) {
  // Bit 31 set is also above the limit: LEN-3 wins; payload missing: still LEN-3.
  expect_error(decode(lf_cfg(0, 4, 10), hex("00 00 00 80")), "LF-LEN-3", 0);
  // Above the limit with the payload missing: LIM-1, not STR-3.
  expect_error(decode(lf_cfg(0, 2, 10), hex("FF 00 61")), "LF-LIM-1", 0);
}

// ------------------------------------------------------------------ every split of the stream

namespace {

Bytes sample_stream(const CodecConfig& cfg) {
  Bytes s;
  const std::vector<std::size_t> sizes = {0, 1, 5, 127, 128, 300, 40000, 3};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    Bytes p(sizes[i]);
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = static_cast<std::uint8_t>(k + i);
    if (cfg.protocol == Protocol::Standard) {
      encode_standard(static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(i * 3), p, 0, s);
    } else {
      if (p.size() > lf_capacity(cfg.lf.size)) p.resize(lf_capacity(cfg.lf.size));
      encode_length_field(cfg.lf, p, 0, s);
    }
  }
  return s;
}

void check_split_independence(const CodecConfig& cfg) {
  const Bytes stream = sample_stream(cfg);
  const Decoded whole = decode(cfg, stream);
  ASSERT_FALSE(whole.error);
  ASSERT_EQ(whole.frames.size(), 8u);
  // Every two-way split, with a small read buffer so that compaction and growth happen.
  for (std::size_t cut = 0; cut <= stream.size(); cut += (cut < 400 ? 1 : 997)) {
    const Decoded d = decode_chunks(cfg, {Bytes(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(cut)),
                                          Bytes(stream.begin() + static_cast<std::ptrdiff_t>(cut), stream.end())},
                                    64);
    ASSERT_FALSE(d.error) << "cut " << cut;
    ASSERT_EQ(d.frames, whole.frames) << "cut " << cut;
  }
  // Random splits into many chunks, including one-byte dribbles.
  std::mt19937 rng(42);
  for (int round = 0; round < 50; ++round) {
    std::vector<Bytes> chunks;
    std::size_t at = 0;
    while (at < stream.size()) {
      const std::size_t n = std::min<std::size_t>(stream.size() - at, 1 + rng() % (round % 2 ? 7 : 5000));
      chunks.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(at),
                          stream.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
    }
    const Decoded d = decode_chunks(cfg, chunks, round % 3 ? 64 : 4096);
    ASSERT_FALSE(d.error);
    ASSERT_EQ(d.frames, whole.frames) << "round " << round;
  }
}

}  // namespace

TEST(SplitIndependence, Standard) { check_split_independence(std_cfg()); }
TEST(SplitIndependence, LengthFieldDefault) { check_split_independence(lf_cfg(0, 2)); }
TEST(SplitIndependence, LengthFieldVarintWithOffset) { check_split_independence(lf_cfg(3, 0)); }
TEST(SplitIndependence, LengthFieldBigEndian4) { check_split_independence(lf_cfg(1, -4)); }
TEST(SplitIndependence, LengthFieldU8) { check_split_independence(lf_cfg(0, 1)); }

TEST(Decoder, BufferStaysBoundedAndShrinks) {
  Decoder dec(std_cfg(), 4096);
  const Bytes big = enc_std(1, 1, Bytes(200000, 9));
  std::size_t frames = 0;
  std::size_t max_cap = 0;
  for (std::size_t at = 0; at < big.size(); at += 1000) {
    const Bytes chunk(big.begin() + static_cast<std::ptrdiff_t>(at),
                      big.begin() + static_cast<std::ptrdiff_t>(std::min(big.size(), at + 1000)));
    ASSERT_FALSE(dec.feed(chunk, [&](const Frame& f) {
      ++frames;
      EXPECT_EQ(f.payload.size(), 200000u);
    }));
    max_cap = std::max(max_cap, dec.capacity());
  }
  EXPECT_EQ(frames, 1u);
  EXPECT_LE(max_cap, big.size());  // grew to exactly one frame, not more
  // Many small frames afterwards: the big buffer is given back.
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(dec.feed(enc_std(1, 2, Bytes(10)), [&](const Frame&) { ++frames; }));
  EXPECT_EQ(frames, 101u);
  EXPECT_LE(dec.capacity(), 4096u);
  EXPECT_FALSE(dec.finish());
}
