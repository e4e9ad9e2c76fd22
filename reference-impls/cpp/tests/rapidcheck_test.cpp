// rapidcheck properties (with shrinking), built when CMake finds rapidcheck and defines
// FP_HAVE_RAPIDCHECK (Debian: librapidcheck-dev). property_test.cpp holds seeded versions of the
// codec properties that need no extra library.
#if defined(FP_HAVE_RAPIDCHECK)
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>

#include "test_util.hpp"

using fpt::OwnedFrame;

namespace {

constexpr std::int32_t kSizes[] = {1, 2, 4, -2, -4, 0};

rc::Gen<fp::AnyProtocol> gen_config() {
  return rc::gen::exec([]() -> fp::AnyProtocol {
    const bool standard = *rc::gen::arbitrary<bool>();
    const auto offset = *rc::gen::inRange<std::uint32_t>(0, 9);
    const auto size = *rc::gen::elementOf(std::vector<std::int32_t>(std::begin(kSizes), std::end(kSizes)));
    const auto max = *rc::gen::weightedOneOf<std::uint64_t>(
        {{3, rc::gen::just<std::uint64_t>(0)}, {1, rc::gen::inRange<std::uint64_t>(1, 300)}});
    if (standard) return fpt::standard(max);
    return fpt::lf(offset, size, max);
  });
}

// Splits `s` at the sorted, de-duplicated cut points (taken modulo the length).
std::vector<fp::Bytes> split(const fp::Bytes& s, std::vector<std::size_t> cuts) {
  if (s.empty()) return {s};
  for (auto& c : cuts) c %= s.size();
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return fpt::split_at(s, cuts);
}

}  // namespace

// STD-STR-1/2, LF-STR-1/2, STD-HDR-5, LF-FMT-5: encode any frames, split the stream anywhere,
// decode: the same frames, no error.
RC_GTEST_PROP(RapidCheck, RoundTripAnySplit, ()) {
  const fp::AnyProtocol cfg = *gen_config();
  const std::uint64_t max = std::visit([](const auto& p) { return p.max_payload(); }, cfg);
  const auto n = *rc::gen::inRange(0, 8);
  fp::Bytes stream;
  std::vector<OwnedFrame> want;
  for (int i = 0; i < n; ++i) {
    OwnedFrame f;
    if (std::holds_alternative<fp::Standard>(cfg)) {  // the only protocol with header fields
      f.flag = *rc::gen::arbitrary<std::uint8_t>();
      f.sequence = *rc::gen::arbitrary<std::uint8_t>();
    }
    const auto len = *rc::gen::inRange<std::size_t>(0, static_cast<std::size_t>(std::min<std::uint64_t>(max, 600)) + 1);
    f.payload = *rc::gen::container<fp::Bytes>(len, rc::gen::arbitrary<std::uint8_t>());
    RC_ASSERT(!fpt::encode(cfg, f, stream));
    want.push_back(std::move(f));
  }
  const auto cuts = *rc::gen::container<std::vector<std::size_t>>(rc::gen::arbitrary<std::size_t>());
  const auto chunk = *rc::gen::inRange<std::size_t>(16, 5000);
  const auto d = fpt::decode_chunks(cfg, split(stream, cuts), chunk);
  RC_ASSERT(!d.error.has_value());
  RC_ASSERT(d.frames == want);
}

// Any input, any split: the same frames and the same error (ID and offset) as one read; the
// buffer stays within the largest legal frame plus one read chunk (STD-LIM-3, LF-LIM-3).
RC_GTEST_PROP(RapidCheck, ArbitraryInputSplitIndependent, ()) {
  const fp::AnyProtocol cfg = *gen_config();
  const auto s = *rc::gen::container<fp::Bytes>(rc::gen::weightedOneOf<std::uint8_t>(
      {{2, rc::gen::arbitrary<std::uint8_t>()},
       {1, rc::gen::element<std::uint8_t>(0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF)}}));
  const auto cuts = *rc::gen::container<std::vector<std::size_t>>(rc::gen::arbitrary<std::size_t>());
  const auto whole = fpt::decode_all(cfg, s);
  const auto parts = fpt::decode_chunks(cfg, split(s, cuts), 16);
  RC_ASSERT(whole.frames == parts.frames);
  RC_ASSERT(whole.error.has_value() == parts.error.has_value());
  if (whole.error) {
    RC_ASSERT(whole.error->requirement == parts.error->requirement);
    RC_ASSERT(whole.error->offset == parts.error->offset);
    RC_ASSERT(whole.error->offset <= s.size());
  }
}

// The standard client connection against a small reference model of STD-SEQ-1/3 and
// STD-MATCH-1..5: any interleaving of sends, one-way sends, replies (with any sequence number
// and flag) and clock advances gives the model's completions.
RC_GTEST_PROP(RapidCheck, StandardMatchingModel, ()) {
  const std::uint64_t timeout = *rc::gen::inRange<std::uint64_t>(1, 50);
  fp::ClientConnection conn(fpt::standard(), timeout);
  std::vector<fp::Completion> got;

  struct Pending {
    std::uint64_t id, deadline;
  };
  std::map<std::uint8_t, Pending> pending;  // model
  std::uint8_t counter = 0;
  std::uint64_t now = 0, next_id = 0;
  std::vector<std::pair<fp::Completion::Kind, std::optional<std::uint64_t>>> want;

  const auto steps = *rc::gen::inRange(1, 400);
  for (int i = 0; i < steps; ++i) {
    const int op = *rc::gen::inRange(0, 10);
    if (op < 4) {  // send
      const std::uint64_t id = next_id++;
      const std::uint8_t seq = static_cast<std::uint8_t>(counter + 1);
      const fp::Bytes w = conn.send(fpt::bytes("p"), false, got);
      if (pending.count(seq)) {
        RC_ASSERT(w.empty());
        want.emplace_back(fp::Completion::Kind::Refused, id);
      } else {
        RC_ASSERT(w.size() == 5u);
        RC_ASSERT(w[0] == 0x01);
        RC_ASSERT(w[1] == seq);
        counter = seq;
        pending[seq] = {id, now + timeout};
      }
    } else if (op == 4) {  // one-way
      ++next_id;
      counter = static_cast<std::uint8_t>(counter + 1);
      const fp::Bytes w = conn.send(fpt::bytes("o"), true, got);
      RC_ASSERT(w.size() == 5u);
      RC_ASSERT(w[0] == 0x41);
      RC_ASSERT(w[1] == counter);
    } else if (op < 9) {  // a frame from the peer
      const std::uint8_t seq = *rc::gen::weightedOneOf<std::uint8_t>(
          {{3, rc::gen::just(counter)}, {1, rc::gen::arbitrary<std::uint8_t>()}});
      const std::uint8_t flag = *rc::gen::element<std::uint8_t>(0x81, 0xC1, 0x83, 0x01, 0x41);
      const fp::Bytes f = fpt::enc_std(flag, seq, fpt::bytes("r"));
      RC_ASSERT(!conn.receive(f, got).has_value());
      if (flag & 0x80) {
        auto it = pending.find(seq);
        if (it != pending.end()) {
          want.emplace_back(fp::Completion::Kind::Reply, it->second.id);
          pending.erase(it);
        } else {
          want.emplace_back(fp::Completion::Kind::Unmatched, std::nullopt);
        }
      }
    } else {  // advance the clock
      now += *rc::gen::inRange<std::uint64_t>(0, 30);
      conn.advance(now - conn.now(), got);
      std::vector<std::uint64_t> expired;
      for (auto it = pending.begin(); it != pending.end();) {
        if (it->second.deadline <= now) {
          expired.push_back(it->second.id);
          it = pending.erase(it);
        } else {
          ++it;
        }
      }
      std::sort(expired.begin(), expired.end());
      for (auto id : expired) want.emplace_back(fp::Completion::Kind::Timeout, id);
    }
  }
  RC_ASSERT(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    RC_ASSERT(got[i].kind == want[i].first);
    RC_ASSERT(got[i].request == want[i].second);
  }
}

// LF-MATCH-1..4 against a FIFO model: replies complete the oldest, a timeout fails the rest.
RC_GTEST_PROP(RapidCheck, LengthFieldMatchingModel, ()) {
  const std::uint64_t timeout = *rc::gen::inRange<std::uint64_t>(1, 50);
  fp::ClientConnection conn(fpt::lf(0, 2), timeout);
  std::vector<fp::Completion> got;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> pending;  // id, deadline
  bool failed = false;
  std::uint64_t now = 0, next_id = 0;
  std::vector<std::pair<fp::Completion::Kind, std::optional<std::uint64_t>>> want;

  const auto steps = *rc::gen::inRange(1, 700);
  for (int i = 0; i < steps; ++i) {
    const int op = *rc::gen::inRange(0, 10);
    if (op < 5) {
      const std::uint64_t id = next_id++;
      const fp::Bytes w = conn.send(fpt::bytes("q"), false, got);
      if (failed || pending.size() >= 256) {
        RC_ASSERT(w.empty());
        want.emplace_back(fp::Completion::Kind::Refused, id);
      } else {
        RC_ASSERT(w == fpt::hex("01 00 71"));
        pending.emplace_back(id, now + timeout);
      }
    } else if (op < 9) {
      RC_ASSERT(!conn.receive(fpt::hex("01 00 72"), got).has_value());
      if (failed) continue;
      if (pending.empty()) {
        want.emplace_back(fp::Completion::Kind::Unmatched, std::nullopt);
      } else {
        want.emplace_back(fp::Completion::Kind::Reply, pending.front().first);
        pending.pop_front();
      }
    } else {
      now += *rc::gen::inRange<std::uint64_t>(0, 20);
      conn.advance(now - conn.now(), got);
      if (failed) continue;
      bool any = false;
      for (const auto& p : pending) any = any || p.second <= now;
      if (!any) continue;
      for (const auto& p : pending)
        if (p.second <= now) want.emplace_back(fp::Completion::Kind::Timeout, p.first);
      for (const auto& p : pending)
        if (p.second > now) want.emplace_back(fp::Completion::Kind::Failed, p.first);
      pending.clear();
      failed = true;
    }
  }
  RC_ASSERT(conn.failed() == failed);
  RC_ASSERT(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    RC_ASSERT(got[i].kind == want[i].first);
    RC_ASSERT(got[i].request == want[i].second);
  }
}

#endif  // FP_HAVE_RAPIDCHECK
