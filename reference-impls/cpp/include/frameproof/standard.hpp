// The `standard` protocol (spec/standard.md): header parsing and encoding, the client matcher
// (sequence numbers, STD-SEQ-*, STD-MATCH-*) and the echo rule of its server session (STD-ECHO-*).
#pragma once

#include <array>
#include <string_view>

#include "frameproof/codec.hpp"
#include "frameproof/matcher.hpp"
#include "frameproof/session.hpp"

namespace fp {

// Sequence-number table of one `standard` connection (its client matcher).
class SequenceMatcher {
 public:
  static constexpr std::size_t kMaxWindow = 255;

  explicit SequenceMatcher(std::uint64_t timeout) : timeout_(timeout) {}

  // The next message: flag 0x01 (request) or 0x41 (one-way) and the next sequence number
  // (STD-SEQ-1: 1, 2, ... 255, 0, 1 ...); nullopt for a request whose number is held by a pending
  // request (STD-SEQ-3). A one-way message takes its number without that check (STD-MATCH-4).
  [[nodiscard]] std::optional<Frame> next(SendKind kind) const;
  // Takes the number; a request is pending until now + timeout.
  void begin(SendKind kind, std::uint64_t id, std::uint64_t now);
  // A reply (bit 7 set) completes the pending request with its sequence number (STD-MATCH-1, error
  // replies too, STD-MATCH-6) or matches none (STD-MATCH-2); a frame with bit 7 clear is a
  // request from the peer and completes nothing (STD-MATCH-5).
  Match complete(const Frame& f);
  // Every request whose deadline is <= now times out, oldest first (STD-MATCH-3); the connection
  // stays usable (returns false).
  bool expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed);
  void clear(std::vector<std::uint64_t>& ids);
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const;
  [[nodiscard]] std::size_t pending() const { return pending_; }
  // fp-load: the echo of a request (flag 0x01) is a plain reply, flag 0x81.
  static std::optional<std::string> check_echo(const Frame& reply, const Frame& request);

 private:
  struct Slot {
    bool active = false;
    std::uint64_t id = 0;
    std::uint64_t sent = 0;
  };
  [[nodiscard]] std::uint8_t peek_sequence() const { return static_cast<std::uint8_t>(counter_ + 1); }
  std::uint64_t timeout_;
  std::uint8_t counter_ = 0;  // last number used
  std::size_t pending_ = 0;
  std::array<Slot, 256> slots_{};
};

class Standard {
 public:
  static constexpr std::string_view kName = "standard";
  static constexpr std::size_t kMaxHeader = 8;
  using Client = SequenceMatcher;
  using Session = EchoSession<Standard>;
  using FrameType = Frame;
  using DecoderType = Decoder<Standard>;
  static constexpr bool kSendsFrames = false;
  static constexpr bool kStreams = false;
  // fp-load --mode batched: the default --batch, the batch of NewLife X's batched echo benchmark (255
  // concurrent SendMessageAsync, WhenAll, next round)
  static constexpr std::size_t kDefaultBatch = 255;
  static bool has_endpoint(std::string_view endpoint) { return endpoint.empty(); }
  static std::vector<std::string_view> variants() { return {"default"}; }

  explicit Standard(Limits limits = {}) : limits_(limits) {}
  // The codec JSON: {"protocol": "standard", "limits": {...}}; no parameters of its own.
  static Standard configure(Limits limits, JsonParams& params);

  [[nodiscard]] std::optional<ProtocolError> validate() const { return std::nullopt; }
  [[nodiscard]] std::optional<std::string> unsupported() const { return std::nullopt; }
  // The effective receive/send limit: max_payload (or the default), at most 2^31-1.
  [[nodiscard]] std::uint64_t max_payload() const { return std::min(limits_.payload_or_default(), kInt31Max); }
  [[nodiscard]] std::size_t max_header_size() const { return kMaxHeader; }
  [[nodiscard]] const char* truncation_requirement() const { return "STD-STR-3"; }

  // The header at the start of `b`, in the order of §8a: STD-LEN-3, STD-LEN-4, STD-LIM-1.
  [[nodiscard]] HeaderInfo parse_header(ByteView b) const;
  // Flag and sequence verbatim; STD-LEN-4 for a payload of 2^31 bytes or more, then STD-LIM-2
  // above the maximum. Appends to `out`, or leaves it unchanged on error.
  std::optional<ProtocolError> encode(const Frame& f, Bytes& out) const;
  // Decoder::drain_complete's fast path (inline, see codec.hpp): a complete frame with the short
  // header (length below 65535, at most `max_payload`, the effective maximum): its length, else
  // 0. Extended lengths, the errors and unfinished frames are left to parse_header.
  std::size_t whole_frame(const std::uint8_t* p, std::size_t avail, std::uint64_t max_payload, Frame& f) const {
    if (avail < 4) return 0;
    const std::size_t n = static_cast<std::size_t>(p[2]) | (static_cast<std::size_t>(p[3]) << 8);
    if (n == 0xFFFF || n > max_payload || avail - 4 < n) return 0;
    f.flag = p[0];
    f.sequence = p[1];
    f.payload = ByteView(p + 4, n);
    return 4 + n;
  }
  // Writes the header of a frame of `len` payload bytes already known to be encodable; returns
  // its length (4, or 8 with the extended length). Inline: the server writes one per reply.
  std::size_t write_header(std::uint8_t* dst, const Frame& header, std::uint64_t len) const {
    dst[0] = header.flag;
    dst[1] = header.sequence;
    if (len < 0xFFFF) {
      dst[2] = static_cast<std::uint8_t>(len);
      dst[3] = static_cast<std::uint8_t>(len >> 8);
      return 4;
    }
    dst[2] = 0xFF;
    dst[3] = 0xFF;
    for (int i = 0; i < 4; ++i) dst[4 + i] = static_cast<std::uint8_t>(len >> (8 * i));
    return 8;
  }
  // The testee's Frame message as JSON: flag, sequence, payload (Unsupported above a byte).
  [[nodiscard]] nlohmann::ordered_json frame_json(const Frame& f) const;
  [[nodiscard]] Frame frame_from_json(const nlohmann::ordered_json& j) const;
  [[nodiscard]] std::size_t header_bound(const Frame&) const { return kMaxHeader; }
  // STD-ECHO-1..3: a request (bits 6 and 7 clear) is answered with the same sequence and payload
  // and flag | 0x80; one-way messages, replies and errors are not answered.
  [[nodiscard]] std::optional<Frame> echo(const Frame& request) const {
    if (request.flag & 0xC0) return std::nullopt;
    return Frame{static_cast<std::uint8_t>(request.flag | 0x80), request.sequence, {}};
  }

 private:
  Limits limits_;
};

extern template class Decoder<Standard>;

}  // namespace fp
