// The request loop of the modes that send echo requests (per-packet, pipelined, batched, receive):
// queue requests as the mode allows, write them, read and verify the replies through the
// protocol's client matcher (P::Client: standard by sequence number, flag 0x81; length-field
// FIFO ...), expire the ones whose reply is late. The payload must equal the request's (bytes 0..7
// the request's global index, u64 little-endian, the rest a pattern derived from it).
//
// Each mode is a class deriving from Requests<P, Mode> (CRTP, so the per-request decision is a
// direct call) that provides
//   Gate gate(std::size_t batch) const;   may one more request be queued now (`batch`: requests
//                                         queued since the last write)
// and may hide these defaults:
//   static constexpr bool kReplies = true;        false: replies are not awaited (receive: a sink
//                                                 server answers nothing)
//   static constexpr bool kTimeoutStops = false;  true: a reply that times out ends the connection
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "connection.hpp"

namespace fp::load {

// A mode's answer to "one more request now?"
enum class Gate {
  Send,  // yes
  Stop,  // not now: replies (or the socket) must make room first
  Later  // not in this write batch: come back as soon as the socket is writable
};

template <class P, class Mode>
class Requests : public Connection<P> {
  using Base = Connection<P>;

 public:
  using typename Base::Dec;
  using typename Base::FrameT;

  static constexpr bool kReplies = true;
  static constexpr bool kTimeoutStops = false;

  Requests(const P& proto, const Options& opt, Shared& shared, int id, std::uint64_t first_index, std::uint64_t count,
           std::uint64_t end_ns)
      : Base(proto, opt, shared, id, first_index, count, end_ns), client_(opt.timeout_ms * 1000000ull) {
    if constexpr (P::kSendsFrames) request_ = proto.variant_request(opt.variant);
  }

 protected:
  using Base::decoder_;
  using Base::end_ns_;
  using Base::error;
  using Base::failed_;
  using Base::fd_;
  using Base::flush;
  using Base::next_index_;
  using Base::note;
  using Base::opt_;
  using Base::out_;
  using Base::out_off_;
  using Base::proto_;
  using Base::quota_;
  using Base::res_;
  using Base::scratch_;
  using Base::shared_;
  using Base::unsent;

  // Requests sent and not yet answered (nor expired).
  [[nodiscard]] std::size_t in_flight() const { return client_.pending(); }
  // More than 256 KiB written and not taken: the server is not reading what is already queued.
  [[nodiscard]] bool backlog() const { return unsent() > (256u << 10); }

  void loop() final {
    constexpr bool receive = !Mode::kReplies;
    bool open = true;
    bool shut = false;
    std::uint64_t shut_deadline = 0;
    while (open) {
      std::uint64_t now = now_ns();
      const bool more_batches = fill(now);
      const std::size_t unsent_before = unsent();
      if (!flush()) {
        res_.fatal = true;
        break;
      }
      // Bounded in time: if the server takes no byte for --timeout-ms, give up this connection.
      if (out_.empty()) {
        write_stalled_since_ = 0;
      } else if (write_stalled_since_ == 0 || unsent() < unsent_before) {
        write_stalled_since_ = now;
      } else if (now - write_stalled_since_ >= opt_.timeout_ms * 1000000ull) {
        res_.fatal = true;
        note("the server took no byte for " + std::to_string(opt_.timeout_ms) + " ms; giving up");
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
      note("could not write every request");
    }
    if (!receive) abandon();
  }

 private:
  [[nodiscard]] bool more_to_send(std::uint64_t now) const {
    if (failed_) return false;
    if (opt_.requests) return res_.sent < quota_;
    return now < end_ns_;
  }

  std::uint64_t take_index() {
    if (opt_.requests) return next_index_++;
    return shared_.next_index.fetch_add(1, std::memory_order_relaxed);
  }

  // The payload request `index` carries (the protocol's own for its variant, if it has one).
  void expected_payload(std::uint64_t index, std::uint8_t* dst, std::size_t n) const {
    if constexpr (requires { proto_.request_payload(opt_.variant, index, dst, n); })
      proto_.request_payload(opt_.variant, index, dst, n);
    else
      Base::fill_payload(index, dst, n);
  }

  // Queues as many requests as the mode allows. Returns true if it stopped only because a
  // write batch is full (so the caller must come back as soon as the socket is writable).
  bool fill(std::uint64_t now) {
    constexpr fp::SendKind kind = Mode::kReplies ? fp::SendKind::Request : fp::SendKind::Untracked;
    std::size_t batch = 0;
    while (more_to_send(now)) {
      const Gate g = static_cast<const Mode*>(this)->gate(batch);
      if (g == Gate::Later) return true;
      if (g == Gate::Stop) break;
      // nullopt: the matcher refuses for now (STD-SEQ-3: the next number is still pending because
      // its reply was lost): wait.
      std::optional<FrameT> header;
      if constexpr (P::kSendsFrames) header = client_.next(kind, &request_);
      else header = client_.next(kind);
      if (!header) break;
      const std::uint64_t index = take_index();
      client_.begin(kind, index, now);
      const std::size_t at = out_.size();
      std::size_t room = proto_.header_bound(*header) + opt_.payload;
      if constexpr (requires { proto_.request_bound(*header, opt_.payload); })
        room = proto_.request_bound(*header, opt_.payload);  // websocket: a compressed payload may grow
      out_.resize(at + room);
      if constexpr (requires { proto_.write_request(out_.data(), *header, opt_.variant, index, opt_.payload); }) {
        // the protocol writes the whole request (e.g. websocket: a fresh masking key, masked)
        out_.resize(at + proto_.write_request(out_.data() + at, *header, opt_.variant, index, opt_.payload));
      } else {
        const std::size_t h = proto_.write_header(out_.data() + at, *header, opt_.payload);
        Base::fill_payload(index, out_.data() + at + h, opt_.payload);
        out_.resize(at + h + opt_.payload);
      }
      ++res_.sent;
      ++batch;
    }
    return false;
  }

  // A frame's header fields for an error message (its JSON without the payload).
  std::string describe(const FrameT& f) const {
    nlohmann::ordered_json j = proto_.frame_json(f);
    j.erase("payload");
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  // Whether a frame that completes nothing (a reply matching no pending request, a frame that is no reply)
  // is an error and counts as received: yes, unless the protocol says no (P::kStraysAreErrors, rpc)
  static constexpr bool strays_are_errors() {
    if constexpr (requires { P::kStraysAreErrors; }) {
      return P::kStraysAreErrors;
    } else {
      return true;
    }
  }

  void on_frame(const FrameT& received, std::uint64_t now) {
    // websocket: a ping is answered with a pong (WS-PING-1), a pong ignored (WS-PING-2); neither
    // is a reply nor an error
    if constexpr (requires { proto_.answer_control(received, out_); }) {
      if (proto_.answer_control(received, out_)) return;
    }
    // what the opening negotiated undone first (websocket: a compressed echo inflated)
    std::string undone;
    const FrameT* g = &received;
    FrameT scratch;
    if constexpr (requires { proto_.incoming(received, scratch, undone); }) g = &proto_.incoming(received, scratch, undone);
    const FrameT& f = *g;
    const fp::Match m = client_.complete(f);
    // rpc: RPC-MATCH-2, RPC-MATCH-4; but in receive mode no request is pending and every reply is one the
    // client did not ask for: an error (spec/harness.md HAR-VERIFY-3)
    if (m.kind != fp::Match::Kind::Reply && !strays_are_errors() && Mode::kReplies) return;
    ++res_.received;
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
    if (!undone.empty()) {
      error(request + undone);
      return;
    }
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
          Base::stream_rejected();
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
        note(std::string("recv failed: ") + std::strerror(errno));
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
    if (!timed_out_.empty() && Mode::kTimeoutStops) failed_ = true;
    if (!timed_out_.empty()) {
      res_.missing += timed_out_.size() + failed_ids_.size();
      note(std::to_string(timed_out_.size()) + " request(s) got no reply within " + std::to_string(opt_.timeout_ms) +
           " ms (first: request " + std::to_string(timed_out_.front()) + ")");
    }
  }

  void abandon() {
    timed_out_.clear();
    client_.clear(timed_out_);
    if (!timed_out_.empty()) {
      res_.missing += timed_out_.size();
      note("closed with " + std::to_string(timed_out_.size()) + " request(s) unanswered");
    }
  }

  FrameT request_{};  // the request every send is made from (its variant), see P::variant_request
  typename P::Client client_;
  std::uint64_t write_stalled_since_ = 0;  // when unsent bytes last stopped draining (0 = none)
  std::vector<std::uint64_t> timed_out_;
  std::vector<std::uint64_t> failed_ids_;
};

}  // namespace fp::load
