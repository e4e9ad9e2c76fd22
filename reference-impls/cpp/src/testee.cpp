// fp-testee: speaks the testee protocol (spec/testee.md) on stdin/stdout: u32 little-endian
// length + serialized TesteeRequest in, the same framing with a TesteeResponse out.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "frameproof/codec.hpp"
#include "frameproof/matcher.hpp"
#include "testee.pb.h"

namespace pb = frameproof::testee::v1;

namespace {

constexpr const char* kVersion = "0.1.0";
constexpr std::uint32_t kMaxOffset = 1u << 24;  // 16 MiB

fp::ByteView view(const std::string& s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

std::string str(fp::ByteView v) { return {reinterpret_cast<const char*>(v.data()), v.size()}; }

// Codec from the request; nullopt protocol means "not implemented" (answered as skipped).
std::optional<fp::CodecConfig> make_config(const pb::Codec& c) {
  auto proto = fp::parse_protocol(c.protocol());
  if (!proto) return std::nullopt;
  fp::CodecConfig cfg;
  cfg.protocol = *proto;
  cfg.max_payload = c.limits().max_payload();
  if (c.has_length_field()) {
    cfg.lf.offset = c.length_field().offset();
    cfg.lf.size = c.length_field().size();
  }
  return cfg;
}

void set_error(pb::ProtocolError* out, const fp::ProtocolError& e) {
  out->set_requirement(e.requirement);
  out->set_offset(e.offset);
  out->set_message(e.message);
}

void add_frame(pb::Frame* out, std::uint8_t flag, std::uint8_t seq, fp::ByteView payload) {
  out->set_flag(flag);
  out->set_sequence(seq);
  out->set_payload(str(payload));
}

void do_decode(const pb::DecodeRequest& req, const fp::CodecConfig& cfg, pb::DecodeResponse* out) {
  if (auto e = cfg.validate()) {
    set_error(out->mutable_error(), *e);
    return;
  }
  fp::Decoder dec(cfg);
  auto on_frame = [&](const fp::Frame& f) { add_frame(out->add_frames(), f.flag, f.sequence, f.payload); };
  for (const std::string& chunk : req.chunks()) {
    if (auto e = dec.feed(view(chunk), on_frame)) {
      set_error(out->mutable_error(), *e);
      return;
    }
  }
  if (auto e = dec.finish()) set_error(out->mutable_error(), *e);
}

void do_encode(const pb::EncodeRequest& req, const fp::CodecConfig& cfg, pb::EncodeResponse* out) {
  fp::Bytes bytes;
  const auto& f = req.frame();
  if (auto e = fp::encode(cfg, static_cast<std::uint8_t>(f.flag()), static_cast<std::uint8_t>(f.sequence()),
                          view(f.payload()), bytes)) {
    set_error(out->mutable_error(), *e);
    return;
  }
  out->set_encoded(str(bytes));
}

void do_match(const pb::MatchRequest& req, const fp::CodecConfig& cfg, pb::MatchResponse* out) {
  if (auto e = cfg.validate()) {
    set_error(out->mutable_error(), *e);
    return;
  }
  fp::ClientConnection conn(cfg, req.timeout_ms());
  std::vector<fp::Completion> done;
  for (const pb::MatchEvent& ev : req.events()) {
    switch (ev.event_case()) {
      case pb::MatchEvent::kSend:
        out->add_sent(str(conn.send(view(ev.send()), false, done)));
        break;
      case pb::MatchEvent::kSendOneWay:
        out->add_sent(str(conn.send(view(ev.send_one_way()), true, done)));
        break;
      case pb::MatchEvent::kReceive:
        if (auto e = conn.receive(view(ev.receive()), done)) set_error(out->mutable_error(), *e);
        break;
      case pb::MatchEvent::kAdvanceMs:
        conn.advance(ev.advance_ms(), done);
        break;
      case pb::MatchEvent::EVENT_NOT_SET:
        break;
    }
  }
  for (const fp::Completion& c : done) {
    pb::Completion* pc = out->add_completions();
    pc->set_kind(static_cast<pb::Completion::Kind>(static_cast<int>(c.kind)));
    if (c.request) pc->set_request(static_cast<std::uint32_t>(*c.request));
    if (c.kind == fp::Completion::Kind::Reply || c.kind == fp::Completion::Kind::Unmatched)
      add_frame(pc->mutable_frame(), c.flag, c.sequence, c.payload);
  }
}

const pb::Codec* codec_of(const pb::TesteeRequest& req) {
  switch (req.request_case()) {
    case pb::TesteeRequest::kDecode: return &req.decode().codec();
    case pb::TesteeRequest::kEncode: return &req.encode().codec();
    case pb::TesteeRequest::kMatch: return &req.match().codec();
    default: return nullptr;
  }
}

pb::TesteeResponse handle(const pb::TesteeRequest& req) {
  pb::TesteeResponse resp;
  if (req.request_case() == pb::TesteeRequest::kHello) {
    auto* h = resp.mutable_hello();
    h->set_harness_version(1);
    h->set_name("frameproof-cpp");
    h->set_version(kVersion);
    h->add_protocols("standard");
    h->add_protocols("length-field");
    h->add_features("decode");
    h->add_features("encode");
    h->add_features("match");
    return resp;
  }
  const pb::Codec* codec = codec_of(req);
  if (!codec) {
    resp.set_skipped("unknown request");
    return resp;
  }
  auto cfg = make_config(*codec);
  if (!cfg) {
    resp.set_skipped("protocol '" + codec->protocol() + "' not implemented");
    return resp;
  }
  // Every length-field frame carries `offset` header bytes: refuse to build absurdly large ones
  // (same bound as the Rust testee). An invalid size still gets its LF-FMT-3 answer.
  if (cfg->protocol == fp::Protocol::LengthField && !cfg->validate() && cfg->lf.offset > kMaxOffset) {
    resp.set_skipped("length-field offset above " + std::to_string(kMaxOffset) + " bytes is not supported by this testee");
    return resp;
  }
  if (req.request_case() == pb::TesteeRequest::kEncode &&
      (req.encode().frame().flag() > 0xFF || req.encode().frame().sequence() > 0xFF)) {
    resp.set_skipped("flag " + std::to_string(req.encode().frame().flag()) + " / sequence " +
                     std::to_string(req.encode().frame().sequence()) + " do not fit a byte");
    return resp;
  }
  switch (req.request_case()) {
    case pb::TesteeRequest::kDecode: do_decode(req.decode(), *cfg, resp.mutable_decode()); break;
    case pb::TesteeRequest::kEncode: do_encode(req.encode(), *cfg, resp.mutable_encode()); break;
    case pb::TesteeRequest::kMatch: do_match(req.match(), *cfg, resp.mutable_match()); break;
    default: break;
  }
  return resp;
}

bool read_exact(void* dst, std::size_t n) {
  return std::fread(dst, 1, n, stdin) == n;
}

}  // namespace

int main() {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  std::string in;
  std::string out;
  while (true) {
    std::uint8_t hdr[4];
    if (!read_exact(hdr, 4)) break;
    const std::uint32_t n = hdr[0] | (hdr[1] << 8) | (hdr[2] << 16) | (static_cast<std::uint32_t>(hdr[3]) << 24);
    in.resize(n);
    if (n && !read_exact(in.data(), n)) {
      std::fprintf(stderr, "fp-testee: truncated request\n");
      return 1;
    }
    pb::TesteeRequest req;
    pb::TesteeResponse resp;
    if (!req.ParseFromString(in)) {
      resp.set_runtime_error("request does not parse");
    } else {
      try {
        resp = handle(req);
      } catch (const std::exception& e) {
        resp.Clear();
        resp.set_runtime_error(std::string("exception: ") + e.what());
      }
    }
    out.clear();
    if (!resp.SerializeToString(&out)) {  // e.g. above protobuf's 2 GiB message limit
      resp.Clear();
      resp.set_runtime_error("response does not serialize");
      out.clear();
      resp.SerializeToString(&out);
    }
    const auto len = static_cast<std::uint32_t>(out.size());
    const std::uint8_t lh[4] = {static_cast<std::uint8_t>(len), static_cast<std::uint8_t>(len >> 8),
                                static_cast<std::uint8_t>(len >> 16), static_cast<std::uint8_t>(len >> 24)};
    if (std::fwrite(lh, 1, 4, stdout) != 4 || std::fwrite(out.data(), 1, out.size(), stdout) != out.size() ||
        std::fflush(stdout) != 0) {
      return 1;
    }
  }
  return 0;
}
