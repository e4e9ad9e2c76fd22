#include "frameproof/matcher.hpp"

#include <algorithm>

namespace fp {

// ---------------------------------------------------------------------------------------------
// SequenceMatcher

std::optional<std::uint8_t> SequenceMatcher::begin_request(std::uint64_t id, std::uint64_t now) {
  const std::uint8_t seq = peek_sequence();
  Slot& s = slots_[seq];
  if (s.active) return std::nullopt;  // STD-SEQ-3: refused, counter unchanged
  counter_ = seq;
  s.active = true;
  s.id = id;
  s.deadline = now + timeout_;
  ++pending_;
  return seq;
}

std::uint8_t SequenceMatcher::begin_one_way() {
  counter_ = peek_sequence();
  return counter_;
}

std::optional<std::uint64_t> SequenceMatcher::complete(std::uint8_t sequence) {
  Slot& s = slots_[sequence];
  if (!s.active) return std::nullopt;
  s.active = false;
  --pending_;
  return s.id;
}

void SequenceMatcher::expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out) {
  if (pending_ == 0) return;
  const std::size_t first = timed_out.size();
  for (Slot& s : slots_) {
    if (s.active && s.deadline <= now) {
      s.active = false;
      --pending_;
      timed_out.push_back(s.id);
    }
  }
  std::sort(timed_out.begin() + static_cast<std::ptrdiff_t>(first), timed_out.end());  // oldest first
}

void SequenceMatcher::clear(std::vector<std::uint64_t>& ids) {
  const std::size_t first = ids.size();
  for (Slot& s : slots_) {
    if (s.active) {
      s.active = false;
      ids.push_back(s.id);
    }
  }
  pending_ = 0;
  std::sort(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
}

std::optional<std::uint64_t> SequenceMatcher::next_deadline() const {
  std::optional<std::uint64_t> d;
  if (pending_ == 0) return d;
  for (const Slot& s : slots_)
    if (s.active && (!d || s.deadline < *d)) d = s.deadline;
  return d;
}

// ---------------------------------------------------------------------------------------------
// FifoMatcher

bool FifoMatcher::begin_request(std::uint64_t id, std::uint64_t now) {
  if (queue_.size() >= bound_) return false;
  queue_.push_back({id, now + timeout_});
  return true;
}

std::optional<std::uint64_t> FifoMatcher::complete() {
  if (queue_.empty()) return std::nullopt;
  const std::uint64_t id = queue_.front().id;
  queue_.pop_front();
  return id;
}

bool FifoMatcher::expire(std::uint64_t now, std::vector<std::uint64_t>& timed_out,
                         std::vector<std::uint64_t>& failed) {
  // Deadlines grow with send order, but check every entry so a caller with a non-monotonic
  // clock still gets every expired request.
  bool any = false;
  std::deque<Pending> rest;
  for (const Pending& p : queue_) {
    if (p.deadline <= now) {
      timed_out.push_back(p.id);
      any = true;
    } else {
      rest.push_back(p);
    }
  }
  if (!any) return false;
  for (const Pending& p : rest) failed.push_back(p.id);
  queue_.clear();
  return true;
}

void FifoMatcher::clear(std::vector<std::uint64_t>& ids) {
  for (const Pending& p : queue_) ids.push_back(p.id);
  queue_.clear();
}

std::optional<std::uint64_t> FifoMatcher::next_deadline() const {
  if (queue_.empty()) return std::nullopt;
  std::uint64_t d = queue_.front().deadline;
  for (const Pending& p : queue_) d = std::min(d, p.deadline);
  return d;
}

// ---------------------------------------------------------------------------------------------
// ClientConnection

namespace {
Completion completion(Completion::Kind kind, std::optional<std::uint64_t> request) {
  Completion c{kind, request, 0, 0, {}};
  return c;
}
}  // namespace

ClientConnection::ClientConnection(const CodecConfig& cfg, std::uint64_t timeout)
    : cfg_(cfg),
      decoder_(cfg),
      seq_(timeout ? timeout : kDefaultTimeoutMs),
      fifo_(timeout ? timeout : kDefaultTimeoutMs) {}

Bytes ClientConnection::send(ByteView payload, bool one_way, std::vector<Completion>& out) {
  const std::uint64_t id = next_id_++;
  Bytes bytes;
  auto refuse = [&] {
    out.push_back(completion(Completion::Kind::Refused, id));
    return Bytes{};
  };
  if (failed_) return refuse();
  if (cfg_.protocol == Protocol::Standard) {
    const std::uint8_t seq = seq_.peek_sequence();
    if (!one_way && seq_.is_pending(seq)) return refuse();  // STD-SEQ-3
    if (encode_standard(one_way ? 0x41 : 0x01, seq, payload, cfg_.max_payload, bytes)) return refuse();
    if (one_way) seq_.begin_one_way();
    else seq_.begin_request(id, now_);
  } else {
    if (one_way) return refuse();  // not part of length-field
    if (fifo_.pending() >= kLfPendingBound) return refuse();  // LF-MATCH-4
    if (encode_length_field(cfg_.lf, payload, cfg_.max_payload, bytes)) return refuse();
    fifo_.begin_request(id, now_);
  }
  return bytes;
}

void ClientConnection::deliver(const Frame& f, std::vector<Completion>& out) {
  std::optional<std::uint64_t> id;
  if (cfg_.protocol == Protocol::Standard) {
    if (!(f.flag & 0x80)) return;  // a request from the peer completes nothing (STD-MATCH-5)
    id = seq_.complete(f.sequence);
  } else {
    id = fifo_.complete();
  }
  Completion c = completion(id ? Completion::Kind::Reply : Completion::Kind::Unmatched, id);
  c.flag = f.flag;
  c.sequence = f.sequence;
  c.payload.assign(f.payload.begin(), f.payload.end());
  out.push_back(std::move(c));
}

void ClientConnection::fail_all(std::vector<Completion>& out) {
  scratch_.clear();
  if (cfg_.protocol == Protocol::Standard) seq_.clear(scratch_);
  else fifo_.clear(scratch_);
  for (std::uint64_t id : scratch_) out.push_back(completion(Completion::Kind::Failed, id));
  failed_ = true;
}

std::optional<ProtocolError> ClientConnection::receive(ByteView data, std::vector<Completion>& out) {
  if (failed_) return std::nullopt;
  auto err = decoder_.feed(data, [&](const Frame& f) { deliver(f, out); });
  if (err) fail_all(out);
  return err;
}

void ClientConnection::advance(std::uint64_t ms, std::vector<Completion>& out) {
  now_ += ms;
  if (failed_) return;
  scratch_.clear();
  scratch2_.clear();
  if (cfg_.protocol == Protocol::Standard) {
    seq_.expire(now_, scratch_);
    for (std::uint64_t id : scratch_) out.push_back(completion(Completion::Kind::Timeout, id));
  } else if (fifo_.expire(now_, scratch_, scratch2_)) {
    for (std::uint64_t id : scratch_) out.push_back(completion(Completion::Kind::Timeout, id));
    for (std::uint64_t id : scratch2_) out.push_back(completion(Completion::Kind::Failed, id));
    failed_ = true;  // LF-MATCH-3
  }
}

}  // namespace fp
