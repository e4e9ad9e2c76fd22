// fp-server: the conformance echo server, see reference-impls/README.md. Generic over the
// registry's protocols: the echo behaviour is each protocol's server session (P::Session,
// session.hpp); this program is the socket loop around it.
//
// One epoll event loop per thread; every thread has its own SO_REUSEPORT listener on the same
// port, so the kernel spreads connections over the loops and a connection never changes thread.
// Each connection owns one session (with its bounded decoder buffer) and one output buffer;
// reading stops while the unsent output is above a high-water mark (a client that does not read
// cannot make the server buffer without bound). Replies of 16 KiB and more go out with one gather
// write (pending output, header, payload view) instead of being copied into the output buffer
// first.
//
// Resource limits (*-RES-1..8, reference-impls/README.md "Resource limits"): the held memory of
// every connection (the session's unfinished frame/message, a partial handshake, the output
// buffer while replies are pending) is accounted in one server-wide atomic total; over the
// budget, a loop closes its own connections holding the most (never one holding <= 64 KiB) and,
// if it has none left to close, asks the other loops to do the same. Every loop sweeps its
// connections every 100 ms for the idle, frame and write timeouts; before closing for silence it
// asks the socket whether bytes are waiting (FIONREAD), and a loop that did not run for a while
// (SIGSTOP, starvation) moves every clock forward by the gap first (RES-8).
//   config.hpp      the options, the loops' constants, what they share and count
//   worker.hpp      one event loop (connection.hpp: one connection, out_buffer.hpp: its output)
//   main.cpp        the command line, the listeners, the workers until SIGINT/SIGTERM, the counters
#include <malloc.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../net_common.hpp"
#include "config.hpp"
#include "frameproof/registry.hpp"
#include "worker.hpp"

using namespace fp::server;

namespace {

int make_listener(const sockaddr_storage& addr, socklen_t len) {
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) < 0 || ::listen(fd, 1024) < 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string usage() {
  return "usage: fp-server (--codec JSON | --protocol " + fp::cli::protocol_choices() + ") --listen HOST:PORT\n"
         "                 [--sink] [--threads N] [--memory-budget BYTES] [--idle-timeout-ms MS]\n"
         "                 [--frame-timeout-ms MS] [--max-output-bytes BYTES] [--write-timeout-ms MS]\n"
         "                 [--max-connections N]\n"
         "  --codec JSON   e.g. '{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 2, \"size\": -4}}'\n"
         "  --threads N    event loops (default: the number of online CPUs)\n"
         "  --sink         decode and count frames, send nothing\n"
         "  resource limits (*-RES-*, defaults): --memory-budget 268435456 (held memory of all connections),\n"
         "  --idle-timeout-ms 30000, --frame-timeout-ms 10000, --max-output-bytes 1048576 (per connection),\n"
         "  --write-timeout-ms 10000, --max-connections 4096\n";
}

// The largest frame (websocket: message) a protocol accepts, held whole before it is answered:
// the memory budget may not be below it (RES-1).
template <class P>
std::uint64_t largest_held(const P& proto) {
  if constexpr (requires { proto.max_message(); }) return proto.max_message();
  else if constexpr (requires { proto.max_header_size(); }) return proto.max_header_size() + proto.max_payload();
  else return proto.max_payload();
}

// RES-6/RES-7: raise the soft descriptor limit towards the hard one, enough for the connection
// limit plus the listeners, event fds and a margin (never lowered).
void raise_nofile(int max_connections, int threads) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = static_cast<rlim_t>(max_connections) + 4 * static_cast<rlim_t>(threads) + 64;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Runs one worker per listener until SIGINT/SIGTERM (blocked in `sigs`), then returns the sum of
// their counters.
template <class P>
Counters serve(const P& proto, const Options& opt, const std::vector<int>& listeners, const sigset_t& sigs) {
  Shared shared;
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    const int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0) {
      std::perror("fp-server: eventfd");
      std::exit(1);
    }
    shared.evict_fds.push_back(efd);
  }
  std::vector<std::unique_ptr<Worker<P>>> workers;
  for (std::size_t i = 0; i < listeners.size(); ++i)
    workers.push_back(std::make_unique<Worker<P>>(proto, opt, shared, listeners[i], shared.evict_fds[i]));
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->run(); });

  int sig = 0;
  sigwait(&sigs, &sig);
  for (auto& w : workers) w->stop();
  for (auto& t : threads) t.join();
  Counters total;
  for (auto& w : workers) {
    total.connections += w->counters().connections;
    total.frames += w->counters().frames;
    total.bytes += w->counters().bytes;
    total.protocol_errors += w->counters().protocol_errors;
  }
  workers.clear();
  for (int efd : shared.evict_fds) ::close(efd);
  return total;  // the workers close every connection and listener
}

}  // namespace

int main(int argc, char** argv) {
  fp::cli::Args args(argc, argv, usage(), {"sink"},
                     {"codec", "protocol", "listen", "threads", "memory-budget", "idle-timeout-ms", "frame-timeout-ms",
                      "max-output-bytes", "write-timeout-ms", "max-connections"});
  const fp::cli::CodecOption codec = fp::cli::codec_option(args);
  Options opt;
  opt.sink = args.has("sink");
  const unsigned hw = std::thread::hardware_concurrency();
  opt.threads = args.num<int>("threads", hw ? static_cast<int>(hw) : 1);
  if (opt.threads < 1) args.die("--threads must be at least 1");
  // resource limits: positive integers (anything else is a usage error)
  auto positive = [&](const char* name, std::int64_t def) {
    const auto v = args.num<std::int64_t>(name, def);
    if (v < 1) args.die(std::string("--") + name + " must be a positive integer");
    return v;
  };
  opt.memory_budget = positive("memory-budget", opt.memory_budget);
  opt.idle_timeout = std::chrono::milliseconds(positive("idle-timeout-ms", opt.idle_timeout.count()));
  opt.frame_timeout = std::chrono::milliseconds(positive("frame-timeout-ms", opt.frame_timeout.count()));
  opt.max_output = static_cast<std::size_t>(positive("max-output-bytes", static_cast<std::int64_t>(opt.max_output)));
  opt.write_timeout = std::chrono::milliseconds(positive("write-timeout-ms", opt.write_timeout.count()));
  const std::int64_t max_conns = positive("max-connections", opt.max_connections);
  if (max_conns > (1 << 24)) args.die("--max-connections: at most 16777216");
  opt.max_connections = static_cast<int>(max_conns);
  const std::uint64_t largest = std::visit([](const auto& p) { return largest_held(p); }, codec.protocol);
  if (static_cast<std::uint64_t>(opt.memory_budget) < largest)
    args.die("--memory-budget " + std::to_string(opt.memory_budget) + " is below the largest frame the codec accepts (" +
             std::to_string(largest) + " bytes)");
  raise_nofile(opt.max_connections, opt.threads);
  // A fixed mmap threshold: big frame buffers are mapped and given back to the system when freed
  // (glibc's dynamic threshold would move them into the heap, where RSS keeps them; RES-1).
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  if (!args.has("listen")) args.die("--listen HOST:PORT is required");
  auto hp = fp::cli::split_host_port(args.str("listen"));
  if (!hp) args.die("--listen: expected HOST:PORT");

  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!fp::cli::resolve(*hp, true, addr, len)) args.die("--listen: cannot resolve " + args.str("listen"));

  // Block the stop signals in every thread; the main thread waits for them with sigwait.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::vector<int> listeners;
  for (int i = 0; i < opt.threads; ++i) {
    const int fd = make_listener(addr, len);
    if (fd < 0) {
      std::fprintf(stderr, "fp-server: cannot listen on %s: %s\n", args.str("listen").c_str(), std::strerror(errno));
      return 1;
    }
    if (i == 0) {  // port 0: the others bind the port the kernel chose
      sockaddr_storage bound{};
      socklen_t blen = sizeof bound;
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
      addr = bound;
      len = blen;
    }
    listeners.push_back(fd);
  }
  const bool v6 = hp->host.find(':') != std::string::npos;
  std::printf("LISTENING %s%s%s:%d\n", v6 ? "[" : "", hp->host.c_str(), v6 ? "]" : "", fp::cli::port_of(addr));
  std::fflush(stdout);

  const Counters total =
      std::visit([&](const auto& proto) { return serve(proto, opt, listeners, sigs); }, codec.protocol);
  std::printf("{\"connections\": %" PRIu64 ", \"frames\": %" PRIu64 ", \"bytes\": %" PRIu64
              ", \"protocol_errors\": %" PRIu64 "}\n",
              total.connections, total.frames, total.bytes, total.protocol_errors);
  std::fflush(stdout);
  return 0;
}
