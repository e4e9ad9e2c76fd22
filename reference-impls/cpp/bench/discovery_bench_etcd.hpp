// fp-discovery-bench --etcd: the etcd registry's benchmark (spec/discovery.md §9, "On etcd").
#pragma once

#include <string>

namespace fp::bench {

struct EtcdBenchOptions {
  std::string endpoints;  // host:port, or a cluster's members comma-separated (etcd.endpoint)
  unsigned threads = 1;
  double seconds = 2.0;
  unsigned samples = 200;  // watch phase
  std::string json;        // empty: no JSON
};

// Runs the register, discover and watch phases and prints one line each; returns the exit
// status: 0, or 1 after any error or lost sample (or when etcd does not answer at all).
int run_discovery_etcd(const EtcdBenchOptions& opt);

}  // namespace fp::bench
