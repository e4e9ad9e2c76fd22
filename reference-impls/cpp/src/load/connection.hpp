// One fp-load connection's life, the same in every mode: connect within --timeout-ms, the opening
// handshake of protocols that have one, the mode's loop (a subclass: requests.hpp and the mode
// files), the closing handshake, close. Also what the loops share: the non-blocking socket driven
// by poll(), the output buffer, the protocol's decoder for what the server sends, the error notes.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "frameproof/registry.hpp"
#include "options.hpp"
#include "result.hpp"

namespace fp::load {

template <class P>
class Connection {
 public:
  using FrameT = typename P::FrameType;
  using Dec = typename P::DecoderType;

  // Requests first_index .. first_index + count - 1 (--requests), or until end_ns (--duration).
  Connection(const P& proto, const Options& opt, Shared& shared, int id, std::uint64_t first_index,
             std::uint64_t count, std::uint64_t end_ns)
      : proto_(proto),
        opt_(opt),
        shared_(shared),
        id_(id),
        next_index_(first_index),
        quota_(count),
        end_ns_(end_ns),
        decoder_(proto),
        scratch_(opt.payload) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  virtual ~Connection() = default;

  Result run() {
    if (!connect_socket() || !opening()) {
      res_.fatal = true;
      res_.missing = quota_;
      if (fd_ >= 0) ::close(fd_);
      return std::move(res_);
    }
    loop();
    closing();
    ::close(fd_);
    return std::move(res_);
  }

 protected:
  // The mode: sends, receives and verifies until the connection is done (or has failed).
  virtual void loop() = 0;

  // An error detail of this connection (at most 10 are kept over all connections).
  void note(const std::string& what) { shared_.note("connection " + std::to_string(id_) + ": " + what); }

  // A verification error: counted, and noted.
  void error(std::string what) {
    ++res_.errors;
    note(what);
  }

  // Writes what is queued in out_ as far as the socket takes it. Returns false on a fatal socket
  // error.
  bool flush() {
    while (out_off_ < out_.size()) {
      const ssize_t n = ::send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        out_off_ += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        note(std::string("send failed: ") + std::strerror(errno));
        return false;
      }
    }
    if (out_off_ == out_.size()) {
      out_.clear();
      out_off_ = 0;
    } else if (out_off_ > (1u << 20)) {
      out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(out_off_));
      out_off_ = 0;
    }
    return true;
  }

  // Bytes queued and not yet taken by the socket.
  [[nodiscard]] std::size_t unsent() const { return out_.size() - out_off_; }

  // "reply stream rejected: ..." for the decoder's error.
  void stream_rejected() {
    error("reply stream rejected: " + decoder_.error()->requirement + " at offset " +
          std::to_string(decoder_.error()->offset));
  }

  // Payload of request `index`: bytes 0..7 the index (u64 LE, truncated if the payload is
  // shorter), then a pattern that depends on the index and the position.
  static void fill_payload(std::uint64_t index, std::uint8_t* p, std::size_t n) { fp::load_payload(index, p, n); }

  P proto_;
  const Options& opt_;
  Shared& shared_;
  int id_;
  int fd_ = -1;
  std::uint64_t next_index_;
  std::uint64_t quota_;
  std::uint64_t end_ns_;
  Dec decoder_;
  bool failed_ = false;  // the connection gave up (a timeout the protocol cannot recover from)
  fp::Bytes out_;
  std::size_t out_off_ = 0;
  std::vector<std::uint8_t> scratch_;  // an expected payload
  Result res_;

 private:
  // Connects within --timeout-ms (a listener that never accepts leaves a blocking connect()
  // hanging in SYN retries for minutes).
  bool connect_socket() {
    auto fail = [&](const char* what, int err) {
      note(std::string(what) + ": " + std::strerror(err));
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      return false;
    };
    fd_ = ::socket(opt_.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) return fail("socket failed", errno);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&opt_.addr), opt_.addr_len) < 0) {
      if (errno != EINPROGRESS) return fail("connect failed", errno);
      const std::uint64_t deadline = now_ns() + opt_.timeout_ms * 1000000ull;
      while (true) {
        const std::uint64_t now = now_ns();
        if (now >= deadline) return fail("connect timed out", ETIMEDOUT);
        pollfd p{fd_, POLLOUT, 0};
        const int r = ::poll(&p, 1, static_cast<int>((deadline - now + 999'999) / 1'000'000));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return fail("poll failed", errno);
        if (r > 0) break;
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return fail("connect failed", errno);
      if (err != 0) return fail("connect failed", err);
    }
    // Back to blocking mode: every send/recv passes MSG_DONTWAIT.
    const int fl = ::fcntl(fd_, F_GETFL);
    if (fl >= 0) ::fcntl(fd_, F_SETFL, fl & ~O_NONBLOCK);
    return true;
  }

  // Writes all of `data` within --timeout-ms; false (noted) if not.
  bool send_all(std::string_view data) {
    const std::uint64_t deadline = now_ns() + opt_.timeout_ms * 1000000ull;
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        data.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) break;
      const std::uint64_t now = now_ns();
      if (now >= deadline) break;
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(std::min<std::uint64_t>((deadline - now) / 1'000'000 + 1, 50)));
    }
    if (data.empty()) return true;
    note("could not send the opening handshake");
    return false;
  }

  // Protocols with an opening handshake (P::ClientOpening, websocket): send the request, read
  // the answer head (bytes after it go to the decoder) and check it; a failure is an error.
  bool opening() {
    if constexpr (requires { typename P::ClientOpening; }) {
      const auto o = proto_.opening(opt_.connect);  // websocket.path, websocket.subprotocol
      if (!send_all(o.request)) return false;
      std::string head;
      const std::uint64_t deadline = now_ns() + opt_.timeout_ms * 1000000ull;
      std::size_t end;
      char buf[4096];
      while ((end = head.find("\r\n\r\n")) == std::string::npos) {
        const std::uint64_t now = now_ns();
        if (now >= deadline || head.size() > 16384) {
          error("no complete answer to the opening handshake");
          return false;
        }
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(std::min<std::uint64_t>((deadline - now) / 1'000'000 + 1, 50))) <= 0) continue;
        const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
          error("the server closed the connection during the opening handshake");
          return false;
        }
        if (n > 0) head.append(buf, static_cast<std::size_t>(n));
      }
      typename P::ClientOpening::Agreed agreed{};
      if (const std::string why = o.check(std::string_view(head).substr(0, end + 4), &agreed); !why.empty()) {
        error(why);
        return false;
      }
      // what the opening agreed (websocket: permessage-deflate) holds for the rest of the connection
      proto_.opened(agreed, decoder_);
      fp::ByteView rest(reinterpret_cast<const std::uint8_t*>(head.data()) + end + 4, head.size() - end - 4);
      while (!rest.empty()) {
        auto space = decoder_.prepare();
        const std::size_t n = std::min(space.size(), rest.size());
        std::copy_n(rest.data(), n, space.data());
        decoder_.commit(n);
        rest = rest.subspan(n);
      }
    }
    return true;
  }

  // Protocols with a closing handshake (P::closing_frame, websocket): send it and wait at most
  // --timeout-ms for the server's. Frames before it are skipped, but in receive mode a reply there is
  // one the client did not ask for: an error each (spec/harness.md HAR-VERIFY-3).
  void closing() {
    if constexpr (requires { proto_.closing_frame(); }) {
      if (failed_ || res_.fatal) return;
      const fp::Bytes c = proto_.closing_frame();
      out_.insert(out_.end(), c.begin(), c.end());
      const std::uint64_t deadline = now_ns() + opt_.timeout_ms * 1000000ull;
      FrameT f;
      while (true) {
        const typename Dec::Status st = decoder_.next(f);
        if (st == Dec::Status::Frame) {
          if (P::is_close(f)) return;
          if (opt_.mode == Mode::Receive && !proto_.answer_control(f, out_)) {
            ++res_.received;
            error("unexpected reply in receive mode " + proto_.frame_json(f).dump(-1, ' ', false,
                  nlohmann::json::error_handler_t::replace).substr(0, 200));
          }
          continue;
        }
        if (st == Dec::Status::Error || !flush()) return;
        const std::uint64_t now = now_ns();
        if (now >= deadline) {
          note("no close frame from the server within " + std::to_string(opt_.timeout_ms) + " ms");
          return;
        }
        pollfd p{fd_, static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
        if (::poll(&p, 1, static_cast<int>(std::min<std::uint64_t>((deadline - now) / 1'000'000 + 1, 50))) <= 0) continue;
        if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto space = decoder_.prepare();
        const ssize_t n = ::recv(fd_, space.data(), space.size(), MSG_DONTWAIT);
        if (n > 0) decoder_.commit(static_cast<std::size_t>(n));
        else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) return;
      }
    }
  }
};

}  // namespace fp::load
