// The server side of one connection: bytes in, bytes out, closed or not, and the classified
// error (reference-impls/README.md, "server session"). fp-server is a socket loop around it; the
// testee's `serve` request drives the same session offline.
//
// EchoSession<P> is the echo service of a protocol whose spec defines it frame by frame (the
// reply to a frame is P::echo(frame), or nothing): standard (STD-ECHO-*) and length-field
// (LF-ECHO-*). Each module names its session type as P::Session.
//
// Output goes to a sink `out` with two calls:
//   out.frame(const F&)                          every decoded frame (counters; F = P::FrameType)
//   out.reply(ByteView header, ByteView payload)  one reply, header then payload; both views
//                                                 are valid until the next prepare()/feed()
//                                                 (a third argument `essential`, default false,
//                                                 marks what fp-server --sink still sends: the
//                                                 websocket handshake answer, pongs, close frames)
// and, optionally, for a reply written straight into the sink's own buffer (fp-server):
//   std::uint8_t* out.reply_space(std::size_t header_bound, std::size_t payload)
//                        room for one reply of at most header_bound + payload bytes at the end
//                        of the output, or nullptr to get reply() instead (e.g. a big payload
//                        the sink sends without copying);
//   out.replied(std::size_t n)   the reply's n bytes written there are part of the output.
// The rpc and websocket modules have sessions of their own with the same interface
// (RpcSession, WsSession), resource accounting included: held(), unfinished(), release_if_empty();
// a session with an opening handshake also says handshaking() (the idle timeout bounds it from
// the accept).
#pragma once

#include <cstring>

#include "frameproof/codec.hpp"

namespace fp {

template <class P>
class EchoSession {
 public:
  // proto must be valid (throws std::invalid_argument otherwise).
  explicit EchoSession(const P& proto, std::size_t read_chunk = kReadChunk)
      : dec_(proto, read_chunk), header_(proto.max_header_size()) {}
  // The testee's `serve` endpoint: these protocols have one, the default.
  EchoSession(const P& proto, std::string_view /*endpoint*/) : EchoSession(proto) {}

  // Input side for a socket reader (see Decoder::prepare/commit); then call process().
  std::span<std::uint8_t> prepare() { return dec_.prepare(); }
  void commit(std::size_t n) { dec_.commit(n); }

  // Replies to every complete frame buffered. Returns false once the session has closed: a
  // decoding error (error() says which) closes it after the replies to the frames before it.
  // The frames that lie whole in the buffer are answered where they lie
  // (Decoder::drain_complete); the rest, an unfinished or invalid frame included, goes through
  // Decoder::next as before.
  template <class Out>
  bool process(Out& out) {
    if (closed_) return false;
    dec_.drain_complete([&](const Frame& f) { answer(f, out); });
    Frame f;
    typename Decoder<P>::Status st;
    while ((st = dec_.next(f)) == Decoder<P>::Status::Frame) answer(f, out);
    if (st == Decoder<P>::Status::Error) closed_ = true;
    return !closed_;
  }

  // Offline use: feeds `data` (any size) and replies as process() does.
  template <class Out>
  bool feed(ByteView data, Out& out) {
    while (process(out) && !data.empty()) {
      auto space = prepare();
      const std::size_t n = std::min(space.size(), data.size());
      std::copy_n(data.data(), n, space.data());
      commit(n);
      data = data.subspan(n);
    }
    return !closed_;
  }

  // The peer's EOF: the session closes, with the truncation error (STD-STR-3, LF-STR-3) if a
  // frame was left unfinished (STD-ECHO-5, LF-ECHO-3: it gets no reply).
  void end_of_input() {
    if (closed_) return;
    closed_ = true;
    dec_.finish();
  }

  [[nodiscard]] bool closed() const { return closed_; }
  [[nodiscard]] const std::optional<ProtocolError>& error() const { return dec_.error(); }

  // fp-server's resource limits (*-RES-*): held input memory, whether a frame is unfinished
  // (the frame timeout applies instead of the idle one), giving a big buffer back between reads.
  [[nodiscard]] std::size_t held() const { return dec_.held(); }
  [[nodiscard]] bool unfinished() const { return dec_.held() != 0; }
  void release_if_empty() { dec_.release_if_empty(); }

 private:
  // One decoded frame: counted, and answered with P::echo's reply (if any). A sink with
  // reply_space(header_bound, payload) (fp-server) gets the reply written straight into its
  // output: header and payload with one capacity check; nullptr from it (or a sink without it)
  // means out.reply().
  template <class Out>
  [[gnu::always_inline]] void answer(const Frame& f, Out& out) {
    out.frame(f);
    const P& proto = dec_.protocol();
    const std::optional<Frame> reply = proto.echo(f);
    if (!reply) return;
    const std::size_t len = f.payload.size();
    if constexpr (requires { out.reply_space(std::size_t{}, std::size_t{}); }) {
      if (std::uint8_t* d = out.reply_space(proto.header_bound(*reply), len)) {
        const std::size_t h = proto.write_header(d, *reply, len);
        if (len) std::memcpy(d + h, f.payload.data(), len);
        out.replied(h + len);
        return;
      }
    }
    const std::size_t h = proto.write_header(header_.data(), *reply, len);
    out.reply(ByteView(header_.data(), h), f.payload);
  }

  Decoder<P> dec_;
  Bytes header_;
  bool closed_ = false;
};

}  // namespace fp
