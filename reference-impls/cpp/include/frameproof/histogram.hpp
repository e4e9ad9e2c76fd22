// Log-linear latency histogram (HdrHistogram-like, much smaller).
//
// Values are integers (fp-load records nanoseconds). Values below 2^kSubBits are exact; above,
// every power-of-two range [2^e, 2^(e+1)) is cut into 2^kSubBits equal buckets, so a bucket is at
// most 1/64 (1.6 %) of its values wide. A percentile is reported as the midpoint of its bucket:
// relative error at most 0.8 %. The maximum is tracked exactly.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace fp {

class Histogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr std::uint64_t kSub = 1u << kSubBits;
  static constexpr std::size_t kBuckets = (64 - kSubBits + 1) * kSub;

  void record(std::uint64_t v) {
    ++counts_[index(v)];
    ++total_;
    max_ = std::max(max_, v);
  }

  void merge(const Histogram& o) {
    for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    max_ = std::max(max_, o.max_);
  }

  [[nodiscard]] std::uint64_t count() const { return total_; }
  [[nodiscard]] std::uint64_t max() const { return max_; }

  // The value at quantile q (0..1): midpoint of the bucket holding the ceil(q * count)-th value,
  // never above the exact maximum; 0 when empty.
  [[nodiscard]] double quantile(double q) const {
    if (total_ == 0) return 0;
    auto rank = static_cast<std::uint64_t>(q * static_cast<double>(total_) + 0.999999);
    rank = std::clamp<std::uint64_t>(rank, 1, total_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const double lo = static_cast<double>(lower(i));
        const double mid = lo + static_cast<double>(width(i) - 1) / 2.0;
        return std::min(mid, static_cast<double>(max_));
      }
    }
    return static_cast<double>(max_);
  }

  static std::size_t index(std::uint64_t v) {
    if (v < kSub) return static_cast<std::size_t>(v);
    const int e = 63 - std::countl_zero(v);  // >= kSubBits
    const std::uint64_t sub = (v >> (e - kSubBits)) & (kSub - 1);
    return static_cast<std::size_t>((e - kSubBits + 1) * kSub + sub);
  }
  static std::uint64_t lower(std::size_t i) {
    if (i < kSub) return i;
    const int e = static_cast<int>(i / kSub) + kSubBits - 1;
    const std::uint64_t sub = i % kSub;
    return (std::uint64_t{1} << e) | (sub << (e - kSubBits));
  }
  static std::uint64_t width(std::size_t i) {
    if (i < kSub) return 1;
    const int e = static_cast<int>(i / kSub) + kSubBits - 1;
    return std::uint64_t{1} << (e - kSubBits);
  }

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t total_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace fp
