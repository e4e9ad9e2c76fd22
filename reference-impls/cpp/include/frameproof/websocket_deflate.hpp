// permessage-deflate (RFC 7692) as spec/websocket-deflate.md states it (WSD-*), the server side of
// fp-server's websocket echo service, opt-in (codec JSON websocket.permessage_deflate). It mirrors
// the Python reference (conformance/frameproof/protocols/websocket/deflate.py):
//   parse_extensions   the Sec-WebSocket-Extensions list in every legal spelling (WSD-NEG-1)
//   offer_params       one offer's parameters, validated (WSD-NEG-2), or nullopt: declined
//   accept             the server's choice among the offers and its response (WSD-NEG-3/4)
//   Deflater/Inflater  one direction's compression and inflation (WSD-CMP-*, CTX-*, LIM-*), on zlib,
//                      their state created at the first compressed message (WSD-LIM-3); a message
//                      compressing would make longer goes uncompressed (Deflater::payload, WSD-FRM-3)
// The session side (RSV1, the message, the echo) is in WsSession (websocket.hpp,
// websocket_deflate.cpp); the decoder's RSV1 rules (WSD-FRM-2) in WsDecoder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frameproof/codec.hpp"

namespace fp::wsd {

inline constexpr std::string_view kName = "permessage-deflate";
inline constexpr std::size_t kStep = 64 * 1024;  // inflated bytes per step: the most held past the limit (WSD-LIM-1)
inline constexpr int kBare = -1;                 // client_max_window_bits offered without a value

// ------------------------------------------------------------------ the header grammar (WSD-NEG-1)

struct Param {
  std::string name;                  // as spelled
  std::optional<std::string> value;  // unquoted; nullopt: no value
};
struct Element {
  std::string name;
  std::vector<Param> params;
};
// Every Sec-WebSocket-Extensions value of a request (several headers are one list, in order) ->
// its elements; nullopt on bad syntax (a quoted value must be a token once unquoted).
std::optional<std::vector<Element>> parse_extensions(const std::vector<std::string_view>& values);

// ------------------------------------------------------------------ parameters (WSD-NEG-2..4)

struct Params {
  bool server_no_context_takeover = false;
  bool client_no_context_takeover = false;
  int server_max_window_bits = 0;  // 0: absent, else 8..15
  int client_max_window_bits = 0;  // 0: absent, kBare (offers only), else 8..15
  [[nodiscard]] std::string header() const;  // "permessage-deflate; ..." in the reference's order
  bool operator==(const Params&) const = default;
};

// An offer's parameters, or nullopt: the offer is declined (unknown, repeated or invalid, WSD-NEG-2).
std::optional<Params> offer_params(const std::vector<Param>& params);

// What the server asks for when it accepts (the reference's Policy).
struct Policy {
  bool server_no_context_takeover = false;
  int server_window_bits = 15;  // zlib: 9..15 (WSD-NEG-4)
  bool client_no_context_takeover = false;
  int client_window_bits = 0;  // 0: whatever the client offered
};

struct Agreement {
  Params params;
  std::string header;  // the response's Sec-WebSocket-Extensions value
};
// The first offer this server supports among `values`, or nullopt: declined (no header).
std::optional<Agreement> accept(const std::vector<std::string_view>& values, const Policy& policy = {});

// What a client offers (fp-autobahn-client --codec, reference-impls/README.md): client_max_window_bits
// without a value (it follows any window the server asks for), no hint: a server that wants the client
// to reset its compressor says client_no_context_takeover in its response, which the client follows
// (WSD-NEG-5); otherwise the client keeps its context (WSD-CTX-1).
inline const Params kClientOffer{false, false, 0, kBare};

// A client's reading of the server's Sec-WebSocket-Extensions values after offering `offer`
// (WSD-NEG-5): `agreed` nullopt and no error when the server declined, the agreement it must follow
// (an offer's client_no_context_takeover hint kept, RFC 7692 §7.1.1.2), or `error`: fail the connection (an element other
// than one permessage-deflate, an unknown, repeated or invalid parameter, client_max_window_bits not
// offered or without a value, a window larger than offered).
struct ResponseCheck {
  std::optional<Params> agreed;
  std::string error;
};
ResponseCheck check_response(const Params& offer, const std::vector<std::string_view>& values);

// ------------------------------------------------------------------ messages (WSD-CMP-*, CTX-*, LIM-*)

struct Z;  // a zlib stream (websocket_deflate.cpp)
struct ZFree {
  void operator()(Z* z) const;
};

// One sender's compressor: window_bits 9..15; `reset`: no context takeover (the state is freed after
// every message, so an idle connection holds none).
// The most bytes Deflater::compress can give for a message of n bytes (zlib's deflateBound and the
// sync flush's empty block): fp-load sizes a request's room with it.
std::size_t compress_bound(std::size_t n);

class Deflater {
 public:
  explicit Deflater(int window_bits = 15, bool reset = false, int level = 6);
  // The payload of one compressed message (WSD-CMP-1) into `out` (replaced): sync-flushed, its last
  // four octets 00 00 ff ff removed; an empty result is the single octet 0x00.
  void compress(ByteView message, Bytes& out);
  // A sender's payload for one message (WSD-FRM-3): true, `out` holds the compressed payload (compress);
  // false where that would be longer than the message (incompressible data, an empty message): the
  // message goes uncompressed (RSV1 clear), `out` is left empty, and the compressor is reset (its state
  // freed, made again at the next message, WSD-LIM-3): the message entered its window, but no
  // receiver's (WSD-CTX-3), so the next compressed message must refer to nothing earlier.
  bool payload(ByteView message, Bytes& out);
  // Bytes held by zlib's state (0 before the first message, WSD-LIM-3).
  [[nodiscard]] std::size_t held() const;

 private:
  int bits_, level_;
  bool reset_;
  std::unique_ptr<Z, ZFree> z_;
};

struct InflateError {
  std::uint16_t code;       // 1007 (WSD-CMP-3) or 1009 (WSD-LIM-1)
  const char* requirement;  // "WSD-CMP-3" / "WSD-LIM-1"
  std::string reason;
};

// One receiver's decompressor, fed a compressed message frame by frame as it arrives: a 15-bit window
// (it reads whatever the sender's window was); `reset`: the sender keeps no context; `max_message`:
// the limit on the inflated size, checked while inflating in steps of at most kStep bytes.
class Inflater {
 public:
  explicit Inflater(bool reset = false, std::uint64_t max_message = 16 << 20);
  // One frame's payload of the current compressed message; `last`: the message's last frame (then
  // 00 00 ff ff is inflated behind it, WSD-CMP-2, and the next call starts a new message). Appends
  // the inflated bytes to `out`. After a final block (BFINAL 1) the rest of the message is ignored
  // (WSD-CMP-5). An error leaves the state freed; the connection fails.
  std::optional<InflateError> feed(ByteView payload, bool last, Bytes& out);
  // Inflated bytes of the current message so far (never above max_message + 1).
  [[nodiscard]] std::uint64_t inflated() const { return count_; }
  [[nodiscard]] std::size_t held() const;

 private:
  std::optional<InflateError> run(const std::uint8_t* p, std::size_t n, Bytes& out);
  bool reset_;
  std::uint64_t max_;
  std::uint64_t count_ = 0;
  bool ended_ = false;  // a final block ended this message's stream
  std::unique_ptr<Z, ZFree> z_;
};

// One connection's extension once accepted, on the server's side or (`client`) the client's: the
// agreement and both directions (the zlib state of each created at the connection's first compressed
// message, WSD-LIM-2), and the compressed echo. server_* parameters are the server's sending side,
// client_* the client's (RFC 7692 §7.1).
struct Extension {
  Extension(const Params& agreed, std::uint64_t max_message, bool client = false)
      : params(agreed),
        compress(own_bits(agreed, client) >= 9),
        deflater(own_bits(agreed, client),
                 client ? agreed.client_no_context_takeover : agreed.server_no_context_takeover),
        inflater(client ? agreed.server_no_context_takeover : agreed.client_no_context_takeover, max_message) {}
  // The window this side compresses with (15 unless the agreement states one).
  static int own_bits(const Params& a, bool client) {
    const int b = client ? a.client_max_window_bits : a.server_max_window_bits;
    return b > 0 ? b : 15;
  }
  Params params;
  // false: the agreed window is one zlib cannot compress with (8 bits, WSD-NEG-4); this side's
  // messages then go uncompressed (WSD-FRM-1 allows it)
  bool compress;
  Deflater deflater;
  Inflater inflater;
  Bytes zout;  // the payload of the last compressed echo (empty: it went uncompressed, WSD-FRM-3)
  [[nodiscard]] std::size_t held() const { return deflater.held() + inflater.held() + zout.capacity(); }
};

}  // namespace fp::wsd
