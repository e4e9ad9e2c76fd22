// The websocket opening handshake (spec/websocket.md §12, WS-HS-*): the server's answer to the
// client's HTTP upgrade request (WsSession::answer_handshake) and the client's side, its request
// and the check of the answer (WsClientOpening: fp-load, fp-autobahn-client).
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frameproof/websocket.hpp"

namespace fp {

using namespace ws;

namespace ws {

std::string base64(ByteView b) {
  std::string out(4 * ((b.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), b.data(), static_cast<int>(b.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string accept_key(std::string_view key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string s(key);
  s += kGuid;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(s.data()), s.size(), digest);
  return base64(ByteView(digest, sizeof digest));
}

}  // namespace ws

namespace {

// ---------------------------------------------------------------------------------------------
// The HTTP head

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + sep.size());
  }
}

// Header name (lowercase) -> value; repeated headers joined with ", ". nullopt: a line without ':'.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_headers(const std::vector<std::string_view>& lines) {
  std::vector<std::pair<std::string, std::string>> h;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto colon = lines[i].find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string name = ascii_lower(trim(lines[i].substr(0, colon)));
    const std::string_view value = trim(lines[i].substr(colon + 1));
    auto it = std::find_if(h.begin(), h.end(), [&](const auto& p) { return p.first == name; });
    if (it == h.end()) h.emplace_back(std::move(name), std::string(value));
    else it->second += ", " + std::string(value);
  }
  return h;
}

const std::string* header_value(const std::vector<std::pair<std::string, std::string>>& h, std::string_view name) {
  for (const auto& [k, v] : h)
    if (k == name) return &v;
  return nullptr;
}

// The comma-separated tokens of a header, trimmed (lowercase when `fold`).
std::vector<std::string> tokens(const std::string* v, bool fold) {
  std::vector<std::string> out;
  if (!v) return out;
  for (auto t : split(*v, ",")) out.push_back(fold ? ascii_lower(trim(t)) : std::string(trim(t)));
  return out;
}

bool has(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// A Sec-WebSocket-Key: base64 of exactly 16 bytes (22 characters and "==").
bool key_valid(std::string_view k) {
  if (k.size() != 24 || k.substr(22) != "==") return false;
  for (std::size_t i = 0; i < 22; ++i) {
    const char c = k[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/') return false;
  }
  return true;
}

std::string status(int code, std::string_view reason, std::string_view extra = "") {
  return "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) + "\r\n" + std::string(extra) +
         "Content-Length: 0\r\nConnection: close\r\n\r\n";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The server side

WsSession::HandshakeResult WsSession::answer_handshake() {
  const std::string_view buf(reinterpret_cast<const char*>(hs_.data()), hs_len_);
  const auto end = buf.find("\r\n\r\n");
  auto refuse = [&](int code, std::string_view reason, const char* req, std::string_view extra = "") {
    error_ = ProtocolError{req, 0, "opening handshake refused: " + std::to_string(code)};
    return HandshakeResult{status(code, reason, extra), false};
  };
  if (end == std::string_view::npos) {
    if (hs_len_ > kMaxHandshake) return refuse(431, "Request Header Fields Too Large", "WS-HS-1");
    return {};
  }
  if (end > kMaxHandshake) return refuse(431, "Request Header Fields Too Large", "WS-HS-1");
  const std::vector<std::string_view> lines = split(buf.substr(0, end), "\r\n");
  const std::vector<std::string_view> request = split(lines[0], " ");
  const auto headers = parse_headers(lines);
  if (!headers) return refuse(400, "Bad Request", "WS-HS-1");
  const auto& h = *headers;
  const std::string* key = header_value(h, "sec-websocket-key");
  if (request.size() != 3 || request[0] != "GET" || request[2] != "HTTP/1.1" || !header_value(h, "host") ||
      !has(tokens(header_value(h, "upgrade"), true), "websocket") ||
      !has(tokens(header_value(h, "connection"), true), "upgrade") || !key || !key_valid(*key))
    return refuse(400, "Bad Request", "WS-HS-1");
  if (ep_ && !ep_->path.empty() && request[1] != ep_->path)  // RFC 6455 §4.2.2: no such resource
    return refuse(404, "Not Found", "WS-HS-1");
  const std::string* version = header_value(h, "sec-websocket-version");
  if (!version || *version != "13")
    return refuse(426, "Upgrade Required", "WS-HS-3", "Sec-WebSocket-Version: 13\r\n");  // WS-HS-3
  std::string reply = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
                      accept_key(*key) + "\r\n";
  const std::string_view sub = ep_ ? std::string_view(ep_->subprotocol) : kSubprotocol;
  if (has(tokens(header_value(h, "sec-websocket-protocol"), false), sub))  // WS-HS-4
    reply += "Sec-WebSocket-Protocol: " + std::string(sub) + "\r\n";
  // WS-HS-5: no Sec-WebSocket-Extensions, unless permessage-deflate is configured and offered
  reply += negotiate_deflate(header_value(h, "sec-websocket-extensions"));
  reply += "\r\n";
  // frames sent right behind the request go to the decoder
  ByteView rest(hs_.data() + end + 4, hs_len_ - end - 4);
  while (!rest.empty()) {
    auto space = dec_.prepare();
    const std::size_t n = std::min(space.size(), rest.size());
    std::copy_n(rest.data(), n, space.data());
    dec_.commit(n);
    rest = rest.subspan(n);
  }
  Bytes().swap(hs_);
  hs_len_ = 0;
  return {std::move(reply), true};
}

// ---------------------------------------------------------------------------------------------
// The client side of the opening handshake

WsClientOpening WsClientOpening::make(std::string_view host, std::string_view path, std::string_view subprotocol,
                                      bool deflate) {
  std::uint8_t nonce[16];
  random_bytes(nonce, sizeof nonce);
  WsClientOpening o;
  o.key = base64(ByteView(nonce, sizeof nonce));
  o.offered = std::string(subprotocol);
  o.deflate = deflate;
  o.request = "GET " + std::string(path) + " HTTP/1.1\r\nHost: " + std::string(host) +
              "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + o.key +
              "\r\nSec-WebSocket-Version: 13\r\n" +
              (o.offered.empty() ? std::string() : "Sec-WebSocket-Protocol: " + o.offered + "\r\n") +
              (deflate ? "Sec-WebSocket-Extensions: " + wsd::kClientOffer.header() + "\r\n" : std::string()) + "\r\n";
  return o;
}

// WS-HS-7 (RFC 6455 §4.1, the client's checks 1-6): status 101 (any reason phrase, an empty one
// too), `Upgrade: websocket` and the `upgrade` token of `Connection` (case-insensitive token lists,
// repeated headers joined), the accept value of our key, no extension unless permessage-deflate was
// offered (then its response is checked, WSD-NEG-5; an empty list names none) and no subprotocol but
// the one offered (websocket.subprotocol), if any.
std::string WsClientOpening::check(std::string_view head, std::optional<wsd::Params>* agreed) const {
  const auto end = head.find("\r\n\r\n");
  const std::vector<std::string_view> lines = split(head.substr(0, end), "\r\n");
  const std::string_view status = lines[0];
  if (status != "HTTP/1.1 101" && status.rfind("HTTP/1.1 101 ", 0) != 0)
    return "handshake answered \"" + std::string(status) + "\", not 101";
  const auto headers = parse_headers(lines);
  if (!headers) return "handshake answer has a malformed header line";
  const std::string* accept = header_value(*headers, "sec-websocket-accept");
  if (!accept || *accept != accept_key(key)) return "handshake answer has a wrong Sec-WebSocket-Accept";
  if (!has(tokens(header_value(*headers, "upgrade"), true), "websocket")) return "handshake answer lacks Upgrade: websocket";
  if (!has(tokens(header_value(*headers, "connection"), true), "upgrade")) return "handshake answer lacks Connection: Upgrade";
  const auto names_any = [&](std::string_view name) {
    const auto t = tokens(header_value(*headers, name), false);
    return std::any_of(t.begin(), t.end(), [](const std::string& x) { return !x.empty(); });
  };
  if (deflate) {
    const std::string* ext = header_value(*headers, "sec-websocket-extensions");
    const auto r = wsd::check_response(wsd::kClientOffer, ext ? std::vector<std::string_view>{*ext}
                                                             : std::vector<std::string_view>{});
    if (!r.error.empty()) return "permessage-deflate response refused (WSD-NEG-5): " + r.error;
    if (agreed) *agreed = r.agreed;
  } else if (names_any("sec-websocket-extensions")) {
    return "handshake answer names an extension that was not offered";
  }
  const std::string* sub = header_value(*headers, "sec-websocket-protocol");
  if (names_any("sec-websocket-protocol") && !(sub && !offered.empty() && *sub == offered))
    return "handshake answer names a subprotocol that was not offered";
  return {};
}

}  // namespace fp
