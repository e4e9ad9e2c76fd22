// --mode stream (protocols with streams, P::kStreams; rpc): streams one after another on each
// connection: open, --frames-per-stream DATA echoes with at most --window unanswered (each
// verified: the stream's id, the payload, in order), end. A stream counts once its end is
// answered and every echo in it was verified; --requests counts streams.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "connection.hpp"

namespace fp::load {

template <class P>
class Streams final : public Connection<P> {
  using Base = Connection<P>;

 public:
  using typename Base::Dec;
  using typename Base::FrameT;
  using Base::Base;

 protected:
  void loop() final {
    if constexpr (P::kStreams) {
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
          Base::fill_payload(want, scratch_.data(), scratch_.size());
          if (f.payload.size() != scratch_.size() ||
              !std::equal(f.payload.begin(), f.payload.end(), scratch_.begin())) {
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
  }

 private:
  using Base::decoder_;
  using Base::end_ns_;
  using Base::error;
  using Base::fd_;
  using Base::flush;
  using Base::next_index_;
  using Base::note;
  using Base::opt_;
  using Base::out_;
  using Base::proto_;
  using Base::quota_;
  using Base::res_;
  using Base::scratch_;

  // The next frame from the server, waiting at most --timeout-ms (writing what is queued
  // meanwhile); false (noted) on a timeout, EOF, a socket or decoding error.
  bool wait_frame(FrameT& f) {
    const std::uint64_t deadline = now_ns() + opt_.timeout_ms * 1000000ull;
    while (true) {
      const typename Dec::Status st = decoder_.next(f);
      if (st == Dec::Status::Frame) return true;
      if (st == Dec::Status::Error) {
        Base::stream_rejected();
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
        note(std::string("recv failed: ") + std::strerror(errno));
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
    if (index) Base::fill_payload(*index, out_.data() + at + hl, len);
    out_.resize(at + hl + len);
  }
};

}  // namespace fp::load
