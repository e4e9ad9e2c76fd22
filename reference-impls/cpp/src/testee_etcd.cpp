// fp-testee: a discovery script on the etcd-backed registry (spec/testee.md "On etcd"). The ops
// run in order on this thread; callbacks run on the registry's delivery thread, so what they
// record is guarded by one mutex, never held while the registry is called. Before an unwatch, and
// before answering, wait (at most the request timeout) until the watcher(s) have been told about
// the script's own writes; at the end, unwatch everything and close the registry (revoking its
// lease), or abandon it (keys left to expire with the lease, as after a crash).
#include "testee_etcd.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "frameproof/discovery.hpp"
#include "frameproof/etcd_registry.hpp"

namespace fp::testee {

namespace {

namespace pb = frameproof::testee::v1;
namespace dsc = fp::discovery;

dsc::Endpoint endpoint_of(const pb::DiscoveryEndpoint& e) {
  return {e.service(), e.instance_id(), e.host(), e.port(), e.weight()};
}

void set_endpoint(pb::DiscoveryEndpoint* out, const dsc::Endpoint& e) {
  out->set_service(e.service);
  out->set_instance_id(e.instance_id);
  out->set_host(e.host);
  out->set_port(static_cast<std::uint32_t>(e.port));
  out->set_weight(static_cast<std::uint32_t>(e.weight));
}

class EtcdScript {
 public:
  EtcdScript(dsc::EtcdRegistry& reg, pb::DiscoveryResponse* resp) : reg_(reg), resp_(resp) {}

  void run(const pb::DiscoveryRequest& req) {
    for (int i = 0; i < req.ops_size(); ++i) {
      op_ = static_cast<std::uint32_t>(i);
      pb::DiscoveryResult r = execute(req.ops(i));
      std::lock_guard g(mu_);
      *resp_->add_results() = std::move(r);
    }
    op_ = static_cast<std::uint32_t>(req.ops_size());
    reg_.wait_delivered(reg_.config().request_timeout);
    std::map<std::uint32_t, std::uint64_t> handles;
    {
      std::lock_guard g(mu_);
      handles = handles_;
    }
    for (const auto& [number, h] : handles) reg_.unwatch(h);  // no callback runs after this
  }

 private:
  dsc::Callback callback(std::uint32_t number, const pb::DiscoveryOp* on_first) {
    auto fired = std::make_shared<bool>(false);  // only the delivery thread touches it
    return [this, number, on_first, fired](dsc::EventType t, const dsc::Endpoint& e) {
      int idx;
      {
        std::lock_guard g(mu_);
        idx = resp_->events_size();
        auto* ev = resp_->add_events();
        ev->set_watch(number);
        ev->set_type(static_cast<pb::DiscoveryEvent::Type>(t));
        set_endpoint(ev->mutable_endpoint(), e);
        ev->set_op(op_);
      }
      if (on_first && !*fired) {
        *fired = true;
        pb::DiscoveryResult nested = execute(*on_first);  // DISC-WATCH-3: from inside the callback
        std::lock_guard g(mu_);
        *resp_->mutable_events(idx)->mutable_nested() = std::move(nested);
      }
    };
  }

  pb::DiscoveryResult execute(const pb::DiscoveryOp& op) {
    pb::DiscoveryResult res;
    res.set_code(dsc::kOk);
    std::vector<dsc::Endpoint> list;
    switch (op.op_case()) {
      case pb::DiscoveryOp::kRegister: res.set_code(reg_.register_instance(endpoint_of(op.register_()))); break;
      case pb::DiscoveryOp::kDeregister:
        res.set_code(reg_.deregister(op.deregister().service(), op.deregister().instance_id()));
        break;
      case pb::DiscoveryOp::kDiscover:
        res.set_code(reg_.discover(op.discover(), list));
        for (const auto& e : list) set_endpoint(res.add_endpoints(), e);
        break;
      case pb::DiscoveryOp::kWatch: {
        std::uint32_t number;
        {
          std::lock_guard g(mu_);
          number = next_watcher_;  // given out only if the watch succeeds
        }
        std::uint64_t h = 0;
        const auto* nested = op.watch().has_on_first_event() ? &op.watch().on_first_event() : nullptr;
        const dsc::Code c = reg_.watch(op.watch().service(), callback(number, nested), h);
        res.set_code(c);
        if (c == dsc::kOk) {
          std::lock_guard g(mu_);
          next_watcher_ = number + 1;
          handles_[number] = h;
          res.set_watch(number);
        }
        break;
      }
      case pb::DiscoveryOp::kUnwatch: {
        std::optional<std::uint64_t> h;
        {
          std::lock_guard g(mu_);
          auto it = handles_.find(op.unwatch());
          if (it != handles_.end()) h = it->second;
        }
        // The events of the script's own writes reach a watcher asynchronously (DISC-ETCD-6): let
        // it catch up first (bounded), as the model delivered them before this op.
        if (h) reg_.wait_delivered(reg_.config().request_timeout, *h);
        res.set_code(h ? reg_.unwatch(*h) : dsc::kNotFound);
        break;
      }
      case pb::DiscoveryOp::kSelect: {
        const auto& a = op.select();
        std::shared_ptr<dsc::Selector> sel;
        {
          std::lock_guard g(mu_);
          auto it = selectors_.find(a.selector_id());
          if (it != selectors_.end()) {
            sel = it->second;
          } else {
            const auto kind = dsc::selector_kind(a.selector());
            if (!kind || !dsc::name_ok(a.service())) {
              res.set_code(dsc::kInvalidArgument);
              break;
            }
            sel = std::make_shared<dsc::Selector>(reg_, a.service(), *kind, a.seed());
            selectors_.emplace(a.selector_id(), sel);
          }
        }
        dsc::Endpoint e;
        for (std::uint32_t k = 0; k < a.count(); ++k) {
          const dsc::Code c = sel->select(e);
          if (c != dsc::kOk) {
            res.set_code(c);
            break;
          }
          res.add_picks(e.instance_id);
        }
        break;
      }
      case pb::DiscoveryOp::kEtcdEncode: {
        std::string key, value;
        res.set_code(dsc::etcd_encode(op.etcd_encode().prefix(), endpoint_of(op.etcd_encode().endpoint()), key, value));
        res.set_etcd_key(key);
        res.set_etcd_value(value);
        break;
      }
      case pb::DiscoveryOp::kEtcdDecode: {
        dsc::Endpoint e;
        const auto& a = op.etcd_decode();
        res.set_code(dsc::etcd_decode(a.prefix(), a.key(), a.value(), e));
        if (res.code() == dsc::kOk) set_endpoint(res.add_endpoints(), e);
        break;
      }
      case pb::DiscoveryOp::kConcurrent:  // the threads phase is the in-process registry's (spec/testee.md)
        res.set_code(dsc::kInvalidArgument);
        break;
      default: throw std::runtime_error("discovery: an op with nothing set");
    }
    return res;
  }

  dsc::EtcdRegistry& reg_;
  pb::DiscoveryResponse* resp_;
  std::mutex mu_;  // resp_, handles_, next_watcher_, selectors_
  std::atomic<std::uint32_t> op_{0};
  std::uint32_t next_watcher_ = 0;
  std::map<std::uint32_t, std::uint64_t> handles_;
  std::map<std::uint32_t, std::shared_ptr<dsc::Selector>> selectors_;
};

}  // namespace

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
  EtcdScript(reg, out).run(req);
  if (etcd.abandon()) reg.abandon();
  else reg.close();
}

}  // namespace fp::testee
