// fp-load: load client for fp-server and every other echo server (reference-impls/README.md).
//
// One thread per connection, each with a non-blocking socket driven by poll(), so a thread never
// blocks writing while the server waits for it to read. Generic over the registry's protocols:
// every reply is verified through the protocol's client matcher (P::Client: standard by sequence
// number, flag 0x81; length-field FIFO); the payload must equal the request's, whose bytes 0..7
// hold the request's global index (u64 little-endian) and the rest a pattern derived from it.
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "frameproof/histogram.hpp"
#include "frameproof/registry.hpp"
#include "net_common.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

enum class Mode { PerPacket, Pipelined, Batched, Receive, Stream };

struct Options {
  std::string codec_json;  // as given
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  int connections = 1;
  std::optional<std::uint64_t> requests;
  double duration_s = 0;
  std::size_t payload = 32;
  Mode mode = Mode::PerPacket;
  std::size_t window = 1;
  std::uint64_t timeout_ms = 5000;
  std::string json;
  std::size_t frames_per_stream = 16;  // --mode stream
  std::string connect;                 // HOST:PORT as given (a handshake's Host header)
  std::size_t variant = 0;  // index into P::variants()
  std::string variant_name;
};

// Payload of request `index`: bytes 0..7 the index (u64 LE, truncated if the payload is
// shorter), then a pattern that depends on the index and the position.
void fill_payload(std::uint64_t index, std::uint8_t* p, std::size_t n) { fp::load_payload(index, p, n); }

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
};

template <class P>
class Connection {
 public:
  using FrameT = typename P::FrameType;
  using Dec = typename P::DecoderType;

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
        client_(opt.timeout_ms * 1000000ull),
        scratch_(opt.payload) {
    if constexpr (P::kSendsFrames) request_ = proto.variant_request(opt.variant);
  }

  Result run() {
    if (!connect_socket() || !opening()) {
      res_.fatal = true;
      res_.missing = quota_;
      if (fd_ >= 0) ::close(fd_);
      return std::move(res_);
    }
    if (opt_.mode == Mode::Stream) {
      if constexpr (P::kStreams) loop_streams();
    } else {
      loop();
    }
    closing();
    ::close(fd_);
    return std::move(res_);
  }

 private:
  // Connects within --timeout-ms (a listener that never accepts leaves a blocking connect()
  // hanging in SYN retries for minutes).
  bool connect_socket() {
    auto fail = [&](const char* what, int err) {
      shared_.note("connection " + std::to_string(id_) + ": " + what + ": " + std::strerror(err));
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
    shared_.note("connection " + std::to_string(id_) + ": could not send the opening handshake");
    return false;
  }

  // Protocols with an opening handshake (P::ClientOpening, websocket): send the request, read
  // the answer head (bytes after it go to the decoder) and check it; a failure is an error.
  bool opening() {
    if constexpr (requires { typename P::ClientOpening; }) {
      const auto o = P::ClientOpening::make(opt_.connect, "/");
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
      if (const std::string why = o.check(std::string_view(head).substr(0, end + 4)); !why.empty()) {
        error(why);
        return false;
      }
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
  // --timeout-ms for the server's (frames before it are skipped).
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
          continue;
        }
        if (st == Dec::Status::Error || !flush()) return;
        const std::uint64_t now = now_ns();
        if (now >= deadline) {
          shared_.note("connection " + std::to_string(id_) + ": no close frame from the server within " +
                       std::to_string(opt_.timeout_ms) + " ms");
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

  // The payload request `index` carries (the protocol's own for its variant, if it has one).
  void expected_payload(std::uint64_t index, std::uint8_t* dst, std::size_t n) const {
    if constexpr (requires { proto_.request_payload(opt_.variant, index, dst, n); })
      proto_.request_payload(opt_.variant, index, dst, n);
    else
      fill_payload(index, dst, n);
  }

  [[nodiscard]] bool more_to_send(std::uint64_t now) const {
    if (failed_) return false;
    if (opt_.requests) return res_.sent < quota_;
    return now < end_ns_;
  }

  std::uint64_t take_index() {
    if (opt_.requests) return next_index_++;
    return shared_.next_index.fetch_add(1, std::memory_order_relaxed);
  }

  // Queues as many requests as the mode allows. Returns true if it stopped only because a
  // receive-mode batch is full (so the caller must come back as soon as the socket is writable).
  bool fill(std::uint64_t now) {
    const bool receive = opt_.mode == Mode::Receive;
    const fp::SendKind kind = receive ? fp::SendKind::Untracked : fp::SendKind::Request;
    std::size_t batch = 0;
    while (more_to_send(now)) {
      if (receive) {
        if (out_.size() - out_off_ > (256u << 10) || batch >= opt_.window) return true;  // write in batches
      } else if (opt_.mode == Mode::Batched) {
        // a batch is written at once; the next only after every reply of this one was verified
        if (batch == 0 && client_.pending() > 0) break;
        if (batch >= opt_.window) break;
      } else if (client_.pending() >= opt_.window || out_.size() - out_off_ > (256u << 10)) {
        break;  // window full, or the server is not reading what is already queued
      }
      // nullopt: the matcher refuses for now (STD-SEQ-3: the next number is still pending because
      // its reply was lost): wait.
      std::optional<FrameT> header;
      if constexpr (P::kSendsFrames) header = client_.next(kind, &request_);
      else header = client_.next(kind);
      if (!header) break;
      const std::uint64_t index = take_index();
      client_.begin(kind, index, now);
      const std::size_t at = out_.size();
      out_.resize(at + proto_.header_bound(*header) + opt_.payload);
      if constexpr (requires { proto_.write_request(out_.data(), *header, opt_.variant, index, opt_.payload); }) {
        // the protocol writes the whole request (e.g. websocket: a fresh masking key, masked)
        out_.resize(at + proto_.write_request(out_.data() + at, *header, opt_.variant, index, opt_.payload));
      } else {
        const std::size_t h = proto_.write_header(out_.data() + at, *header, opt_.payload);
        fill_payload(index, out_.data() + at + h, opt_.payload);
        out_.resize(at + h + opt_.payload);
      }
      ++res_.sent;
      ++batch;
    }
    return false;
  }

  // Returns false on a fatal socket error.
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
        shared_.note("connection " + std::to_string(id_) + ": send failed: " + std::strerror(errno));
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

  void error(std::string what) {
    ++res_.errors;
    shared_.note("connection " + std::to_string(id_) + ": " + what);
  }

  // A frame's header fields for an error message (its JSON without the payload).
  std::string describe(const FrameT& f) const {
    nlohmann::ordered_json j = proto_.frame_json(f);
    j.erase("payload");
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  void on_frame(const FrameT& f, std::uint64_t now) {
    ++res_.received;
    const fp::Match m = client_.complete(f);
    switch (m.kind) {
      case fp::Match::Kind::Ignored:
        error("received a frame that is not a reply " + describe(f));
        return;
      case fp::Match::Kind::Unmatched:
        error("a reply " + describe(f) + " matches no pending request");
        return;
      case fp::Match::Kind::Reply:
        break;
    }
    const std::string request = "request " + std::to_string(m.id) + ": ";
    if (auto bad = P::Client::check_echo(f, request_)) {
      error(request + *bad);
      return;
    }
    res_.latency.record(now - m.sent_at);
    if (f.payload.size() != opt_.payload) {
      error(request + "reply payload has " + std::to_string(f.payload.size()) + " bytes, expected " +
            std::to_string(opt_.payload));
      return;
    }
    expected_payload(m.id, scratch_.data(), scratch_.size());
    if (!std::equal(f.payload.begin(), f.payload.end(), scratch_.begin())) {
      error(request + "reply payload differs from the request's");
      return;
    }
    ++res_.verified;
    res_.verified_bytes += f.payload.size();
  }

  static std::string hex(unsigned v) {
    char b[8];
    std::snprintf(b, sizeof b, "%02X", v & 0xFF);
    return b;
  }

  // Reads what is there; false on EOF or error.
  bool read_some(std::uint64_t now) {
    for (int round = 0; round < 8; ++round) {
      auto space = decoder_.prepare();
      const ssize_t n = ::recv(fd_, space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) {
        decoder_.commit(static_cast<std::size_t>(n));
        FrameT f;
        typename Dec::Status st;
        while ((st = decoder_.next(f)) == Dec::Status::Frame) on_frame(f, now);
        if (st == Dec::Status::Error) {
          error("reply stream rejected: " + decoder_.error()->requirement + " at offset " +
                std::to_string(decoder_.error()->offset));
          return false;
        }
        if (static_cast<std::size_t>(n) < space.size()) return true;
      } else if (n == 0) {
        return false;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return true;
      } else {
        shared_.note("connection " + std::to_string(id_) + ": recv failed: " + std::strerror(errno));
        return false;
      }
    }
    return true;
  }

  void expire(std::uint64_t now) {
    timed_out_.clear();
    failed_ids_.clear();
    // true: the connection has failed (LF-MATCH-3: order can no longer be trusted); give it up
    if (client_.expire(now, timed_out_, failed_ids_)) failed_ = true;
    if (!timed_out_.empty() && opt_.mode == Mode::Batched) failed_ = true;  // a batch not all in: the connection stops
    if (!timed_out_.empty()) {
      res_.missing += timed_out_.size() + failed_ids_.size();
      shared_.note("connection " + std::to_string(id_) + ": " + std::to_string(timed_out_.size()) +
                   " request(s) got no reply within " + std::to_string(opt_.timeout_ms) + " ms (first: request " +
                   std::to_string(timed_out_.front()) + ")");
    }
  }

  void abandon() {
    timed_out_.clear();
    client_.clear(timed_out_);
    if (!timed_out_.empty()) {
      res_.missing += timed_out_.size();
      shared_.note("connection " + std::to_string(id_) + ": closed with " + std::to_string(timed_out_.size()) +
                   " request(s) unanswered");
    }
  }

  void loop() {
    const bool receive = opt_.mode == Mode::Receive;
    bool open = true;
    bool shut = false;
    std::uint64_t shut_deadline = 0;
    while (open) {
      std::uint64_t now = now_ns();
      const bool more_batches = fill(now);
      const std::size_t unsent_before = out_.size() - out_off_;
      if (!flush()) {
        res_.fatal = true;
        break;
      }
      // Bounded in time: if the server takes no byte for --timeout-ms, give up this connection.
      if (out_.empty()) {
        write_stalled_since_ = 0;
      } else if (write_stalled_since_ == 0 || out_.size() - out_off_ < unsent_before) {
        write_stalled_since_ = now;
      } else if (now - write_stalled_since_ >= opt_.timeout_ms * 1000000ull) {
        res_.fatal = true;
        shared_.note("connection " + std::to_string(id_) + ": the server took no byte for " +
                     std::to_string(opt_.timeout_ms) + " ms; giving up");
        break;
      }
      const bool sending_done = !more_to_send(now) && out_.empty();
      if constexpr (requires { proto_.closing_frame(); }) {
        if (receive && sending_done) break;  // the closing handshake ends the connection (closing())
      }
      if (receive && sending_done && !shut) {
        // Every request is written: half-close and wait for the server to close after reading all.
        ::shutdown(fd_, SHUT_WR);
        shut = true;
        shut_deadline = now + opt_.timeout_ms * 1000000ull;
      }
      if (!receive && sending_done && client_.pending() == 0) break;
      if (failed_) break;
      // Wait for I/O, at most until the next request deadline (and at most 50 ms).
      std::uint64_t wait_ns = 50'000'000;
      std::optional<std::uint64_t> dl = client_.next_deadline();
      if (shut) dl = shut_deadline;
      if (write_stalled_since_) {
        const std::uint64_t give_up = write_stalled_since_ + opt_.timeout_ms * 1000000ull;
        dl = dl ? std::min(*dl, give_up) : give_up;
      }
      if (dl) wait_ns = std::min(wait_ns, *dl > now ? *dl - now : 0);
      if (!opt_.requests && end_ns_ > now) wait_ns = std::min(wait_ns, end_ns_ - now);
      const bool want_write = !out_.empty() || more_batches;
      pollfd p{fd_, static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0};
      const int r = ::poll(&p, 1, static_cast<int>((wait_ns + 999'999) / 1'000'000));
      now = now_ns();
      if (r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!read_some(now)) open = false;
      }
      if (!receive) expire(now);
      if (shut && now >= shut_deadline) break;
    }
    if (out_off_ < out_.size()) {
      res_.fatal = true;
      shared_.note("connection " + std::to_string(id_) + ": could not write every request");
    }
    if (!receive) abandon();
  }

  // --mode stream: the next frame from the server, waiting at most --timeout-ms (writing what is
  // queued meanwhile); false (noted) on a timeout, EOF, a socket or decoding error.
  bool wait_frame(FrameT& f) {
    const std::uint64_t deadline = now_ns() + opt_.timeout_ms * 1000000ull;
    while (true) {
      const typename Dec::Status st = decoder_.next(f);
      if (st == Dec::Status::Frame) return true;
      if (st == Dec::Status::Error) {
        error("reply stream rejected: " + decoder_.error()->requirement + " at offset " +
              std::to_string(decoder_.error()->offset));
        return false;
      }
      if (!flush()) return false;
      const std::uint64_t now = now_ns();
      if (now >= deadline) {
        error("no answer within " + std::to_string(opt_.timeout_ms) + " ms");
        return false;
      }
      pollfd p{fd_, static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT)), 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<std::uint64_t>((deadline - now + 999'999) / 1'000'000, 50)));
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto space = decoder_.prepare();
      const ssize_t n = ::recv(fd_, space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) {
        decoder_.commit(static_cast<std::size_t>(n));
      } else if (n == 0) {
        error("the server closed the connection");
        return false;
      } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        shared_.note("connection " + std::to_string(id_) + ": recv failed: " + std::strerror(errno));
        res_.fatal = true;
        return false;
      }
    }
  }

  // Queues one stream frame (header from the protocol, payload of DATA frame `index`).
  void queue_stream_frame(fp::StreamStep step, std::uint32_t sid, std::optional<std::uint64_t> index) {
    const FrameT h = proto_.stream_frame(step, sid);
    const std::size_t len = index ? opt_.payload : 0;
    const std::size_t at = out_.size();
    out_.resize(at + proto_.header_bound(h) + len);
    const std::size_t hl = proto_.write_header(out_.data() + at, h, len);
    if (index) fill_payload(*index, out_.data() + at + hl, len);
    out_.resize(at + hl + len);
  }

  // Streams one after another: open, --frames-per-stream DATA echoes with at most --window
  // unanswered (each verified: the stream's id, the payload, in order), end. A stream counts once
  // its end is answered and every echo in it was verified.
  void loop_streams() {
    std::uint32_t sid = 0;  // per connection: 0, 1, 2 ... (the protocol's id counter)
    std::uint64_t index = next_index_ * opt_.frames_per_stream;
    std::uint64_t done = 0;
    std::deque<std::pair<std::uint64_t, std::uint64_t>> inflight;  // (payload index, sent at)
    FrameT f;
    while (opt_.requests ? done < quota_ : now_ns() < end_ns_) {
      const std::uint32_t id = sid++;
      queue_stream_frame(fp::StreamStep::Open, id, std::nullopt);
      if (!wait_frame(f)) return;
      if (auto bad = proto_.stream_check(fp::StreamStep::Open, f, id)) return error(*bad);
      std::size_t sent = 0;
      bool ok = true;
      inflight.clear();
      while (sent < opt_.frames_per_stream || !inflight.empty()) {
        while (sent < opt_.frames_per_stream && inflight.size() < opt_.window) {
          queue_stream_frame(fp::StreamStep::Data, id, index);
          inflight.emplace_back(index++, now_ns());
          ++sent;
          ++res_.sent;
        }
        if (!wait_frame(f)) return;
        if (auto bad = proto_.stream_check(fp::StreamStep::Data, f, id)) return error(*bad);
        ++res_.received;
        const auto [want, at] = inflight.front();
        inflight.pop_front();
        res_.latency.record(now_ns() - at);
        fill_payload(want, scratch_.data(), scratch_.size());
        if (f.payload.size() != scratch_.size() || !std::equal(f.payload.begin(), f.payload.end(), scratch_.begin())) {
          ok = false;
          error("stream " + std::to_string(id) + ": DATA echo " + std::to_string(want) + " differs from what was sent");
          continue;
        }
        ++res_.verified;
        res_.verified_bytes += f.payload.size();
      }
      queue_stream_frame(fp::StreamStep::End, id, std::nullopt);
      if (!wait_frame(f)) return;
      if (auto bad = proto_.stream_check(fp::StreamStep::End, f, id)) return error(*bad);
      if (ok) ++res_.streams;
      ++done;
    }
    if (!flush()) res_.fatal = true;
  }

  P proto_;
  const Options& opt_;
  Shared& shared_;
  int id_;
  int fd_ = -1;
  std::uint64_t next_index_;
  std::uint64_t quota_;
  std::uint64_t end_ns_;
  Dec decoder_;
  FrameT request_{};  // the request every send is made from (its variant), see P::variant_request
  typename P::Client client_;
  bool failed_ = false;
  std::uint64_t write_stalled_since_ = 0;  // when unsent bytes last stopped draining (0 = none)
  fp::Bytes out_;
  std::size_t out_off_ = 0;
  std::vector<std::uint8_t> scratch_;
  std::vector<std::uint64_t> timed_out_;
  std::vector<std::uint64_t> failed_ids_;
  Result res_;
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += ch;
    }
  }
  return o;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::PerPacket: return "per-packet";
    case Mode::Pipelined: return "pipelined";
    case Mode::Batched: return "batched";
    case Mode::Receive: return "receive";
    case Mode::Stream: return "stream";
  }
  return "?";
}

std::string usage() {
  return "usage: fp-load (--codec JSON | --protocol " + fp::cli::protocol_choices() + ") --connect HOST:PORT\n"
         "               [--connections N] (--requests N | --duration SECONDS) [--payload BYTES]\n"
         "               [--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N]\n"
         "               [--timeout-ms MS] [--json FILE] [--variant NAME] [--frames-per-stream F]\n"
         "  defaults: --connections 1, --payload 32, --mode per-packet, --timeout-ms 5000;\n"
         "  --window: 1 per-packet (no other value), 32 pipelined, 256 receive (requests per batch),\n"
         "            1 stream (DATA frames unanswered at a time)\n"
         "  --mode batched: each connection writes --batch N requests at once and verifies all N replies\n"
         "            before the next batch (default N: the protocol's seed batch, standard 255,\n"
         "            length-field 128, rpc/websocket 256); the JSON's window is N\n"
         "  --variant: the kind of request (rpc: unary|client-stream|server-stream|bidi; others: default)\n"
         "  --mode stream (rpc): --requests counts streams of --frames-per-stream DATA frames (default 16)\n";
}

struct Report {
  Result total;
  double secs = 0;
  std::vector<std::string> details;
};

// The protocol as the client end of a connection (websocket: the client role, WS-MASK-2).
template <class P>
P client_end(const P& proto) {
  if constexpr (requires { proto.as_client(); }) return proto.as_client();
  else return proto;
}

// Runs every connection of protocol P to the end and sums their results.
template <class P>
Report run(const P& proto, const Options& opt) {
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
      Connection<P> conn(client_end(proto), opt, shared, k, first, count, end);
      results[static_cast<std::size_t>(k)] = conn.run();
    });
    first += count;
  }
  for (auto& t : threads) t.join();
  Report rep;
  rep.secs = static_cast<double>(now_ns() - start) / 1e9;
  for (auto& r : results) {
    rep.total.sent += r.sent;
    rep.total.received += r.received;
    rep.total.verified += r.verified;
    rep.total.verified_bytes += r.verified_bytes;
    rep.total.errors += r.errors;
    rep.total.missing += r.missing;
    rep.total.streams += r.streams;
    rep.total.fatal = rep.total.fatal || r.fatal;
    rep.total.latency.merge(r.latency);
  }
  rep.details = std::move(shared.details);
  return rep;
}

}  // namespace

int main(int argc, char** argv) {
  fp::cli::Args args(argc, argv, usage(), {},
                     {"codec", "protocol", "connect", "connections", "requests", "duration", "payload", "mode",
                      "window", "batch", "timeout-ms", "json", "variant", "frames-per-stream"});
  const fp::cli::CodecOption codec = fp::cli::codec_option(args);
  Options opt;
  opt.codec_json = codec.json;
  if (!args.has("connect")) args.die("--connect HOST:PORT is required");
  opt.connect = args.str("connect");
  auto hp = fp::cli::split_host_port(args.str("connect"));
  if (!hp || !fp::cli::resolve(*hp, false, opt.addr, opt.addr_len)) args.die("--connect: cannot resolve");
  opt.connections = args.num<int>("connections", 1);
  if (opt.connections < 1) args.die("--connections must be at least 1");
  if (args.has("requests") == args.has("duration")) args.die("give exactly one of --requests and --duration");
  if (args.has("requests")) opt.requests = args.num<std::uint64_t>("requests", 0);
  else opt.duration_s = args.seconds("duration");
  opt.payload = args.num<std::size_t>("payload", 32);
  const std::string mode = args.str("mode", "per-packet");
  if (mode == "per-packet") opt.mode = Mode::PerPacket;
  else if (mode == "pipelined") opt.mode = Mode::Pipelined;
  else if (mode == "batched") opt.mode = Mode::Batched;
  else if (mode == "receive") opt.mode = Mode::Receive;
  else if (mode == "stream") opt.mode = Mode::Stream;
  else args.die("--mode must be per-packet, pipelined, batched, receive or stream");
  if (opt.mode == Mode::Batched && args.has("window")) args.die("--window is not used in batched mode (--batch N)");
  if (opt.mode != Mode::Batched && args.has("batch")) args.die("--batch needs --mode batched");
  opt.frames_per_stream = args.num<std::size_t>("frames-per-stream", 16);
  if (args.has("frames-per-stream") && opt.mode != Mode::Stream) args.die("--frames-per-stream needs --mode stream");
  opt.window = args.num<std::size_t>(
      "window", opt.mode == Mode::Pipelined ? 32 : opt.mode == Mode::Receive ? 256 : 1);
  if (opt.mode == Mode::PerPacket && opt.window != 1) args.die("--window must be 1 in per-packet mode");
  if (opt.window < 1) args.die("--window must be at least 1");
  opt.timeout_ms = args.num<std::uint64_t>("timeout-ms", 5000);
  opt.json = args.str("json");
  std::visit(
      [&](const auto& proto) {
        using P = std::decay_t<decltype(proto)>;
        const std::vector<std::string_view> variants = P::variants();
        opt.variant_name = args.str("variant", std::string(variants.front()));
        const auto it = std::find(variants.begin(), variants.end(), opt.variant_name);
        if (it == variants.end()) {
          std::string names;
          for (auto v : variants) names += (names.empty() ? "" : ", ") + std::string(v);
          args.die("--variant: " + std::string(P::kName) + " has the variants " + names);
        }
        opt.variant = static_cast<std::size_t>(it - variants.begin());
        if (opt.mode == Mode::Stream && !P::kStreams) args.die("--mode stream: " + std::string(P::kName) + " has no streams");
        if (opt.payload > proto.max_payload()) args.die("--payload is above what the protocol can carry");
        if (opt.mode == Mode::Pipelined && opt.window > P::Client::kMaxWindow)
          args.die("--window must be at most " + std::to_string(P::Client::kMaxWindow) + " for " + std::string(P::kName));
        if (opt.mode == Mode::Batched) {  // the batch is the window of the report
          opt.window = args.num<std::size_t>("batch", P::kSeedBatch);
          if (opt.window < 1) args.die("--batch must be at least 1");
          if (opt.window > P::Client::kMaxWindow)
            args.die("--batch must be at most " + std::to_string(P::Client::kMaxWindow) + " for " + std::string(P::kName));
        }
      },
      codec.protocol);
  signal(SIGPIPE, SIG_IGN);

  const Report rep = std::visit([&](const auto& proto) { return run(proto, opt); }, codec.protocol);
  const Result& total = rep.total;
  const double secs = rep.secs;
  const bool receive = opt.mode == Mode::Receive;
  const std::uint64_t msgs = receive ? total.sent : total.verified;
  const std::uint64_t bytes = receive ? total.sent * opt.payload : total.verified_bytes;
  const double msgs_per_s = secs > 0 ? static_cast<double>(msgs) / secs : 0;
  const double mb_per_s = secs > 0 ? static_cast<double>(bytes) / secs / 1e6 : 0;
  // latencies in microseconds: one decimal for people, integers in the JSON (the contract)
  const double lat_ns[5] = {total.latency.quantile(0.50), total.latency.quantile(0.90), total.latency.quantile(0.99),
                            total.latency.quantile(0.999), static_cast<double>(total.latency.max())};
  double lat_us[5];
  long long lat_int[5];
  for (int i = 0; i < 5; ++i) {
    lat_us[i] = std::round(lat_ns[i] / 100.0) / 10.0;
    lat_int[i] = std::llround(lat_ns[i] / 1000.0);
  }

  bool ok = total.errors == 0 && !total.fatal;
  if (!receive) ok = ok && total.verified == total.sent;
  const bool streams = opt.mode == Mode::Stream;
  // --requests counts streams in stream mode: every one must have completed
  if (opt.requests) ok = ok && (streams ? total.streams : total.sent) == *opt.requests;
  const double streams_per_s = secs > 0 ? static_cast<double>(total.streams) / secs : 0;

  const std::string protocol(fp::name_of(codec.protocol));
  std::printf("fp-load (cpp) %s %s: %d connection(s), window %zu, payload %zu B\n", protocol.c_str(),
              mode_name(opt.mode), opt.connections, opt.window, opt.payload);
  std::printf("  sent %" PRIu64 ", received %" PRIu64 ", verified %" PRIu64 ", errors %" PRIu64 ", missing %" PRIu64 "\n",
              total.sent, total.received, total.verified, total.errors,
              receive ? std::uint64_t{0} : total.sent - std::min(total.sent, total.received));
  std::printf("  %.3f s, %.1f msg/s, %.2f MB/s\n", secs, msgs_per_s, mb_per_s);
  if (streams) std::printf("  streams completed %" PRIu64 ", %.1f streams/s\n", total.streams, streams_per_s);
  std::printf("  latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", lat_us[0], lat_us[1], lat_us[2],
              lat_us[3], lat_us[4]);
  for (const auto& d : rep.details) std::printf("  error: %s\n", d.c_str());
  std::printf("%s\n", ok ? "OK" : "FAILED");
  std::fflush(stdout);

  if (!opt.json.empty()) {
    std::FILE* f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "fp-load: cannot write %s: %s\n", opt.json.c_str(), std::strerror(errno));
      return 1;
    }
    std::string details = "[";
    for (std::size_t i = 0; i < rep.details.size(); ++i) {
      if (i) details += ", ";
      details += "\"" + json_escape(rep.details[i]) + "\"";
    }
    details += "]";
    std::fprintf(f,
                 "{\"implementation\": \"cpp\", \"protocol\": \"%s\", \"codec\": %s, \"mode\": \"%s\", "
                 "\"variant\": \"%s\", \"connections\": %d, \"window\": %zu, \"payload\": %zu, \"requests_sent\": %" PRIu64
                 ", \"replies_received\": %" PRIu64 ", \"replies_verified\": %" PRIu64 ", \"errors\": %" PRIu64
                 ", \"error_details\": %s, \"duration_s\": %.6f, \"msgs_per_s\": %.1f, \"mb_per_s\": %.3f, "
                 "\"streams_completed\": %" PRIu64 ", \"streams_per_s\": %.1f, "
                 "\"latency_us\": {\"p50\": %lld, \"p90\": %lld, \"p99\": %lld, \"p999\": %lld, \"max\": %lld}}\n",
                 protocol.c_str(), opt.codec_json.c_str(), mode_name(opt.mode), json_escape(opt.variant_name).c_str(),
                 opt.connections, opt.window,
                 opt.payload, total.sent, total.received, total.verified, total.errors, details.c_str(), secs,
                 msgs_per_s, mb_per_s, total.streams, streams_per_s, lat_int[0], lat_int[1], lat_int[2], lat_int[3], lat_int[4]);
    std::fclose(f);
  }
  return ok ? 0 : 1;
}
