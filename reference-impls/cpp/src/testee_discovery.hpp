// fp-testee's discovery scripts (spec/testee.md, "discovery"): one script runner over any
// RegistryApi (the in-process Registry, or the EtcdRegistry with `etcd` set), the registry's
// differences given to it as hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "frameproof/discovery.hpp"
#include "testee.pb.h"

namespace fp::testee {

// What differs between the registries a script runs on.
struct ScriptHooks {
  // The `concurrent` op (the threads phase): the in-process registry runs it (run_concurrent);
  // on etcd it answers INVALID_ARGUMENT (the threads phase is the in-process registry's).
  std::function<void(const frameproof::testee::v1::DiscoveryConcurrent&, frameproof::testee::v1::DiscoveryResult*)>
      concurrent;
  // Called before an `unwatch` op (with the watcher's handle) and once after the last op (nullopt:
  // every watcher); returns once the watcher(s) have been told of the script's own writes. The
  // in-process registry delivers before each operation returns, so it only delivers what is
  // queued; on etcd events arrive on the registry's own thread, so it waits, at most the request
  // timeout (before an unwatch too: an event still in flight would be dropped with the watcher).
  std::function<void(std::optional<std::uint64_t> handle)> catch_up;
};

// Runs the script's ops in order on `reg` into `out` (results, and the events its callbacks
// record, which may run on another thread); at the end every watcher is unwatched, so no
// callback runs once it returns.
void run_script(fp::discovery::RegistryApi& reg, const ScriptHooks& hooks,
                const frameproof::testee::v1::DiscoveryRequest& req, frameproof::testee::v1::DiscoveryResponse* out);

// A TesteeRequest with no request set, parsed once more as a TesteeDiscoveryRequest; the answer
// is a TesteeDiscoveryResponse (wire-compatible with TesteeResponse). Empty: not a discovery
// request.
std::optional<frameproof::testee::v1::TesteeDiscoveryResponse> handle_discovery(const std::string& raw);

}  // namespace fp::testee
