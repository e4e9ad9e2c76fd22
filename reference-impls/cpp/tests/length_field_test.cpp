// Unit tests of the `length-field` module against spec/length-field.md: §8 worked examples in
// every profile, every error class of §7a with precedence and offsets, limits and truncation.
// Matching: matcher_test.cpp; the echo session: session_test.cpp.
#include <gtest/gtest.h>

#include <stdexcept>

#include "test_util.hpp"

using fpt::bytes;
using fpt::cat;
using fpt::decode_all;
using fpt::decode_chunks;
using fpt::hex;
using fpt::lf;
using fpt::OwnedFrame;
using fpt::pattern;

namespace {

std::optional<fp::ProtocolError> enc(std::uint32_t offset, std::int32_t size, const fp::Bytes& payload,
                                     fp::Bytes& out, std::uint64_t max = 0) {
  return lf(offset, size, max).encode(fp::Frame{0, 0, payload}, out);
}

fp::Bytes enc_ok(std::uint32_t offset, std::int32_t size, const fp::Bytes& payload) {
  fp::Bytes out;
  auto e = enc(offset, size, payload, out);
  EXPECT_FALSE(e) << (e ? e->requirement : "");
  return out;
}

OwnedFrame frame(const fp::Bytes& p) { return OwnedFrame{0, 0, p}; }

struct Example {
  std::uint32_t offset;
  std::int32_t size;
  const char* wire;
};

const Example kAbc[] = {
    {0, 2, "03 00 61 62 63"},       {0, -2, "00 03 61 62 63"}, {0, 4, "03 00 00 00 61 62 63"},
    {0, -4, "00 00 00 03 61 62 63"}, {0, 1, "03 61 62 63"},     {0, 0, "03 61 62 63"},
    {2, 2, "00 00 03 00 61 62 63"},
};

}  // namespace

// LF-FMT-1..3: "abc" in every profile of §8, encode and decode (whole and byte by byte).
TEST(LengthFieldCodec, WorkedExamplesEveryProfile) {
  for (const auto& ex : kAbc) {
    const fp::Bytes wire = hex(ex.wire);
    EXPECT_EQ(enc_ok(ex.offset, ex.size, bytes("abc")), wire) << ex.offset << "," << ex.size;
    for (const auto& chunks : {std::vector<fp::Bytes>{wire}, fpt::bytewise(wire)}) {
      auto d = decode_chunks(lf(ex.offset, ex.size), chunks);
      ASSERT_FALSE(d.error) << ex.size;
      ASSERT_EQ(d.frames.size(), 1u);
      EXPECT_EQ(d.frames[0], frame(bytes("abc")));
    }
  }
}

// LF-FMT-2: the default profile is offset 0, size 2.
TEST(LengthFieldCodec, DefaultProfile) {
  const fp::LengthField c;
  EXPECT_EQ(c.offset(), 0u);
  EXPECT_EQ(c.size(), 2);
  fp::Bytes out;
  const fp::Bytes abc = bytes("abc");
  EXPECT_FALSE(c.encode(fp::Frame{0, 0, abc}, out));
  EXPECT_EQ(out, hex("03 00 61 62 63"));
}

// LF-LEN-2: 300 bytes with size 0 is AC 02; the benchmark frame [BM] is 1E 00 + 30 bytes.
TEST(LengthFieldCodec, VarintAndBenchmarkFrame) {
  EXPECT_EQ(enc_ok(0, 0, pattern(300)), cat(hex("AC 02"), pattern(300)));
  EXPECT_EQ(enc_ok(0, 0, pattern(127)), cat(hex("7F"), pattern(127)));
  EXPECT_EQ(enc_ok(0, 0, pattern(128)), cat(hex("80 01"), pattern(128)));
  EXPECT_EQ(enc_ok(0, 0, pattern(16384)), cat(hex("80 80 01"), pattern(16384)));
  auto d = decode_all(lf(0, 2), cat(hex("1E 00"), pattern(30)));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 1u);
  EXPECT_EQ(d.frames[0], frame(pattern(30)));
}

// LF-FMT-5: empty payloads, several per read (LF-STR-2).
TEST(LengthFieldCodec, EmptyPayloadsAndManyPerRead) {
  auto d = decode_all(lf(0, 1), hex("00 00 02 41 42 00"));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 4u);
  EXPECT_EQ(d.frames[0], frame({}));
  EXPECT_EQ(d.frames[2], frame(bytes("AB")));
  EXPECT_EQ(d.frames[3], frame({}));
}

// LF-FMT-4: the encoder writes zero header bytes; the decoder ignores their content.
TEST(LengthFieldCodec, HeaderBytesZeroedAndIgnored) {
  EXPECT_EQ(enc_ok(3, 1, bytes("x")), hex("00 00 00 01 78"));
  auto d = decode_all(lf(3, 1), hex("DE AD BE 01 78 FF FF FF 00"));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 2u);
  EXPECT_EQ(d.frames[0], frame(bytes("x")));
  EXPECT_EQ(d.frames[1], frame({}));
}

// LF-STR-1: splits inside the header, the length field and a varint.
TEST(LengthFieldDecode, SplitInsideLengthFieldAndVarint) {
  for (std::int32_t size : {1, 2, 4, -2, -4, 0}) {
    const fp::Bytes p = pattern(size == 1 ? 200 : 300);
    const fp::Bytes wire = cat(enc_ok(2, size, p), enc_ok(2, size, bytes("z")));
    for (std::size_t cut = 1; cut < wire.size(); cut += (cut < 12 ? 1 : 37)) {
      auto d = decode_chunks(lf(2, size), fpt::split_at(wire, {cut}));
      ASSERT_FALSE(d.error) << size << " cut " << cut;
      ASSERT_EQ(d.frames.size(), 2u) << size << " cut " << cut;
      EXPECT_EQ(d.frames[0], frame(p));
      EXPECT_EQ(d.frames[1], frame(bytes("z")));
    }
  }
}

// LF-FMT-3: unsupported sizes are refused before any byte: by the config, the encoder and the
// decoder constructor; LF-FMT-3 comes first among encoder errors.
TEST(LengthFieldErrors, UnsupportedSize) {
  for (std::int32_t size : {-1, 3, 5, 8, -8, 16, -3}) {
    auto cfg = lf(0, size);
    auto v = cfg.validate();
    ASSERT_TRUE(v) << size;
    EXPECT_EQ(v->requirement, "LF-FMT-3");
    EXPECT_EQ(v->offset, 0u);
    fp::Bytes out;
    auto e = enc(0, size, fp::Bytes(1000), out, 10);  // would also break LF-LIM-2
    ASSERT_TRUE(e);
    EXPECT_EQ(e->requirement, "LF-FMT-3");
    EXPECT_TRUE(out.empty());
    EXPECT_THROW(fp::Decoder{cfg}, std::invalid_argument);
  }
  for (std::int32_t size : {1, 2, 4, -2, -4, 0}) EXPECT_FALSE(lf(0, size).validate()) << size;
  EXPECT_FALSE(fpt::standard().validate());
}

// LF-LEN-1 then LF-LIM-2 (encoder order of §7a).
TEST(LengthFieldErrors, EncoderRefusals) {
  fp::Bytes out;
  auto e = enc(0, 1, pattern(256), out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-LEN-1");
  EXPECT_FALSE(enc(0, 1, pattern(255), out));
  out.clear();
  for (std::int32_t s : {2, -2}) {
    auto e2 = enc(0, s, pattern(65536), out);
    ASSERT_TRUE(e2);
    EXPECT_EQ(e2->requirement, "LF-LEN-1");
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(enc(0, s, pattern(65535), out));
    out.clear();
  }
  auto both = enc(0, 1, pattern(300), out, 10);  // too big for the field and the maximum
  ASSERT_TRUE(both);
  EXPECT_EQ(both->requirement, "LF-LEN-1");
  auto lim = enc(0, 1, pattern(11), out, 10);
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->requirement, "LF-LIM-2");
  auto lim4 = enc(0, 4, fp::Bytes(fp::kDefaultMaxPayload + 1), out);
  ASSERT_TRUE(lim4);
  EXPECT_EQ(lim4->requirement, "LF-LIM-2");
  EXPECT_TRUE(out.empty());
}

// LF-LEN-2: varints longer than 5 bytes or above 2^31-1; offset = frame start.
TEST(LengthFieldErrors, BadVarint) {
  const fp::Bytes ok = hex("01 41");
  for (const char* field : {"80 80 80 80 80 00", "FF FF FF FF FF 01", "80 80 80 80 08", "FF FF FF FF 0F"}) {
    auto d = decode_all(lf(0, 0), cat(ok, hex(field)));
    ASSERT_TRUE(d.error) << field;
    EXPECT_EQ(d.error->requirement, "LF-LEN-2") << field;
    EXPECT_EQ(d.error->offset, 2u);
    EXPECT_EQ(d.frames.size(), 1u);
  }
  // 2^31-1 is a valid length: LF-LIM-1 applies (the default maximum is 10 MiB), not LF-LEN-2
  auto d = decode_all(lf(0, 0), hex("FF FF FF FF 07"));
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->requirement, "LF-LIM-1");
}

// LF-LEN-2 with a header offset: the offset reported is where the frame (its header) starts.
TEST(LengthFieldErrors, BadVarintAfterHeader) {
  auto d = decode_all(lf(4, 0), cat(hex("00 00 00 00 01 41"), hex("AA BB CC DD 80 80 80 80 80 80")));
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->requirement, "LF-LEN-2");
  EXPECT_EQ(d.error->offset, 6u);
}

// LF-LEN-4 (MAY): this implementation accepts non-minimal varints of at most 5 bytes.
TEST(LengthFieldDecode, NonMinimalVarintAccepted) {
  auto d = decode_all(lf(0, 0), hex("80 00 83 80 80 80 00 61 62 63"));
  ASSERT_FALSE(d.error);
  ASSERT_EQ(d.frames.size(), 2u);
  EXPECT_EQ(d.frames[0], frame({}));
  EXPECT_EQ(d.frames[1], frame(bytes("abc")));
}

// LF-LEN-3: size ±4 with bit 31 set; precedes LF-LIM-1.
TEST(LengthFieldErrors, Bit31InFourByteField) {
  auto le = decode_all(lf(0, 4), hex("00 00 00 80"));
  ASSERT_TRUE(le.error);
  EXPECT_EQ(le.error->requirement, "LF-LEN-3");
  auto be = decode_all(lf(0, -4), cat(hex("00 00 00 01 41"), hex("80 00 00 00")));
  ASSERT_TRUE(be.error);
  EXPECT_EQ(be.error->requirement, "LF-LEN-3");
  EXPECT_EQ(be.error->offset, 5u);
  ASSERT_EQ(be.frames.size(), 1u);
}

// LF-LIM-1: decided from the length field alone (no payload), the configured maximum and the
// field capacity; LF-LIM-3: nothing of the promised size is allocated.
TEST(LengthFieldErrors, OversizeAtHeaderTime) {
  fp::Decoder dec(lf(0, 4));
  int frames = 0;
  auto e = dec.feed(hex("01 00 00 00 5A 01 00 A0 00"), [&](const fp::Frame&) { ++frames; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-LIM-1");
  EXPECT_EQ(e->offset, 5u);
  EXPECT_EQ(frames, 1);
  EXPECT_LT(dec.capacity(), 1u << 20);

  auto small = decode_all(lf(0, 2, 16), hex("11 00"));
  ASSERT_TRUE(small.error);
  EXPECT_EQ(small.error->requirement, "LF-LIM-1");
  auto exact = decode_all(lf(0, 2, 16), cat(hex("10 00"), pattern(16)));
  EXPECT_FALSE(exact.error);
  // a maximum above the field capacity is capped by the capacity (never an error for size 1)
  EXPECT_EQ(lf(0, 1, 1000).max_payload(), 255u);
  EXPECT_EQ(lf(0, 2).max_payload(), 65535u);
  EXPECT_EQ(lf(0, 4).max_payload(), fp::kDefaultMaxPayload);
}

// LF-STR-3: truncation inside the header bytes, the length field, a varint, the payload.
TEST(LengthFieldErrors, TruncatedStream) {
  struct Case {
    std::uint32_t offset;
    std::int32_t size;
    const char* tail;
  };
  const Case cases[] = {{2, 2, "00"}, {2, 2, "00 00 05"}, {0, 4, "05 00 00"}, {0, 0, "80 80"},
                        {0, 0, "03 61"}, {0, -2, "00 03 61 62"}, {1, 1, "00 02 61"}};
  for (const auto& c : cases) {
    const fp::Bytes ok = enc_ok(c.offset, c.size, bytes("ok"));
    auto d = decode_all(lf(c.offset, c.size), cat(ok, hex(c.tail)));
    ASSERT_TRUE(d.error) << c.tail;
    EXPECT_EQ(d.error->requirement, "LF-STR-3") << c.tail;
    EXPECT_EQ(d.error->offset, ok.size()) << c.tail;
    ASSERT_EQ(d.frames.size(), 1u);
    EXPECT_EQ(d.frames[0], frame(bytes("ok")));
  }
}

// LF-STR-4: the error is fatal, later bytes deliver nothing.
TEST(LengthFieldErrors, ErrorIsFatal) {
  fp::Decoder dec(lf(0, 4));
  int frames = 0;
  auto count = [&](const fp::Frame&) { ++frames; };
  ASSERT_TRUE(dec.feed(hex("00 00 00 F0 01 00 00 00 41"), count));
  EXPECT_EQ(frames, 0);
  ASSERT_TRUE(dec.feed(hex("01 00 00 00 41"), count));
  EXPECT_EQ(frames, 0);
  EXPECT_EQ(dec.error()->requirement, "LF-LEN-3");
}

// The hot-path header writer agrees with the encoder in every profile.
TEST(LengthFieldCodec, HeaderWriter) {
  for (std::int32_t size : {1, 2, 4, -2, -4, 0}) {
    for (std::size_t n : {0u, 1u, 127u, 128u, 255u}) {
      std::uint8_t h[16];
      const std::size_t hl = lf(2, size).write_header(h, fp::Frame{}, n);
      EXPECT_LE(hl, lf(2, size).max_header_size());
      const fp::Bytes full = enc_ok(2, size, pattern(n));
      EXPECT_EQ(hl, full.size() - n);
      EXPECT_EQ(fp::Bytes(h, h + hl), fp::Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(hl)));
    }
  }
}

// LF-FMT-1..3, LF-STR-2: every profile, with and without header bytes, payloads around the
// varint and one-byte boundaries, followed by a second frame in the same read.
TEST(LengthFieldDecode, RoundTripEveryProfile) {
  for (std::int32_t size : {1, 2, 4, -2, -4, 0}) {
    for (std::uint32_t offset : {0u, 3u}) {
      for (std::size_t n : {0u, 1u, 127u, 128u, 255u}) {
        const fp::Bytes payload(n, static_cast<std::uint8_t>(n));
        const auto d = decode_all(lf(offset, size), cat(enc_ok(offset, size, payload), enc_ok(offset, size, bytes("next"))));
        ASSERT_FALSE(d.error) << size << " " << offset << " " << n;
        ASSERT_EQ(d.frames.size(), 2u);
        EXPECT_EQ(d.frames[0], frame(payload));
        EXPECT_EQ(d.frames[1], frame(bytes("next")));
      }
    }
  }
}

// §7a precedence: LF-LEN-3 before LF-LIM-1 (bit 31 set is above any maximum too), and LF-LIM-1
// before LF-STR-3 (the payload of a frame above the maximum is cut short).
TEST(LengthFieldErrors, PrecedenceLenBeforeLimBeforeTruncation) {
  auto len3 = decode_all(lf(0, 4, 10), hex("00 00 00 80"));
  ASSERT_TRUE(len3.error);
  EXPECT_EQ(len3.error->requirement, "LF-LEN-3");
  auto lim1 = decode_all(lf(0, 2, 10), hex("FF 00 61"));
  ASSERT_TRUE(lim1.error);
  EXPECT_EQ(lim1.error->requirement, "LF-LIM-1");
  EXPECT_EQ(lim1.error->offset, 0u);
}
