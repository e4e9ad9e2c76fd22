#include "frameproof/websocket.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace fp {

using namespace ws;

namespace ws {

std::uint16_t close_code_for(std::string_view r) {
  static constexpr std::string_view k1002[] = {"WS-HDR-2", "WS-HDR-3", "WS-LEN-3", "WS-LEN-4", "WS-MASK-1", "WS-MASK-2",
                                                "WS-CTL-1", "WS-CTL-2", "WS-FRAG-2", "WS-FRAG-3", "WS-CLOSE-1", "WS-CLOSE-2",
                                                "WSD-FRM-2"};
  for (auto x : k1002)
    if (r == x) return 1002;
  if (r == "WS-UTF8-1" || r == "WS-UTF8-2" || r == "WS-CLOSE-3" || r == "WSD-CMP-3") return 1007;
  if (r == "WS-LIM-1" || r == "WS-LIM-2" || r == "WSD-LIM-1") return 1009;
  return 0;  // WS-STR-3: the peer is gone, nothing is sent
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {
// The whole 32-byte blocks of p[0, n) XORed with k32 (the key at its phase, in memory order) in AVX2
// registers, four blocks an iteration; returns the bytes done, a multiple of 32 (so the phase of
// the rest is unchanged). Compiled for AVX2 whatever the build's -march: called only where the CPU
// has it.
__attribute__((target("avx2"))) std::size_t mask_avx2(std::uint8_t* p, std::size_t n, std::uint32_t k32) {
  const __m256i kv = _mm256_set1_epi32(static_cast<int>(k32));
  std::size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    auto* q = reinterpret_cast<__m256i*>(p + i);
    _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), kv));
    _mm256_storeu_si256(q + 1, _mm256_xor_si256(_mm256_loadu_si256(q + 1), kv));
    _mm256_storeu_si256(q + 2, _mm256_xor_si256(_mm256_loadu_si256(q + 2), kv));
    _mm256_storeu_si256(q + 3, _mm256_xor_si256(_mm256_loadu_si256(q + 3), kv));
  }
  for (; i + 32 <= n; i += 32) {
    auto* q = reinterpret_cast<__m256i*>(p + i);
    _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), kv));
  }
  return i;
}
// Asked once: the release build targets baseline x86-64 (SSE2, 16 bytes), at which a 64 KiB payload
// took as long to unmask as to copy.
const bool kHaveAvx2 = [] {
  __builtin_cpu_init();  // this may run before libgcc's own initialiser of the CPU model
  return __builtin_cpu_supports("avx2") != 0;
}();
}  // namespace
#endif

void mask(std::uint8_t* p, std::size_t n, const std::uint8_t key[4], std::size_t phase) {
  std::uint8_t k[4];
  for (int i = 0; i < 4; ++i) k[i] = key[(phase + static_cast<std::size_t>(i)) & 3];
  std::uint32_t k32;
  std::memcpy(&k32, k, 4);
  const std::uint64_t k64 = (static_cast<std::uint64_t>(k32) << 32) | k32;  // memory order k0 k1 k2 k3 k0 ...
  std::size_t i = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (n >= 128 && kHaveAvx2) i = mask_avx2(p, n, k32);
#endif
#if defined(__SSE2__)
  const __m128i k128 = _mm_set1_epi32(static_cast<int>(k32));
  for (; i + 64 <= n; i += 64) {
    auto* q = reinterpret_cast<__m128i*>(p + i);
    _mm_storeu_si128(q, _mm_xor_si128(_mm_loadu_si128(q), k128));
    _mm_storeu_si128(q + 1, _mm_xor_si128(_mm_loadu_si128(q + 1), k128));
    _mm_storeu_si128(q + 2, _mm_xor_si128(_mm_loadu_si128(q + 2), k128));
    _mm_storeu_si128(q + 3, _mm_xor_si128(_mm_loadu_si128(q + 3), k128));
  }
  for (; i + 16 <= n; i += 16) {
    auto* q = reinterpret_cast<__m128i*>(p + i);
    _mm_storeu_si128(q, _mm_xor_si128(_mm_loadu_si128(q), k128));
  }
#endif
  for (; i + 8 <= n; i += 8) {
    std::uint64_t v;
    std::memcpy(&v, p + i, 8);
    v ^= k64;
    std::memcpy(p + i, &v, 8);
  }
  for (; i < n; ++i) p[i] ^= k[i & 3];  // i is a multiple of 4 where the tail starts
}

std::size_t Utf8::feed(const std::uint8_t* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    if (need_ == 0) {  // ASCII runs 8 bytes at a time
      while (i + 8 <= n) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull) break;
        i += 8;
      }
      if (i >= n) break;
    }
    const std::uint8_t b = p[i];
    if (need_) {
      if (b < lo_ || b > hi_) return i;
      --need_;
      lo_ = 0x80;
      hi_ = 0xBF;
    } else if (b < 0x80) {
    } else if (b >= 0xC2 && b <= 0xDF) {
      need_ = 1;
    } else if (b == 0xE0) {
      need_ = 2;
      lo_ = 0xA0;  // no overlong 3-byte forms
    } else if (b == 0xED) {
      need_ = 2;
      hi_ = 0x9F;  // no surrogates
    } else if (b >= 0xE1 && b <= 0xEF) {
      need_ = 2;
    } else if (b == 0xF0) {
      need_ = 3;
      lo_ = 0x90;  // no overlong 4-byte forms
    } else if (b >= 0xF1 && b <= 0xF3) {
      need_ = 3;
    } else if (b == 0xF4) {
      need_ = 3;
      hi_ = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;  // 0x80..0xC1, 0xF5..0xFF
    }
    ++i;
  }
  return kOk;
}

bool utf8_valid(ByteView b) {
  Utf8 u;
  return u.feed(b.data(), b.size()) == Utf8::kOk && u.complete();
}

void random_bytes(std::uint8_t* out, std::size_t n) {
  while (n > 0) {
    const ssize_t r = getrandom(out, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");
    }
    out += r;
    n -= static_cast<std::size_t>(r);
  }
}

std::string ascii_lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

// Masking keys from the system's entropy source, drawn 4 KiB at a time (one syscall per 1024 keys).
void fresh_key(std::array<std::uint8_t, 4>& key) {
  thread_local std::array<std::uint8_t, 4096> pool;
  thread_local std::size_t left = 0;
  if (left < 4) {
    random_bytes(pool.data(), pool.size());
    left = pool.size();
  }
  std::memcpy(key.data(), pool.data() + pool.size() - left, 4);
  left -= 4;
}

}  // namespace ws

namespace {

std::string str(ByteView v) { return {reinterpret_cast<const char*>(v.data()), v.size()}; }

bool json_bool(const nlohmann::ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Decoder

WsDecoder::WsDecoder(const WebSocket& proto, std::size_t read_chunk)
    : server_(!proto.client()),
      max_frame_(proto.max_payload()),
      max_message_(proto.max_message()),
      buf_(std::max(read_chunk, kMaxHeader + 8),
           static_cast<std::size_t>(std::min<std::uint64_t>(kMaxHeader + proto.max_payload(), SIZE_MAX / 2))) {}

WsDecoder::Status WsDecoder::fail(const char* req, const char* msg) {
  error_ = ProtocolError{req, buf_.position(), msg};
  if (const std::uint16_t code = close_code_for(req))
    error_->detail = "{\"websocket\": {\"close_code\": " + std::to_string(code) + "}}";
  return Status::Error;
}

std::optional<ProtocolError> WsDecoder::finish() {
  if (!error_ && !closed_ && buf_.buffered() > 0)
    error_ = ProtocolError{"WS-STR-3", buf_.position(), "stream ended inside a frame"};
  return closed_ ? std::nullopt : error_;
}

WsDecoder::Status WsDecoder::next(WsFrame& out) {
  if (error_) return Status::Error;
  if (closed_) {  // WS-CLOSE-4: nothing after a close frame is read
    if (buf_.buffered()) buf_.consume(buf_.buffered());
    buf_.need(0);
    return Status::NeedMore;
  }
  const std::span<std::uint8_t> avail = buf_.mutable_data();
  if (avail.size() < 2) {
    buf_.need(avail.empty() ? 0 : 2);
    return Status::NeedMore;
  }
  std::uint8_t* const p = avail.data();
  const bool fin = p[0] & 0x80;
  const std::uint32_t rsv = (p[0] >> 4) & 7;
  const std::uint32_t op = p[0] & 0x0F;
  const bool masked = p[1] & 0x80;
  const std::uint32_t n7 = p[1] & 0x7F;
  const std::size_t ext = n7 == 126 ? 2 : n7 == 127 ? 8 : 0;
  const std::size_t hl = 2 + ext + (masked ? 4 : 0);
  if (avail.size() < hl) {  // a header is judged once all of it is there (§14)
    buf_.need(hl);
    return Status::NeedMore;
  }
  std::uint64_t n = n7;
  if (ext) {
    n = 0;
    for (std::size_t i = 0; i < ext; ++i) n = (n << 8) | p[2 + i];
  }
  const std::uint8_t* key = masked ? p + 2 + ext : nullptr;
  // 1. the header, in the order of its bits
  const bool rsv1 = (rsv & 4) != 0;
  if (rsv & (rsv1_ ? 3u : 7u)) return fail("WS-HDR-2", "RSV bit set without an extension");
  if (!known_opcode(op)) return fail("WS-HDR-3", "reserved opcode");
  const bool control = control_opcode(op);
  if (rsv1 && (control || op == kCont)) return fail("WSD-FRM-2", "RSV1 on a continuation or control frame");
  // permessage-deflate: a compressed message is not text until inflated (the session checks it),
  // and its payload may exceed the inflated size by DEFLATE's overhead
  const bool z = op == kCont ? compressed_ : rsv1;
  const std::uint64_t msg_limit = z ? max_message_ + (max_message_ >> 10) + 64 : max_message_;
  if (control && !fin) return fail("WS-CTL-1", "fragmented control frame");
  if (server_ && !masked) return fail("WS-MASK-1", "unmasked frame from a client");
  if (!server_ && masked) return fail("WS-MASK-2", "masked frame from a server");
  if (control && n7 > 125) return fail("WS-CTL-2", "control frame payload over 125 bytes");
  if ((n7 == 126 && n < 126) || (n7 == 127 && n < 65536)) return fail("WS-LEN-3", "non-minimal payload length");
  if (n7 == 127 && (n >> 63)) return fail("WS-LEN-4", "64-bit length with its most significant bit set");
  // 2. the frame against the connection's state, then the limits
  if (op == kCont && !in_message_) return fail("WS-FRAG-2", "continuation without a message");
  if ((op == kText || op == kBinary) && in_message_) return fail("WS-FRAG-3", "new message inside a fragmented one");
  if (n > max_frame_) return fail("WS-LIM-1", "frame payload above the maximum");
  if (!control && (op == kCont ? size_ : 0) + n > msg_limit) return fail("WS-LIM-2", "message above the maximum");
  // 3. the payload as it arrives: unmasked in place, text validated (WS-UTF8-2: fail fast)
  const bool text = (op == kText || (op == kCont && text_)) && !z;
  const std::uint64_t have = std::min<std::uint64_t>(n, avail.size() - hl);
  std::uint8_t* const payload = p + hl;
  if (done_ == 0) frame_utf8_ = op == kCont ? utf8_ : Utf8{};
  if (have > done_) {
    const auto fresh = static_cast<std::size_t>(have - done_);
    if (masked) mask(payload + done_, fresh, key, static_cast<std::size_t>(done_));
    if (text && frame_utf8_.feed(payload + done_, fresh) != Utf8::kOk)
      return fail(fin ? "WS-UTF8-1" : "WS-UTF8-2", "invalid UTF-8 in a text message");
    done_ = have;
  }
  if (have < n) {
    buf_.need(hl + n);
    return Status::NeedMore;
  }
  if (text && fin && !frame_utf8_.complete()) return fail("WS-UTF8-1", "text message ends inside a code point");
  const ByteView body(payload, static_cast<std::size_t>(n));
  if (op == kClose) {
    if (n == 1) return fail("WS-CLOSE-1", "close payload of 1 byte");
    if (n >= 2) {
      if (!close_code_valid((body[0] << 8) | body[1])) return fail("WS-CLOSE-2", "close code a peer may not send");
      if (!utf8_valid(body.subspan(2))) return fail("WS-CLOSE-3", "close reason is not UTF-8");
    }
    closed_ = true;
  }
  // the message state after this frame
  if (op == kText || op == kBinary) {
    in_message_ = !fin;
    text_ = op == kText;
    compressed_ = rsv1;
    size_ = n;
    utf8_ = text ? frame_utf8_ : Utf8{};
  } else if (op == kCont) {
    in_message_ = !fin;
    size_ += n;
    utf8_ = text ? frame_utf8_ : Utf8{};
  }
  if (!control && fin) {
    in_message_ = false;
    compressed_ = false;
    size_ = 0;
    utf8_ = Utf8{};
  }
  out = WsFrame{};
  out.fin = fin;
  out.rsv = rsv;
  out.opcode = op;
  out.masked = masked;
  if (masked) {
    std::memcpy(out.key.data(), key, 4);
    out.key_len = 4;
  }
  out.payload = body;
  buf_.consume(static_cast<std::size_t>(hl + n));
  done_ = 0;
  return Status::Frame;
}

// ---------------------------------------------------------------------------------------------
// Configuration, encoder, frames as JSON, the load client's requests

WebSocket WebSocket::configure(Limits limits, JsonParams& params) {
  bool client = false;
  std::uint64_t max_message = 0;
  if (auto p = params.take_object("websocket")) {
    if (auto role = p->take_string("role")) {
      // "server"/"client" (codec JSON), or the testee protocol's enum names SERVER/CLIENT/ROLE_UNSPECIFIED
      // (testee.cpp's message_json): compared exactly, any other spelling refused (HAR-CODEC-1)
      const std::string& r = *role;
      if (r == "client" || r == "CLIENT") client = true;
      else if (r != "server" && r != "SERVER" && r != "ROLE_UNSPECIFIED")
        throw CodecError("codec.websocket.role: expected \"server\" or \"client\", got \"" + *role + "\"");
    }
    max_message = p->take_uint("max_message", UINT64_MAX).value_or(0);
    auto path = p->take_string("path");
    auto sub = p->take_string("subprotocol");
    const bool deflate = p->take_bool("permessage_deflate").value_or(false);  // opt-in (spec/websocket-deflate.md)
    p->finish();
    WebSocket w(limits, client, max_message);
    if (path || sub || deflate) {
      auto ep = std::make_shared<WsEndpoint>();
      ep->permessage_deflate = deflate;
      if (path) {
        if (path->empty() || (*path)[0] != '/' ||
            !std::all_of(path->begin(), path->end(), [](char c) { return c > 0x20 && c < 0x7f; }))
          throw CodecError("codec.websocket.path: expected a request target starting with '/', got \"" + *path + "\"");
        ep->path = *path;
      }
      if (sub) {
        const std::string_view seps = "!#$%&'*+-.^_`|~";
        if (sub->empty() || !std::all_of(sub->begin(), sub->end(), [&](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || seps.find(c) != std::string_view::npos;
            }))
          throw CodecError("codec.websocket.subprotocol: expected one token (RFC 6455 §4.1), got \"" + *sub + "\"");
        ep->subprotocol = *sub;
        ep->offers = true;
      }
      w.endpoint_ = std::move(ep);
    }
    return w;
  }
  return WebSocket(limits, client, max_message);
}

std::size_t WebSocket::write_header(std::uint8_t* dst, const WsFrame& h, std::uint64_t len) const {
  const auto byte0 = static_cast<std::uint8_t>((h.fin ? 0x80 : 0) | ((h.rsv & 7) << 4) | (h.opcode & 0x0F));
  std::size_t at = ws::put_header(dst, byte0, h.masked, len);  // WS-LEN-2: the minimal form
  if (h.masked) {
    std::memcpy(dst + at, h.key.data(), 4);
    at += 4;
  }
  return at;
}

std::optional<ProtocolError> WebSocket::encode(const WsFrame& f, Bytes& out) const {
  const std::uint64_t n = f.payload.size();
  if (f.rsv) return ProtocolError{"WS-HDR-2", 0, "RSV bits without an extension"};
  if (!known_opcode(f.opcode)) return ProtocolError{"WS-HDR-3", 0, "reserved opcode"};
  if (control_opcode(f.opcode) && !f.fin) return ProtocolError{"WS-CTL-1", 0, "fragmented control frame"};
  if (control_opcode(f.opcode) && n > 125) return ProtocolError{"WS-CTL-2", 0, "control payload over 125 bytes"};
  if ((f.masked && f.key_len != 4) || (!f.masked && f.key_len != 0))
    return ProtocolError{"WS-MASK-4", 0, "a masked frame needs a 4-byte key, an unmasked one none"};
  if (n > max_payload()) return ProtocolError{"WS-LIM-3", 0, "payload above the maximum"};
  const std::size_t at = out.size();
  out.resize(at + kMaxHeader);
  const std::size_t h = write_header(out.data() + at, f, n);
  out.resize(at + h);
  out.insert(out.end(), f.payload.begin(), f.payload.end());
  if (f.masked) mask(out.data() + at + h, n, f.key.data());
  return std::nullopt;
}

nlohmann::ordered_json WebSocket::frame_json(const WsFrame& f) const {
  nlohmann::ordered_json j;
  j["payload"] = str(f.payload);
  auto& w = j["websocket"];
  w["fin"] = f.fin;
  w["rsv"] = f.rsv;
  w["opcode"] = f.opcode;
  w["masked"] = f.masked;
  w["mask_key"] = std::string(reinterpret_cast<const char*>(f.key.data()), std::min<std::size_t>(f.key_len, 4));
  return j;
}

WsFrame WebSocket::frame_from_json(const nlohmann::ordered_json& j) const {
  WsFrame f;
  f.payload = json_bytes(j, "payload");
  auto it = j.find("websocket");
  if (it == j.end() || !it->is_object()) return f;  // no header: an unmasked binary frame
  const auto& w = *it;
  f.fin = json_bool(w, "fin");
  f.rsv = static_cast<std::uint32_t>(std::min<std::uint64_t>(json_uint(w, "rsv"), 0xFFFFFFFFu));
  f.opcode = static_cast<std::uint32_t>(std::min<std::uint64_t>(json_uint(w, "opcode"), 0xFFFFFFFFu));
  f.masked = json_bool(w, "masked");
  const ByteView key = json_bytes(w, "mask_key");
  std::memcpy(f.key.data(), key.data(), std::min<std::size_t>(key.size(), 4));
  f.key_len = static_cast<std::uint8_t>(std::min<std::size_t>(key.size(), 5));  // 5: too long
  return f;
}

Bytes WebSocket::closing_frame() const {
  WsFrame f;
  f.opcode = kClose;
  f.masked = client_;
  f.key_len = client_ ? 4 : 0;
  if (client_) fresh_key(f.key);
  static constexpr std::uint8_t k1000[2] = {0x03, 0xE8};
  f.payload = ByteView(k1000, 2);
  Bytes out;
  encode(f, out);
  return out;
}

bool WebSocket::answer_control(const WsFrame& f, Bytes& out) const {
  if (f.opcode == kPong) return true;  // WS-PING-2
  if (f.opcode != kPing) return false;
  WsFrame pong;  // WS-PING-1: the ping's payload (at most 125 bytes, WS-CTL-2, checked by the decoder)
  pong.opcode = kPong;
  pong.masked = client_;
  pong.key_len = client_ ? 4 : 0;
  if (client_) fresh_key(pong.key);
  pong.payload = f.payload;
  encode(pong, out);
  return true;
}

// ---------------------------------------------------------------------------------------------
// WsFifoMatcher

std::optional<WsFrame> WsFifoMatcher::next(SendKind kind, const WsFrame* given) const {
  if (kind == SendKind::OneWay) return std::nullopt;
  if (given) return *given;
  WsFrame f;
  f.masked = true;
  f.key_len = 4;
  return f;
}

void WsFifoMatcher::begin(SendKind kind, std::uint64_t index, std::uint64_t now) {
  if (kind != SendKind::Request) return;
  if (head_ > 4096 && head_ * 2 > queue_.size()) {
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  queue_.push_back({index, now});
}

Match WsFifoMatcher::complete(const WsFrame& f) {
  if (control_opcode(f.opcode)) return {Match::Kind::Ignored};
  if (head_ == queue_.size()) return {Match::Kind::Unmatched};
  const Pending p = queue_[head_++];
  return {Match::Kind::Reply, p.index, p.sent};
}

bool WsFifoMatcher::expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed) {
  bool any = false;
  for (std::size_t i = head_; i < queue_.size(); ++i) any = any || queue_[i].sent + timeout_ <= now;
  if (!any) return false;
  // FIFO order can no longer be trusted once a message is lost: the connection fails
  for (std::size_t i = head_; i < queue_.size(); ++i)
    (queue_[i].sent + timeout_ <= now ? timed_out : failed).push_back(queue_[i].index);
  queue_.clear();
  head_ = 0;
  return true;
}

void WsFifoMatcher::clear(std::vector<std::uint64_t>& ids) {
  for (std::size_t i = head_; i < queue_.size(); ++i) ids.push_back(queue_[i].index);
  queue_.clear();
  head_ = 0;
}

std::optional<std::uint64_t> WsFifoMatcher::next_deadline() const {
  if (head_ == queue_.size()) return std::nullopt;
  return queue_[head_].sent + timeout_;
}

std::optional<std::string> WsFifoMatcher::check_echo(const WsFrame& reply, const WsFrame& request) {
  if (reply.opcode == request.opcode && reply.fin) return std::nullopt;
  char b[80];
  std::snprintf(b, sizeof b, "echo has opcode 0x%X%s, expected 0x%X with FIN", reply.opcode, reply.fin ? "" : " without FIN",
                request.opcode);
  return std::string(b);
}

// ---------------------------------------------------------------------------------------------
// WsSession

WsSession::WsSession(const WebSocket& proto) : dec_(proto.as_server()), handshaken_(false), ep_(proto.endpoint()) {}

WsSession::WsSession(const WebSocket& proto, std::string_view) : dec_(proto.as_server()), handshaken_(true) {}

WsSession::WsSession(const WebSocket& proto, bool) : dec_(proto), client_(proto.client()), handshaken_(true) {}

std::span<std::uint8_t> WsSession::prepare() {
  if (handshaken_ || closed_) return dec_.prepare();
  if (hs_.empty()) hs_.resize(2 * kMaxHandshake);
  return {hs_.data() + hs_len_, hs_.size() - hs_len_};
}

void WsSession::commit(std::size_t n) {
  if (handshaken_ || closed_) dec_.commit(n);
  else hs_len_ += n;
}

std::size_t WsSession::header(std::uint8_t opcode, std::size_t len, bool rsv1) {
  WsFrame h;
  h.opcode = opcode;
  h.rsv = rsv1 ? 4 : 0;
  if (client_) {
    h.masked = true;
    h.key_len = 4;
    fresh_key(h.key);
  }
  return WebSocket().write_header(hdr_.data(), h, len);
}

// (WsSession::answer_handshake, the opening handshake: websocket_handshake.cpp)

}  // namespace fp
