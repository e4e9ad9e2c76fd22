// Unit tests of the `standard` module against spec/standard.md: the worked examples of §8, every
// error class of §8a with its offset and precedence, limits and truncation (suites
// StandardWire/StandardErrors). Matching: matcher_test.cpp; the echo session: session_test.cpp.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include "test_util.hpp"

using fpt::bytes;
using fpt::cat;
using fpt::decode_all;
using fpt::decode_chunks;
using fpt::enc_std;
using fpt::hex;
using fpt::OwnedFrame;
using fpt::pattern;

namespace {

// The standard encoder with a maximum (0: the default), for the refusal tests.
std::optional<fp::ProtocolError> encode(std::uint8_t flag, std::uint8_t seq, fp::ByteView payload, std::uint64_t max,
                                        fp::Bytes& out) {
  return fpt::standard(max).encode(fp::Frame{flag, seq, payload}, out);
}

struct Vector {
  const char* name;
  std::uint8_t flag;
  std::uint8_t seq;
  fp::Bytes payload;
  fp::Bytes wire;
};

std::vector<Vector> worked_examples() {
  const fp::Bytes zh = hex("E6 89 A7 E8 A1 8C E6 88 90 E5 8A 9F");  // "执行成功"
  return {
      {"request Open", 0x01, 1, bytes("Open"), hex("01 01 04 00 4F 70 65 6E")},
      {"reply zh", 0x81, 1, zh, cat(hex("81 01 0C 00"), zh)},
      {"reply OK", 0x81, 1, bytes("OK"), hex("81 01 02 00 4F 4B")},
      {"one-way abc", 0x41, 1, bytes("abc"), hex("41 01 03 00 61 62 63")},
      {"error reply abc", 0xC1, 1, bytes("abc"), hex("C1 01 03 00 61 62 63")},
      {"empty", 0x01, 1, {}, hex("01 01 00 00")},
      {"65534", 0x01, 1, pattern(65534), cat(hex("01 01 FE FF"), pattern(65534))},
      {"65535", 0x01, 1, pattern(65535), cat(hex("01 01 FF FF FF FF 00 00"), pattern(65535))},
      {"70000", 0x01, 1, pattern(70000), cat(hex("01 01 FF FF 70 11 01 00"), pattern(70000))},
  };
}

}  // namespace

// STD-HDR-1..5, STD-LEN-1, STD-LEN-2: §8 worked examples encode to the given bytes.
TEST(StandardWire, EncodeWorkedExamples) {
  for (const auto& v : worked_examples()) {
    EXPECT_EQ(enc_std(v.flag, v.seq, v.payload), v.wire) << v.name;
  }
}

// The same vectors decode back to one frame each, in one read and byte by byte.
TEST(StandardWire, DecodeWorkedExamples) {
  for (const auto& v : worked_examples()) {
    const OwnedFrame want{v.flag, v.seq, v.payload};
    auto d = decode_all(fpt::standard(), v.wire);
    ASSERT_FALSE(d.error) << v.name << ": " << d.error->requirement;
    ASSERT_EQ(d.frames.size(), 1u) << v.name;
    EXPECT_EQ(d.frames[0], want) << v.name;
    if (v.wire.size() < 100) {
      auto b = decode_chunks(fpt::standard(), fpt::bytewise(v.wire));
      ASSERT_FALSE(b.error) << v.name;
      ASSERT_EQ(b.frames.size(), 1u);
      EXPECT_EQ(b.frames[0], want) << v.name;
    }
  }
}

// STD-STR-2: the [T2] sticky packet, 49 bytes, two frames, also split at every byte.
TEST(StandardWire, StickyPacketAnySplit) {
  const fp::Bytes first = bytes("sticky-first-message");
  const fp::Bytes second = bytes("sticky-second-message");
  const fp::Bytes wire = cat(cat(hex("01 10 14 00"), first), cat(hex("01 11 15 00"), second));
  ASSERT_EQ(wire.size(), 49u);
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    auto d = decode_chunks(fpt::standard(), fpt::split_at(wire, {cut}));
    ASSERT_FALSE(d.error) << cut;
    ASSERT_EQ(d.frames.size(), 2u) << cut;
    EXPECT_EQ(d.frames[0], (OwnedFrame{0x01, 0x10, first}));
    EXPECT_EQ(d.frames[1], (OwnedFrame{0x01, 0x11, second}));
  }
}

// STD-HDR-3/4: every flag byte (reply, error, one-way bits and all 64 kinds) is carried verbatim.
TEST(StandardWire, EveryFlagAndSequenceVerbatim) {
  fp::Bytes stream;
  std::vector<OwnedFrame> want;
  for (int flag = 0; flag < 256; ++flag) {
    const auto seq = static_cast<std::uint8_t>(255 - flag);
    const fp::Bytes p = pattern(static_cast<std::size_t>(flag % 7), static_cast<std::uint8_t>(flag));
    stream = cat(stream, enc_std(static_cast<std::uint8_t>(flag), seq, p));
    want.push_back({static_cast<std::uint8_t>(flag), seq, p});
  }
  auto d = decode_all(fpt::standard(), stream);
  ASSERT_FALSE(d.error);
  EXPECT_EQ(d.frames, want);
}

// STD-STR-1: splits inside the 4-byte header and inside the extended length field.
TEST(StandardWire, SplitInsideHeaderAndExtendedLength) {
  const fp::Bytes wire = cat(hex("01 07 FF FF 70 11 01 00"), pattern(70000));
  for (std::size_t cut = 1; cut < 8; ++cut) {
    for (std::size_t cut2 : {std::size_t{8}, std::size_t{9}, std::size_t{40000}}) {
      auto d = decode_chunks(fpt::standard(), fpt::split_at(wire, {cut, cut2}));
      ASSERT_FALSE(d.error) << cut;
      ASSERT_EQ(d.frames.size(), 1u);
      EXPECT_EQ(d.frames[0], (OwnedFrame{0x01, 0x07, pattern(70000)}));
    }
  }
}

// STD-LEN-3: non-canonical extended length (below 65535) is rejected; offset = frame start.
TEST(StandardErrors, NonCanonicalExtendedLength) {
  const fp::Bytes ok = hex("01 01 02 00 41 42");  // 6 bytes, delivered
  for (const char* ext : {"00 00 00 00", "FE FF 00 00", "03 00 00 00"}) {
    const fp::Bytes wire = cat(ok, cat(hex("01 02 FF FF"), hex(ext)));
    auto d = decode_all(fpt::standard(), wire);
    ASSERT_TRUE(d.error) << ext;
    EXPECT_EQ(d.error->requirement, "STD-LEN-3") << ext;
    EXPECT_EQ(d.error->offset, 6u);
    ASSERT_EQ(d.frames.size(), 1u);
    EXPECT_EQ(d.frames[0].payload, bytes("AB"));
  }
  // exactly 65535 is canonical
  auto d = decode_all(fpt::standard(), cat(hex("01 01 FF FF FF FF 00 00"), pattern(65535)));
  EXPECT_FALSE(d.error);
}

// STD-LEN-4: bit 31 set in the extended length; it wins over STD-LIM-1 (§8a order).
TEST(StandardErrors, ExtendedLengthBit31) {
  for (const char* ext : {"00 00 00 80", "FF FF FF FF"}) {
    auto d = decode_all(fpt::standard(), cat(hex("01 01 FF FF"), hex(ext)));
    ASSERT_TRUE(d.error);
    EXPECT_EQ(d.error->requirement, "STD-LEN-4") << ext;
    EXPECT_EQ(d.error->offset, 0u);
  }
}

// §8a: STD-LEN-3 precedes STD-LIM-1 even when the (non-canonical) length is above a small maximum.
TEST(StandardErrors, Len3BeforeLim1) {
  auto d = decode_all(fpt::standard(100), hex("01 01 FF FF 00 10 00 00"));  // ext 4096 < 65535, > 100
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->requirement, "STD-LEN-3");
}

// STD-LIM-1: rejected as soon as the header is complete, without the payload; STD-LIM-3: the
// decoder does not allocate the declared size.
TEST(StandardErrors, OversizeRejectedAtHeaderTime) {
  fp::Decoder dec(fpt::standard());
  const fp::Bytes prefix = cat(hex("01 01 01 00 5A"), hex("01 02 FF FF"));  // one frame, then a header
  const fp::Bytes ext = hex("01 00 A0 00");  // 10 MiB + 1
  int frames = 0;
  EXPECT_FALSE(dec.feed(prefix, [&](const fp::Frame&) { ++frames; }));
  EXPECT_EQ(frames, 1);
  auto e = dec.feed(ext, [&](const fp::Frame&) { ++frames; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "STD-LIM-1");
  EXPECT_EQ(e->offset, 5u);
  EXPECT_LE(dec.capacity(), fp::kReadChunk);  // nothing grown for the promised 10 MiB
  // the header of a 2^31-1 byte frame alone: STD-LIM-1 at once
  auto d = decode_all(fpt::standard(), hex("01 09 FF FF FF FF FF 7F"));
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->requirement, "STD-LIM-1");
  EXPECT_EQ(d.error->offset, 0u);
  // exactly the maximum is accepted: the header alone is no error
  fp::Decoder ok(fpt::standard());
  EXPECT_FALSE(ok.feed(hex("01 01 FF FF 00 00 A0 00"), [](const fp::Frame&) {}));
  EXPECT_LT(ok.capacity(), 1u << 20);  // nothing of the promised 10 MiB arrived: not allocated
}

TEST(StandardErrors, ConfiguredMaximum) {
  auto at = decode_all(fpt::standard(100), cat(hex("01 01 64 00"), pattern(100)));
  EXPECT_FALSE(at.error);
  EXPECT_EQ(at.frames.size(), 1u);
  auto over = decode_all(fpt::standard(100), hex("01 01 65 00"));
  ASSERT_TRUE(over.error);
  EXPECT_EQ(over.error->requirement, "STD-LIM-1");
  EXPECT_EQ(over.error->offset, 0u);
  // §8a: above the maximum with the payload cut short is STD-LIM-1, not STD-STR-3
  auto cut = decode_all(fpt::standard(10), hex("01 01 0B 00 61"));
  ASSERT_TRUE(cut.error);
  EXPECT_EQ(cut.error->requirement, "STD-LIM-1");
}

// STD-STR-3: truncation inside the header, the extended length, the payload; offset = partial frame.
TEST(StandardErrors, TruncatedStream) {
  const fp::Bytes ok = hex("01 01 00 00");
  for (const char* tail : {"01", "01 02 03", "01 02 FF FF 00", "01 02 FF FF FF FF 00 00 11 22", "01 02 05 00 61 62"}) {
    auto d = decode_all(fpt::standard(), cat(ok, hex(tail)));
    ASSERT_TRUE(d.error) << tail;
    EXPECT_EQ(d.error->requirement, "STD-STR-3") << tail;
    EXPECT_EQ(d.error->offset, 4u) << tail;
    EXPECT_EQ(d.frames.size(), 1u);
  }
  // a clean end after complete frames is no error
  EXPECT_FALSE(decode_all(fpt::standard(), ok).error);
  EXPECT_FALSE(decode_all(fpt::standard(), {}).error);
}

// STD-STR-4: no frame after the error, whatever follows, and the error is sticky.
TEST(StandardErrors, ErrorIsFatal) {
  fp::Decoder dec(fpt::standard(10));
  int frames = 0;
  auto count = [&](const fp::Frame&) { ++frames; };
  auto e = dec.feed(cat(hex("01 01 00 00 01 02 0B 00"), pattern(11)), count);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "STD-LIM-1");
  EXPECT_EQ(e->offset, 4u);
  EXPECT_EQ(frames, 1);
  auto again = dec.feed(hex("01 03 00 00"), count);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->requirement, "STD-LIM-1");
  EXPECT_EQ(frames, 1);
  fp::Frame f;
  EXPECT_EQ(dec.next(f), fp::Decoder<fp::Standard>::Status::Error);
}

// STD-LIM-2: the encoder refuses above its maximum and writes nothing; STD-LEN-1 boundary.
TEST(StandardErrors, EncoderRefusesAboveMaximum) {
  fp::Bytes out = hex("AA");
  auto e = encode(0x01, 1, pattern(11), 10, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "STD-LIM-2");
  EXPECT_EQ(out, hex("AA"));
  EXPECT_FALSE(encode(0x01, 1, pattern(10), 10, out));
  EXPECT_EQ(out.size(), 1u + 4u + 10u);
  // default maximum: 10 MiB accepted, one more refused
  fp::Bytes big;
  EXPECT_FALSE(encode(0x01, 1, fp::Bytes(fp::kDefaultMaxPayload), 0, big));
  EXPECT_EQ(big.size(), fp::kDefaultMaxPayload + 8);
  fp::Bytes over;
  auto e2 = encode(0x01, 1, fp::Bytes(fp::kDefaultMaxPayload + 1), 0, over);
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->requirement, "STD-LIM-2");
  EXPECT_TRUE(over.empty());
}

// §8a: a payload of 2^31 bytes or more is STD-LEN-4 whatever the maximum (also above the
// default maximum, where STD-LIM-2 would apply too); 2^31 - 1 above the maximum is STD-LIM-2.
// The payload is an untouched anonymous mapping: nothing is read before the refusal.
TEST(StandardErrors, EncoderLen4BeforeLim2) {
  const std::size_t big = std::size_t{1} << 31;
  void* m = ::mmap(nullptr, big, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  const auto* p = static_cast<const std::uint8_t*>(m);
  fp::Bytes out;
  for (std::uint64_t max : {std::uint64_t{0}, std::uint64_t{1} << 40}) {
    auto e = encode(0x01, 1, fp::ByteView(p, big), max, out);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->requirement, "STD-LEN-4") << max;
  }
  auto lim = encode(0x01, 1, fp::ByteView(p, big - 1), 0, out);
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->requirement, "STD-LIM-2");
  EXPECT_TRUE(out.empty());
  ::munmap(m, big);
}

// Socket-style use: prepare() space, commit() what a read returned (often less than offered);
// every frame view taken out of one read stays valid until the next prepare(), so a server can
// hold several of them at once; frames that straddle reads survive compaction and growth.
TEST(StandardWire, PrepareCommitViewsStayValidUntilNextPrepare) {
  fp::Bytes stream;
  std::vector<OwnedFrame> want;
  for (int i = 0; i < 40; ++i) {
    const fp::Bytes p = pattern(static_cast<std::size_t>((i * 977) % 3000), static_cast<std::uint8_t>(i));
    stream = cat(stream, enc_std(0x01, static_cast<std::uint8_t>(i), p));
    want.push_back({0x01, static_cast<std::uint8_t>(i), p});
  }
  fp::Decoder dec(fpt::standard(), 1024);  // small reads: compaction and growth happen
  std::vector<OwnedFrame> got;
  std::size_t pos = 0, step = 1;
  while (pos < stream.size()) {
    auto space = dec.prepare();
    ASSERT_FALSE(space.empty());
    const std::size_t n = std::min({space.size(), step, stream.size() - pos});
    std::copy_n(stream.data() + pos, n, space.data());
    dec.commit(n);
    pos += n;
    step = step * 3 % 4099 + 1;
    std::vector<fp::Frame> views;
    fp::Frame f;
    fp::Decoder<fp::Standard>::Status st;
    while ((st = dec.next(f)) == fp::Decoder<fp::Standard>::Status::Frame) views.push_back(f);
    ASSERT_EQ(st, fp::Decoder<fp::Standard>::Status::NeedMore);
    for (const auto& v : views)  // all still intact: nothing was prepared since
      got.push_back({v.flag, v.sequence, fp::Bytes(v.payload.begin(), v.payload.end())});
  }
  EXPECT_FALSE(dec.finish());
  EXPECT_EQ(got, want);
  EXPECT_EQ(dec.position(), stream.size());
}

// The header writer used on the hot path agrees with the encoder.
TEST(StandardWire, HeaderWriter) {
  std::uint8_t h[8];
  const fp::Frame reply{0x81, 9, {}};
  EXPECT_EQ(fpt::standard().write_header(h, reply, 65534), 4u);
  EXPECT_EQ(fp::Bytes(h, h + 4), hex("81 09 FE FF"));
  EXPECT_EQ(fpt::standard().write_header(h, reply, 65535), 8u);
  EXPECT_EQ(fp::Bytes(h, h + 8), hex("81 09 FF FF FF FF 00 00"));
}

// STD-ECHO-1..3: the echo rule of the server session: requests only, flag | 0x80.
TEST(StandardWire, EchoRule) {
  for (int flag = 0; flag < 256; ++flag) {
    const auto r = fpt::standard().echo(fp::Frame{static_cast<std::uint8_t>(flag), 7, {}});
    if (flag & 0xC0) {
      EXPECT_FALSE(r) << flag;
    } else {
      ASSERT_TRUE(r) << flag;
      EXPECT_EQ(r->flag, flag | 0x80);
      EXPECT_EQ(r->sequence, 7);
    }
  }
}
