#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>

namespace fp::server {

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

}  // namespace fp::server
