// fp-load's settings (from the command line, cli.cpp), its modes and its clock: what every part
// of the load client reads.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace fp::load {

using Clock = std::chrono::steady_clock;

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// --mode: each is one connection class (per_packet.hpp, pipelined.hpp, batched.hpp, receive.hpp,
// stream.hpp).
enum class Mode { PerPacket, Pipelined, Batched, Receive, Stream };

inline const char* mode_name(Mode m) {
  switch (m) {
    case Mode::PerPacket: return "per-packet";
    case Mode::Pipelined: return "pipelined";
    case Mode::Batched: return "batched";
    case Mode::Receive: return "receive";
    case Mode::Stream: return "stream";
  }
  return "?";
}

struct Options {
  std::string codec_json;  // as given
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  int connections = 1;
  std::optional<std::uint64_t> requests;
  double duration_s = 0;
  std::size_t payload = 32;
  Mode mode = Mode::PerPacket;
  std::size_t window = 1;  // batched: the batch; receive: requests per write batch
  std::uint64_t timeout_ms = 5000;
  std::string json;
  std::size_t frames_per_stream = 16;  // --mode stream
  std::string connect;                 // HOST:PORT as given (a handshake's Host header)
  std::size_t variant = 0;  // index into P::variants()
  std::string variant_name;
};

}  // namespace fp::load
