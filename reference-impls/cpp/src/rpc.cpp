#include "frameproof/rpc.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace fp {

using namespace rpc;

namespace {

constexpr std::uint8_t kMagic[4] = {'G', 'R', 'P', 'C'};  // RPC-HDR-2

std::uint32_t be32(const std::uint8_t* p) {
  return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
         (static_cast<std::uint32_t>(p[2]) << 8) | p[3];
}
std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
void put32(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
void put16(std::uint8_t* p, std::uint64_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

ByteView sv(std::string_view s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }
bool equals(ByteView a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), reinterpret_cast<const std::uint8_t*>(b.data()));
}
std::string str(ByteView v) { return {reinterpret_cast<const char*>(v.data()), v.size()}; }

// Bytes of the typed body fields before the payload.
std::size_t prefix_len(const RpcFrame& h) {
  if (named_type(h.type)) return 4 + h.service.size() + h.method.size();
  if (h.type == kResponse) return 2;
  return 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Decoder

RpcDecoder::RpcDecoder(const Rpc& proto, std::size_t read_chunk)
    : max_body_(proto.max_body()),
      buf_(std::max(read_chunk, kHeaderLen + 8), static_cast<std::size_t>(kHeaderLen + proto.max_body())) {}

RpcDecoder::Status RpcDecoder::next(RpcFrame& out) {
  if (error_) return Status::Error;
  const ByteView avail = buf_.data();
  if (avail.size() < kHeaderLen) {  // §11: a header is judged once all 16 bytes are there
    buf_.need(avail.empty() ? 0 : kHeaderLen);
    return Status::NeedMore;
  }
  const std::uint8_t* p = avail.data();
  if (std::memcmp(p, kMagic, 4) != 0) return fail("RPC-HDR-2", "bad magic");
  if (p[4] != kVersion) return fail("RPC-HDR-3", "version is not 1");
  const std::uint8_t type = p[5];
  if (!known_type(type)) return fail("RPC-HDR-4", "unknown message type");
  const std::uint32_t n = be32(p + 12);
  if (control_type(type) && n != 0) return fail("RPC-BODY-5", "STREAM_INIT_ACK/END/CANCEL with a body");
  if (n > max_body_) return fail("RPC-LIM-1", "declared body above the maximum");
  const std::uint64_t whole = kHeaderLen + static_cast<std::uint64_t>(n);
  if (avail.size() < whole) {
    buf_.need(whole);
    return Status::NeedMore;
  }
  const ByteView body = avail.subspan(kHeaderLen, n);
  out = RpcFrame{};
  out.version = p[4];
  out.type = type;
  out.flags = p[6];
  out.reserved = p[7];
  out.id = be32(p + 8);
  if (named_type(type)) {  // RPC-BODY-1, RPC-BODY-3
    const char* req = type == kRequest ? "RPC-BODY-1" : "RPC-BODY-3";
    if (n < 2) return fail(req, "body too short for the service length");
    const std::size_t sl = be16(body.data());
    if (2 + sl + 2 > n) return fail(req, "service name beyond the body");
    const std::size_t ml = be16(body.data() + 2 + sl);
    if (4 + sl + ml > n) return fail(req, "method name beyond the body");
    out.service = body.subspan(2, sl);
    out.method = body.subspan(4 + sl, ml);
    out.payload = body.subspan(4 + sl + ml);
  } else if (type == kResponse) {  // RPC-BODY-2
    if (n < 2) return fail("RPC-BODY-2", "RESPONSE body shorter than its error code");
    out.error_code = be16(body.data());
    out.payload = body.subspan(2);
  } else {  // RPC-BODY-4, RPC-BODY-5
    out.payload = body;
  }
  buf_.consume(static_cast<std::size_t>(whole));
  return Status::Frame;
}

// ---------------------------------------------------------------------------------------------
// Configuration, encoder, frames as JSON

Rpc Rpc::configure(Limits limits, JsonParams& params) {
  if (limits.max_payload != 0) throw CodecError("codec: rpc's limit is rpc.max_body, not limits.max_payload");
  std::uint64_t max_body = 0;
  if (auto p = params.take_object("rpc")) {
    max_body = p->take_uint("max_body", UINT64_MAX).value_or(0);
    p->finish();
  }
  return Rpc(max_body);
}

std::size_t Rpc::header_bound(const RpcFrame& h) const { return kHeaderLen + prefix_len(h); }

std::size_t Rpc::write_header(std::uint8_t* dst, const RpcFrame& h, std::uint64_t len) const {
  const std::size_t pre = prefix_len(h);
  std::memcpy(dst, kMagic, 4);
  dst[4] = static_cast<std::uint8_t>(h.version);
  dst[5] = static_cast<std::uint8_t>(h.type);
  dst[6] = static_cast<std::uint8_t>(h.flags);
  dst[7] = static_cast<std::uint8_t>(h.reserved);
  put32(dst + 8, h.id);
  put32(dst + 12, pre + len);
  std::uint8_t* b = dst + kHeaderLen;
  if (named_type(h.type)) {
    put16(b, h.service.size());
    if (!h.service.empty()) std::memcpy(b + 2, h.service.data(), h.service.size());
    b += 2 + h.service.size();
    put16(b, h.method.size());
    if (!h.method.empty()) std::memcpy(b + 2, h.method.data(), h.method.size());
  } else if (h.type == kResponse) {
    put16(b, h.error_code);
  }
  return kHeaderLen + pre;
}

std::optional<ProtocolError> Rpc::encode(const RpcFrame& f, Bytes& out) const {
  if (f.version != kVersion) return ProtocolError{"RPC-HDR-3", 0, "version must be 1"};
  if (!known_type(f.type)) return ProtocolError{"RPC-HDR-4", 0, "unknown message type"};
  if (control_type(f.type) && !f.payload.empty())
    return ProtocolError{"RPC-BODY-5", 0, "STREAM_INIT_ACK/END/CANCEL carry no body"};
  if (named_type(f.type) && (f.service.size() > 0xFFFF || f.method.size() > 0xFFFF))
    return ProtocolError{"RPC-BODY-6", 0, "name longer than 65535 bytes"};
  if (f.type == kResponse && f.error_code > 0xFFFF) return ProtocolError{"RPC-BODY-2", 0, "error code above 65535"};
  const std::uint64_t n = prefix_len(f) + f.payload.size();
  if (n > max_body()) return ProtocolError{"RPC-LIM-2", 0, "body above the maximum"};
  const std::size_t at = out.size();
  out.resize(at + header_bound(f));
  write_header(out.data() + at, f, f.payload.size());
  out.insert(out.end(), f.payload.begin(), f.payload.end());
  return std::nullopt;
}

nlohmann::ordered_json Rpc::frame_json(const RpcFrame& f) const {
  nlohmann::ordered_json j;
  j["payload"] = str(f.payload);
  auto& h = j["rpc"];
  h["version"] = f.version;
  h["type"] = f.type;
  h["flags"] = f.flags;
  h["reserved"] = f.reserved;
  h["id"] = f.id;
  h["service"] = str(f.service);
  h["method"] = str(f.method);
  h["error_code"] = f.error_code;
  return j;
}

RpcFrame Rpc::frame_from_json(const nlohmann::ordered_json& j) const {
  RpcFrame f;
  f.payload = json_bytes(j, "payload");
  auto it = j.find("rpc");
  if (it == j.end() || !it->is_object()) {  // no header: the plain echo call
    f.service = sv(kEchoService);
    f.method = sv(kEchoMethod);
    return f;
  }
  const auto& h = *it;
  auto u32 = [&](const char* key) { return static_cast<std::uint32_t>(std::min<std::uint64_t>(json_uint(h, key), 0xFFFFFFFFu)); };
  f.version = u32("version");
  f.type = u32("type");
  f.flags = u32("flags");
  f.reserved = u32("reserved");
  f.id = u32("id");
  f.service = json_bytes(h, "service");
  f.method = json_bytes(h, "method");
  f.error_code = u32("error_code");
  return f;
}

RpcFrame Rpc::variant_request(std::size_t variant) const {
  RpcFrame f;
  // UNARY 0 .. BIDI 3, with END_STREAM as upstream's client sends every call (RPC-ID-1)
  f.flags = static_cast<std::uint32_t>(variant & 3) | kEndStream;
  f.service = sv(kEchoService);
  f.method = sv(kEchoMethod);
  return f;
}

RpcFrame Rpc::stream_frame(StreamStep step, std::uint32_t id) const {
  RpcFrame f;
  f.flags = 0;  // stream frames carry flags 0 (RPC-HDR-5)
  f.id = id;
  switch (step) {
    case StreamStep::Open:
      f.type = kInit;
      f.service = sv(kEchoService);
      f.method = sv(kEchoMethod);
      break;
    case StreamStep::Data: f.type = kData; break;
    case StreamStep::End: f.type = kEnd; break;
  }
  return f;
}

std::optional<std::string> Rpc::stream_check(StreamStep step, const RpcFrame& reply, std::uint32_t id) const {
  const std::uint32_t want = step == StreamStep::Open ? kInitAck : step == StreamStep::Data ? kData : kEnd;
  if (reply.type == want && reply.id == id) return std::nullopt;
  char b[112];
  std::snprintf(b, sizeof b, "stream %u: expected type 0x%02X with its id, got type 0x%02X id %u", id, want,
                reply.type, reply.id);
  return std::string(b);
}

// ---------------------------------------------------------------------------------------------
// IdMatcher

std::optional<RpcFrame> IdMatcher::next(SendKind kind, const RpcFrame* given) const {
  if (kind == SendKind::OneWay) return std::nullopt;  // rpc has no one-way call
  if (kind == SendKind::Request && pending_.count(next_id_)) return std::nullopt;  // RPC-ID-2
  RpcFrame f;
  if (given) {
    if (given->type != kRequest) return std::nullopt;  // a client sends calls only
    f.flags = given->flags;
    f.service = given->service;
    f.method = given->method;
  } else {
    f.service = sv(kEchoService);
    f.method = sv(kEchoMethod);
  }
  f.id = next_id_;  // RPC-ID-1
  return f;
}

void IdMatcher::begin(SendKind kind, std::uint64_t index, std::uint64_t now) {
  const std::uint32_t id = next_id_++;  // modulo 2^32
  if (kind == SendKind::Request) pending_[id] = Pending{index, now};
}

Match IdMatcher::complete(const RpcFrame& f) {
  if (f.type != kResponse) return {Match::Kind::Ignored};  // RPC-MATCH-4
  auto it = pending_.find(f.id);
  if (it == pending_.end()) return {Match::Kind::Unmatched};  // RPC-MATCH-2
  const Pending p = it->second;
  pending_.erase(it);
  return {Match::Kind::Reply, p.index, p.sent};  // RPC-MATCH-1, RPC-MATCH-5
}

bool IdMatcher::expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>&) {
  const std::size_t first = timed_out.size();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.sent + timeout_ <= now) {
      timed_out.push_back(it->second.index);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(timed_out.begin() + static_cast<std::ptrdiff_t>(first), timed_out.end());  // oldest first
  return false;
}

void IdMatcher::clear(std::vector<std::uint64_t>& ids) {
  const std::size_t first = ids.size();
  for (const auto& [id, p] : pending_) ids.push_back(p.index);
  pending_.clear();
  std::sort(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
}

std::optional<std::uint64_t> IdMatcher::next_deadline() const {
  std::optional<std::uint64_t> d;
  for (const auto& [id, p] : pending_)
    if (!d || p.sent + timeout_ < *d) d = p.sent + timeout_;
  return d;
}

std::optional<std::string> IdMatcher::check_echo(const RpcFrame& reply, const RpcFrame& request) {
  const std::uint32_t want = (request.flags & 3) | kEndStream;
  char b[96];
  if (reply.error_code != kOk) {
    std::snprintf(b, sizeof b, "RESPONSE with error code %u, expected 0", reply.error_code);
    return std::string(b);
  }
  if (reply.flags != want) {
    std::snprintf(b, sizeof b, "RESPONSE flags 0x%02X, expected 0x%02X", reply.flags, want);
    return std::string(b);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// RpcSession

RpcSession::RpcSession(const Rpc& proto) : RpcSession(proto, Endpoint::Auto) {}

RpcSession::RpcSession(const Rpc& proto, std::string_view endpoint)
    : RpcSession(proto, endpoint == "stream" ? Endpoint::Stream : Endpoint::Unary) {}

RpcSession::RpcSession(const Rpc& proto, Endpoint ep, std::size_t read_chunk) : dec_(proto, read_chunk), ep_(ep) {}

bool RpcSession::answer(const RpcFrame& f) {
  reply_len_ = 0;
  reply_payload_ = {};
  if (ep_ == Endpoint::Auto) ep_ = f.type >= kInit && f.type <= kCancel ? Endpoint::Stream : Endpoint::Unary;  // RPC-ECHO-7
  if (ep_ == Endpoint::Unary) return unary(f);
  stream(f);
  return true;
}

bool RpcSession::unary(const RpcFrame& f) {
  if (f.type != kRequest) return false;  // RPC-ECHO-4
  // RPC-ECHO-1, RPC-ECHO-2; routed by service, method and call mode (RPC-MODE-1): `echo` in every
  // mode, `unary_only` in mode 0 only (RPC-ECHO-8)
  const bool unary_only = equals(f.method, kUnaryOnlyMethod) && (f.flags & 3) == 0;
  std::uint16_t code = kOk;
  if (!equals(f.service, kEchoService)) code = kServiceNotFound;
  else if (!equals(f.method, kEchoMethod) && !unary_only) code = kMethodNotFound;
  RpcFrame r;
  r.type = kResponse;
  r.flags = (f.flags & 3) | kEndStream;  // RPC-MODE-2
  r.id = f.id;
  r.error_code = code;
  if (code == kOk) reply_payload_ = f.payload;
  reply_len_ = Rpc().write_header(reply_.data(), r, reply_payload_.size());
  return true;
}

void RpcSession::control(std::uint8_t type, std::uint32_t id) {
  RpcFrame r;
  r.type = type;
  r.flags = 0;
  r.id = id;
  reply_len_ = Rpc().write_header(reply_.data(), r, 0);
}

void RpcSession::stream(const RpcFrame& f) {
  if (!open_) {
    if (f.type == kInit && equals(f.service, kEchoService) && equals(f.method, kEchoMethod)) {
      open_ = true;  // RPC-STREAM-1
      stream_id_ = f.id;
      control(kInitAck, f.id);
    } else {
      control(kCancel, f.id);  // RPC-STREAM-5, RPC-STREAM-6
    }
    return;
  }
  if (f.type == kData) {  // RPC-STREAM-2: the open stream's id, whatever the DATA carried
    RpcFrame r;
    r.type = kData;
    r.flags = 0;
    r.id = stream_id_;
    reply_payload_ = f.payload;
    reply_len_ = Rpc().write_header(reply_.data(), r, f.payload.size());
    return;
  }
  open_ = false;
  if (f.type == kEnd) control(kEnd, stream_id_);            // RPC-STREAM-3
  else if (f.type != kCancel) control(kCancel, stream_id_);  // RPC-STREAM-7 (CANCEL: RPC-STREAM-4)
}

}  // namespace fp
