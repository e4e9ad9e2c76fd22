// fp-testee's discovery scripts (spec/testee.md): one runner for both registries. The ops run in
// order on this thread; callbacks run inside a registry call (in-process) or on the registry's
// delivery thread (etcd), so what they record is guarded by one mutex, never held while the
// registry is called.
#include "testee_discovery.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "testee_etcd.hpp"

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

// The threads phase (DISC-THREAD-1/2), on the in-process registry.
void run_concurrent(dsc::Registry& reg, const pb::DiscoveryConcurrent& a, pb::DiscoveryResult* res) {
  const std::string& svc = a.service();
  const std::uint32_t threads = std::clamp<std::uint32_t>(a.threads(), 1, 16);
  const std::uint32_t rounds = std::min<std::uint32_t>(a.rounds(), 10000);
  std::atomic<std::uint32_t> failures{0}, added{0}, removed{0}, updated{0};
  std::uint64_t handle = 0;
  const dsc::Code wc = reg.watch(svc, [&](dsc::EventType t, const dsc::Endpoint&) {
    (t == dsc::EventType::Added ? added : t == dsc::EventType::Removed ? removed : updated).fetch_add(1);
  }, handle);
  std::barrier sync(static_cast<std::ptrdiff_t>(threads));
  std::unique_ptr<dsc::Selector> selector;
  std::mutex picked_mu;
  std::map<std::string, std::uint32_t> picked;
  std::vector<std::thread> ts;
  for (std::uint32_t t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::vector<dsc::Endpoint> list;
      for (std::uint32_t r = 0; r < rounds; ++r) {
        const std::string iid = "c" + std::to_string(t) + "-" + std::to_string(r);
        if (reg.register_instance({svc, iid, "127.0.0.1", r % 65536, 1}) != dsc::kOk) ++failures;
        if (reg.discover(svc, list) != dsc::kOk ||
            std::none_of(list.begin(), list.end(), [&](const dsc::Endpoint& e) { return e.instance_id == iid; }))
          ++failures;
        if (r % 2 == 1 && reg.deregister(svc, iid) != dsc::kOk) ++failures;
      }
      sync.arrive_and_wait();
      if (t == 0) selector = std::make_unique<dsc::Selector>(reg, svc, dsc::SelectorKind::RoundRobin, 0);
      sync.arrive_and_wait();
      std::map<std::string, std::uint32_t> mine;
      dsc::Endpoint e;
      for (std::uint32_t k = 0; k < a.picks(); ++k) {
        if (selector->select(e) != dsc::kOk) ++failures;
        else ++mine[e.instance_id];
      }
      std::lock_guard lock(picked_mu);
      for (const auto& [id, n] : mine) picked[id] += n;
    });
  }
  for (auto& th : ts) th.join();
  reg.deliver();
  if (wc == dsc::kOk) reg.unwatch(handle);
  std::vector<dsc::Endpoint> final_list;
  reg.discover(svc, final_list);
  res->set_code(dsc::kOk);
  for (const auto& e : final_list) set_endpoint(res->add_endpoints(), e);
  auto* c = res->mutable_concurrent();
  c->set_failures(failures);
  c->set_added(added);
  c->set_removed(removed);
  c->set_updated(updated);
  for (const auto& [id, n] : picked) {
    auto* p = c->add_picks();
    p->set_instance_id(id);
    p->set_count(n);
  }
}

class ScriptRunner {
 public:
  ScriptRunner(dsc::RegistryApi& reg, const ScriptHooks& hooks, pb::DiscoveryResponse* resp)
      : reg_(reg), hooks_(hooks), resp_(resp) {}

  void run(const pb::DiscoveryRequest& req) {
    for (int i = 0; i < req.ops_size(); ++i) {
      op_ = static_cast<std::uint32_t>(i);
      pb::DiscoveryResult r = execute(req.ops(i));
      std::lock_guard g(mu_);
      *resp_->add_results() = std::move(r);
    }
    op_ = static_cast<std::uint32_t>(req.ops_size());
    hooks_.catch_up(std::nullopt);
    std::map<std::uint32_t, std::uint64_t> handles;
    {
      std::lock_guard g(mu_);
      handles = handles_;
    }
    for (const auto& [number, h] : handles) reg_.unwatch(h);  // no callback runs after this
  }

 private:
  dsc::Callback callback(std::uint32_t number, const pb::DiscoveryOp* on_first) {
    auto fired = std::make_shared<bool>(false);  // only the delivering thread touches it
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
        // DISC-WATCH-3: from inside the callback; it may add events: the index, not the pointer
        pb::DiscoveryResult nested = execute(*on_first);
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
        // The events of the script's own writes may still be on their way to the watcher
        // (DISC-ETCD-6): let it catch up first, as the model delivered them before this op.
        if (h) hooks_.catch_up(*h);
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
      case pb::DiscoveryOp::kConcurrent: hooks_.concurrent(op.concurrent(), &res); break;
      case pb::DiscoveryOp::kWaitMs:  // time passes (on etcd the runner acts on the store meanwhile)
        std::this_thread::sleep_for(std::chrono::milliseconds(op.wait_ms()));
        break;
      default: throw std::runtime_error("discovery: an op with nothing set");
    }
    return res;
  }

  dsc::RegistryApi& reg_;
  const ScriptHooks& hooks_;
  pb::DiscoveryResponse* resp_;
  std::mutex mu_;  // resp_, handles_, next_watcher_, selectors_
  std::atomic<std::uint32_t> op_{0};
  std::uint32_t next_watcher_ = 0;
  std::map<std::uint32_t, std::uint64_t> handles_;
  std::map<std::uint32_t, std::shared_ptr<dsc::Selector>> selectors_;
};

}  // namespace

void run_script(dsc::RegistryApi& reg, const ScriptHooks& hooks, const pb::DiscoveryRequest& req,
                pb::DiscoveryResponse* out) {
  ScriptRunner(reg, hooks, out).run(req);
}

std::optional<pb::TesteeDiscoveryResponse> handle_discovery(const std::string& raw) {
  pb::TesteeDiscoveryRequest req;
  if (!req.ParseFromString(raw) || !req.has_discovery()) return std::nullopt;
  pb::TesteeDiscoveryResponse resp;
  if (req.discovery().has_etcd()) {  // the script on the etcd-backed registry (testee_etcd.cpp)
    run_etcd_script(req.discovery(), resp.mutable_discovery());
    return resp;
  }
  dsc::Registry reg;  // a fresh in-process registry
  const ScriptHooks hooks{
      .concurrent = [&](const pb::DiscoveryConcurrent& a, pb::DiscoveryResult* res) { run_concurrent(reg, a, res); },
      // every operation delivers before it returns (a call from inside a callback queues, and the
      // delivering loop further up delivers after it): nothing can be in flight at the top level
      .catch_up = [&](std::optional<std::uint64_t>) { reg.deliver(); },
  };
  run_script(reg, hooks, req.discovery(), resp.mutable_discovery());
  return resp;
}

}  // namespace fp::testee
