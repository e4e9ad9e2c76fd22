// fp-discovery-bench: rpc's service registry (spec/discovery.md §9) in upstream's B3 shape and in
// the shapes upstream avoided. Each worker thread loops register -> discover -> deregister of its
// own instance (3 operations; discover must answer the instance):
//   private  one registry per worker (upstream's B3: nothing is ever contended)
//   shared   one registry for every worker, instances spread over 10 services
//   hot      one registry, one service for every worker
// The same modes, output line and JSON as the Rust fp-discovery-bench. Smoke runs only here
// (2 s); the figures are not a measurement on a shared machine.
// With --etcd ENDPOINTS it measures the etcd registry instead (discovery_bench_etcd.cpp).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "discovery_bench_etcd.hpp"
#include "frameproof/discovery.hpp"

namespace d = fp::discovery;

namespace {

// upstream's published B3 figure (github.com/gzj-creator/galay-rpc, docs/05 at commit 4003c9b, since
// stripped of figures), printed and reported beside ours under "upstream", and under "seed", its
// earlier key, for readers of reports written before (the same in all three implementations)
constexpr double kUpstreamB3OpsPerS = 5432424.0;
constexpr const char* kUpstreamB3Where = "galay-rpc B3 (benchmark/B3-ServiceDiscoveryBench.cpp, docs/05 at 4003c9b): 100 coroutine workers, 2 IO schedulers, private registries, Apple M4";
constexpr const char* kUsage =
    "usage: fp-discovery-bench [--threads N] [--seconds S] [--mode private|shared|hot|both|all] [--json FILE]\n"
    "       fp-discovery-bench --etcd ENDPOINTS [--threads N] [--seconds S] [--samples N] [--json FILE]\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "usage error: %s\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

struct Outcome {
  std::string mode;
  unsigned threads;
  std::uint64_t ops, errors;
  double seconds;
  [[nodiscard]] double ops_per_s() const { return static_cast<double>(ops) / seconds; }
};

Outcome run(const std::string& mode, unsigned threads, double seconds) {
  d::Registry shared;
  std::vector<std::unique_ptr<d::Registry>> own;
  for (unsigned w = 0; w < threads; ++w) own.push_back(std::make_unique<d::Registry>());
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> ops{0}, errors{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (unsigned w = 0; w < threads; ++w) {
    ts.emplace_back([&, w] {
      d::Registry& reg = mode == "private" ? *own[w] : shared;
      const d::Endpoint ep{"BenchService" + std::to_string(mode == "hot" ? 0 : w % 10), "instance-" + std::to_string(w),
                           "127.0.0.1", 9000 + w % 100, 100};
      std::vector<d::Endpoint> list;
      std::uint64_t n = 0, bad = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int k = 0; k < 64; ++k) {
          (reg.register_instance(ep) == d::kOk ? n : bad) += 1;
          const bool found = reg.discover(ep.service, list) == d::kOk &&
                             std::any_of(list.begin(), list.end(), [&](const d::Endpoint& e) { return e.instance_id == ep.instance_id; });
          (found ? n : bad) += 1;
          (reg.deregister(ep.service, ep.instance_id) == d::kOk ? n : bad) += 1;
        }
      }
      ops += n;
      errors += bad;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {mode, threads, ops.load(), errors.load(), took};
}

}  // namespace

int main(int argc, char** argv) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  double seconds = 2.0;
  std::vector<std::string> modes{"private", "shared"};
  std::string json;
  bool mode_given = false;
  std::string etcd;  // --etcd: host:port, or members comma-separated
  long samples = -1;  // --etcd's watch samples (default 200)
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const std::string v = argv[++i];
    char* end = nullptr;
    if (flag == "--threads") {
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end || n < 1 || n > 1024) usage_error("bad --threads");
      threads = static_cast<unsigned>(n);
    } else if (flag == "--seconds") {
      seconds = std::strtod(v.c_str(), &end);
      if (*end || !(seconds > 0 && seconds <= 600)) usage_error("bad --seconds");
    } else if (flag == "--mode") {
      if (v == "private" || v == "shared" || v == "hot") modes = {v};
      else if (v == "both") modes = {"private", "shared"};
      else if (v == "all") modes = {"private", "shared", "hot"};
      else usage_error("--mode is private, shared, hot, both or all");
      mode_given = true;
    } else if (flag == "--json") {
      json = v;
    } else if (flag == "--etcd") {
      if (v.empty()) usage_error("bad --etcd");
      etcd = v;
    } else if (flag == "--samples") {
      samples = std::strtol(v.c_str(), &end, 10);
      if (*end || samples < 1 || samples > 1000000) usage_error("bad --samples");
    } else {
      usage_error("unknown flag " + flag);
    }
  }
  if (!etcd.empty()) {
    if (mode_given) usage_error("--mode is not for --etcd");
    return fp::bench::run_discovery_etcd({etcd, threads, seconds, samples > 0 ? static_cast<unsigned>(samples) : 200u, json});
  }
  if (samples > 0) usage_error("--samples needs --etcd");
  std::vector<Outcome> out;
  for (const auto& m : modes) {
    const Outcome o = run(m, threads, seconds);
    std::printf("%-8s %u threads, %.1f s: %llu ops (%llu rounds), %llu errors, %.0f ops/s = %.2fx upstream's %.0f ops/s (%s)\n",
                o.mode.c_str(), o.threads, o.seconds, static_cast<unsigned long long>(o.ops),
                static_cast<unsigned long long>(o.ops / 3), static_cast<unsigned long long>(o.errors), o.ops_per_s(),
                o.ops_per_s() / kUpstreamB3OpsPerS, kUpstreamB3OpsPerS, kUpstreamB3Where);
    out.push_back(o);
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s: %s\n", json.c_str(), std::strerror(errno));
      return 1;
    }
    std::fprintf(f, "{\n  \"implementation\": \"cpp\",\n  \"benchmark\": \"discovery-b3\",\n  \"runs\": [\n");
    for (std::size_t i = 0; i < out.size(); ++i) {
      const Outcome& o = out[i];
      std::fprintf(f,
                   "    {\"mode\": \"%s\", \"threads\": %u, \"ops\": %llu, \"errors\": %llu, \"duration_s\": %.6f, "
                   "\"ops_per_s\": %.1f}%s\n",
                   o.mode.c_str(), o.threads, static_cast<unsigned long long>(o.ops),
                   static_cast<unsigned long long>(o.errors), o.seconds, o.ops_per_s(), i + 1 < out.size() ? "," : "");
    }
    std::fprintf(f, "  ],\n  \"upstream\": {\"ops_per_s\": %.1f, \"where\": \"%s\"},\n  \"seed\": {\"ops_per_s\": %.1f, \"where\": \"%s\"}\n}\n",
               kUpstreamB3OpsPerS, kUpstreamB3Where, kUpstreamB3OpsPerS, kUpstreamB3Where);
    std::fclose(f);
  }
  for (const auto& o : out)
    if (o.errors) return 1;
  return 0;
}
