// libFuzzer target for the C++ rpc and websocket decoders (src/rpc.cpp, src/websocket.cpp with
// src/codec.cpp). A target of its own (docs/adding-a-protocol.md §5) with the input layout of
// decode_fuzz.cpp, the Rust target and frameproof.fuzz_corpus.corpus_entry.
//
// Input layout (conformance/FUZZING.md, the same for every native target):
//   byte 0: the protocol: 2 rpc, 3 websocket (0 and 1 are decode_fuzz.cpp's; other values: ignored).
//   byte 1: configuration. bits 5-7: the frame/body limit (kLimits); websocket: bit 0 the role (0
//           server, 1 client), bits 1-3 the message limit (kLimits).
//   byte 2: chunking, as in decode_fuzz.cpp (0: one chunk; else LCG chunk sizes 1..(byte % 16) + 1
//           and a small read chunk of 16 + byte, so that the buffer compacts and grows often).
//   rest:   the byte stream (websocket: after the opening handshake).
//
// Invariants checked on every input (a violation aborts with a message):
//  1. chunked decode == whole decode (frames and error: RPC-STR-1, WS-STR-1);
//  2. every delivered frame re-encodes to exactly the bytes it came from (rpc: header and body
//     fields verbatim; websocket: minimal lengths, its masking key, the unmasked payload masked
//     again), frames cover the stream up to the error's offset (or to the end, or to a close frame);
//  3. no payload above the configured limit; websocket: control frames have FIN and at most 125
//     bytes, the masking matches the role, every text message is valid UTF-8 after reassembly,
//     no message above the message limit; every error names a requirement of its protocol.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "frameproof/rpc.hpp"
#include "frameproof/websocket.hpp"

namespace {

constexpr std::uint64_t kLimits[8] = {0, 16, 64, 100, 1024, 65535, 70000, 1};

[[noreturn]] void fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "INVARIANT VIOLATED: %s %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

struct Owned {
  std::vector<std::uint32_t> fields;  // the protocol's header fields, in a fixed order
  fp::Bytes service, method, payload;
  bool operator==(const Owned&) const = default;
};

struct Outcome {
  std::vector<Owned> frames;
  std::optional<fp::ProtocolError> error;
};

Owned own(const fp::RpcFrame& f) {
  return {{f.version, f.type, f.flags, f.reserved, f.id, f.error_code},
          fp::Bytes(f.service.begin(), f.service.end()),
          fp::Bytes(f.method.begin(), f.method.end()),
          fp::Bytes(f.payload.begin(), f.payload.end())};
}

Owned own(const fp::WsFrame& f) {
  return {{f.fin, f.rsv, f.opcode, f.masked, f.key_len, f.key[0], f.key[1], f.key[2], f.key[3]},
          {},
          {},
          fp::Bytes(f.payload.begin(), f.payload.end())};
}

template <class P>
Outcome run(const P& proto, std::size_t read_chunk, const std::vector<fp::ByteView>& parts) {
  typename P::DecoderType d(proto, read_chunk);
  Outcome out;
  auto collect = [&](const typename P::FrameType& f) { out.frames.push_back(own(f)); };
  for (auto p : parts) {
    if (auto e = d.feed(p, collect)) {
      out.error = e;
      return out;
    }
  }
  out.error = d.finish();
  return out;
}

std::vector<fp::ByteView> chunks(fp::ByteView data, std::uint8_t ctl) {
  if (ctl == 0 || data.empty()) return {data};
  const std::size_t maxc = ctl % 16 + 1;
  std::uint32_t state = ctl;
  std::vector<fp::ByteView> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    state = state * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>(1 + (state >> 16) % maxc, data.size() - pos);
    out.push_back(data.subspan(pos, n));
    pos += n;
  }
  return out;
}

std::string err_str(const std::optional<fp::ProtocolError>& e) {
  return e ? e->requirement + " @ " + std::to_string(e->offset) : "no error";
}

void check_same(const Outcome& whole, const Outcome& chunked) {
  if (!(whole.frames == chunked.frames)) fail("chunked decode delivered other frames than whole decode");
  if (err_str(whole.error) != err_str(chunked.error))
    fail("chunked decode reported another error than whole decode:", err_str(whole.error) + " vs " + err_str(chunked.error));
}

// Frames re-encode to the input; returns the offset where they end.
std::size_t check_reencode(fp::ByteView data, std::size_t pos, const fp::Bytes& enc) {
  if (pos + enc.size() > data.size() || std::memcmp(data.data() + pos, enc.data(), enc.size()) != 0)
    fail("frame does not re-encode to its bytes at", std::to_string(pos));
  return pos + enc.size();
}

void check_end(fp::ByteView data, const Outcome& o, std::size_t pos, const char* prefix, bool stopped) {
  if (o.error) {
    if (o.error->requirement.rfind(prefix, 0) != 0) fail("error of another protocol:", o.error->requirement);
    if (o.error->offset != pos) fail("error offset is not where the delivered frames end:", err_str(o.error));
  } else if (!stopped && pos != data.size()) {
    fail("no error but the frames do not cover the stream");
  }
}

void fuzz_rpc(std::uint8_t cfgb, std::uint8_t ctl, fp::ByteView data) {
  const fp::Rpc proto(kLimits[cfgb >> 5]);
  const Outcome whole = run(proto, 64 * 1024, {data});
  check_same(whole, run(proto, 16 + ctl, chunks(data, ctl)));
  const fp::Rpc wide(0xFFFFFFFFu);
  std::size_t pos = 0;
  for (const Owned& f : whole.frames) {
    fp::RpcFrame r;
    r.version = f.fields[0];
    r.type = f.fields[1];
    r.flags = f.fields[2];
    r.reserved = f.fields[3];
    r.id = f.fields[4];
    r.error_code = f.fields[5];
    r.service = f.service;
    r.method = f.method;
    r.payload = f.payload;
    const std::uint64_t body = wide.header_bound(r) - fp::rpc::kHeaderLen + f.payload.size();
    if (body > proto.max_body()) fail("body above the maximum", std::to_string(body));
    fp::Bytes enc;
    if (auto e = wide.encode(r, enc)) fail("a decoded frame does not encode:", e->requirement);
    pos = check_reencode(data, pos, enc);
  }
  check_end(data, whole, pos, "RPC-", false);
}

void fuzz_websocket(std::uint8_t cfgb, std::uint8_t ctl, fp::ByteView data) {
  const bool client = cfgb & 1;
  const std::uint64_t max_message = kLimits[(cfgb >> 1) & 7];
  const fp::WebSocket proto(fp::Limits{kLimits[cfgb >> 5]}, client, max_message);
  const Outcome whole = run(proto, 64 * 1024, {data});
  check_same(whole, run(proto, 16 + ctl, chunks(data, ctl)));
  const fp::WebSocket wide(fp::Limits{1ull << 62}, client, 1ull << 62);
  std::size_t pos = 0;
  bool closed = false;
  fp::Bytes message;
  bool text = false;
  for (const Owned& o : whole.frames) {
    if (closed) fail("a frame was delivered after a close frame");
    fp::WsFrame f;
    f.fin = o.fields[0];
    f.rsv = o.fields[1];
    f.opcode = o.fields[2];
    f.masked = o.fields[3];
    f.key_len = static_cast<std::uint8_t>(o.fields[4]);
    for (int i = 0; i < 4; ++i) f.key[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(o.fields[5 + static_cast<std::size_t>(i)]);
    f.payload = o.payload;
    if (f.payload.size() > proto.max_payload()) fail("payload above the maximum", std::to_string(f.payload.size()));
    if (f.masked == client) fail("a frame masked against the role was delivered");
    const bool control = f.opcode >= 8;
    if (control && (!f.fin || f.payload.size() > 125)) fail("a bad control frame was delivered");
    if (f.opcode == fp::ws::kClose) closed = true;
    if (!control) {
      if (f.opcode != fp::ws::kCont) {
        message.clear();
        text = f.opcode == fp::ws::kText;
      }
      message.insert(message.end(), f.payload.begin(), f.payload.end());
      if (message.size() > proto.max_message()) fail("message above the message limit");
      if (f.fin && text && !fp::ws::utf8_valid(message)) fail("an invalid UTF-8 text message was delivered");
    }
    fp::Bytes enc;
    if (auto e = wide.encode(f, enc)) fail("a decoded frame does not encode:", e->requirement);
    pos = check_reencode(data, pos, enc);
  }
  check_end(data, whole, pos, "WS-", closed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
  if (size < 3) return 0;
  const fp::ByteView data{input + 3, size - 3};
  if (input[0] == 2) fuzz_rpc(input[1], input[2], data);
  else if (input[0] == 3) fuzz_websocket(input[1], input[2], data);
  return 0;
}
