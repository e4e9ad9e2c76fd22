// Client-side request/reply matching: the interface every protocol's client matcher has
// (SequenceMatcher in standard.hpp, FifoMatcher in length_field.hpp) and ClientConnection<P>,
// the client connection model of the testee's `match` request (spec/testee.md).
//
// The clock is a plain number passed in by the caller (milliseconds in the testee's virtual
// clock, nanoseconds in fp-load): matchers never read a real clock.
//
// A matcher (P::Client) provides:
//   explicit Client(std::uint64_t timeout);
//   std::optional<Frame> next(SendKind) const;   header fields of the next message of that kind,
//                                                nullopt if it must be refused now (a protocol
//                                                with P::kSendsFrames: next(SendKind, const
//                                                FrameType* given), given = the application's
//                                                frame, nullptr for a plain call)
//   void begin(SendKind, std::uint64_t id, std::uint64_t now);   commits what next() returned
//   Match complete(const Frame& received);
//   bool expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out,
//               std::vector<std::uint64_t>& failed);   appends ids, oldest first; true if the
//                                                      connection has failed
//   void clear(std::vector<std::uint64_t>& ids);      removes every pending request, oldest first
//   std::optional<std::uint64_t> next_deadline() const;
//   std::size_t pending() const;
//   static constexpr std::size_t kMaxWindow;          requests one connection may keep in flight
//   static std::optional<std::string> check_echo(const Frame& reply, const Frame& request);
//                                                      why a reply that matched is not the echo
//                                                      of its request (fp-load)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <vector>

#include "frameproof/codec.hpp"

namespace fp {

inline constexpr std::uint64_t kDefaultTimeoutMs = 3000;  // STD-MATCH-3, LF-MATCH-3

// What the application sends.
enum class SendKind {
  Request,   // expects a reply, pending until then or its deadline
  OneWay,    // a message that is never answered (where the protocol has them)
  Untracked  // a request whose reply is not awaited (fp-load's receive mode)
};

// fp-load --mode stream (protocols with streams, P::kStreams): the three steps of one stream.
// P provides FrameType stream_frame(StreamStep, std::uint32_t id) const (the header of the frame
// to send; Data frames carry the payload) and std::optional<std::string> stream_check(StreamStep,
// const FrameType& reply, std::uint32_t id) const (why `reply` is not the answer to that step).
enum class StreamStep { Open, Data, End };

// What a received frame did.
struct Match {
  enum class Kind {
    Reply,      // completed request `id`, sent at `sent_at`
    Unmatched,  // a reply that matches no pending request
    Ignored     // not a reply at all (e.g. a request from the peer): completes nothing
  } kind = Kind::Unmatched;
  std::uint64_t id = 0;
  std::uint64_t sent_at = 0;
};

// One completion of the client-connection model (spec/testee.md, "match").
struct Completion {
  enum class Kind { Reply = 1, Timeout = 2, Unmatched = 3, Failed = 4, Refused = 5 };
  Kind kind;
  std::optional<std::uint64_t> request;  // unset for Unmatched
  std::uint8_t flag = 0;      // Reply / Unmatched, protocols whose FrameType is Frame
  std::uint8_t sequence = 0;
  Bytes payload;  // Reply / Unmatched
  nlohmann::ordered_json frame = nullptr;  // Reply / Unmatched: P::frame_json of the reply
};

// A whole client connection: encoder, decoder, matcher and the failed state, with the exact
// event semantics the testee's `match` request specifies. Messages are numbered 0, 1, 2 ... in
// send order (refused ones included).
template <class P>
class ClientConnection {
 public:
  using FrameType = typename P::FrameType;

  // proto must be valid; timeout 0 = the default (3000).
  ClientConnection(const P& proto, std::uint64_t timeout)
      : proto_(proto), decoder_(proto), client_(timeout ? timeout : kDefaultTimeoutMs) {}

  // Sends a request (or a one-way message). Returns the bytes written, empty if the send was
  // refused (a Refused completion is appended).
  Bytes send(ByteView payload, bool one_way, std::vector<Completion>& out) {
    return send_impl(payload, one_way ? SendKind::OneWay : SendKind::Request, nullptr, out);
  }

  // Sends the application's frame (P::kSendsFrames: e.g. an rpc call with its service, method
  // and flags); the client fills in what is its own (e.g. the id).
  Bytes send_frame(const FrameType& given, std::vector<Completion>& out) {
    return send_impl(given.payload, SendKind::Request, &given, out);
  }

 private:
  Bytes send_impl(ByteView payload, SendKind kind, const FrameType* given, std::vector<Completion>& out) {
    const std::uint64_t id = next_id_++;
    std::optional<FrameType> header;
    if (!failed_) {
      if constexpr (P::kSendsFrames) header = client_.next(kind, given);
      else header = client_.next(kind);
    }
    Bytes bytes;
    if (header) {
      header->payload = payload;
      if (!proto_.encode(*header, bytes)) {
        client_.begin(kind, id, now_);
        return bytes;
      }
    }
    out.push_back({Completion::Kind::Refused, id, 0, 0, {}});
    return {};
  }

 public:

  // Bytes from the peer. Returns the decode error if the stream was rejected (the connection
  // then fails: pending requests complete Failed).
  std::optional<ProtocolError> receive(ByteView data, std::vector<Completion>& out) {
    if (failed_) return std::nullopt;
    auto err = decoder_.feed(data, [&](const FrameType& f) { deliver(f, out); });
    if (err) {
      ids_.clear();
      client_.clear(ids_);
      complete_all(Completion::Kind::Failed, ids_, out);
      failed_ = true;
    }
    return err;
  }

  // Moves the clock forward by `ms`.
  void advance(std::uint64_t ms, std::vector<Completion>& out) {
    now_ += ms;
    if (failed_) return;
    ids_.clear();
    failed_ids_.clear();
    failed_ = client_.expire(now_, ids_, failed_ids_);
    complete_all(Completion::Kind::Timeout, ids_, out);
    complete_all(Completion::Kind::Failed, failed_ids_, out);
  }

  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] std::uint64_t now() const { return now_; }

 private:
  void deliver(const FrameType& f, std::vector<Completion>& out) {
    const Match m = client_.complete(f);
    if (m.kind == Match::Kind::Ignored) return;
    Completion c{Completion::Kind::Unmatched, std::nullopt, 0, 0, Bytes(f.payload.begin(), f.payload.end())};
    if constexpr (std::is_same_v<FrameType, Frame>) {
      c.flag = f.flag;
      c.sequence = f.sequence;
    }
    c.frame = proto_.frame_json(f);
    if (m.kind == Match::Kind::Reply) {
      c.kind = Completion::Kind::Reply;
      c.request = m.id;
    }
    out.push_back(std::move(c));
  }

  static void complete_all(Completion::Kind kind, const std::vector<std::uint64_t>& ids, std::vector<Completion>& out) {
    for (std::uint64_t id : ids) out.push_back({kind, id, 0, 0, {}});
  }

  P proto_;
  typename P::DecoderType decoder_;
  typename P::Client client_;
  std::uint64_t now_ = 0;
  std::uint64_t next_id_ = 0;
  bool failed_ = false;
  std::vector<std::uint64_t> ids_;
  std::vector<std::uint64_t> failed_ids_;
};

}  // namespace fp
