// frameproof C++ reference codec: the `standard` (spec/standard.md) and `length-field`
// (spec/length-field.md) framings.
//
// Decoding is streaming: a Decoder owns one bounded buffer per connection, bytes are written
// into it (prepare/commit, or feed), and complete frames are handed out as std::span views into
// that buffer. A view stays valid until the next prepare()/feed() call, which may compact the
// buffer. The buffer never grows beyond the largest legal frame (header + max payload), so a
// hostile header cannot make it allocate the size it promises (STD-LIM-3, LF-LIM-3).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fp {

inline constexpr std::uint64_t kDefaultMaxPayload = 10u * 1024u * 1024u;  // STD-LIM-1, LF-LIM-1
inline constexpr std::uint64_t kInt31Max = 0x7FFFFFFFu;

using Bytes = std::vector<std::uint8_t>;
using ByteView = std::span<const std::uint8_t>;

enum class Protocol { Standard, LengthField };

// A classified protocol error: the requirement the input breaks and the stream offset where the
// offending frame starts (0 for encoder and configuration errors).
struct ProtocolError {
  std::string requirement;
  std::uint64_t offset = 0;
  std::string message;
};

// Length-field profile (LF-FMT-1..3). size: 1, 2, 4 little-endian; -2, -4 big-endian;
// 0 = unsigned LEB128. Anything else is rejected with LF-FMT-3.
struct LfProfile {
  std::uint32_t offset = 0;
  std::int32_t size = 2;
};

struct CodecConfig {
  Protocol protocol = Protocol::Standard;
  std::uint64_t max_payload = 0;  // 0 = the spec default (10 MiB)
  LfProfile lf{};

  // LF-FMT-3 for an unsupported length-field size; nullopt if the configuration is usable.
  [[nodiscard]] std::optional<ProtocolError> validate() const;
  // The effective receive/send limit: max_payload (or the default), capped by what the
  // length field can represent (LF-LIM-1).
  [[nodiscard]] std::uint64_t effective_max() const;
  // Largest possible frame on the wire: header + effective_max().
  [[nodiscard]] std::uint64_t max_frame_size() const;
};

// Parses "standard" / "length-field"; nullopt otherwise.
std::optional<Protocol> parse_protocol(std::string_view name);
const char* protocol_name(Protocol p);

// Capacity of a length field of the given size (255, 65535 or 2^31-1); 0 for an invalid size.
std::uint64_t lf_capacity(std::int32_t size);

// One decoded frame. For length-field, flag and sequence are 0.
struct Frame {
  std::uint8_t flag = 0;
  std::uint8_t sequence = 0;
  ByteView payload;
};

// Result of looking at the bytes at the start of a frame.
struct HeaderInfo {
  // Header: the header is complete and valid (the payload may still be missing).
  enum class Status { NeedMore, Header, Error } status = Status::NeedMore;
  std::size_t header_len = 0;    // bytes before the payload (Header)
  std::uint64_t payload_len = 0; // (Header)
  std::uint64_t needed = 0;      // NeedMore: bytes needed to read the header; Header: whole frame
  const char* requirement = nullptr;  // (Error)
  const char* message = nullptr;      // (Error)
};

// Inspects the frame header at the start of `avail`, applying the spec's error precedence
// (STD 8a, LF 7a). Does not require the payload to be present.
HeaderInfo parse_header(const CodecConfig& cfg, std::uint64_t max_payload, ByteView avail);

// Streaming decoder for one connection.
class Decoder {
 public:
  // The configuration must be valid (cfg.validate() == nullopt); throws std::invalid_argument
  // otherwise.
  explicit Decoder(const CodecConfig& cfg, std::size_t read_chunk = 64 * 1024);

  enum class Status { Frame, NeedMore, Error };

  // Low-level interface for a socket reader: prepare() returns writable space at the end of the
  // buffered bytes (compacting, or growing up to the largest legal frame when the pending frame
  // needs it), commit(n) makes n written bytes part of the stream. Invalidates frame views.
  std::span<std::uint8_t> prepare();
  void commit(std::size_t n);

  // Takes the next complete frame out of the buffer. After Error, error() holds the error and
  // every later call returns Error again (STD-STR-4, LF-STR-4).
  Status next(Frame& out);

  // Convenience: appends `data` (any size) and calls on_frame(const Frame&) for every frame it
  // completes, in order. Returns the error if the stream was rejected; frames before it have been
  // delivered.
  template <class F>
  std::optional<ProtocolError> feed(ByteView data, F&& on_frame) {
    if (error_) return error_;
    while (true) {
      Frame f;
      Status st;
      while ((st = next(f)) == Status::Frame) on_frame(static_cast<const Frame&>(f));
      if (st == Status::Error) return error_;
      if (data.empty()) return std::nullopt;
      auto space = prepare();
      std::size_t n = std::min(space.size(), data.size());
      std::copy_n(data.data(), n, space.data());
      commit(n);
      data = data.subspan(n);
    }
  }

  // End of stream: STD-STR-3 / LF-STR-3 if it ended inside a frame, else nullopt. Call after
  // draining next() until NeedMore.
  std::optional<ProtocolError> finish();

  [[nodiscard]] const std::optional<ProtocolError>& error() const { return error_; }
  [[nodiscard]] std::size_t buffered() const { return end_ - start_; }
  [[nodiscard]] std::size_t capacity() const { return cap_; }
  // Stream offset of the first byte not yet consumed as a frame.
  [[nodiscard]] std::uint64_t position() const { return base_; }
  [[nodiscard]] const CodecConfig& config() const { return cfg_; }

 private:
  CodecConfig cfg_;
  std::uint64_t max_;
  std::size_t chunk_;
  std::size_t max_frame_;
  std::unique_ptr<std::uint8_t[]> buf_;
  std::size_t cap_ = 0;
  std::size_t start_ = 0;   // first unconsumed byte
  std::size_t end_ = 0;     // end of buffered bytes
  std::uint64_t base_ = 0;  // stream offset of buf_[start_]
  std::uint64_t needed_ = 0;  // bytes the frame at start_ needs (0 = unknown)
  static constexpr unsigned kShrinkAfter = 16;  // reads without a big frame before shrinking
  unsigned small_reads_ = 0;
  std::optional<ProtocolError> error_;
};

// Encoders append one frame to `out`, or return the error and leave `out` unchanged.
// standard: flag and sequence verbatim; STD-LIM-2 above the maximum, STD-LEN-4 at 2^31 or more.
std::optional<ProtocolError> encode_standard(std::uint8_t flag, std::uint8_t sequence, ByteView payload,
                                             std::uint64_t max_payload, Bytes& out);
// length-field: LF-FMT-3, then LF-LEN-1, then LF-LIM-2.
std::optional<ProtocolError> encode_length_field(const LfProfile& profile, ByteView payload,
                                                 std::uint64_t max_payload, Bytes& out);
// Writes a frame header for a payload of `len` bytes that is already known to be encodable;
// returns the header length (at most 8 for standard, offset + 5 for length-field).
std::size_t write_standard_header(std::uint8_t* dst, std::uint8_t flag, std::uint8_t sequence, std::uint64_t len);
std::size_t write_lf_header(std::uint8_t* dst, const LfProfile& profile, std::uint64_t len);
// Header length a length-field frame of `len` bytes needs.
std::size_t lf_header_len(const LfProfile& profile, std::uint64_t len);

// Generic encode by configuration (standard uses flag/sequence; length-field ignores them).
std::optional<ProtocolError> encode(const CodecConfig& cfg, std::uint8_t flag, std::uint8_t sequence,
                                    ByteView payload, Bytes& out);

}  // namespace fp
