// Google Benchmark micro-benchmarks of the codec: encode and decode of both protocols at 32 B,
// 1 KiB and 64 KiB payloads. Bytes processed = payload bytes.
//
// Names: tools/microbench.py takes BM_Encode*/BM_Decode* (protocol and payload from the name,
// ns per frame = real_time / frames_per_iteration); BM_WriteHeader is the header alone.
// Encode: the hot-path form the server and load client use (header written into a small array,
// payload left in place, as for a writev), and the owning encoder that appends header + payload
// to a vector (as the testee uses).
// Decode: a stream of frames pre-encoded once; every iteration copies one socket-read-sized chunk
// into the decoder's buffer (prepare/commit: the one copy a socket read makes) and takes every
// complete frame out as a view.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "frameproof/registry.hpp"

// Counting allocator: every operator new in this process is counted, so a benchmark can report
// the heap allocations made while its loop ran (allocs_per_frame, alloc_bytes_per_frame;
// amortized over the run, so the decoder's one-time buffer growth shows as a tiny fraction).
namespace {
std::atomic<std::uint64_t> g_allocs{0};
std::atomic<std::uint64_t> g_alloc_bytes{0};
}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // malloc/free pairs, as intended
void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_alloc_bytes.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

struct AllocProbe {
  std::uint64_t allocs = g_allocs.load();
  std::uint64_t bytes = g_alloc_bytes.load();
  void report(benchmark::State& state, double frames) const {
    state.counters["allocs_per_frame"] = static_cast<double>(g_allocs.load() - allocs) / frames;
    state.counters["alloc_bytes_per_frame"] = static_cast<double>(g_alloc_bytes.load() - bytes) / frames;
  }
};

fp::Bytes payload_of(std::size_t n) {
  fp::Bytes p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 131 + 7);
  return p;
}

// The protocols measured: standard, and length-field with a 4-byte length (64 KiB payloads fit).
fp::AnyProtocol standard() { return fp::Standard(); }

// Calls fn(proto) for the protocols measured here (frames of flag, sequence and payload).
template <class F>
void visit_plain(const fp::AnyProtocol& protocol, F&& fn) {
  std::visit(
      [&](const auto& proto) {
        if constexpr (std::is_same_v<typename std::decay_t<decltype(proto)>::FrameType, fp::Frame>) fn(proto);
      },
      protocol);
}
fp::AnyProtocol length_field() { return fp::LengthField(fp::Limits{}, 0, 4); }

void BM_WriteHeader(benchmark::State& state, fp::AnyProtocol protocol) {
  const auto n = static_cast<std::size_t>(state.range(0));
  visit_plain(protocol,
      [&](const auto& proto) {
        std::uint8_t hdr[16];
        fp::Frame f{0x01, 0, {}};
        for (auto _ : state) {
          ++f.sequence;
          const std::size_t h = proto.write_header(hdr, f, n);
          benchmark::DoNotOptimize(hdr);
          benchmark::DoNotOptimize(h);
          benchmark::ClobberMemory();
        }
      });
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}

void BM_EncodeOwned(benchmark::State& state, fp::AnyProtocol protocol) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const fp::Bytes p = payload_of(n);
  fp::Bytes out;
  out.reserve(n + 16);
  const AllocProbe probe;
  visit_plain(protocol,
      [&](const auto& proto) {
        for (auto _ : state) {
          out.clear();
          auto e = proto.encode(fp::Frame{0x01, 1, p}, out);
          benchmark::DoNotOptimize(e);
          benchmark::DoNotOptimize(out.data());
          benchmark::ClobberMemory();
        }
      });
  probe.report(state, static_cast<double>(state.iterations()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(n));
}

template <class P>
void decode_loop(benchmark::State& state, const P& proto) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const fp::Bytes p = payload_of(n);
  // ~256 KiB of back-to-back frames (at least 4), fed in 64 KiB reads like a socket would.
  const std::size_t frames = std::max<std::size_t>(4, (256 * 1024) / (n + 8));
  fp::Bytes stream;
  for (std::size_t i = 0; i < frames; ++i) {
    if (proto.encode(fp::Frame{0x01, static_cast<std::uint8_t>(i), p}, stream)) {
      state.SkipWithError("encode failed");
      return;
    }
  }
  constexpr std::size_t kRead = 64 * 1024;
  std::uint64_t delivered = 0;
  // One decoder for the whole run, like one connection: every iteration ends on a frame
  // boundary, so the decoder is empty again at the start of the next.
  fp::Decoder<P> dec(proto, kRead);
  const AllocProbe probe;
  for (auto _ : state) {
    std::size_t pos = 0;
    std::uint64_t sum = 0;
    fp::Frame f;
    while (pos < stream.size()) {
      auto space = dec.prepare();
      const std::size_t take = std::min({space.size(), kRead, stream.size() - pos});
      std::memcpy(space.data(), stream.data() + pos, take);
      dec.commit(take);
      pos += take;
      typename fp::Decoder<P>::Status st;
      while ((st = dec.next(f)) == fp::Decoder<P>::Status::Frame) {
        sum += f.payload.size() + f.payload[f.payload.size() / 2];
        ++delivered;
      }
      if (st == fp::Decoder<P>::Status::Error) {
        state.SkipWithError("decode error");
        return;
      }
    }
    benchmark::DoNotOptimize(sum);
  }
  if (delivered != frames * state.iterations()) state.SkipWithError("frame count mismatch");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * frames * n));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * frames));
  state.counters["frames_per_iteration"] = static_cast<double>(frames);  // read by tools/microbench.py
  probe.report(state, static_cast<double>(state.iterations() * frames));
}

void BM_Decode(benchmark::State& state, fp::AnyProtocol protocol) {
  visit_plain(protocol, [&](const auto& proto) { decode_loop(state, proto); });
}

}  // namespace

#define FP_SIZES Arg(32)->Arg(1024)->Arg(65536)

BENCHMARK_CAPTURE(BM_WriteHeader, standard, standard())->FP_SIZES;
BENCHMARK_CAPTURE(BM_WriteHeader, length_field, length_field())->FP_SIZES;
BENCHMARK_CAPTURE(BM_EncodeOwned, standard, standard())->FP_SIZES;
BENCHMARK_CAPTURE(BM_EncodeOwned, length_field, length_field())->FP_SIZES;
BENCHMARK_CAPTURE(BM_Decode, standard, standard())->FP_SIZES;
BENCHMARK_CAPTURE(BM_Decode, length_field, length_field())->FP_SIZES;

BENCHMARK_MAIN();
