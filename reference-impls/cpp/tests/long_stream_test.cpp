// Unit tests of fp-testee's long stream pieces (src/testee_long_stream.hpp, spec/testee.md "long
// stream"): the splitmix64 generator, the recipe's reads (`cycle` x `repeat`, then `tail`), and
// one decoder run over them counting frames, payload bytes and the error's offset.
#include <gtest/gtest.h>

#include <string>

#include "../src/testee_long_stream.hpp"
#include "test_util.hpp"

namespace {

using fp::testee::LongStreamReads;
using fp::testee::run_long_stream;
using fp::testee::SplitMix64;

std::string text(const fp::Bytes& b) { return {b.begin(), b.end()}; }

// The reference outputs of splitmix64 seeded with 0.
TEST(LongStream, SplitMix64FromZero) {
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(r.next(), 0x06C45D188009454FULL);
}

// Every read is 1..max_chunk bytes and together they are the recipe's stream, then empty reads.
TEST(LongStream, ReadsAreTheRecipe) {
  const std::string cycle = "abc", tail = "XY";
  for (std::uint32_t max_chunk : {1u, 2u, 5u}) {
    LongStreamReads reads(cycle, 3, tail, /*seed=*/7, max_chunk);
    std::string all;
    for (fp::ByteView chunk = reads.next(); !chunk.empty(); chunk = reads.next()) {
      EXPECT_GE(chunk.size(), 1u) << max_chunk;
      EXPECT_LE(chunk.size(), max_chunk) << max_chunk;
      all.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      ASSERT_LE(all.size(), 11u) << max_chunk;
    }
    EXPECT_EQ(all, "abcabcabcXY") << max_chunk;
    EXPECT_EQ(reads.fed(), 11u) << max_chunk;
    EXPECT_TRUE(reads.next().empty()) << max_chunk;
  }
}

TEST(LongStream, ReadsRefuseABadRecipe) {
  const std::string empty, cycle = "abc";
  EXPECT_THROW(LongStreamReads(empty, 1, empty, 0, 1), std::invalid_argument);
  EXPECT_THROW(LongStreamReads(cycle, 1, empty, 0, 0), std::invalid_argument);
  EXPECT_THROW(LongStreamReads(cycle, 1, empty, 0, LongStreamReads::kMaxChunk + 1), std::invalid_argument);
  EXPECT_THROW(LongStreamReads(cycle, UINT64_MAX / 2, empty, 0, 1), std::invalid_argument);
}

// Three `standard` frames of "abc": counted, hashed, the last one kept; no error.
TEST(LongStream, RunCountsFrames) {
  const std::string cycle = text(fpt::enc_std(0x01, 1, fpt::bytes("abc"))), tail;
  for (std::uint32_t max_chunk : {1u, 3u, 64u}) {
    const auto r = run_long_stream(fpt::standard(), LongStreamReads(cycle, 3, tail, 1, max_chunk));
    EXPECT_FALSE(r.error) << max_chunk;
    EXPECT_EQ(r.frames, 3u);
    EXPECT_EQ(r.payload_bytes, 9u);
    EXPECT_EQ(r.fed, 3 * cycle.size());
    EXPECT_EQ(fpt::hex(
                  "76b99ab4be8521d78b19bcff7d1078aabeb477bd134f404094c92cd39f051c3e"),  // SHA-256("abcabcabc")
              fpt::bytes(r.digest));
    ASSERT_TRUE(r.last_header);
    EXPECT_EQ(r.last_header->at("flag"), 1);
    EXPECT_EQ(r.last_header->at("sequence"), 1);
    EXPECT_EQ(r.last_header->at("payload"), "");  // the header only: the payload is kept apart
    EXPECT_EQ(r.last_payload, "abc");
  }
}

// A tail whose header declares more than the maximum: STD-LIM-1 at the tail's offset, the frames
// before it counted; read one byte at a time, the stream is fed up to the end of that header.
TEST(LongStream, RunReportsTheOverLimitTail) {
  const std::string cycle = text(fpt::enc_std(0x01, 1, fpt::bytes("abc")));  // 7 bytes
  const std::string tail = text(fpt::hex("01 02 0A 00")) + "0123456789";       // 10 bytes > 4
  for (std::uint32_t max_chunk : {1u, 2u, 64u}) {
    const auto r = run_long_stream(fpt::standard(4), LongStreamReads(cycle, 3, tail, 3, max_chunk));
    ASSERT_TRUE(r.error) << max_chunk;
    EXPECT_EQ(r.error->requirement, "STD-LIM-1");
    EXPECT_EQ(r.error->offset, 21u) << max_chunk;
    EXPECT_EQ(r.frames, 3u) << max_chunk;
    EXPECT_EQ(r.payload_bytes, 9u) << max_chunk;
    EXPECT_GE(r.fed, 25u) << max_chunk;
    EXPECT_LE(r.fed, 21u + tail.size()) << max_chunk;
    if (max_chunk == 1) {
      EXPECT_EQ(r.fed, 25u);
    }
  }
}

}  // namespace
