// What the connections of one fp-load run report: each its Result, all of them into one Shared
// (the error details and --duration's request numbering), summed into the Report (report.cpp
// prints it and writes the JSON).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "frameproof/histogram.hpp"

namespace fp::load {

struct Shared {
  std::mutex mu;
  std::vector<std::string> details;  // at most 10 kept
  std::atomic<std::uint64_t> next_index{0};  // --duration: global request numbering

  void note(std::string s) {
    std::lock_guard<std::mutex> g(mu);
    if (details.size() < 10) details.push_back(std::move(s));
  }
};

struct Result {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t verified = 0;
  std::uint64_t verified_bytes = 0;
  std::uint64_t errors = 0;
  std::uint64_t missing = 0;  // requests that never got a reply (timed out, failed, lost)
  std::uint64_t streams = 0;  // --mode stream: streams completed
  bool fatal = false;         // connect failure, reset, unwritten requests
  fp::Histogram latency;

  void add(const Result& r) {
    sent += r.sent;
    received += r.received;
    verified += r.verified;
    verified_bytes += r.verified_bytes;
    errors += r.errors;
    missing += r.missing;
    streams += r.streams;
    fatal = fatal || r.fatal;
    latency.merge(r.latency);
  }
};

// Every connection's results summed, the run's wall time, and the error details.
struct Report {
  Result total;
  double secs = 0;
  std::vector<std::string> details;
};

}  // namespace fp::load
