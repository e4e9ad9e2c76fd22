#include "frameproof/standard.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace fp {

template class Decoder<Standard>;

using namespace header_result;

nlohmann::ordered_json Standard::frame_json(const Frame& f) const { return plain_frame_json(f); }
Frame Standard::frame_from_json(const nlohmann::ordered_json& j) const { return plain_frame_from_json(j); }

// ---------------------------------------------------------------------------------------------
// Configuration and framing

Standard Standard::configure(Limits limits, JsonParams&) { return Standard(limits); }

HeaderInfo Standard::parse_header(ByteView b) const {
  if (b.size() < 4) return need(4);
  std::uint64_t n = static_cast<std::uint64_t>(b[2]) | (static_cast<std::uint64_t>(b[3]) << 8);
  std::size_t hlen = 4;
  if (n == 0xFFFF) {
    if (b.size() < 8) return need(8);
    n = static_cast<std::uint64_t>(b[4]) | (static_cast<std::uint64_t>(b[5]) << 8) |
        (static_cast<std::uint64_t>(b[6]) << 16) | (static_cast<std::uint64_t>(b[7]) << 24);
    hlen = 8;
    if (n < 0xFFFF) return fail("STD-LEN-3", "non-canonical extended length below 65535");
    if (n > kInt31Max) return fail("STD-LEN-4", "extended length has bit 31 set");
  }
  if (n > max_payload()) return fail("STD-LIM-1", "declared payload above the maximum");
  HeaderInfo h = header(hlen, n);
  h.flag = b[0];
  h.sequence = b[1];
  return h;
}

std::optional<ProtocolError> Standard::encode(const Frame& f, Bytes& out) const {
  const std::uint64_t n = f.payload.size();
  // §8a: STD-LEN-4 for a payload of 2^31 bytes or more (whatever the maximum), else STD-LIM-2.
  if (n > kInt31Max) return ProtocolError{"STD-LEN-4", 0, "payload of 2^31 bytes or more"};
  if (n > limits_.payload_or_default()) return ProtocolError{"STD-LIM-2", 0, "payload above the maximum"};
  const std::size_t at = out.size();
  out.resize(at + kMaxHeader);
  out.resize(at + write_header(out.data() + at, f, n));
  out.insert(out.end(), f.payload.begin(), f.payload.end());
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// SequenceMatcher

std::optional<Frame> SequenceMatcher::next(SendKind kind) const {
  const std::uint8_t seq = peek_sequence();
  if (kind == SendKind::Request && slots_[seq].active) return std::nullopt;  // STD-SEQ-3
  return Frame{static_cast<std::uint8_t>(kind == SendKind::OneWay ? 0x41 : 0x01), seq, {}};
}

void SequenceMatcher::begin(SendKind kind, std::uint64_t id, std::uint64_t now) {
  counter_ = peek_sequence();
  if (kind != SendKind::Request) return;
  Slot& s = slots_[counter_];
  s.active = true;
  s.id = id;
  s.sent = now;
  ++pending_;
}

Match SequenceMatcher::complete(const Frame& f) {
  if (!(f.flag & 0x80)) return {Match::Kind::Ignored};
  Slot& s = slots_[f.sequence];
  if (!s.active) return {Match::Kind::Unmatched};
  s.active = false;
  --pending_;
  return {Match::Kind::Reply, s.id, s.sent};
}

bool SequenceMatcher::expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>&) {
  if (pending_ == 0) return false;
  const std::size_t first = timed_out.size();
  for (Slot& s : slots_) {
    if (s.active && s.sent + timeout_ <= now) {
      s.active = false;
      --pending_;
      timed_out.push_back(s.id);
    }
  }
  std::sort(timed_out.begin() + static_cast<std::ptrdiff_t>(first), timed_out.end());  // oldest first
  return false;
}

void SequenceMatcher::clear(std::vector<std::uint64_t>& ids) {
  const std::size_t first = ids.size();
  for (Slot& s : slots_) {
    if (s.active) {
      s.active = false;
      ids.push_back(s.id);
    }
  }
  pending_ = 0;
  std::sort(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
}

std::optional<std::uint64_t> SequenceMatcher::next_deadline() const {
  std::optional<std::uint64_t> d;
  if (pending_ == 0) return d;
  for (const Slot& s : slots_)
    if (s.active && (!d || s.sent + timeout_ < *d)) d = s.sent + timeout_;
  return d;
}

std::optional<std::string> SequenceMatcher::check_echo(const Frame& reply, const Frame&) {
  if (reply.flag == 0x81) return std::nullopt;
  char b[48];
  std::snprintf(b, sizeof b, "reply flag 0x%02X, expected 0x81", reply.flag);
  return std::string(b);
}

}  // namespace fp
