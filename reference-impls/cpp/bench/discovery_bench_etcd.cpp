// fp-discovery-bench --etcd ENDPOINTS: the etcd registry (spec/discovery.md §8) measured as §9
// "On etcd" says, under a key prefix of its own (fpbench/cpp-<pid>), in three phases:
//   register  W threads share one registry (one lease), each re-registering its own instance
//   discover  W threads discover("BenchService"); an answer without all W instances is an error
//   watch     a second registry watches WatchBench; the first registers w-<i> one at a time and
//             waits (at most 5 s, else the sample is lost) for the second's ADDED callback
// Latencies by std::chrono::steady_clock, percentiles nearest-rank, in microseconds. Before the
// phases one discover checks that etcd answers at all (at most the request timeout, 5 s), so a
// dead endpoint fails at once with a message instead of timing out call after call; the watch
// phase likewise gives up after 3 failed samples in a row.
#include "discovery_bench_etcd.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "frameproof/discovery.hpp"
#include "frameproof/etcd_registry.hpp"

namespace fp::bench {

namespace {

namespace d = fp::discovery;
using Clock = std::chrono::steady_clock;

constexpr const char* kService = "BenchService";
constexpr const char* kWatchService = "WatchBench";
constexpr auto kSampleWait = std::chrono::seconds(5);  // a sample with no callback by then is lost
constexpr unsigned kGiveUpAfter = 3;                    // failed watch samples in a row

const char* code_name(d::Code c) {
  switch (c) {
    case d::kOk: return "OK";
    case d::kNotFound: return "NOT_FOUND";
    case d::kConnectionError: return "CONNECTION_ERROR";
    case d::kLockTimeout: return "LOCK_TIMEOUT";
    case d::kInternalError: return "INTERNAL_ERROR";
    case d::kInvalidArgument: return "INVALID_ARGUMENT";
  }
  return "?";
}

double us_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// nearest rank: the ceil(p*n)-th smallest (0 without samples); `v` sorted
double percentile(const std::vector<double>& v, double p) {
  if (v.empty()) return 0.0;
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

d::Endpoint bench_instance(unsigned w) {
  return {kService, "instance-" + std::to_string(w), "127.0.0.1", 9000u + w, 100};
}

struct Phase {  // register or discover
  std::string op;
  unsigned threads = 0;
  std::uint64_t ops = 0, errors = 0;
  double seconds = 0;
  std::vector<double> lat_us;  // sorted
  [[nodiscard]] double ops_per_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0.0; }
};

struct WatchPhase {
  unsigned samples = 0;  // attempted (fewer than --samples only when it gave up)
  std::uint64_t lost = 0, errors = 0;
  std::vector<double> lat_us;  // sorted
};

// W threads call `call(w)` (true = OK) for `seconds`; every call's latency is recorded.
template <class Call>
Phase run_phase(const std::string& op, unsigned threads, double seconds, Call call) {
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> lat(threads);
  std::vector<std::uint64_t> ok(threads, 0), bad(threads, 0);
  const auto start = Clock::now();
  std::vector<std::thread> ts;
  for (unsigned w = 0; w < threads; ++w) {
    ts.emplace_back([&, w] {
      while (!stop.load(std::memory_order_relaxed)) {
        const auto t0 = Clock::now();
        const bool good = call(w);
        lat[w].push_back(us_since(t0, Clock::now()));
        ++(good ? ok[w] : bad[w]);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  Phase p{op, threads, 0, 0, std::chrono::duration<double>(Clock::now() - start).count(), {}};
  for (unsigned w = 0; w < threads; ++w) {
    p.ops += ok[w];
    p.errors += bad[w];
    p.lat_us.insert(p.lat_us.end(), lat[w].begin(), lat[w].end());
  }
  std::sort(p.lat_us.begin(), p.lat_us.end());
  return p;
}

Phase register_phase(d::EtcdRegistry& reg, unsigned threads, double seconds) {
  return run_phase("register", threads, seconds, [&](unsigned w) {
    return reg.register_instance(bench_instance(w)) == d::kOk;
  });
}

Phase discover_phase(d::EtcdRegistry& reg, unsigned threads, double seconds) {
  return run_phase("discover", threads, seconds, [&](unsigned) {
    std::vector<d::Endpoint> list;
    if (reg.discover(kService, list) != d::kOk) return false;
    std::vector<bool> seen(threads, false);
    for (const d::Endpoint& e : list)
      for (unsigned w = 0; w < threads; ++w)
        if (e.instance_id == "instance-" + std::to_string(w)) seen[w] = true;
    return std::all_of(seen.begin(), seen.end(), [](bool b) { return b; });
  });
}

WatchPhase watch_phase(d::EtcdRegistry& writer, d::EtcdRegistry& watcher, unsigned samples) {
  WatchPhase out;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Clock::time_point>> arrived(samples);
  std::uint64_t handle = 0;
  const d::Code wc = watcher.watch(kWatchService, [&](d::EventType t, const d::Endpoint& e) {
    const auto now = Clock::now();
    if (t != d::EventType::Added || e.instance_id.rfind("w-", 0) != 0) return;
    const unsigned long i = std::strtoul(e.instance_id.c_str() + 2, nullptr, 10);
    std::lock_guard g(mu);
    if (i < arrived.size() && !arrived[i]) arrived[i] = now;
    cv.notify_all();
  }, handle);
  if (wc != d::kOk) {
    std::fprintf(stderr, "fp-discovery-bench: watch(%s) answered %s\n", kWatchService, code_name(wc));
    out.errors = 1;
    return out;
  }
  unsigned failed_in_a_row = 0;
  for (unsigned i = 0; i < samples && failed_in_a_row < kGiveUpAfter; ++i) {
    ++out.samples;
    const d::Endpoint ep{kWatchService, "w-" + std::to_string(i), "127.0.0.1", 9000u + i % 1000, 100};
    const auto t0 = Clock::now();
    const d::Code rc = writer.register_instance(ep);
    if (rc != d::kOk) {
      std::fprintf(stderr, "fp-discovery-bench: watch: register %s answered %s\n", ep.instance_id.c_str(), code_name(rc));
      ++out.errors;
      ++failed_in_a_row;
      continue;
    }
    std::unique_lock l(mu);
    if (cv.wait_until(l, t0 + kSampleWait, [&] { return arrived[i].has_value(); })) {
      out.lat_us.push_back(us_since(t0, *arrived[i]));
      failed_in_a_row = 0;
    } else {
      ++out.lost;
      ++failed_in_a_row;
    }
  }
  if (failed_in_a_row >= kGiveUpAfter && out.samples < samples)
    std::fprintf(stderr, "fp-discovery-bench: watch: gave up after %u failed samples in a row (%u of %u tried)\n",
                 kGiveUpAfter, out.samples, samples);
  watcher.unwatch(handle);
  std::sort(out.lat_us.begin(), out.lat_us.end());
  return out;
}

void print_phase(const Phase& p) {
  std::printf("%-8s %u threads, %.1f s: %llu ops, %llu errors, %.0f ops/s, p50 %.0f µs, p99 %.0f µs\n", p.op.c_str(),
              p.threads, p.seconds, static_cast<unsigned long long>(p.ops), static_cast<unsigned long long>(p.errors),
              p.ops_per_s(), percentile(p.lat_us, 0.50), percentile(p.lat_us, 0.99));
}

void print_watch(const WatchPhase& w) {
  std::printf("%-8s %u samples: %llu lost, %llu errors, p50 %.0f µs, p99 %.0f µs, max %.0f µs\n", "watch", w.samples,
              static_cast<unsigned long long>(w.lost), static_cast<unsigned long long>(w.errors),
              percentile(w.lat_us, 0.50), percentile(w.lat_us, 0.99), w.lat_us.empty() ? 0.0 : w.lat_us.back());
}

double round1(double x) { return std::round(x * 10.0) / 10.0; }

bool write_json(const EtcdBenchOptions& opt, const std::vector<Phase>& phases, const WatchPhase& w) {
  nlohmann::ordered_json j;
  j["implementation"] = "cpp";
  j["benchmark"] = "discovery-etcd";
  j["endpoints"] = nlohmann::ordered_json::array();  // the members, as the other implementations write them
  for (std::size_t at = 0; at <= opt.endpoints.size();) {
    std::size_t comma = std::min(opt.endpoints.find(',', at), opt.endpoints.size());
    std::string e = opt.endpoints.substr(at, comma - at);
    e.erase(0, e.find_first_not_of(' '));
    e.erase(e.find_last_not_of(' ') + 1);
    if (!e.empty()) j["endpoints"].push_back(e);
    at = comma + 1;
  }
  j["threads"] = opt.threads;
  j["runs"] = nlohmann::ordered_json::array();
  for (const Phase& p : phases)
    j["runs"].push_back({{"op", p.op}, {"ops", p.ops}, {"errors", p.errors},
                         {"duration_s", std::round(p.seconds * 1e6) / 1e6}, {"ops_per_s", round1(p.ops_per_s())},
                         {"p50_us", round1(percentile(p.lat_us, 0.50))}, {"p99_us", round1(percentile(p.lat_us, 0.99))}});
  j["runs"].push_back({{"op", "watch"}, {"samples", w.samples}, {"lost", w.lost}, {"errors", w.errors},
                       {"p50_us", round1(percentile(w.lat_us, 0.50))}, {"p99_us", round1(percentile(w.lat_us, 0.99))},
                       {"max_us", round1(w.lat_us.empty() ? 0.0 : w.lat_us.back())}});
  std::ofstream f(opt.json);
  f << j.dump(2) << '\n';
  return static_cast<bool>(f.flush());
}

}  // namespace

int run_discovery_etcd(const EtcdBenchOptions& opt) {
  d::EtcdConfig cfg;
  cfg.endpoint = opt.endpoints;
  cfg.prefix = "fpbench/cpp-" + std::to_string(::getpid());
  try {
    d::EtcdRegistry reg(cfg);      // registers: one lease, revoked by close()
    d::EtcdRegistry watcher(cfg);  // watches, as another process would
    std::printf("etcd %s, prefix %s\n", opt.endpoints.c_str(), cfg.prefix.c_str());
    std::fflush(stdout);
    std::vector<d::Endpoint> probe;
    if (const d::Code c = reg.discover(kService, probe); c != d::kOk) {
      std::fprintf(stderr, "fp-discovery-bench: etcd at %s did not answer (discover: %s within %lld ms)\n",
                   opt.endpoints.c_str(), code_name(c), static_cast<long long>(cfg.request_timeout.count()));
      return 1;
    }
    std::vector<Phase> phases;
    phases.push_back(register_phase(reg, opt.threads, opt.seconds));
    print_phase(phases.back());
    std::fflush(stdout);
    phases.push_back(discover_phase(reg, opt.threads, opt.seconds));
    print_phase(phases.back());
    std::fflush(stdout);
    const WatchPhase w = watch_phase(reg, watcher, opt.samples);
    print_watch(w);
    watcher.close();
    reg.close();  // revokes the lease: every key of this run goes
    if (!opt.json.empty() && !write_json(opt, phases, w)) {
      std::fprintf(stderr, "fp-discovery-bench: cannot write %s\n", opt.json.c_str());
      return 1;
    }
    bool bad = w.errors || w.lost || w.samples < opt.samples;
    for (const Phase& p : phases) bad = bad || p.errors;
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fp-discovery-bench: etcd: %s\n", e.what());
    return 1;
  }
}

}  // namespace fp::bench
