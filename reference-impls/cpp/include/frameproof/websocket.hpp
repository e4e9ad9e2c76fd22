// The `websocket` protocol (spec/websocket.md, RFC 6455): the frame codec for both roles (a
// server receives masked frames and sends unmasked ones, a client the reverse), masking at memory
// speed, the message layer (fragments, control frames between them, incremental fail-fast UTF-8
// across fragments, the close frame, the frame and message limits), the server session (the
// opening handshake on the network, then the echo service with ping/pong and the close handshake)
// and the client side fp-load and fp-autobahn-client use.
#pragma once

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "frameproof/codec.hpp"
#include "frameproof/matcher.hpp"
#include "frameproof/websocket_deflate.hpp"

namespace fp {

namespace ws {
inline constexpr std::uint8_t kCont = 0x0, kText = 0x1, kBinary = 0x2, kClose = 0x8, kPing = 0x9, kPong = 0xA;
inline constexpr std::size_t kMaxHeader = 14;                               // 2 + 8 + 4
inline constexpr std::uint64_t kDefaultMaxMessage = 100ull * 1024 * 1024;  // WS-LIM-2
inline constexpr std::uint64_t kCapacity = (1ull << 63) - 1;               // WS-LEN-4
inline constexpr std::size_t kMaxHandshake = 8192;                         // request/response head
inline constexpr std::string_view kSubprotocol = "frameproof.echo";       // WS-HS-4

[[nodiscard]] constexpr bool known_opcode(std::uint32_t op) { return op <= 2 || (op >= 8 && op <= 10); }
[[nodiscard]] constexpr bool control_opcode(std::uint32_t op) { return op >= 8; }
// WS-CLOSE-2: the status codes a peer may send.
[[nodiscard]] constexpr bool close_code_valid(std::uint32_t c) {
  return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1014) || (c >= 3000 && c <= 4999);
}
// WS-ERR-1: the close code of an error class (0: none, e.g. WS-STR-3).
std::uint16_t close_code_for(std::string_view requirement);

// XORs `n` bytes at `p` with the 4-byte key, starting at key octet `phase % 4` (WS-MASK-3):
// 16 bytes at a time with SSE2 where available, then 8-byte words, then a scalar tail.
void mask(std::uint8_t* p, std::size_t n, const std::uint8_t key[4], std::size_t phase = 0);

// Writes the first bytes of a frame header: byte 0 as given (FIN, RSV, opcode), then the mask
// bit and the payload length in its minimal form (WS-LEN-2); returns how many (2, 4 or 10). The
// masking key, if any, follows.
inline std::size_t put_header(std::uint8_t* dst, std::uint8_t byte0, bool masked, std::uint64_t len) {
  const std::uint8_t m = masked ? 0x80 : 0;
  dst[0] = byte0;
  if (len < 126) {
    dst[1] = static_cast<std::uint8_t>(m | len);
    return 2;
  }
  if (len < 65536) {
    dst[1] = m | 126;
    dst[2] = static_cast<std::uint8_t>(len >> 8);
    dst[3] = static_cast<std::uint8_t>(len);
    return 4;
  }
  dst[1] = m | 127;
  for (int i = 0; i < 8; ++i) dst[2 + i] = static_cast<std::uint8_t>(len >> (56 - 8 * i));
  return 10;
}

// Incremental UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF)
// that fails at the first byte after which the input can no longer be completed (WS-UTF8-2).
class Utf8 {
 public:
  static constexpr std::size_t kOk = static_cast<std::size_t>(-1);
  // The index of the first byte that makes the input so far invalid, or kOk.
  std::size_t feed(const std::uint8_t* p, std::size_t n);
  // Between code points (a message may end here).
  [[nodiscard]] bool complete() const { return need_ == 0; }

 private:
  std::uint8_t need_ = 0;  // continuation bytes still due
  std::uint8_t lo_ = 0x80, hi_ = 0xBF;  // allowed range of the next one
};
bool utf8_valid(ByteView b);

// Handshake helpers: Sec-WebSocket-Accept = base64(SHA-1(key + GUID)) (WS-HS-2), base64 of bytes.
std::string accept_key(std::string_view key);
std::string base64(ByteView b);
// Fills `out` with bytes from the system's entropy source (masking keys, handshake nonces).
void random_bytes(std::uint8_t* out, std::size_t n);
// A fresh masking key (WS-MASK-3) from the entropy source, drawn 4 KiB at a time.
void fresh_key(std::array<std::uint8_t, 4>& key);
// ASCII lowercase (HTTP header names and tokens, the codec JSON's role).
std::string ascii_lower(std::string_view s);
// fp-load --variant prose: n bytes of the prose payload of request `index` (its decimal digits, then
// " word" after " word", each of 64 common English words picked by the top six bits of splitmix64 of a
// state started at `index`; reference-impls/README.md, the Python reference's load.prose).
void prose_payload(std::uint64_t index, std::uint8_t* dst, std::size_t n);
}  // namespace ws

// One websocket frame. `key`/`key_len`: the masking key as given (key_len 5 = more than 4 bytes,
// for an encoder to refuse, WS-MASK-4); `payload`: unmasked.
struct WsFrame {
  bool fin = true;
  std::uint32_t rsv = 0;  // RSV1..RSV3 as bits 2..0
  std::uint32_t opcode = ws::kBinary;
  bool masked = false;
  std::array<std::uint8_t, 4> key{};
  std::uint8_t key_len = 0;
  ByteView payload;
};

class WebSocket;
class WsDecoder;

// One fp-load connection's permessage-deflate, once its opening agreed it: the extension in the
// client role, the plain payload of the request being compressed, the inflated echo.
struct WsLoadDeflate {
  WsLoadDeflate(const wsd::Params& agreed, std::uint64_t max_message) : ext(agreed, max_message, true) {}
  wsd::Extension ext;
  Bytes plain;
  Bytes inflated;
};

// The receiving endpoint of one connection (after the opening handshake): frames judged in the
// order of spec §14, unmasked in place as they arrive, text checked as it arrives (fail-fast,
// across fragments), the close frame validated; nothing is read after a close frame (WS-CLOSE-4).
class WsDecoder {
 public:
  enum class Status { Frame, NeedMore, Error };

  explicit WsDecoder(const WebSocket& proto, std::size_t read_chunk = kReadChunk);

  std::span<std::uint8_t> prepare() { return buf_.prepare(); }
  void commit(std::size_t n) { buf_.commit(n); }
  Status next(WsFrame& out);

  // The fast path of fp-server's echo session (as Decoder::drain_complete, codec.hpp): calls
  // each(const WsFrame&) for the whole unfragmented binary frames at the front of the buffer
  // (FIN, no RSV bit, masked as the role wants, a 7- or 16-bit minimal length within both
  // limits, outside a fragmented message), unmasked in place, then takes them all off the buffer
  // at once; returns the number of frames. It stops before any other frame (text, control,
  // fragments, errors, an unfinished or partly unmasked one), which next() then judges as
  // always: drain_complete() then next() delivers exactly what next() alone does.
  template <class F>
  std::size_t drain_complete(F&& each) {
    if (error_ || closed_ || in_message_ || done_ != 0) return 0;
    const std::span<std::uint8_t> avail = buf_.mutable_data();
    std::uint8_t* const begin = avail.data();
    std::uint8_t* p = begin;
    std::size_t left = avail.size();
    const std::uint8_t mask_bit = server_ ? 0x80 : 0;  // a server receives masked frames only
    const std::size_t key_len = server_ ? 4 : 0;
    const std::uint64_t limit = std::min(max_frame_, max_message_);  // WS-LIM-1, WS-LIM-2
    std::size_t frames = 0;
    WsFrame f;  // FIN, binary, no RSV bit
    f.masked = server_;
    f.key_len = static_cast<std::uint8_t>(key_len);
    while (left >= 2 && p[0] == (0x80 | ws::kBinary) && (p[1] & 0x80) == mask_bit) {
      std::size_t n = p[1] & 0x7F;
      std::size_t ext = 0;
      if (n == 127) break;
      if (n == 126) {
        if (left < 4) break;
        n = (static_cast<std::size_t>(p[2]) << 8) | p[3];
        if (n < 126) break;  // WS-LEN-3 (next() says so)
        ext = 2;
      }
      const std::size_t hl = 2 + ext + key_len;
      if (n > limit || left < hl || left - hl < n) break;
      std::uint8_t* const payload = p + hl;
      if (server_) {
        std::memcpy(f.key.data(), p + 2 + ext, 4);
        ws::mask(payload, n, f.key.data());
      }
      f.payload = ByteView(payload, n);
      each(static_cast<const WsFrame&>(f));
      p += hl + n;
      left -= hl + n;
      ++frames;
    }
    if (frames) {
      // the message state after a whole binary message, as next() leaves it
      text_ = false;
      size_ = 0;
      utf8_ = ws::Utf8{};
      buf_.consume(static_cast<std::size_t>(p - begin));
    }
    return frames;
  }

  template <class F>
  std::optional<ProtocolError> feed(ByteView data, F&& on_frame) {
    if (error_) return error_;
    while (true) {
      WsFrame f;
      Status st;
      while ((st = next(f)) == Status::Frame) on_frame(static_cast<const WsFrame&>(f));
      if (st == Status::Error) return error_;
      if (data.empty() || closed_) return std::nullopt;  // after a close frame: discarded unread
      auto space = prepare();
      const std::size_t n = std::min(space.size(), data.size());
      std::copy_n(data.data(), n, space.data());
      commit(n);
      data = data.subspan(n);
    }
  }

  // End of stream: WS-STR-3 at the unfinished frame (a stream that ends between frames, even
  // inside a message, or after a close frame is not an error).
  std::optional<ProtocolError> finish();

  [[nodiscard]] const std::optional<ProtocolError>& error() const { return error_; }
  [[nodiscard]] std::size_t capacity() const { return buf_.capacity(); }
  [[nodiscard]] std::uint64_t position() const { return buf_.position(); }
  [[nodiscard]] std::size_t held() const { return buf_.held(); }
  // Inside a fragmented message (between its frames).
  [[nodiscard]] bool in_message() const { return in_message_; }
  void release_if_empty() { buf_.release_if_empty(); }
  // A close frame was delivered.
  [[nodiscard]] bool closed() const { return closed_; }
  [[nodiscard]] std::uint64_t max_message() const { return max_message_; }
  // permessage-deflate was accepted: RSV1 marks the first frame of a compressed message, whose
  // payload is not text until inflated (the session checks it, WSD-CMP-4); RSV1 anywhere else is
  // WSD-FRM-2.
  void allow_rsv1() { rsv1_ = true; }

 private:
  Status fail(const char* req, const char* msg);
  bool server_;
  bool rsv1_ = false;
  bool compressed_ = false;  // the message between frames is compressed
  std::uint64_t max_frame_;
  std::uint64_t max_message_;
  FrameBuffer buf_;
  std::optional<ProtocolError> error_;
  bool closed_ = false;
  // the message between frames
  bool in_message_ = false;
  bool text_ = false;
  std::uint64_t size_ = 0;
  ws::Utf8 utf8_;
  // the frame at the front of the buffer, while it arrives
  std::uint64_t done_ = 0;  // payload bytes unmasked (and, for text, validated)
  ws::Utf8 frame_utf8_;
};

// FIFO matcher of a websocket client (fp-load): every data message completes the oldest pending
// request; control frames complete nothing.
class WsFifoMatcher {
 public:
  static constexpr std::size_t kMaxWindow = 65536;
  explicit WsFifoMatcher(std::uint64_t timeout) : timeout_(timeout) {}
  [[nodiscard]] std::optional<WsFrame> next(SendKind kind, const WsFrame* given) const;
  void begin(SendKind kind, std::uint64_t index, std::uint64_t now);
  Match complete(const WsFrame& f);
  bool expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed);
  void clear(std::vector<std::uint64_t>& ids);
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const;
  [[nodiscard]] std::size_t pending() const { return queue_.size() - head_; }
  // An echo is one FIN frame with the request's opcode (WS-ECHO-1).
  static std::optional<std::string> check_echo(const WsFrame& reply, const WsFrame& request);

 private:
  struct Pending {
    std::uint64_t index, sent;
  };
  std::uint64_t timeout_;
  std::vector<Pending> queue_;
  std::size_t head_ = 0;
};

// The server side of one connection: the opening handshake (network connections only, WS-HS-*),
// then the echo service (WS-ECHO-*): messages echoed whole as one unmasked FIN frame, pings
// answered, the close handshake (WS-CLOSE-5), errors closed with their close code (WS-ERR-1).
// Output: out.reply(header, payload, essential) (essential: the handshake answer, pongs and
// close frames, which fp-server --sink still sends), out.frame(f) for every decoded frame.
// The echo service a server offers (codec JSON websocket.path, websocket.subprotocol;
// spec/websocket.md §13): an empty path serves any request target, another answers 404 for every
// other one (RFC 6455 §4.2.2); the subprotocol is selected when offered (WS-HS-4).
struct WsEndpoint {
  std::string path;
  std::string subprotocol{ws::kSubprotocol};
  bool offers = false;  // the load client offers `subprotocol` (it was configured)
  bool permessage_deflate = false;  // fp-server accepts permessage-deflate (spec/websocket-deflate.md)
};

class WsSession {
 public:
  explicit WsSession(const WebSocket& proto);                    // network: handshake first
  WsSession(const WebSocket& proto, std::string_view endpoint);  // `serve`: frames only
  // The echo service with `proto`'s role, after a handshake done elsewhere: a client role
  // receives unmasked frames and sends its replies masked with fresh keys (fp-autobahn-client).
  WsSession(const WebSocket& proto, bool own_role);
  // The opening (done elsewhere, fp-autobahn-client) agreed permessage-deflate: the peer's compressed
  // messages are inflated, the echoes compressed with this role's window and context.
  void enable_deflate(const wsd::Params& agreed);

  std::span<std::uint8_t> prepare();
  void commit(std::size_t n);

  template <class Out>
  bool process(Out& out) {
    if (closed_) return false;
    if (!handshaken_ && !handshake(out)) return !closed_;
    WsFrame f;
    while (true) {
      // whole binary messages where they lie (WsDecoder::drain_complete), then the next frame
      // of any other kind the usual way
      dec_.drain_complete([&](const WsFrame& g) {
        out.frame(g);
        // on_frame's case of an unfragmented data message (WS-ECHO-1), never a close
        msg_op_ = ws::kBinary;
        msg_.clear();
        reply_frame(out, ws::kBinary, g.payload, false);
      });
      const WsDecoder::Status st = dec_.next(f);
      if (st == WsDecoder::Status::NeedMore) return true;
      if (st == WsDecoder::Status::Error) {
        error_ = dec_.error();
        closed_ = true;
        const std::uint16_t code = ws::close_code_for(error_->requirement);
        if (code) reply_close(out, code, true);  // WS-ERR-1: the class's code, no reason
        return false;
      }
      out.frame(static_cast<const WsFrame&>(f));
      on_frame(f, out);
      if (closed_) return false;
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

  // The peer's EOF without a close frame: close without writing (WS-ECHO-3); WS-STR-3 if a
  // frame was left unfinished.
  void end_of_input() {
    if (closed_) return;
    closed_ = true;
    if (handshaken_) error_ = dec_.finish();
  }

  [[nodiscard]] bool closed() const { return closed_; }
  [[nodiscard]] const std::optional<ProtocolError>& error() const { return error_; }
  // fp-server's resource limits (session.hpp): the unfinished frame, the fragments of an
  // unfinished message and a partial opening handshake are held memory.
  [[nodiscard]] std::size_t held() const {
    return dec_.held() + (msg_.empty() ? 0 : msg_.capacity()) + (handshaken_ ? 0 : hs_len_) + masked_.capacity() +
           (pmd_ ? pmd_->held() : 0);  // WSD-LIM-2: the zlib state and the compressed echo
  }
  [[nodiscard]] bool unfinished() const { return dec_.held() != 0 || dec_.in_message() || !msg_.empty(); }
  [[nodiscard]] bool handshaking() const { return !handshaken_ && !closed_; }
  void release_if_empty() {
    dec_.release_if_empty();
    if (msg_.empty() && msg_.capacity() > 0) Bytes().swap(msg_);
  }

 private:
  template <class Out>
  void reply_frame(Out& out, std::uint8_t opcode, ByteView payload, bool essential, bool rsv1 = false) {
    if constexpr (requires { out.reply_space(std::size_t{}, std::size_t{}); }) {
      // written straight into the sink's output (session.hpp), a server's unmasked frame
      if (!client_) {
        if (std::uint8_t* d = out.reply_space(ws::kMaxHeader, payload.size())) {
          const std::size_t h =
              ws::put_header(d, static_cast<std::uint8_t>(0x80 | (rsv1 ? 0x40 : 0) | opcode), false, payload.size());
          if (!payload.empty()) std::memcpy(d + h, payload.data(), payload.size());
          out.replied(h + payload.size());
          return;
        }
      }
    }
    const std::size_t h = header(opcode, payload.size(), rsv1);
    if (client_) {  // WS-MASK-4: a client's frames are masked; the payload is masked in a copy
      masked_.assign(payload.begin(), payload.end());
      ws::mask(masked_.data(), masked_.size(), hdr_.data() + h - 4);
      payload = masked_;
    }
    out.reply(ByteView(hdr_.data(), h), payload, essential);
  }
  template <class Out>
  void reply_close(Out& out, std::uint16_t code, bool with_code) {
    code_[0] = static_cast<std::uint8_t>(code >> 8);
    code_[1] = static_cast<std::uint8_t>(code);
    reply_frame(out, ws::kClose, with_code ? ByteView(code_.data(), 2) : ByteView(), true);
  }
  template <class Out>
  void on_frame(const WsFrame& f, Out& out) {
    switch (f.opcode) {
      case ws::kPing: reply_frame(out, ws::kPong, f.payload, true); return;  // WS-PING-1
      case ws::kPong: return;                                              // WS-PING-2
      case ws::kClose:  // WS-CLOSE-5: the same code, no reason; then the server closes
        closed_ = true;
        if (f.payload.size() >= 2) reply_close(out, static_cast<std::uint16_t>((f.payload[0] << 8) | f.payload[1]), true);
        else reply_close(out, 0, false);
        return;
      default: break;
    }
    if (f.opcode != ws::kCont) {
      msg_op_ = static_cast<std::uint8_t>(f.opcode);
      msg_.clear();
      msg_z_ = (f.rsv & 4) != 0;  // WSD-FRM-1: compressed (the decoder allows RSV1 only after it was agreed)
      msg_utf8_ = ws::Utf8{};
      if (f.fin && !msg_z_) {  // WS-ECHO-1: unfragmented, echoed from the buffer without a copy
        reply_frame(out, msg_op_, f.payload, false);
        return;
      }
    }
    if (msg_z_) {  // inflated as it arrives, within max_message (WSD-LIM-1); the echo compressed
      if (auto e = inflate_frame(f)) {
        error_ = std::move(e);
        closed_ = true;
        reply_close(out, ws::close_code_for(error_->requirement), true);
        return;
      }
      if (!f.fin) return;
      if (pmd_->compress && deflate_message()) reply_frame(out, msg_op_, pmd_->zout, false, true);
      else reply_frame(out, msg_op_, msg_, false);  // a window zlib cannot compress with, or WSD-FRM-3
      if (pmd_->zout.capacity() > (64u << 10)) Bytes().swap(pmd_->zout);
    } else {
      msg_.insert(msg_.end(), f.payload.begin(), f.payload.end());
      if (!f.fin) return;
      reply_frame(out, msg_op_, msg_, false);
    }
    if (msg_.capacity() > (1u << 20)) Bytes().swap(msg_);
    else msg_.clear();
  }
  // Writes the header of a FIN frame into hdr_ (a client's masked with a fresh key); returns its
  // length.
  std::size_t header(std::uint8_t opcode, std::size_t len, bool rsv1 = false);
  // permessage-deflate (websocket_deflate.cpp): the response header for the request's offers
  // (empty: declined), one frame of a compressed message inflated onto msg_ (UTF-8 checked for
  // text, WSD-CMP-4), and msg_ compressed for its echo into pmd_->zout (false: the echo goes
  // uncompressed, the compressed payload would be longer than the message, WSD-FRM-3).
  std::string negotiate_deflate(const std::string* offers);
  std::optional<ProtocolError> inflate_frame(const WsFrame& f);
  bool deflate_message();
  // The opening handshake (WS-HS-1..5): false while the request head is incomplete or after a
  // refusal (closed_ then).
  template <class Out>
  bool handshake(Out& out) {
    const auto r = answer_handshake();
    if (r.reply.empty()) return false;
    out.reply(ByteView(reinterpret_cast<const std::uint8_t*>(r.reply.data()), r.reply.size()), ByteView(), true);
    if (!r.ok) {
      closed_ = true;
      return false;
    }
    handshaken_ = true;
    return true;
  }
  struct HandshakeResult {
    std::string reply;  // empty: the head is not complete yet
    bool ok = false;
  };
  HandshakeResult answer_handshake();

  WsDecoder dec_;
  bool client_ = false;
  Bytes masked_;  // client role: the masked copy of a reply's payload
  bool handshaken_;
  Bytes hs_;  // the request head while it arrives
  std::size_t hs_len_ = 0;
  std::array<std::uint8_t, ws::kMaxHeader> hdr_{};
  std::array<std::uint8_t, 2> code_{};
  std::uint8_t msg_op_ = ws::kBinary;
  Bytes msg_;  // a fragmented message being reassembled (bounded by max_message, WS-LIM-2)
  bool closed_ = false;
  std::optional<ProtocolError> error_;
  std::shared_ptr<const WsEndpoint> ep_;  // null: the default echo service
  std::unique_ptr<wsd::Extension> pmd_;   // permessage-deflate, once accepted
  bool msg_z_ = false;                    // the message being received is compressed
  ws::Utf8 msg_utf8_;                     // its inflated text so far
};

// The client side of the opening handshake (fp-load, fp-autobahn-client).
struct WsClientOpening {
  using Agreed = std::optional<wsd::Params>;  // what check() found agreed (fp-load: Connection::opening)
  std::string request;  // GET ... with a fresh Sec-WebSocket-Key
  std::string key;
  std::string offered;  // the subprotocol offered (empty: none), the only one the answer may name
  bool deflate = false;  // permessage-deflate offered (wsd::kClientOffer)
  // `host` for the Host header, `path` the request target, `subprotocol` offered unless empty,
  // permessage-deflate with `deflate`.
  static WsClientOpening make(std::string_view host, std::string_view path, std::string_view subprotocol = {},
                              bool deflate = false);
  // The response head (up to and including the blank line): empty if it is a 101 with the right
  // Sec-WebSocket-Accept, else why not. With `deflate`, the extension's response is checked
  // (WSD-NEG-5) and what it agreed goes to `agreed` (nullopt: declined).
  [[nodiscard]] std::string check(std::string_view head, std::optional<wsd::Params>* agreed = nullptr) const;
};

class WebSocket {
 public:
  static constexpr std::string_view kName = "websocket";
  static constexpr bool kSendsFrames = true;
  static constexpr bool kStreams = false;
  // fp-load --mode batched: the default --batch (no published batched benchmark to follow: the benchmark's
  // pipelined window, 256)
  static constexpr std::size_t kDefaultBatch = 256;
  using FrameType = WsFrame;
  using DecoderType = WsDecoder;
  using Client = WsFifoMatcher;
  using Session = WsSession;
  using ClientOpening = WsClientOpening;  // fp-load: the opening handshake before any frame

  // max_payload: the frame limit (WS-LIM-1, WS-LIM-3; 0 = 10 MiB); max_message: the message
  // limit (WS-LIM-2; 0 = 100 MiB); client: the role.
  explicit WebSocket(Limits limits = {}, bool client = false, std::uint64_t max_message = 0)
      : limits_(limits), client_(client), max_message_(max_message) {}
  // The codec JSON: {"protocol": "websocket", "limits": {"max_payload": N},
  //                  "websocket": {"role": "server"|"client", "max_message": M,
  //                                "path": "/ws/echo", "subprotocol": "echo.v1",
  //                                "permessage_deflate": true}}  (fp-server: opt-in RFC 7692).
  static WebSocket configure(Limits limits, JsonParams& params);

  [[nodiscard]] std::optional<ProtocolError> validate() const { return std::nullopt; }
  [[nodiscard]] std::optional<std::string> unsupported() const { return std::nullopt; }
  [[nodiscard]] std::uint64_t max_payload() const { return std::min(limits_.payload_or_default(), ws::kCapacity); }
  [[nodiscard]] std::uint64_t max_message() const {
    return std::min(max_message_ ? max_message_ : ws::kDefaultMaxMessage, ws::kCapacity);
  }
  [[nodiscard]] bool client() const { return client_; }
  [[nodiscard]] WebSocket as_server() const { return with_endpoint(WebSocket(limits_, false, max_message_)); }
  [[nodiscard]] WebSocket as_client() const { return with_endpoint(WebSocket(limits_, true, max_message_)); }
  // The echo service's path and subprotocol (null: any path, frameproof.echo, nothing offered).
  [[nodiscard]] const std::shared_ptr<const WsEndpoint>& endpoint() const { return endpoint_; }
  // fp-load: the opening request for the configured path (default "/"), offering its subprotocol.
  [[nodiscard]] WsClientOpening opening(std::string_view host) const {
    if (!endpoint_) return WsClientOpening::make(host, "/");
    return WsClientOpening::make(host, endpoint_->path.empty() ? "/" : endpoint_->path,
                                 endpoint_->offers ? std::string_view(endpoint_->subprotocol) : std::string_view(),
                                 endpoint_->permessage_deflate);
  }
  // fp-load: this copy (one connection's) after its opening agreed `agreed` (permessage-deflate;
  // nullopt: declined or not offered): requests go compressed from now on, compressed echoes are
  // inflated (incoming), and `dec` takes RSV1 on a message's first frame.
  void opened(const std::optional<wsd::Params>& agreed, WsDecoder& dec);
  // fp-load: the room write_request may need for a payload of `len` bytes.
  [[nodiscard]] std::size_t request_bound(const WsFrame& h, std::size_t len) const {
    return load_ ? ws::kMaxHeader + wsd::compress_bound(len) : header_bound(h) + len;
  }
  // fp-load: a received data frame as the request it answers carried it: a compressed echo (RSV1)
  // inflated into `scratch` (its payload held by this connection until the next call), which is
  // returned; any other frame is returned as it is. A compressed echo that does not inflate, or
  // comes in more than one frame, sets `why` (reported against the request it answers).
  const WsFrame& incoming(const WsFrame& f, WsFrame& scratch, std::string& why) const;
  [[nodiscard]] const char* truncation_requirement() const { return "WS-STR-3"; }
  static bool has_endpoint(std::string_view e) { return e.empty() || e == "echo"; }

  // WS-HDR-2, WS-HDR-3, WS-CTL-1, WS-CTL-2, WS-MASK-4, WS-LIM-3 (spec §14); the payload is
  // masked with the frame's key when it is masked.
  std::optional<ProtocolError> encode(const WsFrame& f, Bytes& out) const;
  // Header (minimal length, WS-LEN-2) and masking key of a frame of `len` payload bytes.
  std::size_t write_header(std::uint8_t* dst, const WsFrame& header, std::uint64_t len) const;
  [[nodiscard]] std::size_t header_bound(const WsFrame&) const { return ws::kMaxHeader; }
  // The echo of an unfragmented data message (WS-ECHO-1): one unmasked FIN frame, same opcode
  // (fp-microbench's encode; the session also answers control frames and fragments).
  [[nodiscard]] std::optional<WsFrame> echo(const WsFrame& request) const {
    WsFrame r;
    r.opcode = request.opcode;
    return r;
  }

  [[nodiscard]] nlohmann::ordered_json frame_json(const WsFrame& f) const;
  [[nodiscard]] WsFrame frame_from_json(const nlohmann::ordered_json& j) const;

  // fp-load --variant: binary (default), text (hex) or prose (English words) messages, single FIN
  // frames, masked.
  static std::vector<std::string_view> variants() { return {"binary", "text", "prose"}; }
  [[nodiscard]] WsFrame variant_request(std::size_t variant) const;
  // fp-load: the payload of request `index` (text: the first n characters of the lowercase hex
  // of the binary payload, so valid UTF-8 and unique per index; prose: ws::prose_payload).
  void request_payload(std::size_t variant, std::uint64_t index, std::uint8_t* dst, std::size_t n) const;
  // fp-load: writes request `index` whole at dst: the header of `header` with a fresh masking key
  // (WS-MASK-3, set in `header`), then its payload (request_payload), masked. Returns the bytes
  // written (header_bound(header) + len at most).
  std::size_t write_request(std::uint8_t* dst, WsFrame& header, std::size_t variant, std::uint64_t index,
                            std::size_t len) const;
  // fp-load: the close frame (code 1000, masked) that ends a connection, and whether a received
  // frame is the server's close.
  [[nodiscard]] Bytes closing_frame() const;
  static bool is_close(const WsFrame& f) { return f.opcode == ws::kClose; }
  // fp-load: a ping or pong from the server, which is no reply: a ping is answered with a pong
  // carrying its payload, appended to `out` (masked with a fresh key in the client role,
  // WS-PING-1), a pong is accepted and not answered (WS-PING-2). Returns false for any other frame.
  bool answer_control(const WsFrame& f, Bytes& out) const;

 private:
  Limits limits_;
  bool client_;
  std::uint64_t max_message_;
  std::shared_ptr<const WsEndpoint> endpoint_;
  std::shared_ptr<WsLoadDeflate> load_;  // fp-load: this connection's agreement (opened)
  [[nodiscard]] WebSocket with_endpoint(WebSocket w) const {
    w.endpoint_ = endpoint_;
    return w;
  }
};

}  // namespace fp
