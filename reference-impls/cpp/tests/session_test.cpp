// The server session (session.hpp, P::Session) that fp-server runs per connection and the
// testee's `serve` request drives offline: STD-ECHO-1..5, LF-ECHO-1..3. Every split of the input
// gives the same output; a decoding error closes the session after the replies to the frames
// before it; EOF closes it, with the truncation error if a frame was left unfinished.
#include <gtest/gtest.h>

#include "test_util.hpp"

using fpt::bytes;
using fpt::cat;
using fpt::enc_std;
using fpt::hex;

namespace {

struct Collect {
  fp::Bytes out;
  std::size_t frames = 0;
  void frame(const fp::Frame&) { ++frames; }
  void reply(fp::ByteView header, fp::ByteView payload) {
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), payload.begin(), payload.end());
  }
};

// What the testee's serve answers: the bytes written after each chunk (and after EOF).
struct Served {
  std::vector<fp::Bytes> written;
  bool closed = false;
  std::optional<fp::ProtocolError> error;
  std::size_t frames = 0;

  [[nodiscard]] fp::Bytes all() const {
    fp::Bytes b;
    for (const auto& w : written) b = cat(b, w);
    return b;
  }
};

template <class P>
Served serve(const P& proto, const std::vector<fp::Bytes>& chunks, bool half_close, std::size_t read_chunk = fp::kReadChunk) {
  typename P::Session s(proto, read_chunk);
  Served r;
  Collect c;
  for (const auto& chunk : chunks) {
    c.out.clear();
    s.feed(chunk, c);
    r.written.push_back(c.out);
    if (s.closed()) break;
  }
  if (half_close && !s.closed()) {
    c.out.clear();
    s.end_of_input();
    r.written.push_back(c.out);
  }
  r.closed = s.closed();
  r.error = s.error();
  r.frames = c.frames;
  return r;
}

fp::Bytes lf_enc(const fp::LengthField& p, const fp::Bytes& payload) {
  fp::Bytes out;
  EXPECT_FALSE(p.encode(fp::Frame{0, 0, payload}, out));
  return out;
}

// Every split into two and three chunks: the same bytes in all, the same closing state.
template <class P>
void expect_split_independent(const P& proto, const fp::Bytes& stream, const Served& whole) {
  for (std::size_t a = 0; a <= stream.size(); ++a) {
    for (std::size_t b = a; b <= stream.size(); b += (stream.size() > 60 ? 7 : 1)) {
      const Served s = serve(proto, fpt::split_at(stream, {a, b}), true, 16);
      ASSERT_EQ(s.all(), whole.all()) << a << "," << b;
      ASSERT_EQ(s.closed, whole.closed);
      ASSERT_EQ(s.error.has_value(), whole.error.has_value()) << a << "," << b;
      if (s.error) {
        EXPECT_EQ(s.error->requirement, whole.error->requirement);
        EXPECT_EQ(s.error->offset, whole.error->offset);
      }
    }
  }
}

}  // namespace

// STD-ECHO-1..3: requests get flag | 0x80, same sequence and payload, in order; one-way, reply
// and error frames get nothing. Written as soon as the chunk that completes the frame is fed.
TEST(StandardSession, EchoesRequestsOnly) {
  const fp::Bytes in = cat(cat(enc_std(0x01, 1, bytes("a")), enc_std(0x41, 2, bytes("one-way"))),
                           cat(enc_std(0x81, 3, bytes("reply")), cat(enc_std(0xC1, 4, bytes("err")), enc_std(0x3F, 5, bytes("k")))));
  const Served s = serve(fpt::standard(), {in}, false);
  ASSERT_EQ(s.written.size(), 1u);
  EXPECT_EQ(s.written[0], cat(enc_std(0x81, 1, bytes("a")), enc_std(0xBF, 5, bytes("k"))));
  EXPECT_FALSE(s.closed);
  EXPECT_FALSE(s.error);
  EXPECT_EQ(s.frames, 5u);  // every decoded frame is reported (fp-server's counters, --sink)
}

TEST(StandardSession, ReplyWhenTheFrameCompletes) {
  const fp::Bytes f = enc_std(0x01, 9, bytes("hello"));
  const Served s = serve(fpt::standard(), {fp::Bytes(f.begin(), f.begin() + 3), fp::Bytes(f.begin() + 3, f.end() - 1),
                                           fp::Bytes(f.end() - 1, f.end())},
                         true);
  ASSERT_EQ(s.written.size(), 4u);
  EXPECT_TRUE(s.written[0].empty());
  EXPECT_TRUE(s.written[1].empty());
  EXPECT_EQ(s.written[2], enc_std(0x81, 9, bytes("hello")));
  EXPECT_TRUE(s.written[3].empty());  // EOF after complete frames: closed, no error
  EXPECT_TRUE(s.closed);
  EXPECT_FALSE(s.error);
}

// STD-ECHO-4: a decoding error writes the replies to the frames before it, then closes; later
// chunks are not fed.
TEST(StandardSession, ErrorClosesAfterEarlierReplies) {
  const fp::Bytes good = cat(enc_std(0x01, 1, bytes("x")), enc_std(0x01, 2, bytes("y")));
  const Served s = serve(fpt::standard(), {good, cat(enc_std(0x01, 3, bytes("z")), hex("01 04 FF FF 00 00 00 00")),
                                           enc_std(0x01, 5, bytes("never"))},
                         true);
  ASSERT_EQ(s.written.size(), 2u);
  EXPECT_EQ(s.written[0], cat(enc_std(0x81, 1, bytes("x")), enc_std(0x81, 2, bytes("y"))));
  EXPECT_EQ(s.written[1], enc_std(0x81, 3, bytes("z")));
  EXPECT_TRUE(s.closed);
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->requirement, "STD-LEN-3");
  EXPECT_EQ(s.error->offset, good.size() + 5);
}

// STD-ECHO-5: EOF inside a frame: no reply for it, closed with STD-STR-3 at its start.
TEST(StandardSession, EofWithPartialFrame) {
  const fp::Bytes done = enc_std(0x01, 1, bytes("ok"));
  fp::Bytes partial = enc_std(0x01, 2, bytes("cut"));
  partial.resize(5);
  const Served s = serve(fpt::standard(), {cat(done, partial)}, true);
  ASSERT_EQ(s.written.size(), 2u);
  EXPECT_EQ(s.written[0], enc_std(0x81, 1, bytes("ok")));
  EXPECT_TRUE(s.written[1].empty());
  EXPECT_TRUE(s.closed);
  ASSERT_TRUE(s.error);
  EXPECT_EQ(s.error->requirement, "STD-STR-3");
  EXPECT_EQ(s.error->offset, done.size());
  // without half_close the session stays open, waiting for the rest
  const Served open = serve(fpt::standard(), {cat(done, partial)}, false);
  EXPECT_FALSE(open.closed);
  EXPECT_FALSE(open.error);
}

TEST(StandardSession, EverySplitSameOutput) {
  const fp::Bytes ok = cat(cat(enc_std(0x01, 1, bytes("a")), enc_std(0x41, 2, bytes("b"))), enc_std(0x01, 3, fpt::pattern(40)));
  expect_split_independent(fpt::standard(), ok, serve(fpt::standard(), {ok}, true));
  const fp::Bytes err = cat(ok, cat(enc_std(0x01, 4, bytes("c")), hex("01 05 0B 00")));
  const Served whole = serve(fpt::standard(10), {err}, true);
  ASSERT_TRUE(whole.error);
  EXPECT_EQ(whole.error->requirement, "STD-LIM-1");  // the 40-byte frame is above 10 already
  expect_split_independent(fpt::standard(10), err, whole);
  const fp::Bytes cut = cat(ok, hex("01 06 05 00 61"));
  expect_split_independent(fpt::standard(), cut, serve(fpt::standard(), {cut}, true));
}

// LF-ECHO-1..3 in a profile with header bytes and a varint length.
TEST(LengthFieldSession, EchoErrorAndEof) {
  const auto p = fpt::lf(2, 0);
  const fp::Bytes a = lf_enc(p, bytes("abc")), b = lf_enc(p, fpt::pattern(300));
  const Served s = serve(p, {cat(a, fp::Bytes(b.begin(), b.begin() + 4)), fp::Bytes(b.begin() + 4, b.end())}, true);
  ASSERT_EQ(s.written.size(), 3u);
  EXPECT_EQ(s.written[0], a);
  EXPECT_EQ(s.written[1], b);
  EXPECT_TRUE(s.written[2].empty());
  EXPECT_TRUE(s.closed);
  EXPECT_FALSE(s.error);
  EXPECT_EQ(s.frames, 2u);

  const Served e = serve(p, {cat(a, hex("00 00 80 80 80 80 80 80")), a}, true);  // LF-LEN-2
  ASSERT_EQ(e.written.size(), 1u);
  EXPECT_EQ(e.written[0], a);
  ASSERT_TRUE(e.error);
  EXPECT_EQ(e.error->requirement, "LF-LEN-2");
  EXPECT_EQ(e.error->offset, a.size());

  const Served t = serve(p, {cat(a, hex("00 00 05 61"))}, true);  // LF-ECHO-3
  ASSERT_EQ(t.written.size(), 2u);
  EXPECT_EQ(t.written[0], a);
  ASSERT_TRUE(t.error);
  EXPECT_EQ(t.error->requirement, "LF-STR-3");
  EXPECT_EQ(t.error->offset, a.size());
}

TEST(LengthFieldSession, EverySplitSameOutput) {
  for (const auto& p : {fpt::lf(0, 2), fpt::lf(3, -4), fpt::lf(1, 0, 16)}) {
    const fp::Bytes ok = cat(cat(lf_enc(p, bytes("a")), lf_enc(p, {})), lf_enc(p, fpt::pattern(16)));
    expect_split_independent(p, ok, serve(p, {ok}, true));
    fp::Bytes last = lf_enc(p, bytes("xyz"));
    last.pop_back();
    const fp::Bytes cut = cat(ok, last);
    const Served whole = serve(p, {cut}, true);
    ASSERT_TRUE(whole.error);
    EXPECT_EQ(whole.error->requirement, "LF-STR-3");
    expect_split_independent(p, cut, whole);
  }
}

// Big frames: the reply views stay valid while the sink uses them (fp-server's gather write).
TEST(Session, BigFramesAndManyPerRead) {
  fp::Bytes in;
  fp::Bytes want;
  for (int i = 0; i < 20; ++i) {
    const fp::Bytes p = fpt::pattern(static_cast<std::size_t>(i % 3 == 0 ? 70000 : i * 10), static_cast<std::uint8_t>(i));
    in = cat(in, enc_std(0x01, static_cast<std::uint8_t>(i), p));
    want = cat(want, enc_std(0x81, static_cast<std::uint8_t>(i), p));
  }
  EXPECT_EQ(serve(fpt::standard(), fpt::split_at(in, {1, 100000, 100001, 300000}), true, 4096).all(), want);
}

TEST(Session, InvalidConfigurationRefused) {
  EXPECT_THROW(fp::LengthField::Session(fpt::lf(0, 3)), std::invalid_argument);
}
