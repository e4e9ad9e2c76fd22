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
//
// Resource limits (*-RES-1..8, reference-impls/README.md "Resource limits"): the held memory of
// every connection (the session's unfinished frame/message, a partial handshake, the output
// buffer while replies are pending) is accounted in one server-wide atomic total; over the
// budget, a loop closes its own connections holding the most (never one holding <= 64 KiB) and,
// if it has none left to close, asks the other loops to do the same. Every loop sweeps its
// connections every 100 ms for the idle, frame and write timeouts; before closing for silence it
// asks the socket whether bytes are waiting (FIONREAD), and a loop that did not run for a while
// (SIGSTOP, starvation) moves every clock forward by the gap first (RES-8).
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_map>

#include "frameproof/registry.hpp"
#include "net_common.hpp"

namespace {

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

// The output buffer of one connection: the bytes of the replies not yet taken by the socket.
// Unlike std::vector<uint8_t>, it appends with one capacity check and a memcpy, and does not
// zero the room it grows into (the reply path writes a header and copies a payload per echoed
// frame). Grows like std::vector (to twice the capacity, or what the append needs if more).
class OutBuffer {
 public:
  [[nodiscard]] std::uint8_t* data() { return buf_.get(); }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return cap_; }
  // Room for at least n more bytes at the end; they count once added(n) says so.
  std::uint8_t* room(std::size_t n) {
    if (cap_ - size_ < n) grow(n);
    return buf_.get() + size_;
  }
  void added(std::size_t n) { size_ += n; }
  void append(const std::uint8_t* p, std::size_t n) {
    if (!n) return;
    std::memcpy(room(n), p, n);
    size_ += n;
  }
  void clear() { size_ = 0; }
  // Gives the memory back (an output buffer grown for a burst).
  void release() {
    buf_.reset();
    cap_ = size_ = 0;
  }
  // Drops the first n bytes (the ones the socket took).
  void erase_front(std::size_t n) {
    std::memmove(buf_.get(), buf_.get() + n, size_ - n);
    size_ -= n;
  }

 private:
  // Powers of two: grown by doubling from an odd first size (a 1,030-byte websocket reply),
  // the capacity crossed kKeepOut by a few bytes at 65,920, so the buffer was freed after every
  // drained read and grown again, copying, by the next (1 KiB websocket pipelined: ~1,000
  // instructions per message in grow, 0.60 of the raw echo in bench 2026-11-24).
  void grow(std::size_t n) {
    const std::size_t want = std::bit_ceil(std::max(2 * cap_, size_ + n));
    std::unique_ptr<std::uint8_t[]> nb(new std::uint8_t[want]);
    if (size_) std::memcpy(nb.get(), buf_.get(), size_);
    buf_ = std::move(nb);
    cap_ = want;
  }
  std::unique_ptr<std::uint8_t[]> buf_;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
};

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

template <class P>
class Worker {
 public:
  using Conn = ::Conn<P>;

  Worker(const P& proto, const Options& opt, Shared& shared, int listen_fd, int evict_fd)
      : proto_(proto), opt_(opt), shared_(shared), listen_fd_(listen_fd), evict_fd_(evict_fd) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep_ < 0 || stop_fd_ < 0) {
      std::perror("fp-server: epoll/eventfd");
      std::exit(1);
    }
    add(listen_fd_, EPOLLIN, &listen_tag_);
    add(stop_fd_, EPOLLIN, &stop_tag_);
    add(evict_fd_, EPOLLIN, &evict_tag_);
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
    now_ = last_loop_ = last_sweep_ = Clock::now();
    while (!stopping_) {
      const int n = epoll_wait(ep_, evs, 256, static_cast<int>(kSweep.count()));
      if (n < 0 && errno != EINTR) {
        std::perror("fp-server: epoll_wait");
        break;
      }
      now_ = Clock::now();
      if (now_ - last_loop_ > kPauseGap) shift_clocks(now_ - last_loop_);  // RES-8
      for (int i = 0; i < n; ++i) {
        void* tag = evs[i].data.ptr;
        if (tag == &listen_tag_) accept_all();
        else if (tag == &stop_tag_) stopping_ = true;
        else if (tag == &evict_tag_) on_evict_request();
        else on_event(static_cast<Conn*>(tag), evs[i].events);
        if (shared_.held.load(std::memory_order_relaxed) > opt_.memory_budget) enforce_budget(true);
      }
      dead_.clear();  // no event of this batch names them any more
      // A stop in the middle of a batch (RES-8): the clocks it set read the time before the stop, and
      // last_loop_ below the time after it, so the check above never sees that gap; move them here.
      if (const auto end = Clock::now(); end - now_ > kPauseGap) {
        shift_clocks(end - now_);
        now_ = end;
      }
      if (now_ - last_sweep_ >= kSweep) sweep();
      if (accept_paused_ && now_ >= accept_resume_) resume_accept();
      last_loop_ = Clock::now();
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
    while (!accept_paused_) {
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
      // RES-6: beyond the connection limit, accepted and closed at once (nothing read or written)
      if (shared_.connections.fetch_add(1) >= opt_.max_connections) {
        shared_.connections.fetch_sub(1);
        ::close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // STD-ECHO-6, LF-ECHO-4
      auto c = std::make_unique<Conn>(fd, proto_, now_);
      c->events = EPOLLIN;
      add(fd, EPOLLIN, c.get());
      conns_.emplace(fd, std::move(c));
      ++counters_.connections;
    }
  }

  // Closes c now; the Conn itself is freed after the current batch of events (dead_): an event
  // later in the batch may name it (the budget can close a connection whose event is still to
  // come), and must find it Closed, not freed memory. Closing twice does nothing.
  void close_conn(Conn* c) {
    if (c->state == Conn::State::Closed) return;
    if (c->state == Conn::State::Draining || c->state == Conn::State::Closing) --draining_;
    c->state = Conn::State::Closed;
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    shared_.held.fetch_sub(c->held, std::memory_order_relaxed);
    c->held = 0;
    shared_.connections.fetch_sub(1);
    const auto it = conns_.find(c->fd);
    dead_.push_back(std::move(it->second));
    conns_.erase(it);
    if (accept_paused_) resume_accept();  // RES-7: a descriptor is free again
  }

  // The connection's held memory into the server-wide total (RES-1).
  void account(Conn* c) {
    const std::int64_t now_held =
        static_cast<std::int64_t>(c->session.held() + (c->unsent() ? c->out.capacity() : 0));
    if (now_held != c->held) {
      shared_.held.fetch_add(now_held - c->held, std::memory_order_relaxed);
      c->held = now_held;
    }
  }

  // RES-1/RES-2: over the budget, close this loop's connections holding the most (never one
  // holding 64 KiB or less); if that is not enough, ask the other loops (`ask_others`: not when
  // answering such a request, so that loops do not ask each other back and forth).
  void enforce_budget(bool ask_others) {
    while (shared_.held.load(std::memory_order_relaxed) > opt_.memory_budget) {
      Conn* big = nullptr;
      for (auto& [fd, c] : conns_)
        if (c->held > kFloor && (!big || c->held > big->held)) big = c.get();
      if (!big) {
        if (ask_others) {
          const std::uint64_t one = 1;
          for (int efd : shared_.evict_fds)
            if (efd != evict_fd_) [[maybe_unused]] auto r = ::write(efd, &one, sizeof one);
        }
        return;
      }
      close_conn(big);
    }
  }

  void on_evict_request() {
    std::uint64_t v;
    [[maybe_unused]] auto r = ::read(evict_fd_, &v, sizeof v);
    enforce_budget(false);
  }

  // RES-8: the loop did not run for `gap` (a pause): every clock moves forward by it, so that
  // nobody is closed for the time the server itself was not running.
  void shift_clocks(Clock::duration gap) {
    for (auto& [fd, c] : conns_) {
      c->accepted += gap;
      c->last_rx += gap;
      c->out_progress += gap;
      c->drain_deadline += gap;
    }
  }

  // Bytes waiting in the socket (read before closing for silence, RES-8).
  static bool bytes_waiting(int fd) {
    int n = 0;
    return ::ioctl(fd, FIONREAD, &n) == 0 && n > 0;
  }

  // The idle, frame and write timeouts (RES-3, RES-4, RES-5) and the drain deadlines.
  void sweep() {
    last_sweep_ = now_;
    std::vector<Conn*> expired;
    for (auto& [fd, cp] : conns_) {
      Conn* c = cp.get();
      if (c->state == Conn::State::Draining) {
        if (c->drain_deadline <= now_) expired.push_back(c);
        continue;
      }
      if (c->unsent() > 0) {  // a peer that does not read its replies
        if (now_ - c->out_progress > opt_.write_timeout) expired.push_back(c);
        continue;
      }
      if (c->state != Conn::State::Open) continue;
      Clock::time_point deadline;
      if (handshaking(c->session)) deadline = c->accepted + opt_.idle_timeout;
      else if (c->session.unfinished()) deadline = c->last_rx + opt_.frame_timeout;
      else deadline = c->last_rx + opt_.idle_timeout;
      if (now_ > deadline && !bytes_waiting(c->fd)) expired.push_back(c);
    }
    for (Conn* c : expired) close_conn(c);
  }

  template <class S>
  static bool handshaking(const S& s) {
    if constexpr (requires { s.handshaking(); }) return s.handshaking();
    else return false;
  }

  void on_event(Conn* c, std::uint32_t ev) {
    if (c->state == Conn::State::Closed) return;  // closed earlier in this batch
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
      if (c->unsent() >= opt_.max_output) {  // RES-5: requests wait in the socket
        c->paused = true;
        break;
      }
      auto space = c->session.prepare();
      const ssize_t n = ::recv(c->fd, space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) {
        c->last_rx = now_;
        c->session.commit(static_cast<std::size_t>(n));
        process(c);
        // Write the replies once they near kKeepOut instead of collecting sixteen reads' worth
        // (up to 1 MiB) in one buffer: grown past kKeepOut, it was freed when drained and grown
        // again, copying, by the next event.
        if (c->unsent() >= kKeepOut / 2) {
          if (!flush(c)) return false;
          if (c->unsent() > 0) break;  // the socket is full: EPOLLOUT (after_io) takes over
        }
        if (static_cast<std::size_t>(n) < space.size()) {  // the socket is (probably) empty
          c->session.release_if_empty();
          break;
        }
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
      std::uint8_t* d = c->out.room(header.size() + payload.size());
      std::memcpy(d, header.data(), header.size());
      if (!payload.empty()) std::memcpy(d + header.size(), payload.data(), payload.size());
      c->out.added(header.size() + payload.size());
    }
    // The echo sessions' reply written in place (session.hpp): not in --sink mode, and not for
    // a payload big enough for gather_reply (nullptr: they call reply()).
    std::uint8_t* reply_space(std::size_t header_bound, std::size_t payload) {
      if (w->opt_.sink || payload >= kGatherMin) return nullptr;
      return c->out.room(header_bound + payload);
    }
    void replied(std::size_t n) { c->out.added(n); }
  };

  void process(Conn* c) {
    Out out{this, c};
    if (!c->session.process(out)) {
      if (c->session.error()) ++counters_.protocol_errors;  // not for a close handshake
      c->state = Conn::State::Closing;  // STD-ECHO-4 / LF-ECHO-2: replies first, then close
      // The replies are in c->out now; a failed session's buffers (a reassembled message can
      // be 100 MiB) go back before the peer can see our FIN, not after the drain (RES-1).
      c->session = typename P::Session(proto_);
      // A peer that never reads its replies is closed by the write timeout (sweep).
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
    if (sent < hl) c->out.append(header.data() + sent, hl - sent);
    const std::size_t payload_sent = sent > hl ? sent - hl : 0;
    c->out.append(payload.data() + payload_sent, payload.size() - payload_sent);
  }

  void after_io(Conn* c) {
    if (!flush(c)) return;
    if (c->unsent() == 0) {
      c->out_progress = now_;
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
    if (c->paused && c->unsent() <= opt_.max_output / 4) c->paused = false;
    account(c);
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
        c->out_progress = now_;
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
      if (c->out.capacity() > kKeepOut) c->out.release();  // held memory goes back
      else c->out.clear();
    } else if (c->out_off > opt_.max_output) {
      c->out.erase_front(c->out_off);
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

  P proto_;
  const Options& opt_;
  Shared& shared_;
  int listen_fd_;
  int evict_fd_;
  int ep_ = -1;
  int stop_fd_ = -1;
  char listen_tag_ = 0;
  char stop_tag_ = 0;
  char evict_tag_ = 0;
  bool stopping_ = false;
  int draining_ = 0;  // connections in Closing or Draining
  Clock::time_point now_{};        // when the loop last woke
  Clock::time_point last_loop_{};  // when it last went to sleep
  Clock::time_point last_sweep_{};
  bool accept_paused_ = false;
  Clock::time_point accept_resume_{};
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<Conn>> dead_;  // closed during the current batch of events
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
