// One connection of an event loop (worker.hpp): its socket, the protocol's server session, the
// output buffer, its state and clocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.hpp"
#include "out_buffer.hpp"

namespace fp::server {

template <class P>
struct Conn {
  enum class State {
    Open,      // reading and echoing
    Closing,   // decode error: flush the replies, then shutdown(SHUT_WR)
    Draining,  // after shutdown(SHUT_WR): discard input until EOF, a budget or a deadline
    Finishing,  // peer EOF: flush the replies, then close
    Closed      // closed; freed after the current batch of events (which may still name it)
  };
  Conn(int f, const P& proto, Clock::time_point now)
      : fd(f), session(proto), accepted(now), last_rx(now), out_progress(now) {}
  int fd;
  typename P::Session session;
  OutBuffer out;
  std::size_t out_off = 0;
  State state = State::Open;
  bool paused = false;
  std::uint32_t events = 0;
  std::size_t drained = 0;
  Clock::time_point drain_deadline{};
  std::int64_t held = 0;          // as last added to Shared::held
  Clock::time_point accepted;     // the handshake completes within the idle timeout of this
  Clock::time_point last_rx;      // the last byte received
  Clock::time_point out_progress; // the output was last empty or last taken by the socket

  [[nodiscard]] std::size_t unsent() const { return out.size() - out_off; }
};

}  // namespace fp::server
