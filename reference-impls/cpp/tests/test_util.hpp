// Helpers shared by the unit tests: hex parsing, decoding a stream split into chunks.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "frameproof/registry.hpp"

namespace fpt {

inline fp::Bytes hex(std::string_view s) {
  fp::Bytes out;
  int hi = -1;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else throw std::invalid_argument("bad hex");
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<std::uint8_t>(hi * 16 + v));
      hi = -1;
    }
  }
  if (hi >= 0) throw std::invalid_argument("odd hex");
  return out;
}

inline fp::Bytes bytes(std::string_view s) { return fp::Bytes(s.begin(), s.end()); }

inline fp::Bytes cat(fp::Bytes a, const fp::Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline fp::Bytes pattern(std::size_t n, std::uint8_t seed = 0) {
  fp::Bytes p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 31 + seed);
  return p;
}

// what a websocket session writes back (header and payload, one after the other); frames ignored
struct WsSink {
  fp::Bytes out;
  template <class F>
  void frame(const F&) {}
  void reply(fp::ByteView h, fp::ByteView p, bool = false) {
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), p.begin(), p.end());
  }
};

struct OwnedFrame {
  std::uint8_t flag = 0;
  std::uint8_t sequence = 0;
  fp::Bytes payload;
  bool operator==(const OwnedFrame&) const = default;
};

struct Decoded {
  std::vector<OwnedFrame> frames;
  std::optional<fp::ProtocolError> error;
};

// The protocols whose frames are fp::Frame (flag, sequence, payload): the helpers below that take
// an AnyProtocol are for them (rpc and websocket have tests of their own).
template <class P>
inline constexpr bool kPlain = std::is_same_v<typename P::FrameType, fp::Frame>;

// Feeds `chunks` one by one into a fresh decoder, then ends the stream (like the testee's decode).
template <class P>
Decoded decode_chunks(const P& proto, const std::vector<fp::Bytes>& chunks, std::size_t read_chunk = 64 * 1024) {
  Decoded d;
  if constexpr (!kPlain<P>) {
    throw std::logic_error("decode_chunks: not a flag/sequence protocol");
  } else {
  fp::Decoder<P> dec(proto, read_chunk);
  auto on = [&](const fp::Frame& f) {
    d.frames.push_back({f.flag, f.sequence, fp::Bytes(f.payload.begin(), f.payload.end())});
  };
  for (const auto& c : chunks) {
    if (auto e = dec.feed(c, on)) {
      d.error = e;
      return d;
    }
  }
  d.error = dec.finish();
  }
  return d;
}

template <class P>
Decoded decode_all(const P& proto, const fp::Bytes& stream) {
  return decode_chunks(proto, {stream});
}

// The same for a protocol from the registry.
inline Decoded decode_chunks(const fp::AnyProtocol& proto, const std::vector<fp::Bytes>& chunks,
                             std::size_t read_chunk = 64 * 1024) {
  return std::visit([&](const auto& p) { return decode_chunks(p, chunks, read_chunk); }, proto);
}
inline Decoded decode_all(const fp::AnyProtocol& proto, const fp::Bytes& stream) { return decode_chunks(proto, {stream}); }

// Appends `f` encoded with a protocol from the registry.
inline std::optional<fp::ProtocolError> encode(const fp::AnyProtocol& proto, const OwnedFrame& f, fp::Bytes& out) {
  return std::visit(
      [&](const auto& p) -> std::optional<fp::ProtocolError> {
        if constexpr (kPlain<std::decay_t<decltype(p)>>) return p.encode(fp::Frame{f.flag, f.sequence, f.payload}, out);
        else throw std::logic_error("encode: not a flag/sequence protocol");
      },
      proto);
}

// Splits `stream` at the given cut points (sorted, within bounds).
inline std::vector<fp::Bytes> split_at(const fp::Bytes& stream, const std::vector<std::size_t>& cuts) {
  std::vector<fp::Bytes> out;
  std::size_t prev = 0;
  for (std::size_t c : cuts) {
    out.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(prev), stream.begin() + static_cast<std::ptrdiff_t>(c));
    prev = c;
  }
  out.emplace_back(stream.begin() + static_cast<std::ptrdiff_t>(prev), stream.end());
  return out;
}

inline std::vector<fp::Bytes> bytewise(const fp::Bytes& stream) {
  std::vector<fp::Bytes> out;
  for (std::uint8_t b : stream) out.push_back({b});
  return out;
}

inline fp::Standard standard(std::uint64_t max = 0) { return fp::Standard(fp::Limits{max}); }

inline fp::LengthField lf(std::uint32_t offset, std::int32_t size, std::uint64_t max = 0) {
  return fp::LengthField(fp::Limits{max}, offset, size);
}

// Encodes a standard frame (EXPECTs success).
inline fp::Bytes enc_std(std::uint8_t flag, std::uint8_t seq, const fp::Bytes& payload, std::uint64_t max = 0) {
  fp::Bytes out;
  auto e = standard(max).encode(fp::Frame{flag, seq, payload}, out);
  if (e) throw std::runtime_error("enc_std: " + e->requirement);
  return out;
}

}  // namespace fpt
