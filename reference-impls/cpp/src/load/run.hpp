// One fp-load run: one thread per connection, each running its mode's connection class to the end
// (--requests split evenly over the connections, or all until the --duration is over); their
// results summed into the Report.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "batched.hpp"
#include "options.hpp"
#include "per_packet.hpp"
#include "pipelined.hpp"
#include "receive.hpp"
#include "result.hpp"
#include "stream.hpp"

namespace fp::load {

// The protocol as the client end of a connection (websocket: the client role, WS-MASK-2).
template <class P>
P client_end(const P& proto) {
  if constexpr (requires { proto.as_client(); }) return proto.as_client();
  else return proto;
}

// Runs every connection of mode M to the end and sums their results.
template <template <class> class M, class P>
Report run_connections(const P& proto, const Options& opt) {
  Shared shared;
  std::vector<Result> results(static_cast<std::size_t>(opt.connections));
  std::vector<std::thread> threads;
  const std::uint64_t start = now_ns();
  const std::uint64_t end = start + static_cast<std::uint64_t>(opt.duration_s * 1e9);
  std::uint64_t first = 0;
  for (int k = 0; k < opt.connections; ++k) {
    std::uint64_t count = 0;
    if (opt.requests) {
      const auto c = static_cast<std::uint64_t>(opt.connections);
      count = *opt.requests / c + (static_cast<std::uint64_t>(k) < *opt.requests % c ? 1 : 0);
    }
    threads.emplace_back([&, k, first, count] {
      M<P> conn(client_end(proto), opt, shared, k, first, count, end);
      results[static_cast<std::size_t>(k)] = conn.run();
    });
    first += count;
  }
  for (auto& t : threads) t.join();
  Report rep;
  rep.secs = static_cast<double>(now_ns() - start) / 1e9;
  for (auto& r : results) rep.total.add(r);
  rep.details = std::move(shared.details);
  return rep;
}

// Runs protocol P in the mode of the options.
template <class P>
Report run(const P& proto, const Options& opt) {
  switch (opt.mode) {
    case Mode::PerPacket: return run_connections<PerPacket>(proto, opt);
    case Mode::Pipelined: return run_connections<Pipelined>(proto, opt);
    case Mode::Batched: return run_connections<Batched>(proto, opt);
    case Mode::Receive: return run_connections<Receive>(proto, opt);
    case Mode::Stream: return run_connections<Streams>(proto, opt);
  }
  return {};
}

}  // namespace fp::load
