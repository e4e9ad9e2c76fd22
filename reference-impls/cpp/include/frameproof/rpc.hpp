// The `rpc` protocol (spec/rpc.md, galay-rpc frames): a 16-byte big-endian header and a typed
// body. The streaming decoder (RPC-HDR-*, RPC-BODY-*, RPC-LIM-*, RPC-STR-*), the encoder, the
// client matcher keyed by request id (RPC-ID-*, RPC-MATCH-*) and the server session with its two
// echo endpoints, unary (RPC-ECHO-*, RPC-MODE-*) and stream (RPC-STREAM-*), chosen per connection
// by the first frame on the network (RPC-ECHO-7).
#pragma once

#include <array>
#include <string_view>
#include <unordered_map>

#include "frameproof/codec.hpp"
#include "frameproof/matcher.hpp"

namespace fp {

namespace rpc {
inline constexpr std::size_t kHeaderLen = 16;
inline constexpr std::uint64_t kDefaultMaxBody = 16u * 1024u * 1024u;  // RPC-LIM-1
inline constexpr std::uint64_t kMaxBodyField = 0xFFFFFFFFu;
inline constexpr std::uint8_t kVersion = 1;
// RPC-HDR-4
inline constexpr std::uint8_t kRequest = 0x01, kResponse = 0x02, kHeartbeat = 0x03, kError = 0x04, kInit = 0x10,
                              kInitAck = 0x11, kData = 0x12, kEnd = 0x13, kCancel = 0x14;
inline constexpr std::uint8_t kEndStream = 0x04;  // RPC-HDR-5
// RPC-ERR-1
inline constexpr std::uint16_t kOk = 0, kServiceNotFound = 2, kMethodNotFound = 3;
// The conformance echo service (spec/rpc.md §9, §10).
inline constexpr std::string_view kEchoService = "frameproof.Echo";
inline constexpr std::string_view kEchoMethod = "echo";
// The echo service's method registered for the UNARY call mode (0) only (RPC-ECHO-8).
inline constexpr std::string_view kUnaryOnlyMethod = "unary_only";

[[nodiscard]] constexpr bool known_type(std::uint32_t t) {
  return (t >= kRequest && t <= kError) || (t >= kInit && t <= kCancel);
}
// STREAM_INIT_ACK, STREAM_END, STREAM_CANCEL: empty bodies (RPC-BODY-5).
[[nodiscard]] constexpr bool control_type(std::uint32_t t) { return t == kInitAck || t == kEnd || t == kCancel; }
// REQUEST and STREAM_INIT carry the name fields (RPC-BODY-1, RPC-BODY-3).
[[nodiscard]] constexpr bool named_type(std::uint32_t t) { return t == kRequest || t == kInit; }
}  // namespace rpc

// One rpc frame: the header fields and the typed body fields, with views into the decoder's
// buffer (or the caller's memory). The fields are wider than the wire's so that an encoder can
// refuse what does not fit (RPC-HDR-3, RPC-HDR-4, RPC-BODY-2); the flags, reserved and id are
// written modulo 2^8 / 2^32.
struct RpcFrame {
  std::uint32_t version = rpc::kVersion;
  std::uint32_t type = rpc::kRequest;
  std::uint32_t flags = rpc::kEndStream;
  std::uint32_t reserved = 0;
  std::uint32_t id = 0;
  ByteView service;      // REQUEST, STREAM_INIT
  ByteView method;       // REQUEST, STREAM_INIT
  std::uint32_t error_code = 0;  // RESPONSE
  ByteView payload;      // the bytes after the typed body fields
};

class Rpc;

// The streaming decoder of one rpc connection, over the bounded FrameBuffer (RPC-LIM-3): a header
// is judged as soon as its 16 bytes are there (§11: RPC-HDR-2, RPC-HDR-3, RPC-HDR-4, RPC-BODY-5,
// RPC-LIM-1, in that order), the body fields once the whole body is (RPC-BODY-1..3).
class RpcDecoder {
 public:
  enum class Status { Frame, NeedMore, Error };

  explicit RpcDecoder(const Rpc& proto, std::size_t read_chunk = kReadChunk);

  std::span<std::uint8_t> prepare() { return buf_.prepare(); }
  void commit(std::size_t n) { buf_.commit(n); }
  // The next complete frame (views valid until the next prepare()/feed()); after Error, error()
  // holds it and every later call returns Error (RPC-STR-4).
  Status next(RpcFrame& out);

  template <class F>
  std::optional<ProtocolError> feed(ByteView data, F&& on_frame) {
    if (error_) return error_;
    while (true) {
      RpcFrame f;
      Status st;
      while ((st = next(f)) == Status::Frame) on_frame(static_cast<const RpcFrame&>(f));
      if (st == Status::Error) return error_;
      if (data.empty()) return std::nullopt;
      auto space = prepare();
      const std::size_t n = std::min(space.size(), data.size());
      std::copy_n(data.data(), n, space.data());
      commit(n);
      data = data.subspan(n);
    }
  }

  // End of stream: RPC-STR-3 at the unfinished frame, if any.
  std::optional<ProtocolError> finish() {
    if (!error_ && buf_.buffered() > 0)
      error_ = ProtocolError{"RPC-STR-3", buf_.position(), "stream ended inside a frame"};
    return error_;
  }

  [[nodiscard]] const std::optional<ProtocolError>& error() const { return error_; }
  [[nodiscard]] std::size_t capacity() const { return buf_.capacity(); }
  [[nodiscard]] std::uint64_t position() const { return buf_.position(); }
  [[nodiscard]] std::size_t held() const { return buf_.held(); }
  void release_if_empty() { buf_.release_if_empty(); }

 private:
  Status fail(const char* req, const char* msg) {
    error_ = ProtocolError{req, buf_.position(), msg};
    return Status::Error;
  }
  std::uint64_t max_body_;
  FrameBuffer buf_;
  std::optional<ProtocolError> error_;
};

// The client side of one rpc connection: ids 0, 1, 2 ... modulo 2^32 (RPC-ID-1), a send whose id
// is still pending is refused (RPC-ID-2), RESPONSEs matched by id in any order (RPC-MATCH-1),
// other frames ignored (RPC-MATCH-4).
class IdMatcher {
 public:
  static constexpr std::size_t kMaxWindow = 65536;

  explicit IdMatcher(std::uint64_t timeout) : timeout_(timeout) {}

  // The REQUEST to send: `given`'s service, method and flags (a plain call when nullptr: the echo
  // service, flags UNARY|END_STREAM), the next id. nullopt: refused (a one-way message, a frame
  // that is not a REQUEST, or RPC-ID-2).
  [[nodiscard]] std::optional<RpcFrame> next(SendKind kind, const RpcFrame* given) const;
  void begin(SendKind kind, std::uint64_t index, std::uint64_t now);
  Match complete(const RpcFrame& f);
  // Expired requests time out, oldest first (RPC-MATCH-3); the connection stays usable.
  bool expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed);
  void clear(std::vector<std::uint64_t>& ids);
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const;
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }
  // fp-load: the echo of `request` is a RESPONSE with error code 0 and flags mode | END_STREAM
  // (RPC-ECHO-1, RPC-MODE-2).
  static std::optional<std::string> check_echo(const RpcFrame& reply, const RpcFrame& request);

 private:
  struct Pending {
    std::uint64_t index;
    std::uint64_t sent;
  };
  std::uint64_t timeout_;
  std::uint32_t next_id_ = 0;
  std::unordered_map<std::uint32_t, Pending> pending_;
};

// The server side of one rpc connection. Endpoint Auto (the network server) picks Unary or Stream
// from the first frame (RPC-ECHO-7); the testee's `serve` names one ("" / "unary", "stream").
class RpcSession {
 public:
  enum class Endpoint { Auto, Unary, Stream };

  explicit RpcSession(const Rpc& proto);                             // the network connection
  RpcSession(const Rpc& proto, std::string_view endpoint);           // `serve`
  RpcSession(const Rpc& proto, Endpoint ep, std::size_t read_chunk = kReadChunk);

  std::span<std::uint8_t> prepare() { return dec_.prepare(); }
  void commit(std::size_t n) { dec_.commit(n); }

  // Replies to every complete frame buffered (out.frame(f), out.reply(header, payload)). Returns
  // false once the session has closed: a decoding error, or a frame the unary endpoint refuses
  // (RPC-ECHO-4), closes it after the replies to the frames before it.
  template <class Out>
  bool process(Out& out) {
    if (closed_) return false;
    RpcFrame f;
    while (true) {
      const std::uint64_t at = dec_.position();
      const RpcDecoder::Status st = dec_.next(f);
      if (st == RpcDecoder::Status::NeedMore) return true;
      if (st == RpcDecoder::Status::Error) {
        error_ = dec_.error();
        closed_ = true;
        return false;
      }
      out.frame(static_cast<const RpcFrame&>(f));
      if (!answer(f)) {
        error_ = ProtocolError{"RPC-ECHO-4", at, "the unary endpoint takes REQUESTs only"};
        closed_ = true;
        return false;
      }
      if (reply_len_) out.reply(ByteView(reply_.data(), reply_len_), reply_payload_);
    }
  }

  template <class Out>
  bool feed(ByteView data, Out& out) {
    while (process(out) && !data.empty()) {
      auto space = prepare();
      const std::size_t n = std::min(space.size(), data.size());
      std::copy_n(data.data(), n, space.data());
      commit(n);
      data = data.subspan(n);
    }
    return !closed_;
  }

  // The peer's EOF: closes, with RPC-STR-3 if a frame was left unfinished (RPC-ECHO-5,
  // RPC-STREAM-8: no END or CANCEL for an open stream).
  void end_of_input() {
    if (closed_) return;
    closed_ = true;
    error_ = dec_.finish();
  }

  [[nodiscard]] bool closed() const { return closed_; }
  [[nodiscard]] const std::optional<ProtocolError>& error() const { return error_; }
  // fp-server's resource limits (session.hpp)
  [[nodiscard]] std::size_t held() const { return dec_.held(); }
  [[nodiscard]] bool unfinished() const { return dec_.held() != 0; }
  void release_if_empty() { dec_.release_if_empty(); }

 private:
  // Sets the reply (reply_len_ 0: none); false if the unary endpoint closes on this frame.
  bool answer(const RpcFrame& f);
  bool unary(const RpcFrame& f);
  void stream(const RpcFrame& f);
  void control(std::uint8_t type, std::uint32_t id);

  RpcDecoder dec_;
  Endpoint ep_;
  bool open_ = false;          // stream endpoint: a stream is open
  std::uint32_t stream_id_ = 0;
  std::array<std::uint8_t, rpc::kHeaderLen + 2> reply_{};
  std::size_t reply_len_ = 0;
  ByteView reply_payload_;
  bool closed_ = false;
  std::optional<ProtocolError> error_;
};

class Rpc {
 public:
  static constexpr std::string_view kName = "rpc";
  static constexpr bool kSendsFrames = true;
  static constexpr bool kStreams = true;
  // fp-load: an unmatched RESPONSE (RPC-MATCH-2) and a frame of another type (RPC-MATCH-4) complete nothing
  // and are neither replies nor errors of the report
  static constexpr bool kStraysAreErrors = false;
  // fp-load --mode batched: the default --batch (no published batched benchmark to follow: the benchmark's
  // pipelined window, 256)
  static constexpr std::size_t kDefaultBatch = 256;
  using FrameType = RpcFrame;
  using DecoderType = RpcDecoder;
  using Client = IdMatcher;
  using Session = RpcSession;

  // max_body 0 = the spec default (16 MiB).
  explicit Rpc(std::uint64_t max_body = 0) : max_body_(max_body) {}
  // The codec JSON: {"protocol": "rpc", "rpc": {"max_body": N}}; the limit is rpc.max_body
  // ("limits.max_payload" must be absent or 0).
  static Rpc configure(Limits limits, JsonParams& params);

  [[nodiscard]] std::optional<ProtocolError> validate() const { return std::nullopt; }
  [[nodiscard]] std::optional<std::string> unsupported() const { return std::nullopt; }
  // The effective maximum body (RPC-LIM-1, RPC-LIM-2), at most what the length field carries.
  [[nodiscard]] std::uint64_t max_body() const {
    return std::min(max_body_ ? max_body_ : rpc::kDefaultMaxBody, rpc::kMaxBodyField);
  }
  [[nodiscard]] std::uint64_t max_payload() const { return max_body(); }
  // The largest payload of a call to the echo service (the load client's --payload, HAR-CLI-2): the body
  // less the names, each behind its u16 length (RPC-BODY-1).
  [[nodiscard]] std::uint64_t max_request_payload() const {
    const std::uint64_t names = 4 + rpc::kEchoService.size() + rpc::kEchoMethod.size();
    return max_body() > names ? max_body() - names : 0;
  }
  [[nodiscard]] const char* truncation_requirement() const { return "RPC-STR-3"; }
  static bool has_endpoint(std::string_view e) { return e.empty() || e == "unary" || e == "stream"; }

  // RPC-HDR-3, RPC-HDR-4, RPC-BODY-5, RPC-BODY-6, RPC-BODY-2, then RPC-LIM-2 (§11). Appends to
  // `out`, or leaves it unchanged on error.
  std::optional<ProtocolError> encode(const RpcFrame& f, Bytes& out) const;
  // The header and the typed body fields of a frame of `len` payload bytes, known to be
  // encodable; returns their length (header_bound(header) at most).
  std::size_t write_header(std::uint8_t* dst, const RpcFrame& header, std::uint64_t len) const;
  [[nodiscard]] std::size_t header_bound(const RpcFrame& h) const;
  // The unary endpoint's reply header to a REQUEST of the echo service (RPC-ECHO-1, RPC-MODE-2):
  // RESPONSE, error code 0, flags mode | END_STREAM, the request's id (fp-microbench's encode).
  [[nodiscard]] std::optional<RpcFrame> echo(const RpcFrame& request) const {
    RpcFrame r;
    r.type = rpc::kResponse;
    r.flags = (request.flags & 3) | rpc::kEndStream;
    r.id = request.id;
    r.error_code = rpc::kOk;
    return r;
  }

  [[nodiscard]] nlohmann::ordered_json frame_json(const RpcFrame& f) const;
  [[nodiscard]] RpcFrame frame_from_json(const nlohmann::ordered_json& j) const;

  // fp-load --variant: the call mode of each REQUEST (RPC-MODE-1), flags 0..3.
  static std::vector<std::string_view> variants() { return {"unary", "client-stream", "server-stream", "bidi"}; }
  [[nodiscard]] RpcFrame variant_request(std::size_t variant) const;
  // fp-load --mode stream: STREAM_INIT (the echo service) -> STREAM_INIT_ACK, STREAM_DATA ->
  // its echo, STREAM_END -> STREAM_END, all with the stream's id (spec/rpc.md §10).
  [[nodiscard]] RpcFrame stream_frame(StreamStep step, std::uint32_t id) const;
  [[nodiscard]] std::optional<std::string> stream_check(StreamStep step, const RpcFrame& reply, std::uint32_t id) const;

 private:
  std::uint64_t max_body_;
};

}  // namespace fp
