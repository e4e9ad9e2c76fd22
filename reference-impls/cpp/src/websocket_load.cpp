// The load client's side of websocket (fp-load, src/load/): the requests of each --variant (binary, hex
// text, prose: reference-impls/README.md), written masked with a fresh key, and permessage-deflate as a
// connection's opening agreed it (requests compressed, echoes inflated). Apart from websocket.cpp so that
// the codec alone (what the fuzz targets link) needs no zlib.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "frameproof/websocket.hpp"

namespace fp {

using namespace ws;

namespace ws {
namespace {
constexpr std::string_view kProseWords[64] = {
    "the", "of", "and", "to", "in", "is", "that", "it",
    "for", "was", "on", "are", "as", "with", "his", "they",
    "at", "be", "this", "from", "have", "or", "by", "one",
    "had", "not", "but", "what", "all", "were", "when", "we",
    "there", "can", "an", "your", "which", "their", "said", "if",
    "do", "will", "each", "about", "how", "up", "out", "them",
    "then", "she", "many", "some", "so", "these", "would", "other",
    "into", "has", "more", "her", "two", "like", "him", "see"};
}  // namespace

void prose_payload(std::uint64_t index, std::uint8_t* dst, std::size_t n) {
  char digits[24];
  const int nd = std::snprintf(digits, sizeof digits, "%llu", static_cast<unsigned long long>(index));
  std::size_t at = 0;
  for (int i = 0; i < nd && at < n; ++i) dst[at++] = static_cast<std::uint8_t>(digits[i]);
  std::uint64_t s = index;
  while (at < n) {
    s += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    dst[at++] = ' ';
    for (const char c : kProseWords[z >> 58]) {
      if (at == n) break;
      dst[at++] = static_cast<std::uint8_t>(c);
    }
  }
}
}  // namespace ws

WsFrame WebSocket::variant_request(std::size_t variant) const {
  WsFrame f;
  f.opcode = variant == 0 ? kBinary : kText;
  f.masked = true;  // WS-MASK-4: a client's frames are masked
  f.key_len = 4;
  return f;
}

void WebSocket::request_payload(std::size_t variant, std::uint64_t index, std::uint8_t* dst, std::size_t n) const {
  if (variant == 2) {
    prose_payload(index, dst, n);
    return;
  }
  if (variant != 1) {
    load_payload(index, dst, n);
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  thread_local std::vector<std::uint8_t> bin;  // reused: no allocation per request
  bin.resize((n + 1) / 2);
  load_payload(index, bin.data(), bin.size());
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint8_t>(kHex[(bin[i / 2] >> (i % 2 ? 0 : 4)) & 15]);
}

std::size_t WebSocket::write_request(std::uint8_t* dst, WsFrame& header, std::size_t variant, std::uint64_t index,
                                     std::size_t len) const {
  fresh_key(header.key);  // WS-MASK-3: a fresh key for every frame
  if (load_ && load_->ext.compress) {
    // permessage-deflate agreed: the message compressed (WSD-CMP-1), RSV1 on its one frame (WSD-FRM-1);
    // uncompressed, RSV1 clear, where compressing would make it longer (the default variant's pseudo-random
    // bytes: about 5 octets more a 16 KiB block, a frame over the limit at the largest --payload, WSD-FRM-3)
    WsLoadDeflate& d = *load_;
    d.plain.resize(len);
    request_payload(variant, index, d.plain.data(), len);
    const bool z = d.ext.deflater.payload(ByteView(d.plain.data(), len), d.ext.zout);
    const Bytes& body = z ? d.ext.zout : d.plain;
    WsFrame h = header;
    h.rsv = z ? 4 : 0;
    const std::size_t hl = write_header(dst, h, body.size());
    std::memcpy(dst + hl, body.data(), body.size());
    mask(dst + hl, body.size(), header.key.data());
    return hl + body.size();
  }
  const std::size_t h = write_header(dst, header, len);
  request_payload(variant, index, dst + h, len);
  mask(dst + h, len, header.key.data());
  return h + len;
}

void WebSocket::opened(const std::optional<wsd::Params>& agreed, WsDecoder& dec) {
  load_.reset();
  if (!agreed) return;
  load_ = std::make_shared<WsLoadDeflate>(*agreed, max_message());
  dec.allow_rsv1();
}

const WsFrame& WebSocket::incoming(const WsFrame& f, WsFrame& scratch, std::string& why) const {
  if (!load_ || (f.rsv & 4) == 0 || control_opcode(f.opcode)) return f;
  if (!f.fin || f.opcode == kCont) {
    why = "a compressed echo in more than one frame";
    return f;
  }
  WsLoadDeflate& d = *load_;
  d.inflated.clear();
  if (const auto e = d.ext.inflater.feed(f.payload, true, d.inflated)) {
    why = "the echo does not inflate (" + std::string(e->requirement) + "): " + e->reason;
    return f;
  }
  scratch = f;
  scratch.rsv = 0;
  scratch.payload = ByteView(d.inflated.data(), d.inflated.size());
  return scratch;
}

}  // namespace fp
