// One event loop of fp-server (one per thread): accepts on its own SO_REUSEPORT listener, reads,
// hands the bytes to each connection's session and writes its replies, closes on errors and
// timeouts, and keeps the server-wide memory budget (RES-1/2) with the other loops.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "config.hpp"
#include "connection.hpp"
#include "frameproof/codec.hpp"

namespace fp::server {

template <class P>
class Worker {
 public:
  using Conn = fp::server::Conn<P>;

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

}  // namespace fp::server
