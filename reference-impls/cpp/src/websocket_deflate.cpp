// permessage-deflate (RFC 7692, spec/websocket-deflate.md): the negotiation, zlib's raw DEFLATE in
// both directions with the spec's limits, and WsSession's part (the handshake's answer, a compressed
// message inflated frame by frame, the compressed echo). See websocket_deflate.hpp.
#include "frameproof/websocket_deflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string_view>

#include "frameproof/websocket.hpp"

namespace fp {

namespace wsd {

namespace {

constexpr std::uint8_t kTail[4] = {0x00, 0x00, 0xff, 0xff};  // removed by the sender, added back by the receiver
constexpr std::size_t kChunk = 1u << 30;                      // zlib counts in 32 bits: input in pieces

bool tchar(char c) {
  static constexpr std::string_view kSeps = "!#$%&'*+-.^_`|~";
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || kSeps.find(c) != std::string_view::npos;
}

struct Cursor {
  std::string_view s;
  std::size_t i = 0;
  [[nodiscard]] bool done() const { return i >= s.size(); }
  [[nodiscard]] char peek() const { return s[i]; }
  void ows() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  bool token(std::string& out) {
    const std::size_t j = i;
    while (i < s.size() && tchar(s[i])) ++i;
    out.assign(s.substr(j, i - j));
    return i > j;
  }
  // A quoted-string at s[i] == '"' (RFC 7230 §3.2.6: a backslash escapes one octet).
  bool quoted(std::string& out) {
    out.clear();
    for (++i; i < s.size(); ++i) {
      if (s[i] == '"') {
        ++i;
        return true;
      }
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out.push_back(s[i]);
    }
    return false;  // unterminated
  }
};

// 8..15 written without a leading zero, or 0 (WSD-NEG-2).
int bits(const std::optional<std::string>& v) {
  if (!v || v->empty() || v->size() > 2 || (*v)[0] == '0') return 0;
  int n = 0;
  for (char c : *v) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n >= 8 && n <= 15 ? n : 0;
}

}  // namespace

std::optional<std::vector<Element>> parse_extensions(const std::vector<std::string_view>& values) {
  std::vector<Element> out;
  for (std::string_view v : values) {
    Cursor c{v};
    c.ows();
    while (!c.done()) {
      if (c.peek() == ',') {  // empty list elements are allowed (RFC 7230 §7)
        ++c.i;
        c.ows();
        continue;
      }
      Element e;
      if (!c.token(e.name)) return std::nullopt;
      c.ows();
      while (!c.done() && c.peek() == ';') {
        ++c.i;
        c.ows();
        Param p;
        if (!c.token(p.name)) return std::nullopt;
        c.ows();
        if (!c.done() && c.peek() == '=') {
          ++c.i;
          c.ows();
          std::string value;
          if (!c.done() && c.peek() == '"') {
            if (!c.quoted(value) || value.empty() || !std::all_of(value.begin(), value.end(), tchar)) return std::nullopt;
          } else if (!c.token(value)) {
            return std::nullopt;
          }
          p.value = std::move(value);
          c.ows();
        }
        e.params.push_back(std::move(p));
      }
      out.push_back(std::move(e));
      if (!c.done()) {
        if (c.peek() != ',') return std::nullopt;
        ++c.i;
        c.ows();
      }
    }
  }
  return out;
}

std::string Params::header() const {
  std::string h(kName);
  if (server_no_context_takeover) h += "; server_no_context_takeover";
  if (client_no_context_takeover) h += "; client_no_context_takeover";
  if (server_max_window_bits) h += "; server_max_window_bits=" + std::to_string(server_max_window_bits);
  if (client_max_window_bits == kBare) h += "; client_max_window_bits";
  else if (client_max_window_bits) h += "; client_max_window_bits=" + std::to_string(client_max_window_bits);
  return h;
}

std::optional<Params> offer_params(const std::vector<Param>& params) {
  Params p;
  std::vector<std::string> seen;
  for (const auto& raw : params) {
    const std::string name = ws::ascii_lower(raw.name);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) return std::nullopt;  // given twice
    seen.push_back(name);
    if (name == "server_no_context_takeover" || name == "client_no_context_takeover") {
      if (raw.value) return std::nullopt;
      (name[0] == 's' ? p.server_no_context_takeover : p.client_no_context_takeover) = true;
    } else if (name == "server_max_window_bits") {
      if (!(p.server_max_window_bits = bits(raw.value))) return std::nullopt;
    } else if (name == "client_max_window_bits") {
      if (!raw.value) p.client_max_window_bits = kBare;
      else if (!(p.client_max_window_bits = bits(raw.value))) return std::nullopt;
    } else {
      return std::nullopt;  // a parameter RFC 7692 does not define
    }
  }
  return p;
}

std::optional<Agreement> accept(const std::vector<std::string_view>& values, const Policy& policy) {
  const auto offers = parse_extensions(values);
  if (!offers) return std::nullopt;  // a list that does not parse: every offer declined
  for (const auto& [name, params] : *offers) {
    if (ws::ascii_lower(name) != kName) continue;
    const auto p = offer_params(params);
    if (!p) continue;
    const int server_bits = std::min(policy.server_window_bits, p->server_max_window_bits ? p->server_max_window_bits : 15);
    if (server_bits < 9) continue;  // zlib cannot compress with 8 bits (WSD-NEG-4)
    int client_bits = 0;            // not offered: the response must not name it (WSD-NEG-3)
    if (p->client_max_window_bits) {
      const int offered = p->client_max_window_bits == kBare ? 15 : p->client_max_window_bits;
      client_bits = policy.client_window_bits ? std::min(offered, policy.client_window_bits) : offered;
    }
    Params agreed;
    agreed.server_no_context_takeover = p->server_no_context_takeover || policy.server_no_context_takeover;
    agreed.client_no_context_takeover = p->client_no_context_takeover || policy.client_no_context_takeover;
    agreed.server_max_window_bits = (p->server_max_window_bits || server_bits < 15) ? server_bits : 0;
    agreed.client_max_window_bits = client_bits;
    return Agreement{agreed, agreed.header()};
  }
  return std::nullopt;
}

ResponseCheck check_response(const Params& offer, const std::vector<std::string_view>& values) {
  const auto elements = parse_extensions(values);
  if (!elements) return {std::nullopt, "the response's Sec-WebSocket-Extensions does not parse"};
  if (elements->empty()) return {};  // declined
  if (elements->size() > 1)
    return {std::nullopt, std::to_string(elements->size()) + " extension elements in the response"};
  const Element& e = elements->front();
  if (ws::ascii_lower(e.name) != kName) return {std::nullopt, "the response names " + e.name + ", not offered"};
  auto p = offer_params(e.params);
  if (!p) return {std::nullopt, "a response parameter is unknown, repeated or has an invalid value"};
  if (p->client_max_window_bits == kBare) return {std::nullopt, "client_max_window_bits without a value in the response"};
  if (p->client_max_window_bits && !offer.client_max_window_bits)
    return {std::nullopt, "client_max_window_bits in the response, not in the offer"};
  if (p->client_max_window_bits && offer.client_max_window_bits != kBare &&
      p->client_max_window_bits > offer.client_max_window_bits)
    return {std::nullopt, "client_max_window_bits larger than offered"};
  if (offer.server_max_window_bits && p->server_max_window_bits > offer.server_max_window_bits)
    return {std::nullopt, "server_max_window_bits larger than offered"};
  p->client_no_context_takeover = p->client_no_context_takeover || offer.client_no_context_takeover;
  return {p, {}};
}

// ------------------------------------------------------------------ zlib

struct Z {
  z_stream s{};
  bool deflate = false;
};

std::size_t compress_bound(std::size_t n) {
  // deflateBound without a stream is zlib's most conservative bound; the sync flush adds an empty
  // stored block (5 octets, 4 of them removed again) and at most a byte of pending bits
  return static_cast<std::size_t>(deflateBound(nullptr, static_cast<uLong>(n))) + 16;
}

void ZFree::operator()(Z* z) const {
  if (z->deflate) deflateEnd(&z->s);
  else inflateEnd(&z->s);
  delete z;
}

Deflater::Deflater(int window_bits, bool reset, int level) : bits_(window_bits), level_(level), reset_(reset) {
  if (bits_ < 9 || bits_ > 15) bits_ = 15;  // zlib compresses raw DEFLATE with 9..15 bits (WSD-NEG-4)
}

std::size_t Deflater::held() const {
  // zlib's deflate state: 2^(windowBits+2) + 2^(memLevel+9), memLevel 8, and the stream itself
  return z_ ? (std::size_t{1} << (bits_ + 2)) + (std::size_t{1} << 17) + 6 * 1024 : 0;
}

void Deflater::compress(ByteView message, Bytes& out) {
  if (!z_) {
    std::unique_ptr<Z, ZFree> z(new Z);
    z->deflate = true;
    if (deflateInit2(&z->s, level_, Z_DEFLATED, -bits_, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      delete z.release();
      throw std::bad_alloc();
    }
    z_ = std::move(z);
  }
  z_stream& s = z_->s;
  out.clear();
  const std::uint8_t* p = message.data();
  std::size_t left = message.size();
  while (true) {
    const std::size_t in = std::min(left, kChunk);
    const bool last = in == left;
    s.next_in = const_cast<Bytef*>(p);
    s.avail_in = static_cast<uInt>(in);
    do {  // until zlib leaves room unused: all input taken, the flush complete
      const std::size_t have = out.size();
      const std::size_t room = std::clamp<std::size_t>(deflateBound(&s, static_cast<uLong>(in)) + 16, 4096, kChunk);
      out.resize(have + room);
      s.next_out = out.data() + have;
      s.avail_out = static_cast<uInt>(room);
      deflate(&s, last ? Z_SYNC_FLUSH : Z_NO_FLUSH);
      out.resize(have + room - s.avail_out);
    } while (s.avail_out == 0);
    p += in;
    left -= in;
    if (last) break;
  }
  if (reset_) z_.reset();  // no context takeover: the next message starts afresh
  if (out.size() >= 4 && std::memcmp(out.data() + out.size() - 4, kTail, 4) == 0) out.resize(out.size() - 4);
  if (out.empty()) out.push_back(0x00);
}

bool Deflater::payload(ByteView message, Bytes& out) {
  compress(message, out);
  if (out.size() <= message.size()) return true;
  out.clear();
  z_.reset();  // WSD-FRM-3: the message is in the window, not in the receiver's; made again lazily (WSD-LIM-3)
  return false;
}

Inflater::Inflater(bool reset, std::uint64_t max_message) : reset_(reset), max_(max_message) {}

std::size_t Inflater::held() const {
  return z_ ? (std::size_t{1} << 15) + 11 * 1024 : 0;  // the 32 KiB window, the state (~7 KiB) and tables
}

std::optional<InflateError> Inflater::feed(ByteView payload, bool last, Bytes& out) {
  std::optional<InflateError> e;
  if (!ended_) {
    if (!z_) {
      std::unique_ptr<Z, ZFree> z(new Z);
      if (inflateInit2(&z->s, -15) != Z_OK) {  // 15 bits whatever the sender's: a larger window reads a smaller one's data
        delete z.release();
        throw std::bad_alloc();
      }
      z_ = std::move(z);
    }
    e = run(payload.data(), payload.size(), out);
    if (!e && last && !ended_) e = run(kTail, sizeof kTail, out);
  }
  if (e) {
    z_.reset();
    ended_ = false;
    count_ = 0;
    return e;
  }
  if (last) {  // the next call starts a new message
    if (reset_) z_.reset();
    ended_ = false;
    count_ = 0;
  }
  return std::nullopt;
}

// Inflates [p, p+n) in steps of at most kStep output bytes, stopping one byte past the limit.
std::optional<InflateError> Inflater::run(const std::uint8_t* p, std::size_t n, Bytes& out) {
  z_stream& s = z_->s;
  do {
    const std::size_t in = std::min(n, kChunk);
    s.next_in = const_cast<Bytef*>(p);
    s.avail_in = static_cast<uInt>(in);
    while (true) {
      const std::size_t have = out.size();
      const auto room = static_cast<std::size_t>(std::min<std::uint64_t>(kStep, max_ - count_ + 1));
      if (out.capacity() < have + room)  // doubling, but never past what the limit lets this message hold
        out.reserve(std::max(have + room, std::min<std::size_t>(2 * out.capacity(), have + (max_ - count_) + 1)));
      out.resize(have + room);
      s.next_out = out.data() + have;
      s.avail_out = static_cast<uInt>(room);
      const int r = inflate(&s, Z_NO_FLUSH);
      const std::size_t got = room - s.avail_out;
      out.resize(have + got);
      count_ += got;
      if (r == Z_DATA_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR || r == Z_MEM_ERROR)
        return InflateError{1007, "WSD-CMP-3", std::string("the payload does not inflate: ") + (s.msg ? s.msg : "zlib error")};
      if (count_ > max_)
        return InflateError{1009, "WSD-LIM-1", "the message inflates past max_message (" + std::to_string(max_) + " bytes)"};
      if (r == Z_STREAM_END) {  // a final block (WSD-CMP-5): the rest of the message is ignored
        ended_ = true;
        if (!reset_) {  // the next message is a new stream whose window is what was inflated so far
          Bytes window(std::size_t{1} << 15);
          uInt len = 0;
          inflateGetDictionary(&s, window.data(), &len);
          inflateReset(&s);
          if (len) inflateSetDictionary(&s, window.data(), len);
        } else {
          inflateReset(&s);
        }
        return std::nullopt;
      }
      if (s.avail_in == 0 && s.avail_out != 0) break;  // all input taken, nothing held back
      if (r == Z_BUF_ERROR) break;                      // no progress possible
    }
    p += in;
    n -= in;
  } while (n > 0);
  return std::nullopt;
}

}  // namespace wsd

// ---------------------------------------------------------------------------------------------
// WsSession's part

std::string WsSession::negotiate_deflate(const std::string* offers) {
  if (!ep_ || !ep_->permessage_deflate || !offers) return {};  // WS-HS-5: every offer declined
  const auto a = wsd::accept({std::string_view(*offers)});
  if (!a) return {};
  pmd_ = std::make_unique<wsd::Extension>(a->params, dec_.max_message());
  dec_.allow_rsv1();
  return "Sec-WebSocket-Extensions: " + a->header + "\r\n";
}

void WsSession::enable_deflate(const wsd::Params& agreed) {
  pmd_ = std::make_unique<wsd::Extension>(agreed, dec_.max_message(), client_);
  dec_.allow_rsv1();
}

std::optional<ProtocolError> WsSession::inflate_frame(const WsFrame& f) {
  const std::size_t before = msg_.size();
  auto error = [&](const char* req, std::uint16_t code, std::string why) {
    return ProtocolError{req, dec_.position(), std::move(why), "{\"websocket\": {\"close_code\": " + std::to_string(code) + "}}"};
  };
  if (auto e = pmd_->inflater.feed(f.payload, f.fin, msg_)) return error(e->requirement, e->code, e->reason);
  if (msg_op_ == ws::kText) {  // WSD-CMP-4: the UTF-8 check applies to the inflated bytes
    if (msg_utf8_.feed(msg_.data() + before, msg_.size() - before) != ws::Utf8::kOk ||
        (f.fin && !msg_utf8_.complete()))
      return error("WS-UTF8-1", 1007, "invalid UTF-8 in an inflated text message");
  }
  return std::nullopt;
}

bool WsSession::deflate_message() { return pmd_->deflater.payload(msg_, pmd_->zout); }

}  // namespace fp
