// rpc's service registry on etcd (spec/discovery.md §8, DISC-ETCD-1..7): keys
// `/<prefix>/<service>/<instance_id>` holding the endpoint's JSON (etcd_encode/etcd_decode of
// discovery.hpp), discover as one linearizable range read sorted by create revision, one lease per
// registry kept alive every third of its TTL, one etcd watch with previous values per watcher,
// callbacks on the registry's own delivery thread in the order etcd reports the changes, every
// operation bounded by the request timeout (CONNECTION_ERROR after it), and recovery once etcd is
// back: a lease etcd forgot is replaced and this registry's instances written again under the new
// one, and watches resume at the revision after the last one they delivered.
//
// Transport: etcd's v3 JSON gateway (grpc-gateway, served by etcd itself on the client port:
// POST /v3/kv/put, /v3/kv/range, /v3/kv/deleterange, /v3/lease/grant|keepalive|revoke, and
// /v3/watch as a stream of JSON lines), through libcurl, with nlohmann_json and OpenSSL's EVP
// base64. Not gRPC: Debian has no maintained C++ etcd client — `apt-cache search etcd` (bookworm)
// lists the etcd server/client binaries, Go sources (golang-etcd-server-dev, ...), python3-etcd
// (v2 API) and python3-etcd3gw (a JSON-gateway client, Python), nothing for C or C++ — and
// generating gRPC stubs from etcd's protos would add grpc++ and etcd's .proto tree (with its
// gogoproto and google.api imports) to the build for five unary calls and one stream. The Python
// implementation (conformance/frameproof/protocols/rpc/discovery_etcd.py) uses the same gateway.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "frameproof/discovery.hpp"

namespace fp::discovery {

namespace etcd_gw {
class Gateway;
class WatchStream;
}  // namespace etcd_gw

struct EtcdConfig {
  std::string endpoint = "127.0.0.1:2379";  // host:port of etcd's client URL (plain HTTP)
  std::string prefix = "frameproof/services";  // DISC-ETCD-1
  std::chrono::seconds lease_ttl{10};  // DISC-ETCD-5 (etcd raises TTLs below its minimum, ~2 s)
  std::chrono::milliseconds request_timeout{5000};  // DISC-ETCD-7
};

class EtcdRegistry final : public RegistryApi {
 public:
  // Contacts nothing yet (the lease is granted by the first register). Throws
  // std::invalid_argument for a prefix that breaks DISC-ETCD-1.
  explicit EtcdRegistry(EtcdConfig cfg);
  // close(): revokes the lease. Never destroy a registry from inside one of its callbacks.
  ~EtcdRegistry() override;
  EtcdRegistry(const EtcdRegistry&) = delete;
  EtcdRegistry& operator=(const EtcdRegistry&) = delete;

  // DISC-ETCD-4: a put under the registry's lease; OK once etcd committed it.
  Code register_instance(const Endpoint& e) override;
  // DISC-ETCD-4: a delete of the key; NOT_FOUND when it removed nothing.
  Code deregister(std::string_view service, std::string_view instance_id) override;
  // DISC-ETCD-4: one range read sorted by create revision (entries that do not decode skipped).
  Code discover(std::string_view service, std::vector<Endpoint>& out) const override;
  // DISC-ETCD-6: reports what happens after the store's current revision (no replay).
  Code watch(std::string_view service, Callback cb, std::uint64_t& handle) override;
  Code unwatch(std::uint64_t handle) override;

  // Waits, at most `timeout`, until every watcher (or only the watcher `handle`) has been
  // delivered the events of this registry's own writes under its service, and no callback runs.
  // False on timeout, and at once when called from inside a callback (the delivery thread).
  bool wait_delivered(std::chrono::milliseconds timeout, std::optional<std::uint64_t> handle = std::nullopt);
  // Stops the watches, keep-alives and delivery, then revokes the lease (its keys go). Idempotent.
  void close();
  // Stops everything without revoking the lease, as a crash would: the keys go when it expires.
  void abandon();

  const EtcdConfig& config() const { return cfg_; }

 private:
  struct Watcher;
  struct Item {  // one event (or only a revision to count as delivered) for one watcher
    std::uint64_t handle;
    std::optional<std::pair<EventType, Endpoint>> event;
    std::int64_t revision;
  };

  std::string key_of(std::string_view service, std::string_view instance_id) const;
  using Deadline = std::chrono::steady_clock::time_point;
  Deadline deadline() const { return std::chrono::steady_clock::now() + cfg_.request_timeout; }
  // The current lease, granted when there is none or when it is `failed` (and then this
  // registry's instances are written again under the new one). 0: etcd did not answer.
  std::int64_t lease(std::int64_t failed, Deadline until);
  // One put under `lease`: 1 committed, 0 etcd does not know the lease, -1 etcd unreachable.
  int put(const Endpoint& e, std::int64_t lease, Deadline until, std::int64_t* revision = nullptr);
  // The service's current list and the store's revision; false: etcd unreachable.
  bool list(std::string_view service, std::vector<Endpoint>& out, std::int64_t& revision) const;
  void keep_alive_loop();
  void watch_loop(std::shared_ptr<Watcher> w);
  void resync(const std::shared_ptr<Watcher>& w);
  void delivery_loop();
  void push(std::uint64_t handle, std::optional<std::pair<EventType, Endpoint>> ev, std::int64_t rev);
  void stop(bool revoke);

  EtcdConfig cfg_;
  std::unique_ptr<etcd_gw::Gateway> gw_;

  std::mutex lease_mu_;  // serialises grants and re-puts
  std::int64_t lease_ = 0;

  mutable std::mutex mu_;  // everything below (stopping_ is written under it, read anywhere)
  std::condition_variable cv_;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  std::map<std::pair<std::string, std::string>, Endpoint> mine_;  // re-put after a lost lease
  std::map<std::string, std::int64_t, std::less<>> written_;  // service -> revision of our last write
  std::map<std::uint64_t, std::shared_ptr<Watcher>> watchers_;
  std::uint64_t next_handle_ = 1;
  std::deque<Item> queue_;
  std::optional<std::pair<std::thread::id, std::uint64_t>> calling_;
  std::vector<std::thread> watch_threads_;  // joined by stop()
  std::thread keepalive_;
  std::thread delivery_;
};

}  // namespace fp::discovery
