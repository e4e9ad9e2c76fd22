// libFuzzer target for the C++ reference decoder (src/codec.cpp with the protocol modules
// src/standard.cpp, src/length_field.cpp), both protocols.
//
// Input layout (conformance/FUZZING.md; shared with wire_fuzz.cpp, reference-impls/rust/fuzz and
// frameproof.fuzz_corpus.corpus_entry):
//   byte 0: the protocol: 0 standard, 1 length-field (2 and 3 are wire_fuzz.cpp's; others ignored).
//   byte 1: configuration. bits 5-7: max payload (kLimits); length-field: bits 0-3 the profile
//           (kProfiles).
//   byte 2: chunking. 0: the stream is fed in one chunk; otherwise chunk sizes come from a small
//           LCG seeded with this byte, each in 1..=(byte % 16) + 1; the chunked decoder also gets a
//           small read chunk (16 + byte) so that its buffer compacts and grows often.
//   rest:   the byte stream.
//
// Built with -fsanitize=fuzzer,address,undefined (build.sh): memory errors, leaks and undefined
// behaviour abort. Invariants checked on every input (a violation aborts with a message):
//  1. chunked decode == whole decode (frames and error, STD-STR-1 / LF-STR-1);
//  2. the delivered frames re-encode to the bytes they came from (encode(decode(x)) == x for
//     canonical input; length-field header bytes are ignored, LF-FMT-4, and a non-minimal varint
//     may be accepted, LF-LEN-4); an error is reported where the delivered frames end;
//  3. no payload above the configured maximum; every error names a requirement of its protocol.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "frameproof/registry.hpp"

namespace {

constexpr std::uint64_t kLimits[8] = {0, 16, 64, 100, 1024, 65535, 70000, 1};
constexpr std::int32_t kProfiles[16][2] = {{0, 2}, {0, -2}, {0, 4}, {0, -4}, {0, 1}, {0, 0}, {2, 2}, {4, -4},
                                           {1, 1}, {3, 0}, {1, -4}, {5, 0}, {1, 2}, {2, -2}, {7, 4}, {0, 0}};

struct OwnedFrame {
  std::uint8_t flag, sequence;
  fp::Bytes payload;
  bool operator==(const OwnedFrame& o) const {
    return flag == o.flag && sequence == o.sequence && payload == o.payload;
  }
};

struct Outcome {
  std::vector<OwnedFrame> frames;
  std::optional<fp::ProtocolError> error;
};

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "INVARIANT VIOLATED: %s %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

// The protocols of this target: frames of flag, sequence and payload.
template <class P>
constexpr bool kPlain = std::is_same_v<typename P::FrameType, fp::Frame>;

template <class P>
Outcome run(const P& proto, std::size_t read_chunk, const std::vector<fp::ByteView>& parts) {
  static_assert(kPlain<P>);
  fp::Decoder<P> d(proto, read_chunk);
  Outcome out;
  auto collect = [&](const fp::Frame& f) {
    out.frames.push_back({f.flag, f.sequence, fp::Bytes(f.payload.begin(), f.payload.end())});
  };
  for (auto p : parts) {
    if (auto e = d.feed(p, collect)) {
      out.error = e;
      return out;
    }
  }
  out.error = d.finish();
  return out;
}

Outcome run(const fp::AnyProtocol& proto, std::size_t read_chunk, const std::vector<fp::ByteView>& parts) {
  return std::visit(
      [&](const auto& p) -> Outcome {
        if constexpr (kPlain<std::decay_t<decltype(p)>>) return run(p, read_chunk, parts);
        else fail("not a protocol of this target");
      },
      proto);
}

std::vector<fp::ByteView> chunks(fp::ByteView data, std::uint8_t ctl) {
  if (ctl == 0 || data.empty()) return {data};
  const std::size_t maxc = ctl % 16 + 1;
  std::uint32_t state = ctl;
  std::vector<fp::ByteView> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    state = state * 1103515245u + 12345u;
    std::size_t n = std::min<std::size_t>(1 + (state >> 16) % maxc, data.size() - pos);
    out.push_back(data.subspan(pos, n));
    pos += n;
  }
  return out;
}

std::string err_str(const std::optional<fp::ProtocolError>& e) {
  return e ? e->requirement + " @ " + std::to_string(e->offset) : "no error";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
  // byte 0: the protocol (0 standard, 1 length-field; the others are wire_fuzz.cpp's); byte 1: the
  // configuration (bits 5-7 the limit, bits 0-3 the length-field profile); byte 2: the chunking
  if (size < 3 || input[0] > 1) return 0;
  const std::uint8_t cfgb = input[1], ctl = input[2];
  const fp::ByteView data{input + 3, size - 3};
  const bool std_ = input[0] == 0;
  const auto* profile = kProfiles[cfgb & 15];
  const auto offset = static_cast<std::uint32_t>(profile[0]);
  const std::int32_t lf_size = profile[1];
  // the protocol under test, and the same one without a maximum to re-encode with
  auto make = [&](std::uint64_t max) -> fp::AnyProtocol {
    if (std_) return fp::Standard(fp::Limits{max});
    return fp::LengthField(fp::Limits{max}, offset, lf_size);
  };
  const fp::AnyProtocol cfg = make(kLimits[cfgb >> 5]);
  const fp::AnyProtocol enc_cfg = make(0x7FFFFFFF);
  const Outcome whole = run(cfg, 64 * 1024, {data});
  const Outcome chunked = run(cfg, 16 + ctl, chunks(data, ctl));
  if (!(whole.frames == chunked.frames)) fail("chunked decode delivered other frames than whole decode");
  if (err_str(whole.error) != err_str(chunked.error))
    fail("chunked decode reported another error than whole decode:", err_str(whole.error) + " vs " + err_str(chunked.error));

  const std::uint64_t max = std::visit([](const auto& p) { return p.max_payload(); }, cfg);
  std::size_t pos = 0;
  for (const auto& f : whole.frames) {
    if (f.payload.size() > max) fail("payload above the maximum", std::to_string(f.payload.size()));
    fp::Bytes enc;
    const fp::Frame frame{f.flag, f.sequence, f.payload};
    if (auto e = std::visit(
            [&](const auto& p) -> std::optional<fp::ProtocolError> {
              if constexpr (kPlain<std::decay_t<decltype(p)>>) return p.encode(frame, enc);
              else fail("not a protocol of this target");
            },
            enc_cfg))
      fail("a decoded frame does not encode:", e->requirement);
    if (std_) {
      if (pos + enc.size() > data.size() || std::memcmp(data.data() + pos, enc.data(), enc.size()) != 0)
        fail("frame does not re-encode to its bytes at", std::to_string(pos));
      pos += enc.size();
      continue;
    }
    const std::size_t o = offset;
    std::size_t width = enc.size() - o - f.payload.size();
    if (lf_size == 0) {  // a non-minimal varint may be accepted (LF-LEN-4)
      width = 0;
      while (pos + o + width < data.size() && (data[pos + o + width] & 0x80)) ++width;
      ++width;
      if (width > 5) fail("varint longer than 5 bytes accepted");
    } else if (pos + o + width > data.size() || std::memcmp(data.data() + pos + o, enc.data() + o, width) != 0) {
      fail("length field does not re-encode at", std::to_string(pos + o));
    }
    const std::size_t start = pos + o + width;
    if (start + f.payload.size() > data.size() ||
        (!f.payload.empty() && std::memcmp(data.data() + start, f.payload.data(), f.payload.size()) != 0))
      fail("payload is not the input bytes at", std::to_string(start));
    pos = start + f.payload.size();
  }
  if (whole.error) {
    const std::string prefix = std_ ? "STD-" : "LF-";
    if (whole.error->requirement.rfind(prefix, 0) != 0) fail("error of the other protocol:", whole.error->requirement);
    if (whole.error->offset != pos) fail("error offset is not where the delivered frames end:", err_str(whole.error));
  } else if (pos != data.size()) {
    fail("no error but the frames do not cover the stream");
  }
  return 0;
}
