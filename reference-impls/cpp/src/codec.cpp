#include "frameproof/codec.hpp"

#include <cstring>
#include <stdexcept>

namespace fp {

namespace {

std::uint64_t default_max(std::uint64_t configured) { return configured ? configured : kDefaultMaxPayload; }

bool lf_size_valid(std::int32_t size) {
  return size == 1 || size == 2 || size == 4 || size == -2 || size == -4 || size == 0;
}

std::size_t lf_field_max_len(std::int32_t size) { return size == 0 ? 5 : static_cast<std::size_t>(size < 0 ? -size : size); }

ProtocolError make_error(const char* req, std::uint64_t offset, std::string msg) {
  return ProtocolError{req, offset, std::move(msg)};
}

HeaderInfo need(std::uint64_t n) {
  HeaderInfo h;
  h.status = HeaderInfo::Status::NeedMore;
  h.needed = n;
  return h;
}

HeaderInfo fail(const char* req, const char* msg) {
  HeaderInfo h;
  h.status = HeaderInfo::Status::Error;
  h.requirement = req;
  h.message = msg;
  return h;
}

HeaderInfo header(std::size_t header_len, std::uint64_t payload_len) {
  HeaderInfo h;
  h.status = HeaderInfo::Status::Header;
  h.header_len = header_len;
  h.payload_len = payload_len;
  h.needed = header_len + payload_len;
  return h;
}

HeaderInfo parse_standard(std::uint64_t max, ByteView b) {
  if (b.size() < 4) return need(4);
  std::uint64_t n = static_cast<std::uint64_t>(b[2]) | (static_cast<std::uint64_t>(b[3]) << 8);
  std::size_t hlen = 4;
  if (n == 0xFFFF) {
    if (b.size() < 8) return need(8);
    n = static_cast<std::uint64_t>(b[4]) | (static_cast<std::uint64_t>(b[5]) << 8) |
        (static_cast<std::uint64_t>(b[6]) << 16) | (static_cast<std::uint64_t>(b[7]) << 24);
    hlen = 8;
    if (n < 0xFFFF) return fail("STD-LEN-3", "non-canonical extended length below 65535");
    if (n > kInt31Max) return fail("STD-LEN-4", "extended length has bit 31 set");
  }
  if (n > max) return fail("STD-LIM-1", "declared payload above the maximum");
  return header(hlen, n);
}

HeaderInfo parse_length_field(const LfProfile& p, std::uint64_t max, ByteView b) {
  const std::size_t at = p.offset;
  std::uint64_t n = 0;
  std::size_t w = 0;
  if (p.size == 0) {
    for (std::size_t i = 0;; ++i) {
      if (i == 5) return fail("LF-LEN-2", "varint longer than 5 bytes");
      if (b.size() <= at + i) return need(at + i + 1);
      const std::uint8_t byte = b[at + i];
      n |= static_cast<std::uint64_t>(byte & 0x7F) << (7 * i);
      if (!(byte & 0x80)) {
        w = i + 1;
        break;
      }
    }
    if (n > kInt31Max) return fail("LF-LEN-2", "varint value above 2^31-1");
  } else {
    w = lf_field_max_len(p.size);
    if (b.size() < at + w) return need(at + w);
    const std::uint8_t* f = b.data() + at;
    for (std::size_t i = 0; i < w; ++i) {
      // little-endian for positive sizes, big-endian for negative ones
      const std::uint8_t byte = p.size > 0 ? f[w - 1 - i] : f[i];
      n = (n << 8) | byte;
    }
    if (w == 4 && n > kInt31Max) return fail("LF-LEN-3", "length has bit 31 set");
  }
  if (n > max) return fail("LF-LIM-1", "declared payload above the maximum");
  return header(at + w, n);
}

}  // namespace

std::optional<Protocol> parse_protocol(std::string_view name) {
  if (name == "standard") return Protocol::Standard;
  if (name == "length-field") return Protocol::LengthField;
  return std::nullopt;
}

const char* protocol_name(Protocol p) { return p == Protocol::Standard ? "standard" : "length-field"; }

std::uint64_t lf_capacity(std::int32_t size) {
  switch (size) {
    case 1: return 0xFF;
    case 2:
    case -2: return 0xFFFF;
    case 4:
    case -4:
    case 0: return kInt31Max;
    default: return 0;
  }
}

std::optional<ProtocolError> CodecConfig::validate() const {
  if (protocol == Protocol::LengthField && !lf_size_valid(lf.size))
    return make_error("LF-FMT-3", 0, "unsupported length-field size " + std::to_string(lf.size));
  return std::nullopt;
}

std::uint64_t CodecConfig::effective_max() const {
  const std::uint64_t m = default_max(max_payload);
  if (protocol == Protocol::Standard) return std::min(m, kInt31Max);
  return std::min(m, lf_capacity(lf.size));
}

std::uint64_t CodecConfig::max_frame_size() const {
  if (protocol == Protocol::Standard) return 8 + effective_max();
  return lf.offset + lf_field_max_len(lf.size) + effective_max();
}

HeaderInfo parse_header(const CodecConfig& cfg, std::uint64_t max_payload, ByteView avail) {
  if (cfg.protocol == Protocol::Standard) return parse_standard(max_payload, avail);
  return parse_length_field(cfg.lf, max_payload, avail);
}

// ---------------------------------------------------------------------------------------------
// Decoder

Decoder::Decoder(const CodecConfig& cfg, std::size_t read_chunk) : cfg_(cfg) {
  if (auto e = cfg.validate()) throw std::invalid_argument(e->message);
  max_ = cfg_.effective_max();
  max_frame_ = static_cast<std::size_t>(cfg_.max_frame_size());
  // The read chunk must at least hold any header, so a full buffer always has a parsed header.
  const std::size_t min_chunk = cfg_.protocol == Protocol::Standard ? 16 : cfg_.lf.offset + 16;
  chunk_ = std::max(read_chunk, min_chunk);
}

std::span<std::uint8_t> Decoder::prepare() {
  // Count reads that did not need a big buffer, so that memory a big frame needed is given back
  // once big frames stop coming (and not reallocated for every frame of a run of big ones).
  if (needed_ > chunk_) small_reads_ = 0;
  else if (small_reads_ < kShrinkAfter) ++small_reads_;
  if (start_ == end_) {
    start_ = end_ = 0;
    if (cap_ > 2 * chunk_ && small_reads_ >= kShrinkAfter) {
      buf_.reset();
      cap_ = 0;
    }
  }
  const std::size_t buffered = end_ - start_;
  std::size_t want = std::max<std::size_t>(chunk_, static_cast<std::size_t>(needed_));
  want = std::min(want, std::max(chunk_, max_frame_));
  if (cap_ < want) {
    // Grow to exactly what the pending frame needs (bounded by the largest legal frame).
    std::unique_ptr<std::uint8_t[]> nb(new std::uint8_t[want]);
    if (buffered) std::memcpy(nb.get(), buf_.get() + start_, buffered);
    buf_ = std::move(nb);
    cap_ = want;
    start_ = 0;
    end_ = buffered;
  } else if (start_ > 0 && (cap_ - end_ < chunk_ / 2 || start_ + needed_ > cap_)) {
    // Compact: move the partial frame to the front instead of growing.
    std::memmove(buf_.get(), buf_.get() + start_, buffered);
    start_ = 0;
    end_ = buffered;
  }
  return {buf_.get() + end_, cap_ - end_};
}

void Decoder::commit(std::size_t n) { end_ += n; }

Decoder::Status Decoder::next(Frame& out) {
  if (error_) return Status::Error;
  const ByteView avail{buf_.get() + start_, end_ - start_};
  if (avail.empty()) {
    needed_ = 0;
    return Status::NeedMore;
  }
  const HeaderInfo h = parse_header(cfg_, max_, avail);
  switch (h.status) {
    case HeaderInfo::Status::Error:
      error_ = make_error(h.requirement, base_, h.message);
      return Status::Error;
    case HeaderInfo::Status::NeedMore:
      needed_ = h.needed;
      return Status::NeedMore;
    case HeaderInfo::Status::Header:
      break;
  }
  if (avail.size() < h.needed) {
    needed_ = h.needed;
    return Status::NeedMore;
  }
  const std::size_t total = static_cast<std::size_t>(h.needed);
  if (cfg_.protocol == Protocol::Standard) {
    out.flag = avail[0];
    out.sequence = avail[1];
  } else {
    out.flag = 0;
    out.sequence = 0;
  }
  out.payload = avail.subspan(h.header_len, static_cast<std::size_t>(h.payload_len));
  start_ += total;
  base_ += total;
  needed_ = 0;
  return Status::Frame;
}

std::optional<ProtocolError> Decoder::finish() {
  if (error_) return error_;
  if (end_ > start_) {
    error_ = make_error(cfg_.protocol == Protocol::Standard ? "STD-STR-3" : "LF-STR-3", base_,
                        "stream ended inside a frame");
  }
  return error_;
}

// ---------------------------------------------------------------------------------------------
// Encoders

std::size_t write_standard_header(std::uint8_t* dst, std::uint8_t flag, std::uint8_t sequence, std::uint64_t len) {
  dst[0] = flag;
  dst[1] = sequence;
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

std::size_t lf_header_len(const LfProfile& p, std::uint64_t len) {
  if (p.size != 0) return p.offset + lf_field_max_len(p.size);
  std::size_t w = 1;
  while (len >= 0x80) {
    len >>= 7;
    ++w;
  }
  return p.offset + w;
}

std::size_t write_lf_header(std::uint8_t* dst, const LfProfile& p, std::uint64_t len) {
  std::memset(dst, 0, p.offset);  // LF-FMT-4: header bytes are zeros
  std::uint8_t* f = dst + p.offset;
  std::size_t w;
  if (p.size == 0) {  // minimal LEB128 (LF-LEN-2)
    w = 0;
    do {
      std::uint8_t b = len & 0x7F;
      len >>= 7;
      if (len) b |= 0x80;
      f[w++] = b;
    } while (len);
  } else {
    w = lf_field_max_len(p.size);
    for (std::size_t i = 0; i < w; ++i) {
      const auto b = static_cast<std::uint8_t>(len >> (8 * i));
      if (p.size > 0) f[i] = b;
      else f[w - 1 - i] = b;
    }
  }
  return p.offset + w;
}

std::optional<ProtocolError> encode_standard(std::uint8_t flag, std::uint8_t sequence, ByteView payload,
                                             std::uint64_t max_payload, Bytes& out) {
  const std::uint64_t n = payload.size();
  // §8a: STD-LEN-4 for a payload of 2^31 bytes or more (whatever the maximum), else STD-LIM-2.
  if (n > kInt31Max) return make_error("STD-LEN-4", 0, "payload of 2^31 bytes or more");
  if (n > default_max(max_payload)) return make_error("STD-LIM-2", 0, "payload above the maximum");
  const std::size_t at = out.size();
  out.resize(at + 8);
  const std::size_t h = write_standard_header(out.data() + at, flag, sequence, n);
  out.resize(at + h);
  out.insert(out.end(), payload.begin(), payload.end());
  return std::nullopt;
}

std::optional<ProtocolError> encode_length_field(const LfProfile& profile, ByteView payload,
                                                 std::uint64_t max_payload, Bytes& out) {
  if (!lf_size_valid(profile.size))
    return make_error("LF-FMT-3", 0, "unsupported length-field size " + std::to_string(profile.size));
  const std::uint64_t n = payload.size();
  if (n > lf_capacity(profile.size)) return make_error("LF-LEN-1", 0, "length does not fit the length field");
  if (n > default_max(max_payload)) return make_error("LF-LIM-2", 0, "payload above the maximum");
  const std::size_t at = out.size();
  out.resize(at + lf_header_len(profile, n));
  write_lf_header(out.data() + at, profile, n);
  out.insert(out.end(), payload.begin(), payload.end());
  return std::nullopt;
}

std::optional<ProtocolError> encode(const CodecConfig& cfg, std::uint8_t flag, std::uint8_t sequence,
                                    ByteView payload, Bytes& out) {
  if (cfg.protocol == Protocol::Standard) return encode_standard(flag, sequence, payload, cfg.max_payload, out);
  return encode_length_field(cfg.lf, payload, cfg.max_payload, out);
}

}  // namespace fp
