// fp-server's settings (the command line, main.cpp), the tuning constants of its event loops, and
// what the loops share and count.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp::server {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kDrainBytes = 1 << 20;  // input discarded after an error before closing
constexpr auto kDrainTime = std::chrono::seconds(2);     // after shutdown(SHUT_WR)
constexpr std::size_t kGatherMin = 16 << 10;   // payloads this big are echoed by gather write
constexpr std::int64_t kFloor = 64 << 10;      // never closed for the budget at or below this (RES-2)
constexpr std::size_t kKeepOut = 64 << 10;     // an output buffer above this is freed once drained
constexpr auto kSweep = std::chrono::milliseconds(100);  // timeout sweep period
constexpr auto kPauseGap = std::chrono::milliseconds(500);  // a loop gap this long was a pause (RES-8)

struct Options {
  bool sink = false;
  int threads = 1;
  // resource limits, the contract's defaults
  std::int64_t memory_budget = 256ll << 20;
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds frame_timeout{10000};
  std::size_t max_output = 1 << 20;
  std::chrono::milliseconds write_timeout{10000};
  int max_connections = 4096;
};

// What the event loops share: the held memory of all connections, the connection count, and a
// way to ask the other loops to close their biggest holders.
struct Shared {
  std::atomic<std::int64_t> held{0};
  std::atomic<int> connections{0};
  std::vector<int> evict_fds;  // one eventfd per loop
};

struct Counters {
  std::uint64_t connections = 0;
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;
  std::uint64_t protocol_errors = 0;
};

}  // namespace fp::server
