// Client-side request/reply matching (STD-SEQ-*, STD-MATCH-*, LF-MATCH-*).
//
// The clock is a plain number passed in by the caller (milliseconds in the testee's virtual
// clock, nanoseconds in fp-load): matchers never read a real clock.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "frameproof/codec.hpp"

namespace fp {

inline constexpr std::uint64_t kDefaultTimeoutMs = 3000;  // STD-MATCH-3, LF-MATCH-3
inline constexpr std::size_t kLfPendingBound = 256;       // LF-MATCH-4

// Sequence-number table of one `standard` connection.
class SequenceMatcher {
 public:
  explicit SequenceMatcher(std::uint64_t timeout) : timeout_(timeout) {}

  // The sequence number the next message would carry (STD-SEQ-1: 1, 2, ... 255, 0, 1 ...).
  [[nodiscard]] std::uint8_t peek_sequence() const { return static_cast<std::uint8_t>(counter_ + 1); }
  // Starts request `id`: allocates the next sequence number, pending until now + timeout.
  // nullopt if that number is held by a pending request (STD-SEQ-3): nothing changes.
  std::optional<std::uint8_t> begin_request(std::uint64_t id, std::uint64_t now);
  // A one-way message takes the next number without any check and is never pending (STD-MATCH-4).
  std::uint8_t begin_one_way();
  // A reply frame (bit 7 set) with this sequence: the id of the pending request it completes
  // (STD-MATCH-1), or nullopt if it matches none (STD-MATCH-2).
  std::optional<std::uint64_t> complete(std::uint8_t sequence);
  // Completes every request whose deadline is <= now as timed out, oldest first (STD-MATCH-3);
  // appends their ids.
  void expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out);
  // Removes every pending request, oldest first, appending their ids.
  void clear(std::vector<std::uint64_t>& ids);
  // Earliest deadline of a pending request.
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const;
  [[nodiscard]] std::size_t pending() const { return pending_; }
  [[nodiscard]] bool is_pending(std::uint8_t sequence) const { return slots_[sequence].active; }

 private:
  struct Slot {
    bool active = false;
    std::uint64_t id = 0;
    std::uint64_t deadline = 0;
  };
  std::uint64_t timeout_;
  std::uint8_t counter_ = 0;  // last number used
  std::size_t pending_ = 0;
  std::array<Slot, 256> slots_{};
};

// FIFO matcher of one `length-field` connection.
class FifoMatcher {
 public:
  explicit FifoMatcher(std::uint64_t timeout, std::size_t bound = kLfPendingBound)
      : timeout_(timeout), bound_(bound) {}

  // false if `bound` requests are already pending (LF-MATCH-4).
  bool begin_request(std::uint64_t id, std::uint64_t now);
  // Any received frame completes the oldest pending request (LF-MATCH-1), or none (LF-MATCH-2).
  std::optional<std::uint64_t> complete();
  // Expired requests (oldest first) into timed_out; if any expired, every other pending request
  // goes to failed and the caller must treat the connection as failed (LF-MATCH-3). Returns
  // whether anything expired.
  bool expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out, std::vector<std::uint64_t>& failed);
  void clear(std::vector<std::uint64_t>& ids);
  [[nodiscard]] std::optional<std::uint64_t> next_deadline() const;
  [[nodiscard]] std::size_t pending() const { return queue_.size(); }

 private:
  struct Pending {
    std::uint64_t id;
    std::uint64_t deadline;
  };
  std::uint64_t timeout_;
  std::size_t bound_;
  std::deque<Pending> queue_;
};

// One completion of the client-connection model (spec/testee.md, "match").
struct Completion {
  enum class Kind { Reply = 1, Timeout = 2, Unmatched = 3, Failed = 4, Refused = 5 };
  Kind kind;
  std::optional<std::uint64_t> request;  // unset for Unmatched
  std::uint8_t flag = 0;
  std::uint8_t sequence = 0;
  Bytes payload;  // Reply / Unmatched
};

// A whole client connection: encoder, decoder, matcher and the failed state, with the exact
// event semantics the testee's `match` request specifies. Messages are numbered 0, 1, 2 ... in
// send order (refused ones included).
class ClientConnection {
 public:
  // cfg must be valid; timeout 0 = the default (3000).
  ClientConnection(const CodecConfig& cfg, std::uint64_t timeout);

  // Sends a request (or a one-way message, standard only). Returns the bytes written, empty if
  // the send was refused (a Refused completion is appended).
  Bytes send(ByteView payload, bool one_way, std::vector<Completion>& out);
  // Bytes from the peer. Returns the decode error if the stream was rejected (the connection
  // then fails: pending requests complete Failed).
  std::optional<ProtocolError> receive(ByteView data, std::vector<Completion>& out);
  // Moves the clock forward by `ms`.
  void advance(std::uint64_t ms, std::vector<Completion>& out);

  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] std::uint64_t now() const { return now_; }

 private:
  void deliver(const Frame& f, std::vector<Completion>& out);
  void fail_all(std::vector<Completion>& out);

  CodecConfig cfg_;
  Decoder decoder_;
  SequenceMatcher seq_;
  FifoMatcher fifo_;
  std::uint64_t now_ = 0;
  std::uint64_t next_id_ = 0;
  bool failed_ = false;
  std::vector<std::uint64_t> scratch_;
  std::vector<std::uint64_t> scratch2_;
};

}  // namespace fp
