// fp-server: the conformance echo server, see reference-impls/README.md. Generic over the
// registry's protocols: the echo behaviour is each protocol's server session (P::Session,
// session.hpp); this file is the socket loop around it.
//
// One epoll event loop per thread; every thread has its own SO_REUSEPORT listener on the same
// port, so the kernel spreads connections over the loops and a connection never changes thread.
// Each connection owns one session (with its bounded decoder buffer) and one output buffer;
// reading stops while the unsent output is above a high-water mark (a client that does not read
// cannot make the server buffer without bound). Replies of 16 KiB and more go out with one gather
// write (pending output, header, payload view) instead of being copied into the output buffer
// first.
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <memory>
#include <thread>
#include <unordered_map>

#include "frameproof/registry.hpp"
#include "net_common.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kHighWater = 1 << 20;   // stop reading above this much unsent output
constexpr std::size_t kLowWater = 256 << 10;  // resume below this
constexpr std::size_t kDrainBytes = 1 << 20;  // input discarded after an error before closing
constexpr auto kDrainTime = std::chrono::seconds(2);     // after shutdown(SHUT_WR)
constexpr auto kClosingTime = std::chrono::seconds(30);  // to deliver the replies before an error
constexpr std::size_t kGatherMin = 16 << 10;   // payloads this big are echoed by gather write

struct Options {
  bool sink = false;
  int threads = 1;
};

struct Counters {
  std::uint64_t connections = 0;
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;
  std::uint64_t protocol_errors = 0;
};

template <class P>
struct Conn {
  enum class State {
    Open,      // reading and echoing
    Closing,   // decode error: flush the replies, then shutdown(SHUT_WR)
    Draining,  // after shutdown(SHUT_WR): discard input until EOF, a budget or a deadline
    Finishing  // peer EOF: flush the replies, then close
  };
  Conn(int f, const P& proto) : fd(f), session(proto) {}
  int fd;
  typename P::Session session;
  fp::Bytes out;
  std::size_t out_off = 0;
  State state = State::Open;
  bool paused = false;
  std::uint32_t events = 0;
  std::size_t drained = 0;
  Clock::time_point drain_deadline{};

  [[nodiscard]] std::size_t unsent() const { return out.size() - out_off; }
};

template <class P>
class Worker {
 public:
  using Conn = ::Conn<P>;

  Worker(const P& proto, const Options& opt, int listen_fd) : proto_(proto), opt_(opt), listen_fd_(listen_fd) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep_ < 0 || stop_fd_ < 0) {
      std::perror("fp-server: epoll/eventfd");
      std::exit(1);
    }
    add(listen_fd_, EPOLLIN, &listen_tag_);
    add(stop_fd_, EPOLLIN, &stop_tag_);
  }
  ~Worker() {
    for (auto& [fd, c] : conns_) ::close(fd);
    ::close(listen_fd_);
    ::close(stop_fd_);
    ::close(ep_);
  }

  void stop() {
    std::uint64_t one = 1;
    [[maybe_unused]] auto r = ::write(stop_fd_, &one, sizeof one);
  }

  void run() {
    epoll_event evs[256];
    while (!stopping_) {
      const int n = epoll_wait(ep_, evs, 256, draining_ || accept_paused_ ? 100 : -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("fp-server: epoll_wait");
        break;
      }
      for (int i = 0; i < n; ++i) {
        void* tag = evs[i].data.ptr;
        if (tag == &listen_tag_) accept_all();
        else if (tag == &stop_tag_) stopping_ = true;
        else on_event(static_cast<Conn*>(tag), evs[i].events);
      }
      if (draining_) sweep_drains();
      if (accept_paused_ && Clock::now() >= accept_resume_) resume_accept();
    }
  }

  [[nodiscard]] const Counters& counters() const { return counters_; }

 private:
  void add(int fd, std::uint32_t events, void* tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = tag;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) < 0) std::perror("fp-server: epoll_ctl add");
  }

  void pause_accept() {
    epoll_event ev{};
    ev.data.ptr = &listen_tag_;
    epoll_ctl(ep_, EPOLL_CTL_MOD, listen_fd_, &ev);  // no events
    accept_paused_ = true;
    accept_resume_ = Clock::now() + std::chrono::milliseconds(100);
  }

  void resume_accept() {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &listen_tag_;
    epoll_ctl(ep_, EPOLL_CTL_MOD, listen_fd_, &ev);
    accept_paused_ = false;
  }

  void accept_all() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors or memory: the listener stays readable, so level-triggered epoll
          // would spin. Stop watching it for a while; waiting connections stay in the backlog.
          pause_accept();
        }
        return;  // EAGAIN: no more waiting connections
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // STD-ECHO-6, LF-ECHO-4
      auto c = std::make_unique<Conn>(fd, proto_);
      c->events = EPOLLIN;
      add(fd, EPOLLIN, c.get());
      conns_.emplace(fd, std::move(c));
      ++counters_.connections;
    }
  }

  void close_conn(Conn* c) {
    if (c->state == Conn::State::Draining || c->state == Conn::State::Closing) --draining_;
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    conns_.erase(c->fd);  // destroys c
  }

  void on_event(Conn* c, std::uint32_t ev) {
    if (ev & EPOLLERR) {
      close_conn(c);
      return;
    }
    if (c->state == Conn::State::Draining) {
      if (ev & (EPOLLIN | EPOLLHUP)) drain(c);
      return;
    }
    if ((ev & EPOLLIN) && c->state == Conn::State::Open && !c->paused) {
      if (!read_some(c)) return;
    } else if ((ev & EPOLLHUP) && c->unsent() == 0) {
      close_conn(c);
      return;
    }
    after_io(c);
  }

  // Reads what is available (bounded per event for fairness), echoing every complete frame.
  // Returns false if the connection was closed.
  bool read_some(Conn* c) {
    for (int round = 0; round < 16 && c->state == Conn::State::Open; ++round) {
      if (c->unsent() >= kHighWater) {
        c->paused = true;
        break;
      }
      auto space = c->session.prepare();
      const ssize_t n = ::recv(c->fd, space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) {
        c->session.commit(static_cast<std::size_t>(n));
        process(c);
        if (static_cast<std::size_t>(n) < space.size()) break;  // the socket is (probably) empty
      } else if (n == 0) {
        c->session.end_of_input();  // STD-ECHO-5 / LF-ECHO-3: a partial frame is dropped
        c->state = Conn::State::Finishing;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        break;
      } else {
        close_conn(c);
        return false;
      }
    }
    return true;
  }

  // The session's output: counters for every frame, and the replies (none in --sink mode).
  struct Out {
    Worker* w;
    Conn* c;
    template <class F>
    void frame(const F& f) {
      ++w->counters_.frames;
      w->counters_.bytes += f.payload.size();
    }
    // essential: the handshake answer, pongs and close frames, which --sink still sends
    void reply(fp::ByteView header, fp::ByteView payload, bool essential = false) {
      if (w->opt_.sink && !essential) return;
      if (payload.size() >= kGatherMin) {
        gather_reply(c, header, payload);
        return;
      }
      c->out.insert(c->out.end(), header.begin(), header.end());
      c->out.insert(c->out.end(), payload.begin(), payload.end());
    }
  };

  void process(Conn* c) {
    Out out{this, c};
    if (!c->session.process(out)) {
      if (c->session.error()) ++counters_.protocol_errors;  // not for a close handshake
      c->state = Conn::State::Closing;  // STD-ECHO-4 / LF-ECHO-2: replies first, then close
      // A peer that never reads its replies must not keep the connection forever.
      c->drain_deadline = Clock::now() + kClosingTime;
      ++draining_;
    }
  }

  // Echoes a big frame without copying its payload first: one gather write of the unsent
  // output, the reply header and the payload view into the session's buffer. Whatever the
  // socket does not take is appended to the output buffer (the views are only valid until the
  // next read). A send error is left for flush() to find and close on.
  static void gather_reply(Conn* c, fp::ByteView header, fp::ByteView payload) {
    iovec iov[3];
    int n = 0;
    const std::size_t pending = c->unsent();
    if (pending) iov[n++] = {c->out.data() + c->out_off, pending};
    iov[n++] = {const_cast<std::uint8_t*>(header.data()), header.size()};
    iov[n++] = {const_cast<std::uint8_t*>(payload.data()), payload.size()};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(n);
    ssize_t w;
    do {
      w = ::sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (w < 0 && errno == EINTR);
    std::size_t sent = w > 0 ? static_cast<std::size_t>(w) : 0;
    const std::size_t from_out = std::min(sent, pending);
    c->out_off += from_out;
    sent -= from_out;
    if (c->unsent() == 0) {
      c->out.clear();
      c->out_off = 0;
    }
    const std::size_t hl = header.size();
    if (sent < hl) c->out.insert(c->out.end(), header.begin() + static_cast<std::ptrdiff_t>(sent), header.end());
    const std::size_t payload_sent = sent > hl ? sent - hl : 0;
    c->out.insert(c->out.end(), payload.begin() + static_cast<std::ptrdiff_t>(payload_sent), payload.end());
  }

  void after_io(Conn* c) {
    if (!flush(c)) return;
    if (c->unsent() == 0) {
      if (c->state == Conn::State::Finishing) {
        close_conn(c);
        return;
      }
      if (c->state == Conn::State::Closing) {
        // FIN after the replies; keep reading (and discarding) a little so that unread input
        // does not turn our close into an RST that would destroy the replies in flight.
        ::shutdown(c->fd, SHUT_WR);
        c->state = Conn::State::Draining;  // still counted in draining_ since Closing
        c->drain_deadline = Clock::now() + kDrainTime;
      }
    }
    if (c->paused && c->unsent() <= kLowWater) c->paused = false;
    std::uint32_t want = 0;
    if ((c->state == Conn::State::Open && !c->paused) || c->state == Conn::State::Draining) want |= EPOLLIN;
    if (c->unsent() > 0) want |= EPOLLOUT;
    if (want != c->events) {
      epoll_event ev{};
      ev.events = want;
      ev.data.ptr = c;
      epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &ev);
      c->events = want;
    }
    // Data may already wait in the kernel after resuming; level-triggered epoll reports it.
  }

  // Returns false if the connection was closed.
  bool flush(Conn* c) {
    while (c->unsent() > 0) {
      const ssize_t n = ::send(c->fd, c->out.data() + c->out_off, c->unsent(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c->out_off += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        close_conn(c);
        return false;
      }
    }
    if (c->unsent() == 0) {
      c->out_off = 0;
      if (c->out.capacity() > 4 * kHighWater) fp::Bytes().swap(c->out);  // after a huge reply
      else c->out.clear();
    } else if (c->out_off > kHighWater) {
      c->out.erase(c->out.begin(), c->out.begin() + static_cast<std::ptrdiff_t>(c->out_off));
      c->out_off = 0;
    }
    return true;
  }

  void drain(Conn* c) {
    std::uint8_t junk[16384];
    while (true) {
      const ssize_t n = ::recv(c->fd, junk, sizeof junk, MSG_DONTWAIT);
      if (n > 0) {
        c->drained += static_cast<std::size_t>(n);
        if (c->drained > kDrainBytes) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      break;  // EOF or error
    }
    close_conn(c);
  }

  void sweep_drains() {
    const auto now = Clock::now();
    if (now - last_sweep_ < std::chrono::milliseconds(100)) return;
    last_sweep_ = now;
    std::vector<Conn*> expired;
    for (auto& [fd, c] : conns_)
      if ((c->state == Conn::State::Draining || c->state == Conn::State::Closing) && c->drain_deadline <= now)
        expired.push_back(c.get());
    for (Conn* c : expired) close_conn(c);
  }

  P proto_;
  const Options& opt_;
  int listen_fd_;
  int ep_ = -1;
  int stop_fd_ = -1;
  char listen_tag_ = 0;
  char stop_tag_ = 0;
  bool stopping_ = false;
  int draining_ = 0;  // connections in Closing or Draining (they have a deadline)
  Clock::time_point last_sweep_{};
  bool accept_paused_ = false;
  Clock::time_point accept_resume_{};
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  Counters counters_;
};

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
         "                 [--sink] [--threads N]\n"
         "  --codec JSON   e.g. '{\"protocol\": \"length-field\", \"length_field\": {\"offset\": 2, \"size\": -4}}'\n"
         "  --threads N    event loops (default: the number of online CPUs)\n"
         "  --sink         decode and count frames, send nothing\n";
}

// Runs one worker per listener until SIGINT/SIGTERM (blocked in `sigs`), then returns the sum of
// their counters.
template <class P>
Counters serve(const P& proto, const Options& opt, const std::vector<int>& listeners, const sigset_t& sigs) {
  std::vector<std::unique_ptr<Worker<P>>> workers;
  for (int fd : listeners) workers.push_back(std::make_unique<Worker<P>>(proto, opt, fd));
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
  return total;  // the workers close every connection and listener
}

}  // namespace

int main(int argc, char** argv) {
  fp::cli::Args args(argc, argv, usage(), {"sink"}, {"codec", "protocol", "listen", "threads"});
  const fp::cli::CodecOption codec = fp::cli::codec_option(args);
  Options opt;
  opt.sink = args.has("sink");
  const unsigned hw = std::thread::hardware_concurrency();
  opt.threads = args.num<int>("threads", hw ? static_cast<int>(hw) : 1);
  if (opt.threads < 1) args.die("--threads must be at least 1");
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
