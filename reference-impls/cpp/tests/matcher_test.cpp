// Client-side matching (STD-SEQ-*, STD-MATCH-*, LF-MATCH-*) through the ClientConnection model
// the testee's `match` request uses, and the bare matchers (each protocol's P::Client) fp-load
// uses.
#include <gtest/gtest.h>

#include "test_util.hpp"

using fp::Completion;
using fpt::bytes;
using fpt::cat;
using fpt::hex;
using Kind = fp::Completion::Kind;

namespace {

fp::Bytes reply(std::uint8_t flag, std::uint8_t seq, const fp::Bytes& p) { return fpt::enc_std(flag, seq, p); }

fp::Bytes lf_frame(const fp::Bytes& p) {
  fp::Bytes out;
  EXPECT_FALSE(fp::LengthField().encode(fp::Frame{0, 0, p}, out));
  return out;
}

struct Std {
  fp::ClientConnection<fp::Standard> c{fpt::standard(), 0};
  std::vector<Completion> done;
  fp::Bytes send(const fp::Bytes& p) { return c.send(p, false, done); }
  fp::Bytes one_way(const fp::Bytes& p) { return c.send(p, true, done); }
  void recv(const fp::Bytes& b) { c.receive(b, done); }
};

struct Lf {
  fp::ClientConnection<fp::LengthField> c{fpt::lf(0, 2), 0};
  std::vector<Completion> done;
  fp::Bytes send(const fp::Bytes& p) { return c.send(p, false, done); }
  void recv(const fp::Bytes& b) { c.receive(b, done); }
};

}  // namespace

// STD-SEQ-1: 1, 2, ... 255, 0, 1; requests are written with flag 0x01.
TEST(StandardMatch, SequenceNumbersWrap) {
  Std s;
  for (int i = 1; i <= 258; ++i) {
    const fp::Bytes w = s.send(bytes("p"));
    ASSERT_EQ(w.size(), 5u);
    EXPECT_EQ(w[0], 0x01);
    EXPECT_EQ(w[1], static_cast<std::uint8_t>(i)) << i;
    s.recv(reply(0x81, w[1], bytes("p")));  // free it again
  }
  EXPECT_EQ(s.done.size(), 258u);
  for (const auto& c : s.done) EXPECT_EQ(c.kind, Kind::Reply);
}

// STD-SEQ-3: the 257th request without replies would reuse pending seq 1: refused, nothing
// written, the counter does not advance; after seq 1 is answered the send goes through with 1.
TEST(StandardMatch, RefusesPendingSequence) {
  Std s;
  for (int i = 0; i < 256; ++i) ASSERT_FALSE(s.send(bytes("x")).empty()) << i;
  EXPECT_TRUE(s.done.empty());
  EXPECT_TRUE(s.send(bytes("x")).empty());
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].kind, Kind::Refused);
  EXPECT_EQ(s.done[0].request, 256u);
  s.recv(reply(0x81, 1, bytes("x")));
  ASSERT_EQ(s.done.size(), 2u);
  EXPECT_EQ(s.done[1].kind, Kind::Reply);
  EXPECT_EQ(s.done[1].request, 0u);
  const fp::Bytes w = s.send(bytes("y"));
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[1], 1);
}

// STD-MATCH-1: replies in any order complete the right requests; STD-MATCH-6: error replies too.
TEST(StandardMatch, OutOfOrderAndErrorReplies) {
  Std s;
  s.send(bytes("a"));  // seq 1, request 0
  s.send(bytes("b"));  // seq 2, request 1
  s.send(bytes("c"));  // seq 3, request 2
  s.recv(cat(reply(0x83, 3, bytes("C")), cat(reply(0xC1, 1, bytes("err")), reply(0x81, 2, bytes("B")))));
  ASSERT_EQ(s.done.size(), 3u);
  EXPECT_EQ(s.done[0].request, 2u);
  EXPECT_EQ(s.done[0].flag, 0x83);
  EXPECT_EQ(s.done[0].payload, bytes("C"));
  EXPECT_EQ(s.done[1].kind, Kind::Reply);
  EXPECT_EQ(s.done[1].request, 0u);
  EXPECT_EQ(s.done[1].flag, 0xC1);
  EXPECT_EQ(s.done[2].request, 1u);
}

// STD-MATCH-2: an unmatched reply is reported, completes nothing, the connection stays usable.
TEST(StandardMatch, UnmatchedReply) {
  Std s;
  s.send(bytes("a"));
  s.recv(reply(0x81, 9, bytes("?")));
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].kind, Kind::Unmatched);
  EXPECT_FALSE(s.done[0].request);
  EXPECT_EQ(s.done[0].sequence, 9);
  EXPECT_FALSE(s.c.failed());
  s.recv(reply(0x81, 1, bytes("a")));
  ASSERT_EQ(s.done.size(), 2u);
  EXPECT_EQ(s.done[1].kind, Kind::Reply);
}

// STD-MATCH-3: timeout at exactly the deadline, oldest first; a late reply is unmatched.
TEST(StandardMatch, Timeout) {
  Std s;
  s.send(bytes("a"));  // t=0, deadline 3000
  s.c.advance(1000, s.done);
  s.send(bytes("b"));  // t=1000, deadline 4000
  s.c.advance(1999, s.done);
  EXPECT_TRUE(s.done.empty());
  s.c.advance(1, s.done);
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].kind, Kind::Timeout);
  EXPECT_EQ(s.done[0].request, 0u);
  s.recv(reply(0x81, 1, bytes("a")));
  ASSERT_EQ(s.done.size(), 2u);
  EXPECT_EQ(s.done[1].kind, Kind::Unmatched);
  s.c.advance(5000, s.done);
  ASSERT_EQ(s.done.size(), 3u);
  EXPECT_EQ(s.done[2].kind, Kind::Timeout);
  EXPECT_EQ(s.done[2].request, 1u);
}

// STD-MATCH-3 with a custom timeout and several expiring together: oldest first.
TEST(StandardMatch, TimeoutOrderCustom) {
  fp::ClientConnection c(fpt::standard(), 10);
  std::vector<Completion> done;
  for (int i = 0; i < 5; ++i) c.send(bytes("x"), false, done);
  c.advance(10, done);
  ASSERT_EQ(done.size(), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(done[i].kind, Kind::Timeout);
    EXPECT_EQ(done[i].request, i);
  }
}

// STD-MATCH-4: one-way takes a number (even a pending one), flag 0x41, is never completed.
TEST(StandardMatch, OneWay) {
  Std s;
  const fp::Bytes w = s.one_way(bytes("ow"));
  EXPECT_EQ(w, hex("41 01 02 00 6F 77"));
  s.recv(reply(0x81, 1, bytes("ow")));
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].kind, Kind::Unmatched);
  // fill all numbers with requests, then a one-way still goes out on a pending number
  Std t;
  for (int i = 0; i < 256; ++i) t.send(bytes("r"));
  const fp::Bytes ow = t.one_way(bytes("o"));
  ASSERT_FALSE(ow.empty());
  EXPECT_EQ(ow[1], 1);
  t.c.advance(100000, t.done);
  EXPECT_EQ(t.done.size(), 256u);  // only the requests time out
}

// STD-MATCH-5: a request frame from the peer (bit 7 clear) completes nothing.
TEST(StandardMatch, PeerRequestIgnored) {
  Std s;
  s.send(bytes("a"));
  s.recv(reply(0x01, 1, bytes("a")));
  s.recv(reply(0x41, 1, bytes("a")));
  EXPECT_TRUE(s.done.empty());
  s.recv(reply(0x81, 1, bytes("a")));
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].kind, Kind::Reply);
}

// A decode error fails every pending request (oldest first) and the connection.
TEST(StandardMatch, DecodeErrorFailsConnection) {
  Std s;
  s.send(bytes("a"));
  s.send(bytes("b"));
  auto e = s.c.receive(cat(reply(0x81, 2, bytes("b")), hex("81 01 FF FF 00 00 00 00")), s.done);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "STD-LEN-3");
  EXPECT_EQ(e->offset, 5u);
  ASSERT_EQ(s.done.size(), 2u);
  EXPECT_EQ(s.done[0].kind, Kind::Reply);
  EXPECT_EQ(s.done[1].kind, Kind::Failed);
  EXPECT_EQ(s.done[1].request, 0u);
  EXPECT_TRUE(s.c.failed());
  EXPECT_TRUE(s.send(bytes("c")).empty());
  EXPECT_EQ(s.done.back().kind, Kind::Refused);
  const std::size_t n = s.done.size();
  s.recv(reply(0x81, 3, bytes("c")));
  EXPECT_EQ(s.done.size(), n);
}

// LF-MATCH-1: FIFO; LF-MATCH-2: unmatched when nothing is pending.
TEST(LengthFieldMatch, FifoAndUnmatched) {
  Lf s;
  EXPECT_EQ(s.send(bytes("a")), hex("01 00 61"));
  s.send(bytes("b"));
  s.send(bytes("c"));
  s.recv(cat(lf_frame(bytes("1")), cat(lf_frame(bytes("2")), cat(lf_frame(bytes("3")), lf_frame(bytes("4"))))));
  ASSERT_EQ(s.done.size(), 4u);
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s.done[i].kind, Kind::Reply);
    EXPECT_EQ(s.done[i].request, i);
  }
  EXPECT_EQ(s.done[0].payload, bytes("1"));
  EXPECT_EQ(s.done[3].kind, Kind::Unmatched);
  EXPECT_EQ(s.done[3].payload, bytes("4"));
  EXPECT_FALSE(s.c.failed());
}

// LF-MATCH-4: 256 pending at most.
TEST(LengthFieldMatch, PendingBound) {
  Lf s;
  for (int i = 0; i < 256; ++i) ASSERT_FALSE(s.send(bytes("x")).empty());
  EXPECT_TRUE(s.send(bytes("x")).empty());
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].kind, Kind::Refused);
  EXPECT_EQ(s.done[0].request, 256u);
  s.recv(lf_frame(bytes("x")));
  EXPECT_FALSE(s.send(bytes("x")).empty());
}

// LF-MATCH-3: a timeout completes the expired request(s) TIMEOUT, fails the rest, fails the
// connection; later frames complete nothing and later sends are refused.
TEST(LengthFieldMatch, TimeoutFailsConnection) {
  Lf s;
  s.send(bytes("a"));  // deadline 3000
  s.c.advance(2000, s.done);
  s.send(bytes("b"));  // deadline 5000
  s.send(bytes("c"));
  s.c.advance(999, s.done);
  EXPECT_TRUE(s.done.empty());
  s.c.advance(1, s.done);
  ASSERT_EQ(s.done.size(), 3u);
  EXPECT_EQ(s.done[0].kind, Kind::Timeout);
  EXPECT_EQ(s.done[0].request, 0u);
  EXPECT_EQ(s.done[1].kind, Kind::Failed);
  EXPECT_EQ(s.done[1].request, 1u);
  EXPECT_EQ(s.done[2].kind, Kind::Failed);
  EXPECT_TRUE(s.c.failed());
  s.recv(lf_frame(bytes("late")));
  EXPECT_EQ(s.done.size(), 3u);
  EXPECT_TRUE(s.send(bytes("d")).empty());
  EXPECT_EQ(s.done.back().kind, Kind::Refused);
}

// A length-field decode error fails the pending requests.
TEST(LengthFieldMatch, DecodeErrorFailsConnection) {
  fp::ClientConnection c(fpt::lf(0, 0), 0);
  std::vector<Completion> done;
  c.send(bytes("a"), false, done);
  auto e = c.receive(hex("80 80 80 80 80 01"), done);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->requirement, "LF-LEN-2");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].kind, Kind::Failed);
  EXPECT_TRUE(c.failed());
}

// The bare matchers with a nanosecond clock, as fp-load drives them.
TEST(Matchers, SequenceMatcherDeadlines) {
  using fp::SendKind;
  fp::SequenceMatcher m(5'000'000'000ull);
  auto h1 = m.next(SendKind::Request);
  ASSERT_TRUE(h1);
  EXPECT_EQ(h1->flag, 0x01);
  EXPECT_EQ(h1->sequence, 1);
  m.begin(SendKind::Request, 0, 1'000);
  auto h2 = m.next(SendKind::Request);
  ASSERT_TRUE(h2);
  EXPECT_EQ(h2->sequence, 2);
  m.begin(SendKind::Request, 1, 2'000);
  EXPECT_EQ(m.next_deadline(), 5'000'001'000ull);
  auto r = m.complete(fp::Frame{0x81, 2, {}});
  EXPECT_EQ(r.kind, fp::Match::Kind::Reply);
  EXPECT_EQ(r.id, 1u);
  EXPECT_EQ(r.sent_at, 2'000u);  // fp-load's latency starts here
  EXPECT_EQ(m.complete(fp::Frame{0x81, 2, {}}).kind, fp::Match::Kind::Unmatched);
  EXPECT_EQ(m.complete(fp::Frame{0x01, 1, {}}).kind, fp::Match::Kind::Ignored);  // STD-MATCH-5
  std::vector<std::uint64_t> expired, failed;
  EXPECT_FALSE(m.expire(5'000'000'999ull, expired, failed));
  EXPECT_TRUE(expired.empty());
  EXPECT_FALSE(m.expire(5'000'001'000ull, expired, failed));  // a timeout does not fail the connection
  EXPECT_EQ(expired, std::vector<std::uint64_t>{0});
  EXPECT_TRUE(failed.empty());
  EXPECT_EQ(m.pending(), 0u);
  EXPECT_FALSE(m.next_deadline());
  EXPECT_FALSE(fp::SequenceMatcher::check_echo(fp::Frame{0x81, 1, {}}, fp::Frame{0x01, 1, {}}));
  EXPECT_EQ(*fp::SequenceMatcher::check_echo(fp::Frame{0xC1, 1, {}}, fp::Frame{0x01, 1, {}}), "reply flag 0xC1, expected 0x81");
}

// fp-load's receive mode: untracked requests take sequence numbers (flag 0x01) but are never
// pending, so they never block a number.
TEST(Matchers, SequenceMatcherUntracked) {
  fp::SequenceMatcher m(1000);
  for (int i = 1; i <= 600; ++i) {
    auto h = m.next(fp::SendKind::Untracked);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->flag, 0x01);
    EXPECT_EQ(h->sequence, static_cast<std::uint8_t>(i));
    m.begin(fp::SendKind::Untracked, static_cast<std::uint64_t>(i), 0);
  }
  EXPECT_EQ(m.pending(), 0u);
}

TEST(Matchers, FifoMatcherBoundAndExpiry) {
  using fp::SendKind;
  fp::FifoMatcher m(100);
  EXPECT_FALSE(m.next(SendKind::OneWay));  // length-field has no one-way messages
  for (std::uint64_t id = 0; id < fp::kLfPendingBound; ++id) {
    ASSERT_TRUE(m.next(SendKind::Request));
    m.begin(SendKind::Request, id, id < 1 ? 0 : id < 2 ? 50 : 60);
  }
  EXPECT_FALSE(m.next(SendKind::Request));  // LF-MATCH-4
  EXPECT_TRUE(m.next(SendKind::Untracked));
  auto r = m.complete(fp::Frame{});
  EXPECT_EQ(r.kind, fp::Match::Kind::Reply);
  EXPECT_EQ(r.id, 0u);
  EXPECT_TRUE(m.next(SendKind::Request));
  std::vector<std::uint64_t> to, failed;
  EXPECT_FALSE(m.expire(149, to, failed));
  EXPECT_TRUE(m.expire(150, to, failed));
  EXPECT_EQ(to, std::vector<std::uint64_t>{1});
  ASSERT_EQ(failed.size(), fp::kLfPendingBound - 2);
  EXPECT_EQ(failed.front(), 2u);
  EXPECT_EQ(m.pending(), 0u);
  EXPECT_EQ(m.complete(fp::Frame{}).kind, fp::Match::Kind::Unmatched);
}
