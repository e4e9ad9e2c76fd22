// The `length-field` protocol (spec/length-field.md): header parsing and encoding in every profile
// (LF-FMT-*), the client matcher (FIFO, LF-MATCH-*) and the echo rule of its server session
// (LF-ECHO-*).
#pragma once

#include <cstring>
#include <deque>
#include <string_view>

#include "frameproof/codec.hpp"
#include "frameproof/matcher.hpp"
#include "frameproof/session.hpp"

namespace fp {

inline constexpr std::size_t kLfPendingBound = 256;  // LF-MATCH-4

// FIFO matcher of one `length-field` connection (its client matcher).
class FifoMatcher {
 public:
  static constexpr std::size_t kMaxWindow = kLfPendingBound;

  explicit FifoMatcher(std::uint64_t timeout) : timeout_(timeout) {}

  // A request, or an untracked one; nullopt if 256 requests are already pending (LF-MATCH-4) or
  // for a one-way message (length-field has none).
  [[nodiscard]] std::optional<Frame> next(SendKind kind) const;
  void begin(SendKind kind, std::uint64_t id, std::uint64_t now);
  // Any received frame completes the oldest pending request (LF-MATCH-1), or none (LF-MATCH-2).
  Match complete(const Frame& f);
  // Expired requests (oldest first) into timed_out; if any expired, every other pending request
  // goes to failed and the connection has failed (LF-MATCH-3): returns true.
  bool expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed);
  void clear(std::vector<std::uint64_t>& ids);
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const;
  [[nodiscard]] std::size_t pending() const { return queue_.size(); }
  // The order of replies is the only check there is.
  static std::optional<std::string> check_echo(const Frame&, const Frame&) { return std::nullopt; }

 private:
  struct Pending {
    std::uint64_t id;
    std::uint64_t sent;
  };
  std::uint64_t timeout_;
  std::deque<Pending> queue_;
};

class LengthField {
 public:
  static constexpr std::string_view kName = "length-field";
  static constexpr std::uint32_t kMaxOffset = 1u << 24;  // 16 MiB: larger offsets are not supported
  using Client = FifoMatcher;
  using Session = EchoSession<LengthField>;
  using FrameType = Frame;
  using DecoderType = Decoder<LengthField>;
  static constexpr bool kSendsFrames = false;
  static constexpr bool kStreams = false;
  // fp-load --mode batched: the default --batch, the batch of NewLife X's batched echo benchmark (it awaits
  // 128 concurrent requests)
  static constexpr std::size_t kDefaultBatch = 128;
  static bool has_endpoint(std::string_view endpoint) { return endpoint.empty(); }
  static std::vector<std::string_view> variants() { return {"default"}; }

  // offset: bytes before the length field (zeros on send, ignored on receive). size: 1, 2, 4
  // little-endian; -2, -4 big-endian; 0 = unsigned LEB128. Anything else is invalid (LF-FMT-3).
  // The default profile is offset 0, size 2 (LF-FMT-2).
  explicit LengthField(Limits limits = {}, std::uint32_t offset = 0, std::int32_t size = 2)
      : limits_(limits), offset_(offset), size_(size) {}
  // The codec JSON: {"protocol": "length-field", "limits": {...},
  //                  "length_field": {"offset": 2, "size": -4}}; absent keys: offset 0, size 2.
  static LengthField configure(Limits limits, JsonParams& params);

  // LF-FMT-3 for an unsupported size.
  [[nodiscard]] std::optional<ProtocolError> validate() const;
  // An offset above kMaxOffset (every frame would carry that many header bytes).
  [[nodiscard]] std::optional<std::string> unsupported() const;
  [[nodiscard]] const Limits& limits() const { return limits_; }
  [[nodiscard]] std::uint32_t offset() const { return offset_; }
  [[nodiscard]] std::int32_t size() const { return size_; }
  // fp-microbench (Protocol.bench_codec): this profile, or the 4-byte length field when this one
  // cannot carry `payload` bytes.
  [[nodiscard]] LengthField carrying(std::uint64_t payload) const {
    return payload <= max_payload() ? *this : LengthField(limits_, 0, 4);
  }
  // Largest length the field can carry (255, 65535 or 2^31-1); 0 for an invalid size.
  [[nodiscard]] std::uint64_t capacity() const;
  // The effective receive/send limit: max_payload (or the default), capped by the capacity
  // (LF-LIM-1).
  [[nodiscard]] std::uint64_t max_payload() const { return std::min(limits_.payload_or_default(), capacity()); }
  [[nodiscard]] std::size_t max_header_size() const { return offset_ + field_width(); }
  [[nodiscard]] const char* truncation_requirement() const { return "LF-STR-3"; }

  // The header at the start of `b`, in the order of §7a: LF-LEN-2, LF-LEN-3, LF-LIM-1.
  [[nodiscard]] HeaderInfo parse_header(ByteView b) const;
  // LF-FMT-3, then LF-LEN-1, then LF-LIM-2. Appends to `out`, or leaves it unchanged on error.
  std::optional<ProtocolError> encode(const Frame& f, Bytes& out) const;
  // Decoder::drain_complete's fast path (inline, see codec.hpp): a complete frame with a
  // fixed-size length field at most `max_payload` (the effective maximum, below 2^31, so a
  // length with bit 31 set is declined too): its length, else 0. Varints, the errors and
  // unfinished frames are left to parse_header.
  std::size_t whole_frame(const std::uint8_t* p, std::size_t avail, std::uint64_t max_payload, Frame& f) const {
    if (size_ == 0) return 0;
    const std::size_t hl = offset_ + field_width();
    if (avail < hl) return 0;
    const std::uint8_t* q = p + offset_;
    std::uint64_t n;
    switch (size_) {
      case 1: n = q[0]; break;
      case 2: n = q[0] | (std::uint64_t{q[1]} << 8); break;
      case -2: n = (std::uint64_t{q[0]} << 8) | q[1]; break;
      case 4: n = q[0] | (std::uint64_t{q[1]} << 8) | (std::uint64_t{q[2]} << 16) | (std::uint64_t{q[3]} << 24); break;
      default: n = (std::uint64_t{q[0]} << 24) | (std::uint64_t{q[1]} << 16) | (std::uint64_t{q[2]} << 8) | q[3]; break;  // -4
    }
    if (n > max_payload || avail - hl < n) return 0;
    f = Frame{0, 0, ByteView(p + hl, static_cast<std::size_t>(n))};
    return hl + static_cast<std::size_t>(n);
  }
  // Writes the header (zero header bytes, then the minimal length field) of a frame of `len`
  // payload bytes already known to be encodable; returns its length. Inline: the server writes
  // one per reply.
  std::size_t write_header(std::uint8_t* dst, const Frame&, std::uint64_t len) const {
    if (offset_) std::memset(dst, 0, offset_);  // LF-FMT-4: header bytes are zeros
    std::uint8_t* f = dst + offset_;
    auto byte = [len](int i) { return static_cast<std::uint8_t>(len >> (8 * i)); };
    switch (size_) {
      case 1: f[0] = byte(0); return offset_ + 1;
      case 2: f[0] = byte(0), f[1] = byte(1); return offset_ + 2;
      case -2: f[0] = byte(1), f[1] = byte(0); return offset_ + 2;
      case 4: f[0] = byte(0), f[1] = byte(1), f[2] = byte(2), f[3] = byte(3); return offset_ + 4;
      case -4: f[0] = byte(3), f[1] = byte(2), f[2] = byte(1), f[3] = byte(0); return offset_ + 4;
      default: break;
    }
    std::size_t w = 0;  // size 0: minimal LEB128 (LF-LEN-2)
    do {
      std::uint8_t b = len & 0x7F;
      len >>= 7;
      if (len) b |= 0x80;
      f[w++] = b;
    } while (len);
    return offset_ + w;
  }
  // The testee's Frame message as JSON: flag, sequence, payload (Unsupported above a byte).
  [[nodiscard]] nlohmann::ordered_json frame_json(const Frame& f) const;
  [[nodiscard]] Frame frame_from_json(const nlohmann::ordered_json& j) const;
  [[nodiscard]] std::size_t header_bound(const Frame&) const { return max_header_size(); }
  // LF-ECHO-1: every frame is answered with the same payload.
  [[nodiscard]] std::optional<Frame> echo(const Frame&) const { return Frame{}; }

 private:
  // Bytes of the length field (5 at most for a varint).
  [[nodiscard]] std::size_t field_width() const {
    const std::int64_t s = size_;
    return s == 0 ? 5 : static_cast<std::size_t>(s < 0 ? -s : s);
  }
  Limits limits_;
  std::uint32_t offset_;
  std::int32_t size_;
};

extern template class Decoder<LengthField>;

}  // namespace fp
