// frameproof C++ reference codec: what every protocol shares.
//
// This header knows no protocol. Each protocol is one module (standard.hpp, length_field.hpp, ...)
// that provides a configured protocol type P: header parsing and encoding, the client matcher and
// the echo rule of its server session; registry.hpp lists the modules. The generic pieces here:
//  - bytes, frames, classified protocol errors, limits;
//  - FrameBuffer: the bounded per-connection input buffer (prepare/commit for socket reads);
//  - Decoder<P>: the streaming decoder over a FrameBuffer, handing out frames as std::span views
//    into it. A view stays valid until the next prepare()/feed() call, which may compact the
//    buffer. The buffer never grows beyond the largest legal frame (header + max payload), so a
//    hostile header cannot make it allocate the size it promises (STD-LIM-3, LF-LIM-3);
//  - CodecError and JsonParams: reading the `--codec` JSON object (reference-impls/README.md).
//
// A protocol type P provides (see standard.hpp for the reference):
//   static constexpr std::string_view kName;                 registered name
//   static P configure(Limits, JsonParams& params);          from the codec JSON (its own keys)
//   std::optional<ProtocolError> validate() const;           configuration error (e.g. LF-FMT-3)
//   std::optional<std::string> unsupported() const;          valid, but not supported here
//   std::uint64_t max_payload() const;                        effective receive/send limit
//   std::size_t max_header_size() const;
//   HeaderInfo parse_header(ByteView) const;                 the spec's error precedence
//   const char* truncation_requirement() const;              STD-STR-3, LF-STR-3
//   std::optional<ProtocolError> encode(const Frame&, Bytes& out) const;
//   std::size_t write_header(std::uint8_t* dst, const Frame& header, std::uint64_t len) const;
//   optional, inline: std::size_t whole_frame(const std::uint8_t* p, std::size_t avail,
//       std::uint64_t max_payload, Frame& f) const;   Decoder::drain_complete's fast path: the
//       length of the complete, valid frame at p (f = its fields, payload a view), or 0 to leave
//       it to parse_header (it may decline any frame, and must for an unfinished or invalid one)
//   std::optional<Frame> echo(const Frame& request) const;   reply header of the echo service
//   using Client = ...;                                       client matcher (matcher.hpp)
// and, for the generic programs (every protocol, also those with a decoder of their own):
//   using FrameType = ...;     the decoded frame (fp::Frame here; rpc and websocket have their own)
//   using DecoderType = ...;   the streaming decoder (Decoder<P> here): prepare/commit/next/feed/
//                              finish/error/position, as Decoder<P> has them
//   using Session = ...;       the server session (session.hpp): Session(proto) is the network
//                              server's connection, Session(proto, endpoint) the testee's `serve`
//   static bool has_endpoint(std::string_view);   the `serve` endpoints ("" = the default)
//   static constexpr bool kSendsFrames;  the client sends whole frames (the testee's send_frame)
//   nlohmann::ordered_json frame_json(const FrameType&) const;    the testee's Frame message as
//   FrameType frame_from_json(const nlohmann::ordered_json&) const;  JSON (schema field names),
//                              the frame's views pointing into the JSON; throws Unsupported
//   std::size_t header_bound(const FrameType& header) const;    bytes write_header may write
//   static std::vector<std::string_view> variants();   fp-load --variant names (first: default)
//   static constexpr std::size_t kDefaultBatch;        fp-load --mode batched: the default --batch
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fp {

inline constexpr std::uint64_t kDefaultMaxPayload = 10u * 1024u * 1024u;  // STD-LIM-1, LF-LIM-1
inline constexpr std::uint64_t kInt31Max = 0x7FFFFFFFu;
inline constexpr std::size_t kReadChunk = 64 * 1024;

using Bytes = std::vector<std::uint8_t>;
using ByteView = std::span<const std::uint8_t>;

// A classified protocol error: the requirement the input breaks and the stream offset where the
// offending frame starts (0 for encoder and configuration errors).
struct ProtocolError {
  std::string requirement;
  std::uint64_t offset = 0;
  std::string message;
  // What the protocol itself says about the error on the wire, as the JSON object of the testee's
  // ProtocolError.detail (e.g. {"websocket": {"close_code": 1002}}); empty: nothing.
  std::string detail = {};
};

// Limits shared by every protocol's codec JSON ("limits"). 0 = the spec's default.
struct Limits {
  std::uint64_t max_payload = 0;
  [[nodiscard]] std::uint64_t payload_or_default() const { return max_payload ? max_payload : kDefaultMaxPayload; }
};

// One frame. Protocols whose header is more than a payload length carry it in flag/sequence
// (standard); the others leave them 0.
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
  std::uint8_t flag = 0;         // (Header) the frame's header fields, see Frame
  std::uint8_t sequence = 0;
  const char* requirement = nullptr;  // (Error)
  const char* message = nullptr;      // (Error)
};

// The three results of a protocol's parse_header (a module says `using namespace header_result;`).
namespace header_result {
inline HeaderInfo need(std::uint64_t n) {
  HeaderInfo h;
  h.needed = n;
  return h;
}
inline HeaderInfo fail(const char* req, const char* msg) {
  HeaderInfo h;
  h.status = HeaderInfo::Status::Error;
  h.requirement = req;
  h.message = msg;
  return h;
}
inline HeaderInfo header(std::size_t header_len, std::uint64_t payload_len) {
  HeaderInfo h;
  h.status = HeaderInfo::Status::Header;
  h.header_len = header_len;
  h.payload_len = payload_len;
  h.needed = header_len + payload_len;
  return h;
}
}  // namespace header_result

// The input buffer of one connection: bytes are written at the end (prepare/commit), frames are
// consumed at the front. Grows only to what the pending frame needs (at most the largest legal
// frame), compacts instead of growing, and gives a big buffer back once kShrinkAfter reads in a
// row needed no big frame.
class FrameBuffer {
 public:
  FrameBuffer(std::size_t read_chunk, std::size_t max_frame) : chunk_(read_chunk), max_frame_(max_frame) {}

  // Writable space at the end of the buffered bytes. Invalidates views into the buffer.
  std::span<std::uint8_t> prepare();
  void commit(std::size_t n) { end_ += n; }

  [[nodiscard]] ByteView data() const { return {buf_.get() + start_, end_ - start_}; }
  // The same bytes, writable (a decoder that transforms a frame in place, e.g. unmasking).
  [[nodiscard]] std::span<std::uint8_t> mutable_data() { return {buf_.get() + start_, end_ - start_}; }
  // The frame at the front needs `n` bytes in all (0 = unknown).
  void need(std::uint64_t n) { needed_ = n; }
  // Takes `n` bytes off the front.
  void consume(std::size_t n) {
    start_ += n;
    base_ += n;
    needed_ = 0;
  }
  [[nodiscard]] std::size_t buffered() const { return end_ - start_; }
  [[nodiscard]] std::size_t capacity() const { return cap_; }
  // Held memory (*-RES-1): the bytes of the unfinished frame at the front, or what was allocated
  // for it beyond the read chunk, if that is more; 0 when nothing is buffered.
  [[nodiscard]] std::size_t held() const {
    const std::size_t b = end_ - start_;
    return b ? std::max(b, cap_ > chunk_ ? cap_ : std::size_t{0}) : 0;
  }
  // Gives a buffer grown for a big frame back once it holds nothing (fp-server, between reads).
  void release_if_empty() {
    if (start_ == end_ && cap_ > 2 * chunk_) {
      buf_.reset();
      cap_ = start_ = end_ = 0;
    }
  }
  // Stream offset of the first buffered byte.
  [[nodiscard]] std::uint64_t position() const { return base_; }

 private:
  static constexpr unsigned kShrinkAfter = 16;  // reads without a big frame before shrinking
  std::size_t chunk_;
  std::size_t max_frame_;
  std::unique_ptr<std::uint8_t[]> buf_;
  std::size_t cap_ = 0;
  std::size_t start_ = 0;     // first unconsumed byte
  std::size_t end_ = 0;       // end of buffered bytes
  std::uint64_t base_ = 0;    // stream offset of buf_[start_]
  std::uint64_t needed_ = 0;  // bytes the frame at start_ needs (0 = unknown)
  unsigned small_reads_ = 0;
};

// Streaming decoder of protocol P for one connection.
template <class P>
class Decoder {
 public:
  // The configuration must be valid (proto.validate() == nullopt); throws std::invalid_argument
  // otherwise.
  explicit Decoder(const P& proto, std::size_t read_chunk = kReadChunk)
      : proto_(checked(proto)),
        // the read chunk holds any header, so a full buffer always has a parsed header
        buf_(std::max(read_chunk, proto.max_header_size() + 8), proto.max_header_size() + proto.max_payload()) {}

  enum class Status { Frame, NeedMore, Error };

  // Low-level interface for a socket reader: prepare() returns writable space at the end of the
  // buffered bytes (compacting, or growing up to the largest legal frame when the pending frame
  // needs it), commit(n) makes n written bytes part of the stream. Invalidates frame views.
  std::span<std::uint8_t> prepare() { return buf_.prepare(); }
  void commit(std::size_t n) { buf_.commit(n); }

  // Takes the next complete frame out of the buffer. After Error, error() holds the error and
  // every later call returns Error again (STD-STR-4, LF-STR-4).
  Status next(Frame& out);

  // The fast path of a reader that answers frames where they lie (fp-server's echo sessions):
  // calls each(const Frame&) for the complete frames at the front of the buffer that the
  // protocol's inline P::whole_frame recognises (views into the buffer, valid during the call),
  // then takes them all off the buffer at once; returns the number of frames. It stops before
  // the first frame whole_frame declines (unfinished, invalid, or of a shape it leaves to
  // parse_header), which next() then decodes or classifies as always, so drain_complete() then
  // next() delivers exactly what next() alone does. A protocol without whole_frame drains nothing.
  template <class F>
  std::size_t drain_complete(F&& each) {
    if constexpr (requires(const P& p, const std::uint8_t* b, Frame& f) {
                    { p.whole_frame(b, std::size_t{}, std::uint64_t{}, f) } -> std::same_as<std::size_t>;
                  }) {
      if (error_) return 0;
      const ByteView avail = buf_.data();
      const std::uint8_t* const begin = avail.data();
      const std::uint8_t* p = begin;
      std::size_t left = avail.size();
      std::size_t frames = 0;
      Frame f;
      while (const std::size_t n = proto_.whole_frame(p, left, max_payload_, f)) {
        each(static_cast<const Frame&>(f));
        p += n;
        left -= n;
        ++frames;
      }
      if (p != begin) buf_.consume(static_cast<std::size_t>(p - begin));
      return frames;
    } else {
      (void)each;
      return 0;
    }
  }

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

  // End of stream: the truncation error (STD-STR-3 / LF-STR-3) if it ended inside a frame, else
  // nullopt. Call after draining next() until NeedMore.
  std::optional<ProtocolError> finish() {
    if (!error_ && buf_.buffered() > 0)
      error_ = ProtocolError{proto_.truncation_requirement(), buf_.position(), "stream ended inside a frame"};
    return error_;
  }

  [[nodiscard]] const std::optional<ProtocolError>& error() const { return error_; }
  [[nodiscard]] std::size_t capacity() const { return buf_.capacity(); }
  // Stream offset of the first byte not yet consumed as a frame.
  [[nodiscard]] std::uint64_t position() const { return buf_.position(); }
  [[nodiscard]] const P& protocol() const { return proto_; }

 private:
  static const P& checked(const P& proto) {
    if (auto e = proto.validate()) throw std::invalid_argument(e->message);
    return proto;
  }
  P proto_;
  std::uint64_t max_payload_ = proto_.max_payload();  // for whole_frame, computed once
  FrameBuffer buf_;
  std::optional<ProtocolError> error_;

 public:
  [[nodiscard]] std::size_t held() const { return buf_.held(); }
  void release_if_empty() { buf_.release_if_empty(); }
};

// Out of line: each protocol module instantiates it once (extern template), next to its
// parse_header, so that the header parser is inlined into the loop.
template <class P>
typename Decoder<P>::Status Decoder<P>::next(Frame& out) {
  if (error_) return Status::Error;
  const ByteView avail = buf_.data();
  if (avail.empty()) {
    buf_.need(0);
    return Status::NeedMore;
  }
  const HeaderInfo h = proto_.parse_header(avail);
  switch (h.status) {
    case HeaderInfo::Status::Error:
      error_ = ProtocolError{h.requirement, buf_.position(), h.message};
      return Status::Error;
    case HeaderInfo::Status::NeedMore:
      buf_.need(h.needed);
      return Status::NeedMore;
    case HeaderInfo::Status::Header:
      break;
  }
  if (avail.size() < h.needed) {
    buf_.need(h.needed);
    return Status::NeedMore;
  }
  out.flag = h.flag;
  out.sequence = h.sequence;
  out.payload = avail.subspan(h.header_len, static_cast<std::size_t>(h.payload_len));
  buf_.consume(static_cast<std::size_t>(h.needed));
  return Status::Frame;
}

// ---------------------------------------------------------------------------------------------
// The codec JSON (`--codec`, the vectors' "codec", the testee's Codec message)

// A codec JSON the implementation cannot use: not an object, a missing or unknown key, a value of
// the wrong type or range. Programs report it as a usage error.
class CodecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// fp-load's payload of request `index`: bytes 0..7 hold the index (u64 little-endian, truncated
// if the payload is shorter), the rest a pattern derived from the index and the position.
void load_payload(std::uint64_t index, std::uint8_t* p, std::size_t n);

// A valid request this implementation does not support (the testee answers `skipped`).
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The testee's Frame message of a protocol whose frames are flag, sequence and payload
// (standard, length-field) as JSON, and back (the payload view points into the JSON).
nlohmann::ordered_json plain_frame_json(const Frame& f);
Frame plain_frame_from_json(const nlohmann::ordered_json& j);
// The bytes of a JSON string (a protobuf bytes field), as a view into it; empty if absent.
ByteView json_bytes(const nlohmann::ordered_json& j, const char* key);
// An unsigned JSON number, 0 if absent.
std::uint64_t json_uint(const nlohmann::ordered_json& j, const char* key);

// A protocol name that is not in the registry (the testee answers `skipped`).
class UnknownProtocol : public CodecError {
 public:
  using CodecError::CodecError;
};

// One JSON object of a codec being read: the parser takes the keys it knows, then finish()
// rejects any other key (strict) or ignores them (lenient: the testee, whose runner may send
// fields of a newer schema).
class JsonParams {
 public:
  JsonParams(const nlohmann::ordered_json& obj, std::string where, bool strict);
  std::optional<std::string> take_string(const std::string& key);
  std::optional<std::uint64_t> take_uint(const std::string& key, std::uint64_t max);
  std::optional<std::int64_t> take_int(const std::string& key, std::int64_t min, std::int64_t max);
  std::optional<JsonParams> take_object(const std::string& key);
  std::optional<bool> take_bool(const std::string& key);
  // Throws CodecError for a key nobody took (strict only).
  void finish() const;

 private:
  const nlohmann::ordered_json* find(const std::string& key);
  [[noreturn]] void bad(const std::string& key, const std::string& what) const;
  const nlohmann::ordered_json* obj_;
  std::string where_;
  bool strict_;
  std::set<std::string> taken_;
};

}  // namespace fp
