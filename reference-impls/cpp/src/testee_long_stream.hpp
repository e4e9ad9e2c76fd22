// fp-testee's long stream (spec/testee.md, "long stream", harness v3): the runner's recipe
// (`cycle` x `repeat`, then `tail`) fed to one decoder in reads whose sizes come from splitmix64;
// each frame's payload goes into a SHA-256 as it is decoded and no frame is kept, so several GiB
// pass through one decoder and its stream offsets cross 2^32.
#pragma once

#include <openssl/evp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "frameproof/codec.hpp"

namespace fp::testee {

// splitmix64 (the generator spec/testee.md gives for the reads' sizes).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// The recipe's stream, read in order into one reused buffer without holding it whole.
class LongStreamReads {
 public:
  static constexpr std::uint32_t kMaxChunk = 16u << 20;

  LongStreamReads(const std::string& cycle, std::uint64_t repeat, const std::string& tail, std::uint64_t seed,
                  std::uint32_t max_chunk)
      : cycle_(cycle), tail_(tail), rnd_(seed), max_chunk_(max_chunk) {
    if (cycle.empty() || max_chunk == 0 || max_chunk > kMaxChunk)
      throw std::invalid_argument("a long stream needs a non-empty cycle and max_chunk 1.." + std::to_string(kMaxChunk));
    if (repeat > UINT64_MAX / cycle.size() || repeat * cycle.size() > UINT64_MAX - tail.size())
      throw std::invalid_argument("the stream's length overflows 64 bits");
    body_ = repeat * cycle.size();
    total_ = body_ + tail.size();
    buf_.resize(max_chunk);
  }

  // The next read, or an empty view at the end of the stream.
  ByteView next() {
    if (pos_ >= total_) return {};
    const std::uint64_t n = std::min<std::uint64_t>(1 + rnd_.next() % max_chunk_, total_ - pos_);
    std::size_t at = 0;
    while (at < n) {
      const std::uint64_t p = pos_ + at;
      std::size_t take;
      if (p < body_) {
        const std::size_t c = static_cast<std::size_t>(p % cycle_.size());
        take = static_cast<std::size_t>(std::min<std::uint64_t>({cycle_.size() - c, n - at, body_ - p}));
        std::copy_n(cycle_.data() + c, take, reinterpret_cast<char*>(buf_.data()) + at);
      } else {
        take = static_cast<std::size_t>(n - at);
        std::copy_n(tail_.data() + (p - body_), take, reinterpret_cast<char*>(buf_.data()) + at);
      }
      at += take;
    }
    pos_ += n;
    return {buf_.data(), static_cast<std::size_t>(n)};
  }

  [[nodiscard]] std::uint64_t fed() const { return pos_; }

 private:
  const std::string& cycle_;
  const std::string& tail_;
  SplitMix64 rnd_;
  std::uint32_t max_chunk_;
  std::uint64_t body_ = 0, total_ = 0, pos_ = 0;
  std::vector<std::uint8_t> buf_;
};

// SHA-256 through OpenSSL's EVP interface.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 init");
  }
  void update(ByteView b) { EVP_DigestUpdate(ctx_.get(), b.data(), b.size()); }
  std::string finish() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), out, &n);
    return {reinterpret_cast<const char*>(out), n};
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

// What one decoder of `proto` delivered for the recipe's stream. The last frame is kept as its
// header fields' JSON (the frame with an empty payload: cheap) and a copy of its payload, since a
// decoded frame's views last only until the next read.
struct LongStreamResult {
  std::uint64_t frames = 0, payload_bytes = 0, fed = 0;
  std::string digest;
  std::optional<nlohmann::ordered_json> last_header;
  std::string last_payload;
  std::optional<ProtocolError> error;
};

template <class P>
LongStreamResult run_long_stream(const P& proto, LongStreamReads reads) {
  LongStreamResult r;
  Sha256 sha;
  typename P::DecoderType dec(proto);
  auto on_frame = [&](const typename P::FrameType& f) {
    sha.update(f.payload);
    ++r.frames;
    r.payload_bytes += f.payload.size();
    typename P::FrameType header = f;
    header.payload = {};
    r.last_header = proto.frame_json(header);
    r.last_payload.assign(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
  };
  if (auto e = proto.validate()) {
    r.error = *e;
  } else {
    for (ByteView chunk = reads.next(); !chunk.empty(); chunk = reads.next()) {
      if (auto e = dec.feed(chunk, on_frame)) {
        r.error = *e;
        break;
      }
    }
  }
  r.fed = reads.fed();
  r.digest = sha.finish();
  return r;
}

}  // namespace fp::testee
