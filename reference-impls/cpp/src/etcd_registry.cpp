// The etcd-backed registry (spec/discovery.md §8); the design is in etcd_registry.hpp.
//
// Threads: the caller's (operations: one gateway round trip or two, each bounded by the request
// timeout), one keep-alive thread (every TTL/3; a lease etcd forgot is replaced and our instances
// are put again), one thread per watcher (its /v3/watch stream, resumed at the next revision after
// a lost stream; after a compaction, the difference from the last list seen), and one delivery
// thread that calls the callbacks one at a time, in the order the watch threads queued the events,
// with no lock held (a callback may call the registry; unwatch waits for a call in progress).
#include "frameproof/etcd_registry.hpp"

#include <algorithm>
#include <stdexcept>

#include "etcd_gateway.hpp"

namespace fp::discovery {

namespace gw = etcd_gw;
using nlohmann::json;

namespace {

const json& member(const json& j, const char* name) {
  static const json none;
  if (!j.is_object()) return none;
  auto it = j.find(name);
  return it == j.end() ? none : *it;
}

std::int64_t revision_of(const json& body) { return gw::int_of(member(body, "header"), "revision"); }

// One etcd kv ({"key": b64, "value": b64, ...}) decoded as a registry entry (DISC-ETCD-3).
bool decode_kv(std::string_view prefix, const json& kv, const std::string& key, Endpoint& out) {
  std::string value;
  const json& v = member(kv, "value");
  if (!gw::unb64(v.is_string() ? v.get<std::string>() : std::string(), value)) return false;
  return etcd_decode(prefix, key, value, out) == kOk;
}

std::string key_text(const json& kv) {
  std::string key;
  const json& k = member(kv, "key");
  if (!k.is_string() || !gw::unb64(k.get<std::string>(), key)) key.clear();
  return key;
}

}  // namespace

struct EtcdRegistry::Watcher {
  std::uint64_t handle = 0;
  std::string service;
  std::shared_ptr<Callback> cb;
  std::atomic<bool> active{true};
  std::shared_ptr<gw::WatchStream> stream = std::make_shared<gw::WatchStream>();
  // the watch thread's own
  std::int64_t next = 0;                  // the revision to resume at
  std::map<std::string, Endpoint> known;  // the list as the watcher's events describe it
  // under mu_
  std::int64_t delivered = 0;  // the revision up to which the callback has been told
};

EtcdRegistry::EtcdRegistry(EtcdConfig cfg) : cfg_(std::move(cfg)) {
  if (!prefix_ok(cfg_.prefix)) throw std::invalid_argument("etcd prefix '" + cfg_.prefix + "' breaks DISC-ETCD-1");
  if (cfg_.lease_ttl.count() < 1) cfg_.lease_ttl = std::chrono::seconds(1);
  if (cfg_.request_timeout.count() < 1) cfg_.request_timeout = std::chrono::milliseconds(1);
  gw_ = std::make_unique<gw::Gateway>(cfg_.endpoint);
  delivery_ = std::thread(&EtcdRegistry::delivery_loop, this);
  keepalive_ = std::thread(&EtcdRegistry::keep_alive_loop, this);
}

EtcdRegistry::~EtcdRegistry() { stop(true); }

void EtcdRegistry::close() { stop(true); }
void EtcdRegistry::abandon() { stop(false); }

std::string EtcdRegistry::key_of(std::string_view service, std::string_view instance_id) const {
  return "/" + cfg_.prefix + "/" + std::string(service) + "/" + std::string(instance_id);
}

// ---------------------------------------------------------------------------------------------
// the lease (DISC-ETCD-5, DISC-ETCD-7)

std::int64_t EtcdRegistry::lease(std::int64_t failed, Deadline until) {
  std::lock_guard g(lease_mu_);
  if (lease_ != 0 && lease_ != failed) return lease_;
  const gw::Reply r = gw_->post("/v3/lease/grant", {{"TTL", cfg_.lease_ttl.count()}}, until);
  const std::int64_t id = r.ok() ? gw::int_of(r.body, "ID") : 0;
  if (id == 0) return 0;
  const bool renewal = lease_ != 0;
  lease_ = id;
  if (renewal) {  // etcd forgot our lease (and so our keys): put them again under the new one
    std::vector<Endpoint> mine;
    {
      std::lock_guard l(mu_);
      for (const auto& [k, e] : mine_) mine.push_back(e);
    }
    for (const Endpoint& e : mine) put(e, id, until);
  }
  return id;
}

int EtcdRegistry::put(const Endpoint& e, std::int64_t lease, Deadline until, std::int64_t* revision) {
  std::string key, value;
  if (etcd_encode(cfg_.prefix, e, key, value) != kOk) return -1;
  const gw::Reply r = gw_->post(
      "/v3/kv/put", {{"key", gw::b64(key)}, {"value", gw::b64(value)}, {"lease", std::to_string(lease)}}, until);
  if (r.ok()) {
    if (revision) *revision = revision_of(r.body);
    return 1;
  }
  if (r.reached && r.error.find("lease not found") != std::string::npos) return 0;
  return -1;
}

void EtcdRegistry::keep_alive_loop() {
  const auto period = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.lease_ttl) / 3, std::chrono::milliseconds(200));
  // on a fixed schedule, so that the time a keep-alive takes does not stretch the period
  auto due = std::chrono::steady_clock::now() + period;
  std::unique_lock l(mu_);
  while (!cv_.wait_until(l, due, [&] { return stopping_.load(); })) {
    due = std::max(due + period, std::chrono::steady_clock::now());
    l.unlock();
    std::int64_t current;
    {
      std::lock_guard g(lease_mu_);
      current = lease_;
    }
    if (current != 0) {
      const gw::Reply r = gw_->post("/v3/lease/keepalive", {{"ID", std::to_string(current)}}, deadline());
      // an answer without a TTL: the lease expired while etcd was away (or was revoked)
      if (r.ok() && gw::int_of(member(r.body, "result"), "TTL") <= 0 && !stopping_) lease(current, deadline());
      // no answer: etcd away, try again next period
    }
    l.lock();
  }
}

// ---------------------------------------------------------------------------------------------
// operations

Code EtcdRegistry::register_instance(const Endpoint& e) {
  if (!valid(e)) return kInvalidArgument;
  if (stopping_) return kInternalError;
  const Deadline until = deadline();
  std::int64_t failed = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::int64_t l = lease(failed, until);
    if (l == 0) return kConnectionError;
    std::int64_t rev = 0;
    const int p = put(e, l, until, &rev);
    if (p < 0) return kConnectionError;
    if (p == 1) {
      std::lock_guard g(mu_);
      mine_[{e.service, e.instance_id}] = e;
      auto& w = written_[e.service];
      w = std::max(w, rev);
      cv_.notify_all();
      return kOk;
    }
    failed = l;  // etcd no longer knows the lease: a new one, and our keys again
  }
  return kConnectionError;
}

Code EtcdRegistry::deregister(std::string_view service, std::string_view instance_id) {
  if (!name_ok(service) || !name_ok(instance_id)) return kInvalidArgument;
  if (stopping_) return kInternalError;
  {
    std::lock_guard g(mu_);  // before the delete: a lease renewal must not put it back
    mine_.erase({std::string(service), std::string(instance_id)});
  }
  const gw::Reply r = gw_->post("/v3/kv/deleterange", {{"key", gw::b64(key_of(service, instance_id))}}, deadline());
  if (!r.ok()) return kConnectionError;
  if (gw::int_of(r.body, "deleted") <= 0) return kNotFound;
  std::lock_guard g(mu_);
  auto& w = written_[std::string(service)];
  w = std::max(w, revision_of(r.body));
  cv_.notify_all();
  return kOk;
}

bool EtcdRegistry::list(std::string_view service, std::vector<Endpoint>& out, std::int64_t& revision) const {
  out.clear();
  const std::string key = key_of(service, "");
  const gw::Reply r = gw_->post("/v3/kv/range",
                                {{"key", gw::b64(key)},
                                 {"range_end", gw::b64(gw::prefix_end(key))},
                                 {"sort_order", "ASCEND"},
                                 {"sort_target", "CREATE"}},
                                deadline());
  if (!r.ok()) return false;
  revision = revision_of(r.body);
  const json& kvs = member(r.body, "kvs");
  if (!kvs.is_array()) return true;
  for (const json& kv : kvs) {
    Endpoint e;
    if (decode_kv(cfg_.prefix, kv, key_text(kv), e) && e.service == service) out.push_back(std::move(e));
  }
  return true;
}

Code EtcdRegistry::discover(std::string_view service, std::vector<Endpoint>& out) const {
  out.clear();
  if (!name_ok(service)) return kInvalidArgument;
  std::int64_t rev = 0;
  return list(service, out, rev) ? kOk : kConnectionError;
}

// ---------------------------------------------------------------------------------------------
// watching (DISC-ETCD-6, DISC-ETCD-7)

Code EtcdRegistry::watch(std::string_view service, Callback cb, std::uint64_t& handle) {
  if (!name_ok(service)) return kInvalidArgument;
  if (stopping_) return kInternalError;
  std::vector<Endpoint> now;
  std::int64_t rev = 0;
  if (!list(service, now, rev)) return kConnectionError;  // the revision now: no replay
  auto w = std::make_shared<Watcher>();
  w->service = std::string(service);
  w->cb = std::make_shared<Callback>(std::move(cb));
  w->next = rev + 1;
  w->delivered = rev;
  for (Endpoint& e : now) w->known.emplace(e.instance_id, std::move(e));
  std::lock_guard g(mu_);
  if (stopping_) return kInternalError;
  handle = w->handle = next_handle_++;
  watchers_.emplace(handle, w);
  watch_threads_.emplace_back(&EtcdRegistry::watch_loop, this, w);
  return kOk;
}

Code EtcdRegistry::unwatch(std::uint64_t handle) {
  std::unique_lock l(mu_);
  auto it = watchers_.find(handle);
  if (it == watchers_.end()) return kNotFound;
  const std::shared_ptr<Watcher> w = it->second;
  watchers_.erase(it);
  w->active = false;
  w->stream->stop();
  cv_.notify_all();
  // DISC-WATCH-5: once unwatch returns the callback is not called again: wait for a call of it
  // in progress (a callback unwatching itself is that call: no wait)
  const auto me = std::this_thread::get_id();
  cv_.wait(l, [&] { return !calling_ || calling_->second != handle || calling_->first == me; });
  return kOk;
}

void EtcdRegistry::push(std::uint64_t handle, std::optional<std::pair<EventType, Endpoint>> ev, std::int64_t rev) {
  std::lock_guard g(mu_);
  queue_.push_back({handle, std::move(ev), rev});
  cv_.notify_all();
}

void EtcdRegistry::watch_loop(std::shared_ptr<Watcher> w) {
  const std::string key = key_of(w->service, "");
  auto on_event = [&](const json& ev) {
    const json& kv = member(ev, "kv");
    const std::int64_t mod = gw::int_of(kv, "mod_revision");
    if (mod <= 0) return;
    w->next = mod + 1;
    const std::string k = key_text(kv);
    std::optional<std::pair<EventType, Endpoint>> out;
    Endpoint e;
    if (member(ev, "type") == "DELETE") {  // explicit or a lease expiry: the previous value's endpoint
      if (decode_kv(cfg_.prefix, member(ev, "prev_kv"), k, e)) {
        w->known.erase(e.instance_id);
        out.emplace(EventType::Removed, e);
      }
    } else if (decode_kv(cfg_.prefix, kv, k, e)) {  // PUT (the gateway leaves the default type out)
      const bool created = gw::int_of(kv, "create_revision") == mod;
      w->known[e.instance_id] = e;
      out.emplace(created ? EventType::Added : EventType::Updated, e);
    }
    if (out && out->second.service != w->service) out.reset();
    push(w->handle, std::move(out), mod);
  };
  while (w->active && !stopping_) {
    bool compacted = false;
    const json body = {{"create_request",
                        {{"key", gw::b64(key)},
                         {"range_end", gw::b64(gw::prefix_end(key))},
                         {"start_revision", std::to_string(w->next)},
                         {"prev_kv", true}}}};
    const std::size_t member_at = gw_->current();
    bool ours = false;  // the stream was ended here (compacted, canceled, an error line)
    w->stream->run(gw_->base() + "/v3/watch", body, cfg_.request_timeout, [&](const json& line) {
      const json& res = member(line, "result");
      if (!res.is_object()) return !(ours = true);  // {"error": ...}
      if (gw::int_of(res, "compact_revision") > 0) {
        compacted = ours = true;
        return false;
      }
      if (res.value("canceled", false)) return !(ours = true);
      const json& events = member(res, "events");
      if (events.is_array())
        for (const json& ev : events) on_event(ev);
      return w->active.load();
    });
    if (!w->active || stopping_) break;
    if (compacted) resync(w);
    if (!ours) gw_->failed(member_at);  // the member went away: resume on another one (DISC-ETCD-8)
    // etcd away (or the history is gone): reconnect and resume at w->next
    std::unique_lock l(mu_);
    cv_.wait_for(l, std::chrono::milliseconds(compacted ? 0 : 200), [&] { return stopping_ || !w->active; });
  }
}

void EtcdRegistry::resync(const std::shared_ptr<Watcher>& w) {
  std::vector<Endpoint> list_now;
  std::int64_t rev = 0;
  if (!list(w->service, list_now, rev)) return;  // etcd away: the next watch attempt tries again
  std::map<std::string, Endpoint> now;
  for (Endpoint& e : list_now) now.emplace(e.instance_id, std::move(e));
  for (const auto& [id, e] : w->known)
    if (!now.count(id)) push(w->handle, std::make_pair(EventType::Removed, e), rev);
  for (const auto& [id, e] : now) {
    auto old = w->known.find(id);
    if (old == w->known.end()) push(w->handle, std::make_pair(EventType::Added, e), rev);
    else if (!(old->second == e)) push(w->handle, std::make_pair(EventType::Updated, e), rev);
  }
  push(w->handle, std::nullopt, rev);
  w->known = std::move(now);
  w->next = rev + 1;
}

void EtcdRegistry::delivery_loop() {
  std::unique_lock l(mu_);
  while (true) {
    cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    auto it = watchers_.find(item.handle);
    if (it == watchers_.end()) {  // unwatched meanwhile
      cv_.notify_all();
      continue;
    }
    const std::shared_ptr<Watcher> w = it->second;
    if (item.event && w->active) {
      calling_.emplace(std::this_thread::get_id(), item.handle);
      const std::shared_ptr<Callback> cb = w->cb;
      l.unlock();
      try {
        (*cb)(item.event->first, item.event->second);
      } catch (...) {
        // a throwing callback is not the registry's problem; the others still get their events
      }
      l.lock();
      calling_.reset();
    }
    w->delivered = std::max(w->delivered, item.revision);
    cv_.notify_all();
  }
}

bool EtcdRegistry::wait_delivered(std::chrono::milliseconds timeout, std::optional<std::uint64_t> handle) {
  std::unique_lock l(mu_);
  if (calling_ && calling_->first == std::this_thread::get_id()) return false;  // would wait for itself
  auto behind = [&](const Watcher& w) {
    auto it = written_.find(w.service);
    return w.active && it != written_.end() && it->second > w.delivered;
  };
  return cv_.wait_for(l, timeout, [&] {
    if (handle) {
      auto it = watchers_.find(*handle);
      return it == watchers_.end() || !behind(*it->second);
    }
    if (!queue_.empty() || calling_) return false;
    for (const auto& [h, w] : watchers_)
      if (behind(*w)) return false;
    return true;
  });
}

void EtcdRegistry::stop(bool revoke) {
  std::vector<std::thread> threads;
  {
    std::lock_guard g(mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
    for (const auto& [h, w] : watchers_) {
      w->active = false;
      w->stream->stop();
    }
    threads.swap(watch_threads_);
    cv_.notify_all();
  }
  // the unwatched watchers' streams were stopped by unwatch; these joins are quick
  for (std::thread& t : threads) t.join();
  if (keepalive_.joinable()) keepalive_.join();
  if (delivery_.joinable()) delivery_.join();
  {
    std::lock_guard g(mu_);
    watchers_.clear();
    queue_.clear();
  }
  if (revoke) {
    std::int64_t l;
    {
      std::lock_guard g(lease_mu_);
      l = lease_;
    }
    if (l != 0) gw_->post("/v3/lease/revoke", {{"ID", std::to_string(l)}}, deadline());
  }
}

}  // namespace fp::discovery
