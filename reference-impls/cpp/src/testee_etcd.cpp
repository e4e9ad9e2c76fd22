// fp-testee: a discovery script on the etcd-backed registry (spec/testee.md "On etcd"), run by
// the shared script runner (testee_discovery.cpp) with the etcd hooks: `concurrent` answers
// INVALID_ARGUMENT, and before an unwatch, and before answering, the runner waits (at most the
// request timeout) until the watcher(s) have been told about the script's own writes. At the end
// the runner has unwatched everything; the registry is then closed (revoking its lease), or
// abandoned (keys left to expire with the lease, as after a crash).
#include "testee_etcd.hpp"

#include "frameproof/discovery.hpp"
#include "frameproof/etcd_registry.hpp"
#include "testee_discovery.hpp"

namespace fp::testee {

namespace pb = frameproof::testee::v1;
namespace dsc = fp::discovery;

void run_etcd_script(const pb::DiscoveryRequest& req, pb::DiscoveryResponse* out) {
  const pb::DiscoveryEtcd& etcd = req.etcd();
  dsc::EtcdConfig cfg;
  cfg.endpoint = etcd.endpoint();
  cfg.prefix = etcd.prefix();
  if (etcd.lease_ttl_s() > 0) cfg.lease_ttl = std::chrono::seconds(etcd.lease_ttl_s());
  if (etcd.request_timeout_ms() > 0) cfg.request_timeout = std::chrono::milliseconds(etcd.request_timeout_ms());
  if (!dsc::prefix_ok(cfg.prefix)) {  // no registry: every op answers what creating it answered
    for (int i = 0; i < req.ops_size(); ++i) out->add_results()->set_code(dsc::kInvalidArgument);
    return;
  }
  dsc::EtcdRegistry reg(cfg);
  const ScriptHooks hooks{
      // the threads phase is the in-process registry's (spec/testee.md)
      .concurrent = [](const pb::DiscoveryConcurrent&, pb::DiscoveryResult* res) { res->set_code(dsc::kInvalidArgument); },
      // The events of the script's own writes reach a watcher asynchronously (DISC-ETCD-6): wait
      // (bounded) for them, before an unwatch too, or an event still in flight is dropped with
      // the watcher. From inside a callback (the delivery thread) it returns at once.
      .catch_up = [&reg](std::optional<std::uint64_t> handle) {
        reg.wait_delivered(reg.config().request_timeout, handle);
      },
  };
  run_script(reg, hooks, req, out);
  if (etcd.abandon()) reg.abandon();
  else reg.close();
}

}  // namespace fp::testee
