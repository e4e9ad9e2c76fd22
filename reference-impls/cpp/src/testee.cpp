// fp-testee: speaks the testee protocol (spec/testee.md, harness versions 1 to 3) on
// stdin/stdout: u32 little-endian length + serialized TesteeRequest in, the same framing with a
// TesteeResponse out. Generic over the registry's protocols: the request's Codec message becomes
// the codec JSON (field names as in schemas/testee.proto) and goes through the same parser as
// --codec; every request is then handled by one template for all protocols.
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frameproof/registry.hpp"
#include "testee.pb.h"
#include "testee_discovery.hpp"
#include "testee_long_stream.hpp"

namespace pb = frameproof::testee::v1;
namespace gp = google::protobuf;

namespace {

using fp::testee::handle_discovery;  // discovery scripts (testee_discovery.cpp)

constexpr const char* kVersion = "0.2.0";
constexpr std::uint32_t kHarnessVersion = 3;  // the highest version this testee speaks

fp::ByteView view(const std::string& s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

std::string str(fp::ByteView v) { return {reinterpret_cast<const char*>(v.data()), v.size()}; }

// A protobuf message as JSON with the schema's field names. Every field of a message that is set
// is written, zero values included (LengthFieldParams{size: 0} is a varint, not "absent"); a
// message field or a oneof member that is not set is left out.
nlohmann::ordered_json message_json(const gp::Message& m) {
  const gp::Descriptor* d = m.GetDescriptor();
  const gp::Reflection* r = m.GetReflection();
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (int i = 0; i < d->field_count(); ++i) {
    const gp::FieldDescriptor* f = d->field(i);
    const bool repeated = f->is_repeated();
    if (!repeated && (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE || f->containing_oneof()) &&
        !r->HasField(m, f))
      continue;
    auto value = [&](int k) -> nlohmann::ordered_json {
      switch (f->cpp_type()) {
        case gp::FieldDescriptor::CPPTYPE_INT32: return repeated ? r->GetRepeatedInt32(m, f, k) : r->GetInt32(m, f);
        case gp::FieldDescriptor::CPPTYPE_INT64: return repeated ? r->GetRepeatedInt64(m, f, k) : r->GetInt64(m, f);
        case gp::FieldDescriptor::CPPTYPE_UINT32: return repeated ? r->GetRepeatedUInt32(m, f, k) : r->GetUInt32(m, f);
        case gp::FieldDescriptor::CPPTYPE_UINT64: return repeated ? r->GetRepeatedUInt64(m, f, k) : r->GetUInt64(m, f);
        case gp::FieldDescriptor::CPPTYPE_DOUBLE: return repeated ? r->GetRepeatedDouble(m, f, k) : r->GetDouble(m, f);
        case gp::FieldDescriptor::CPPTYPE_FLOAT: return repeated ? r->GetRepeatedFloat(m, f, k) : r->GetFloat(m, f);
        case gp::FieldDescriptor::CPPTYPE_BOOL: return repeated ? r->GetRepeatedBool(m, f, k) : r->GetBool(m, f);
        case gp::FieldDescriptor::CPPTYPE_ENUM:
          return (repeated ? r->GetRepeatedEnum(m, f, k) : r->GetEnum(m, f))->name();
        case gp::FieldDescriptor::CPPTYPE_STRING:
          return repeated ? r->GetRepeatedString(m, f, k) : r->GetString(m, f);
        case gp::FieldDescriptor::CPPTYPE_MESSAGE:
          return message_json(repeated ? r->GetRepeatedMessage(m, f, k) : r->GetMessage(m, f));
      }
      return nullptr;
    };
    if (!repeated) {
      j[f->name()] = value(0);
      continue;
    }
    auto& a = j[f->name()] = nlohmann::ordered_json::array();
    for (int k = 0; k < r->FieldSize(m, f); ++k) a.push_back(value(k));
  }
  return j;
}

// JSON with the schema's field names into a protobuf message (the reverse of message_json):
// numbers, booleans, strings/bytes (raw bytes in a JSON string), enums by name or number, nested
// messages and arrays. Unknown keys and nulls are ignored.
void json_to_message(const nlohmann::ordered_json& j, gp::Message* m) {
  const gp::Descriptor* d = m->GetDescriptor();
  const gp::Reflection* r = m->GetReflection();
  for (const auto& [key, v] : j.items()) {
    const gp::FieldDescriptor* f = d->FindFieldByName(key);
    if (!f || v.is_null()) continue;
    auto set_one = [&](const nlohmann::ordered_json& x) {
      const bool rep = f->is_repeated();
      switch (f->cpp_type()) {
        case gp::FieldDescriptor::CPPTYPE_INT32:
          rep ? r->AddInt32(m, f, x.get<std::int32_t>()) : r->SetInt32(m, f, x.get<std::int32_t>());
          break;
        case gp::FieldDescriptor::CPPTYPE_INT64:
          rep ? r->AddInt64(m, f, x.get<std::int64_t>()) : r->SetInt64(m, f, x.get<std::int64_t>());
          break;
        case gp::FieldDescriptor::CPPTYPE_UINT32:
          rep ? r->AddUInt32(m, f, x.get<std::uint32_t>()) : r->SetUInt32(m, f, x.get<std::uint32_t>());
          break;
        case gp::FieldDescriptor::CPPTYPE_UINT64:
          rep ? r->AddUInt64(m, f, x.get<std::uint64_t>()) : r->SetUInt64(m, f, x.get<std::uint64_t>());
          break;
        case gp::FieldDescriptor::CPPTYPE_DOUBLE:
          rep ? r->AddDouble(m, f, x.get<double>()) : r->SetDouble(m, f, x.get<double>());
          break;
        case gp::FieldDescriptor::CPPTYPE_FLOAT:
          rep ? r->AddFloat(m, f, x.get<float>()) : r->SetFloat(m, f, x.get<float>());
          break;
        case gp::FieldDescriptor::CPPTYPE_BOOL:
          rep ? r->AddBool(m, f, x.get<bool>()) : r->SetBool(m, f, x.get<bool>());
          break;
        case gp::FieldDescriptor::CPPTYPE_ENUM: {
          const gp::EnumValueDescriptor* e = x.is_string() ? f->enum_type()->FindValueByName(x.get<std::string>())
                                                          : f->enum_type()->FindValueByNumber(x.get<int>());
          if (e) rep ? r->AddEnum(m, f, e) : r->SetEnum(m, f, e);
          break;
        }
        case gp::FieldDescriptor::CPPTYPE_STRING:
          rep ? r->AddString(m, f, x.get<std::string>()) : r->SetString(m, f, x.get<std::string>());
          break;
        case gp::FieldDescriptor::CPPTYPE_MESSAGE:
          json_to_message(x, rep ? r->AddMessage(m, f) : r->MutableMessage(m, f));
          break;
      }
    };
    if (f->is_repeated()) {
      if (v.is_array())
        for (const auto& x : v) set_one(x);
    } else {
      set_one(v);
    }
  }
}

void set_error(pb::ProtocolError* out, const fp::ProtocolError& e) {
  out->set_requirement(e.requirement);
  out->set_offset(e.offset);
  out->set_message(e.message);
  if (!e.detail.empty()) json_to_message(nlohmann::ordered_json::parse(e.detail), out);  // {"websocket": {...}}
}

// An invalid configuration (e.g. LF-FMT-3) is the answer's error: true if so.
template <class P, class Response>
bool refused(const P& proto, Response* out) {
  const auto e = proto.validate();
  if (e) set_error(out->mutable_error(), *e);
  return e.has_value();
}

template <class P>
void do_decode(const pb::DecodeRequest& req, const P& proto, pb::DecodeResponse* out) {
  if (refused(proto, out)) return;
  typename P::DecoderType dec(proto);
  auto on_frame = [&](const typename P::FrameType& f) { json_to_message(proto.frame_json(f), out->add_frames()); };
  for (const std::string& chunk : req.chunks()) {
    if (auto e = dec.feed(view(chunk), on_frame)) {
      set_error(out->mutable_error(), *e);
      return;
    }
  }
  if (auto e = dec.finish()) set_error(out->mutable_error(), *e);
}

template <class P>
void do_encode(const pb::EncodeRequest& req, const P& proto, pb::EncodeResponse* out) {
  fp::Bytes bytes;
  const nlohmann::ordered_json fj = message_json(req.frame());
  const typename P::FrameType frame = proto.frame_from_json(fj);  // views into fj
  if (auto e = proto.encode(frame, bytes)) {
    set_error(out->mutable_error(), *e);
    return;
  }
  out->set_encoded(str(bytes));
}

template <class P>
void do_match(const pb::MatchRequest& req, const P& proto, pb::MatchResponse* out) {
  if (refused(proto, out)) return;
  fp::ClientConnection<P> conn(proto, req.timeout_ms());
  std::vector<fp::Completion> done;
  nlohmann::ordered_json fj;
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
      case pb::MatchEvent::kSendFrame:  // answered skipped before unless P::kSendsFrames (see handle)
        if constexpr (P::kSendsFrames) {
          fj = message_json(ev.send_frame());
          out->add_sent(str(conn.send_frame(proto.frame_from_json(fj), done)));
        }
        break;
      default:
        break;
    }
  }
  for (const fp::Completion& c : done) {
    pb::Completion* pc = out->add_completions();
    pc->set_kind(static_cast<pb::Completion::Kind>(static_cast<int>(c.kind)));
    if (c.request) pc->set_request(static_cast<std::uint32_t>(*c.request));
    if (c.kind == fp::Completion::Kind::Reply || c.kind == fp::Completion::Kind::Unmatched)
      json_to_message(c.frame, pc->mutable_frame());
  }
}

// What the server session writes, one entry per chunk (or EOF).
struct Written {
  std::string bytes;
  template <class F>
  void frame(const F&) {}
  void reply(fp::ByteView header, fp::ByteView payload, bool = false) {
    bytes.append(reinterpret_cast<const char*>(header.data()), header.size());
    bytes.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  }
};

template <class P>
void do_serve(const pb::ServeRequest& req, const P& proto, pb::ServeResponse* out) {
  if (refused(proto, out)) {  // no endpoint can be created: closed before any input
    out->set_closed(true);
    return;
  }
  typename P::Session session(proto, std::string_view(req.endpoint()));
  Written w;
  for (const std::string& chunk : req.chunks()) {
    w.bytes.clear();
    session.feed(view(chunk), w);
    out->add_written(w.bytes);
    if (session.closed()) break;
  }
  if (req.half_close() && !session.closed()) {
    w.bytes.clear();
    session.end_of_input();
    out->add_written(w.bytes);
  }
  out->set_closed(session.closed());
  if (session.error()) set_error(out->mutable_error(), *session.error());
}

void do_hello(const pb::HelloRequest& req, pb::HelloResponse* h) {
  const std::uint32_t version = std::clamp<std::uint32_t>(req.max_harness_version(), 1, kHarnessVersion);
  h->set_harness_version(version);
  h->set_name("frameproof-cpp");
  h->set_version(kVersion);
  for (std::string_view name : fp::protocol_names()) h->add_protocols(std::string(name));
  // rpc-unary-only: the rpc unary endpoint registers `unary_only` for call mode 0 only (RPC-ECHO-8)
  for (const char* feature : {"decode", "encode", "match", "serve", "discovery", "discovery-etcd", "rpc-unary-only"})
    h->add_features(feature);
  if (version >= 3) h->add_features("long-stream");
}

const pb::Codec* codec_of(const pb::TesteeRequest& req) {
  switch (req.request_case()) {
    case pb::TesteeRequest::kDecode: return &req.decode().codec();
    case pb::TesteeRequest::kEncode: return &req.encode().codec();
    case pb::TesteeRequest::kMatch: return &req.match().codec();
    case pb::TesteeRequest::kServe: return &req.serve().codec();
    default: return nullptr;
  }
}

// The request's protocol, or nullopt with the reason in `skipped`. An invalid configuration still
// gets its answer (e.g. LF-FMT-3); an unusual valid one that this testee does not support (a
// length-field offset above 16 MiB) is skipped.
std::optional<fp::AnyProtocol> protocol_of(const pb::Codec& codec, std::string& skipped) {
  fp::AnyProtocol proto;
  try {
    proto = fp::parse_codec(message_json(codec), /*strict=*/false);  // fields of a newer schema are ignored
  } catch (const fp::UnknownProtocol&) {
    skipped = "protocol '" + codec.protocol() + "' not implemented";
    return std::nullopt;
  }
  if (auto why = fp::unsupported(proto); why && !fp::validate(proto)) {
    skipped = *why + " by this testee";
    return std::nullopt;
  }
  return proto;
}

// A TesteeRequest with no request set, parsed once more as a TesteeLongStreamRequest; the answer
// is a TesteeLongStreamResponse. Empty: not a long stream.
std::optional<pb::TesteeLongStreamResponse> handle_long_stream(const std::string& raw) {
  pb::TesteeLongStreamRequest req;
  if (!req.ParseFromString(raw) || !req.has_long_stream()) return std::nullopt;
  const pb::LongStreamRequest& ls = req.long_stream();
  pb::TesteeLongStreamResponse resp;
  std::string skipped;
  const auto proto = protocol_of(ls.codec(), skipped);
  if (!proto) {
    resp.set_skipped(skipped);
    return resp;
  }
  const fp::testee::LongStreamResult r = std::visit(
      [&](const auto& p) {
        return fp::testee::run_long_stream(
            p, fp::testee::LongStreamReads(ls.cycle(), ls.repeat(), ls.tail(), ls.seed(), ls.max_chunk()));
      },
      *proto);
  pb::LongStreamResponse* out = resp.mutable_long_stream();
  out->set_frames(r.frames);
  out->set_payload_bytes(r.payload_bytes);
  out->set_digest(r.digest);
  out->set_fed(r.fed);
  if (r.last_header) {
    json_to_message(*r.last_header, out->mutable_last());
    out->mutable_last()->set_payload(r.last_payload);
  }
  if (r.error) set_error(out->mutable_error(), *r.error);
  return resp;
}

pb::TesteeResponse handle(const pb::TesteeRequest& req) {
  pb::TesteeResponse resp;
  if (req.request_case() == pb::TesteeRequest::kHello) {
    do_hello(req.hello(), resp.mutable_hello());
    return resp;
  }
  const pb::Codec* codec = codec_of(req);
  if (!codec) {
    resp.set_skipped("unknown request");
    return resp;
  }
  std::string skipped;
  const auto proto = protocol_of(*codec, skipped);
  if (!proto) {
    resp.set_skipped(skipped);
    return resp;
  }
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if (req.request_case() == pb::TesteeRequest::kMatch && !P::kSendsFrames) {
          for (const pb::MatchEvent& ev : req.match().events()) {
            if (ev.event_case() == pb::MatchEvent::kSendFrame) {  // v2, for requests that carry a header
              resp.set_skipped("match event send_frame is not supported by this testee for " + std::string(P::kName));
              return;
            }
          }
        }
        if (req.request_case() == pb::TesteeRequest::kServe && !P::has_endpoint(req.serve().endpoint())) {
          resp.set_skipped("endpoint '" + req.serve().endpoint() + "' not implemented for " + std::string(P::kName));
          return;
        }
        switch (req.request_case()) {
          case pb::TesteeRequest::kDecode: do_decode(req.decode(), p, resp.mutable_decode()); break;
          case pb::TesteeRequest::kEncode: do_encode(req.encode(), p, resp.mutable_encode()); break;
          case pb::TesteeRequest::kMatch: do_match(req.match(), p, resp.mutable_match()); break;
          case pb::TesteeRequest::kServe: do_serve(req.serve(), p, resp.mutable_serve()); break;
          default: break;
        }
      },
      *proto);
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
    } else if (req.request_case() == pb::TesteeRequest::REQUEST_NOT_SET) {
      try {
        // a discovery script or a long stream: its view's answer, the same wire format (its
        // field 8 or 9 kept as an unknown field)
        std::optional<std::string> answer;
        if (auto d = handle_discovery(in)) answer = d->SerializeAsString();
        else if (auto l = handle_long_stream(in)) answer = l->SerializeAsString();
        resp.Clear();
        if (answer) resp.ParseFromString(*answer);
        else resp.set_skipped("unknown request");
      } catch (const std::exception& e) {
        resp.Clear();
        resp.set_runtime_error(std::string("discovery or long stream: ") + e.what());
      }
    } else {
      try {
        resp = handle(req);
      } catch (const fp::Unsupported& e) {
        resp.Clear();
        resp.set_skipped(e.what());
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
