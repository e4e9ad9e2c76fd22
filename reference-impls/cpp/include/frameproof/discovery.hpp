// rpc's service registry (spec/discovery.md, DISC-*): an in-process registry safe to share
// between threads, watch callbacks outside the lock and in order, the four selectors, the etcd
// key/value mapping (offline: there is no etcd client here), and the testee's script runner
// helpers. Not a wire protocol: nothing of it is in the protocol registry.
//
// Locking: one std::shared_mutex guards the service map, the watcher table and the event queue.
// discover (and so every select) takes it shared, so reads of different or the same service run
// in parallel; register/deregister/watch/unwatch take it exclusive for their bookkeeping only.
// Events are queued under the lock in the order the operations took effect and delivered after
// it is released, by one thread at a time (the "dispatch" mutex), each callback called with no
// registry lock held (DISC-WATCH-2..4). A call from inside a callback only queues its events: the
// delivering loop further up the stack delivers them after the callback returns (DISC-WATCH-3).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fp::discovery {

// DISC-ERR-1: upstream's DiscoveryError::Code numbers, INVALID_ARGUMENT added.
enum Code : std::uint32_t {
  kOk = 0,
  kNotFound = 1,
  kConnectionError = 2,
  kLockTimeout = 3,
  kInternalError = 4,
  kInvalidArgument = 5,
};

// upstream's ServiceEventType, numbered as the testee schema's DiscoveryEvent.Type
enum class EventType : std::uint32_t { Added = 1, Removed = 2, Updated = 3 };

// DISC-EP-1
struct Endpoint {
  std::string service;
  std::string instance_id;
  std::string host;
  std::uint64_t port = 0;      // at most 65535 (wider here, so that a bad one can be refused)
  std::uint64_t weight = 100;  // an unsigned 32-bit integer; 0 = drained (DISC-SEL-1)
  bool operator==(const Endpoint&) const = default;
};

// DISC-EP-2
bool name_ok(std::string_view s);
bool valid(const Endpoint& e);

using Callback = std::function<void(EventType, const Endpoint&)>;

// The operations every registry offers: the in-process Registry below, and the etcd-backed
// EtcdRegistry (etcd_registry.hpp, spec/discovery.md §8). Selectors work on either.
class RegistryApi {
 public:
  virtual ~RegistryApi() = default;
  // DISC-REG-1/2: appended, or replaced in place (UPDATED).
  virtual Code register_instance(const Endpoint& e) = 0;
  // DISC-REG-3/4
  virtual Code deregister(std::string_view service, std::string_view instance_id) = 0;
  // DISC-REG-5: the list in registration order (a copy); an unknown service is OK and empty.
  virtual Code discover(std::string_view service, std::vector<Endpoint>& out) const = 0;
  // DISC-WATCH-*: `handle` receives the subscription's handle (never reused).
  virtual Code watch(std::string_view service, Callback cb, std::uint64_t& handle) = 0;
  // DISC-WATCH-5: once it returned, the callback is not called again.
  virtual Code unwatch(std::uint64_t handle) = 0;
};

class Registry final : public RegistryApi {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  Code register_instance(const Endpoint& e) override;
  Code deregister(std::string_view service, std::string_view instance_id) override;
  Code discover(std::string_view service, std::vector<Endpoint>& out) const override;
  Code watch(std::string_view service, Callback cb, std::uint64_t& handle) override;
  Code unwatch(std::uint64_t handle) override;

  // Delivers the queued events (every operation calls it before returning; a call from inside a
  // callback, or while another thread delivers, returns at once).
  void deliver();

 private:
  struct Watcher {
    std::string service;
    std::shared_ptr<Callback> cb;
  };
  struct Event {
    EventType type;
    Endpoint endpoint;
    std::vector<std::uint64_t> handles;  // the recipients, in watch order
  };
  void emit(const std::string& service, EventType type, const Endpoint& e);  // under the lock

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::vector<Endpoint>> services_;
  std::map<std::uint64_t, Watcher> watchers_;  // by handle = watch order
  std::unordered_map<std::string, std::size_t> watched_;  // watchers per service (emit's fast path)
  std::uint64_t next_handle_ = 1;
  std::deque<Event> queue_;
  std::atomic<std::size_t> queued_{0};
  std::mutex dispatch_;  // held by the thread that delivers
  std::optional<std::pair<std::thread::id, std::uint64_t>> calling_;  // the callback being called
  std::condition_variable_any idle_;
};

// DISC-SEL-6
enum class SelectorKind { RoundRobin, WeightedRoundRobin, Random, WeightedRandom };
std::optional<SelectorKind> selector_kind(std::string_view name);

// One selector of one service (DISC-SEL-*), shareable between threads (DISC-THREAD-2).
class Selector {
 public:
  // seed: nullopt = one from the operating system (DISC-SEL-5)
  Selector(const RegistryApi& reg, std::string service, SelectorKind kind, std::optional<std::uint64_t> seed);
  // OK and the pick, or NOT_FOUND when no instance is eligible (state unchanged).
  Code select(Endpoint& out);

 private:
  const RegistryApi& reg_;
  std::string service_;
  SelectorKind kind_;
  std::mutex mu_;
  std::uint64_t counter_ = 0;                                // round-robin
  std::unordered_map<std::string, std::int64_t> current_;    // smooth weighted round-robin
  std::mt19937_64 rng_;
};

// DISC-ETCD-1..3 (offline)
bool prefix_ok(std::string_view prefix);
Code etcd_encode(std::string_view prefix, const Endpoint& e, std::string& key, std::string& value);
Code etcd_decode(std::string_view prefix, std::string_view key, std::string_view value, Endpoint& out);

}  // namespace fp::discovery
