#include "frameproof/length_field.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <limits>

namespace fp {

template class Decoder<LengthField>;

using namespace header_result;

nlohmann::ordered_json LengthField::frame_json(const Frame& f) const { return plain_frame_json(f); }
Frame LengthField::frame_from_json(const nlohmann::ordered_json& j) const { return plain_frame_from_json(j); }

namespace {

bool size_valid(std::int32_t size) {
  return size == 1 || size == 2 || size == 4 || size == -2 || size == -4 || size == 0;
}

// Bytes of the length field that carries `len` (the minimal varint for size 0).
std::size_t field_len(std::int32_t size, std::uint64_t len) {
  if (size != 0) return static_cast<std::size_t>(size < 0 ? -size : size);
  std::size_t w = 1;
  while (len >= 0x80) {
    len >>= 7;
    ++w;
  }
  return w;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Configuration

LengthField LengthField::configure(Limits limits, JsonParams& params) {
  LengthField lf(limits);
  if (auto p = params.take_object("length_field")) {
    lf.offset_ = static_cast<std::uint32_t>(p->take_uint("offset", std::numeric_limits<std::uint32_t>::max()).value_or(0));
    lf.size_ = static_cast<std::int32_t>(p->take_int("size", std::numeric_limits<std::int32_t>::min(),
                                                     std::numeric_limits<std::int32_t>::max())
                                             .value_or(2));
    p->finish();
  }
  return lf;
}

std::optional<ProtocolError> LengthField::validate() const {
  if (size_valid(size_)) return std::nullopt;
  return ProtocolError{"LF-FMT-3", 0, "unsupported length-field size " + std::to_string(size_)};
}

std::optional<std::string> LengthField::unsupported() const {
  if (offset_ <= kMaxOffset) return std::nullopt;
  return "length-field offset above " + std::to_string(kMaxOffset) + " bytes is not supported";
}

std::uint64_t LengthField::capacity() const {
  switch (size_) {
    case 1: return 0xFF;
    case 2:
    case -2: return 0xFFFF;
    case 4:
    case -4:
    case 0: return kInt31Max;
    default: return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Framing

HeaderInfo LengthField::parse_header(ByteView b) const {
  const std::size_t at = offset_;
  const std::uint64_t max = max_payload();
  std::uint64_t n = 0;
  std::size_t w = 0;
  if (size_ == 0) {
    for (std::size_t i = 0;; ++i) {
      if (i == 5) return fail("LF-LEN-2", "varint longer than 5 bytes");
      if (b.size() <= at + i) return need(at + i + 1);
      const std::uint8_t byte = b[at + i];
      n |= static_cast<std::uint64_t>(byte & 0x7F) << (7 * i);
      if (!(byte & 0x80)) {
        w = i + 1;
        break;
      }
    }
    if (n > kInt31Max) return fail("LF-LEN-2", "varint value above 2^31-1");
  } else {
    w = field_width();
    if (b.size() < at + w) return need(at + w);
    const std::uint8_t* f = b.data() + at;
    for (std::size_t i = 0; i < w; ++i) {
      // little-endian for positive sizes, big-endian for negative ones
      const std::uint8_t byte = size_ > 0 ? f[w - 1 - i] : f[i];
      n = (n << 8) | byte;
    }
    if (w == 4 && n > kInt31Max) return fail("LF-LEN-3", "length has bit 31 set");
  }
  if (n > max) return fail("LF-LIM-1", "declared payload above the maximum");
  return header(at + w, n);
}

std::optional<ProtocolError> LengthField::encode(const Frame& f, Bytes& out) const {
  if (auto e = validate()) return e;
  const std::uint64_t n = f.payload.size();
  if (n > capacity()) return ProtocolError{"LF-LEN-1", 0, "length does not fit the length field"};
  if (n > limits_.payload_or_default()) return ProtocolError{"LF-LIM-2", 0, "payload above the maximum"};
  const std::size_t at = out.size();
  out.resize(at + offset_ + field_len(size_, n));
  write_header(out.data() + at, f, n);
  out.insert(out.end(), f.payload.begin(), f.payload.end());
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// FifoMatcher

std::optional<Frame> FifoMatcher::next(SendKind kind) const {
  if (kind == SendKind::OneWay) return std::nullopt;  // not part of length-field
  if (kind == SendKind::Request && queue_.size() >= kLfPendingBound) return std::nullopt;  // LF-MATCH-4
  return Frame{};
}

void FifoMatcher::begin(SendKind kind, std::uint64_t id, std::uint64_t now) {
  if (kind == SendKind::Request) queue_.push_back({id, now});
}

Match FifoMatcher::complete(const Frame&) {
  if (queue_.empty()) return {Match::Kind::Unmatched};
  const Pending p = queue_.front();
  queue_.pop_front();
  return {Match::Kind::Reply, p.id, p.sent};
}

bool FifoMatcher::expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed) {
  // Deadlines grow with send order, but check every entry so a caller with a non-monotonic
  // clock still gets every expired request.
  bool any = false;
  for (const Pending& p : queue_) {
    if (p.sent + timeout_ <= now) {
      timed_out.push_back(p.id);
      any = true;
    }
  }
  if (!any) return false;
  for (const Pending& p : queue_)
    if (p.sent + timeout_ > now) failed.push_back(p.id);
  queue_.clear();
  return true;
}

void FifoMatcher::clear(std::vector<std::uint64_t>& ids) {
  for (const Pending& p : queue_) ids.push_back(p.id);
  queue_.clear();
}

std::optional<std::uint64_t> FifoMatcher::next_deadline() const {
  if (queue_.empty()) return std::nullopt;
  std::uint64_t d = queue_.front().sent;
  for (const Pending& p : queue_) d = std::min(d, p.sent);
  return d + timeout_;
}

}  // namespace fp
