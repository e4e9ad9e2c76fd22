#include "frameproof/discovery.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace fp::discovery {

namespace {

// UTF-8 well-formedness (no overlongs, no surrogates, at most U+10FFFF).
bool utf8_ok(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > n) return false;
    if (p[i + 1] < lo || p[i + 1] > hi) return false;
    for (std::size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return false;
    i += len;
  }
  return true;
}

bool text_ok(std::string_view s) { return !s.empty() && s.size() <= 255 && utf8_ok(s); }

// The thread that delivers a registry's events right now (a call from inside a callback only
// queues: DISC-WATCH-3).
thread_local const Registry* tl_delivering = nullptr;

}  // namespace

bool name_ok(std::string_view s) { return text_ok(s) && s.find('/') == std::string_view::npos; }

bool valid(const Endpoint& e) {
  return name_ok(e.service) && name_ok(e.instance_id) && text_ok(e.host) && e.port <= 65535 &&
         e.weight <= 0xFFFFFFFFull;
}

// ---------------------------------------------------------------------------------------------
// Registry

void Registry::emit(const std::string& service, EventType type, const Endpoint& e) {
  auto w = watched_.find(service);
  if (w == watched_.end() || w->second == 0) return;  // nobody watches: no event to queue
  Event ev{type, e, {}};
  for (const auto& [h, watcher] : watchers_)
    if (watcher.service == service) ev.handles.push_back(h);
  queue_.push_back(std::move(ev));
  queued_.fetch_add(1, std::memory_order_release);
}

Code Registry::register_instance(const Endpoint& e) {
  if (!valid(e)) return kInvalidArgument;
  {
    std::unique_lock lock(mu_);
    auto& list = services_[e.service];
    auto it = std::find_if(list.begin(), list.end(), [&](const Endpoint& x) { return x.instance_id == e.instance_id; });
    if (it != list.end()) {
      *it = e;  // DISC-REG-2: replaced in place
      emit(e.service, EventType::Updated, e);
    } else {
      list.push_back(e);
      emit(e.service, EventType::Added, e);
    }
  }
  deliver();
  return kOk;
}

Code Registry::deregister(std::string_view service, std::string_view instance_id) {
  if (!name_ok(service) || !name_ok(instance_id)) return kInvalidArgument;
  {
    std::unique_lock lock(mu_);
    auto s = services_.find(std::string(service));
    if (s == services_.end()) return kNotFound;
    auto& list = s->second;
    auto it = std::find_if(list.begin(), list.end(), [&](const Endpoint& x) { return x.instance_id == instance_id; });
    if (it == list.end()) return kNotFound;
    Endpoint old = std::move(*it);
    list.erase(it);  // the others keep their order
    emit(old.service, EventType::Removed, old);  // DISC-REG-3: as it was registered
    if (list.empty()) services_.erase(s);
  }
  deliver();
  return kOk;
}

Code Registry::discover(std::string_view service, std::vector<Endpoint>& out) const {
  out.clear();
  if (!name_ok(service)) return kInvalidArgument;
  std::shared_lock lock(mu_);
  auto s = services_.find(std::string(service));
  if (s != services_.end()) out = s->second;
  return kOk;
}

Code Registry::watch(std::string_view service, Callback cb, std::uint64_t& handle) {
  if (!name_ok(service)) return kInvalidArgument;
  std::unique_lock lock(mu_);
  handle = next_handle_++;
  watchers_.emplace(handle, Watcher{std::string(service), std::make_shared<Callback>(std::move(cb))});
  ++watched_[std::string(service)];
  return kOk;
}

Code Registry::unwatch(std::uint64_t handle) {
  std::unique_lock lock(mu_);
  auto it = watchers_.find(handle);
  if (it == watchers_.end()) return kNotFound;
  if (--watched_[it->second.service] == 0) watched_.erase(it->second.service);
  watchers_.erase(it);
  // Once unwatch returns the callback is not called again: wait for a call of it in progress on
  // another thread (a callback that unwatches itself is that call: no wait).
  const auto me = std::this_thread::get_id();
  idle_.wait(lock, [&] { return !calling_ || calling_->second != handle || calling_->first == me; });
  return kOk;
}

void Registry::deliver() {
  if (queued_.load(std::memory_order_acquire) == 0) return;
  if (tl_delivering == this) return;  // inside one of our callbacks: the outer loop delivers
  while (true) {
    if (!dispatch_.try_lock()) return;  // another thread delivers; it re-checks before it stops
    const Registry* outer = tl_delivering;
    tl_delivering = this;
    while (true) {
      Event ev;
      {
        std::unique_lock lock(mu_);
        if (queue_.empty()) break;
        ev = std::move(queue_.front());
        queue_.pop_front();
        queued_.fetch_sub(1, std::memory_order_release);
      }
      for (std::uint64_t h : ev.handles) {
        std::shared_ptr<Callback> cb;
        {
          std::unique_lock lock(mu_);
          auto it = watchers_.find(h);
          if (it == watchers_.end()) continue;  // unwatched meanwhile
          cb = it->second.cb;
          calling_.emplace(std::this_thread::get_id(), h);
        }
        try {
          (*cb)(ev.type, ev.endpoint);
        } catch (...) {
          // a throwing callback must not stop the delivery to the others
        }
        {
          std::unique_lock lock(mu_);
          calling_.reset();
        }
        idle_.notify_all();
      }
    }
    tl_delivering = outer;
    dispatch_.unlock();
    if (queued_.load(std::memory_order_acquire) == 0) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Selectors

std::optional<SelectorKind> selector_kind(std::string_view name) {
  if (name == "round-robin") return SelectorKind::RoundRobin;
  if (name == "weighted-round-robin") return SelectorKind::WeightedRoundRobin;
  if (name == "random") return SelectorKind::Random;
  if (name == "weighted-random") return SelectorKind::WeightedRandom;
  return std::nullopt;
}

Selector::Selector(const RegistryApi& reg, std::string service, SelectorKind kind, std::optional<std::uint64_t> seed)
    : reg_(reg), service_(std::move(service)), kind_(kind), rng_(seed ? *seed : std::random_device{}() ^
                                                                              (std::uint64_t{std::random_device{}()} << 32)) {}

Code Selector::select(Endpoint& out) {
  thread_local std::vector<Endpoint> list;  // reused between picks
  if (const Code c = reg_.discover(service_, list); c != kOk) return c;
  // DISC-SEL-1: weight 0 is drained; the eligible ones in list order
  std::erase_if(list, [](const Endpoint& e) { return e.weight == 0; });
  if (list.empty()) return kNotFound;
  std::lock_guard lock(mu_);
  const std::size_t n = list.size();
  switch (kind_) {
    case SelectorKind::RoundRobin:  // DISC-SEL-2
      out = list[counter_++ % n];
      return kOk;
    case SelectorKind::WeightedRoundRobin: {  // DISC-SEL-3: nginx's smooth weighted round-robin
      // instances no longer eligible lose their current weight
      for (auto it = current_.begin(); it != current_.end();) {
        const bool kept = std::any_of(list.begin(), list.end(), [&](const Endpoint& e) { return e.instance_id == it->first; });
        it = kept ? std::next(it) : current_.erase(it);
      }
      std::int64_t total = 0;
      const Endpoint* best = nullptr;
      std::int64_t best_cw = 0;
      for (const Endpoint& e : list) {
        const auto w = static_cast<std::int64_t>(e.weight);
        total += w;
        const std::int64_t cw = current_[e.instance_id] += w;
        if (!best || cw > best_cw) {  // the first in list order among equals
          best = &e;
          best_cw = cw;
        }
      }
      current_[best->instance_id] -= total;
      out = *best;
      return kOk;
    }
    case SelectorKind::Random:  // DISC-SEL-4
      out = list[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_)];
      return kOk;
    case SelectorKind::WeightedRandom: {
      std::uint64_t total = 0;
      for (const Endpoint& e : list) total += e.weight;
      std::uint64_t x = std::uniform_int_distribution<std::uint64_t>(0, total - 1)(rng_);
      for (const Endpoint& e : list) {
        if (x < e.weight) {
          out = e;
          return kOk;
        }
        x -= e.weight;
      }
      out = list.back();  // not reached
      return kOk;
    }
  }
  return kInternalError;
}

// ---------------------------------------------------------------------------------------------
// The etcd mapping (DISC-ETCD-1..3)

bool prefix_ok(std::string_view p) { return !p.empty() && p.front() != '/' && p.back() != '/'; }

Code etcd_encode(std::string_view prefix, const Endpoint& e, std::string& key, std::string& value) {
  key.clear();
  value.clear();
  if (!prefix_ok(prefix) || !valid(e)) return kInvalidArgument;
  key = "/" + std::string(prefix) + "/" + e.service + "/" + e.instance_id;
  nlohmann::ordered_json j;  // DISC-ETCD-2: these five members, in this order, no whitespace
  j["service"] = e.service;
  j["instance_id"] = e.instance_id;
  j["host"] = e.host;
  j["port"] = e.port;
  j["weight"] = e.weight;
  value = j.dump();
  return kOk;
}

Code etcd_decode(std::string_view prefix, std::string_view key, std::string_view value, Endpoint& out) {
  if (!prefix_ok(prefix) || !utf8_ok(key)) return kInvalidArgument;
  const nlohmann::json d = nlohmann::json::parse(value.begin(), value.end(), nullptr, /*allow_exceptions=*/false);
  if (d.is_discarded() || !d.is_object()) return kInvalidArgument;
  const std::string head = "/" + std::string(prefix) + "/";
  if (key.substr(0, head.size()) != head) return kInvalidArgument;
  auto str = [&](const char* k, std::string& dst) {
    auto it = d.find(k);
    if (it == d.end() || !it->is_string()) return false;
    dst = it->get<std::string>();
    return true;
  };
  auto uint = [&](const char* k, std::uint64_t& dst, bool required) {
    auto it = d.find(k);
    if (it == d.end()) return !required;
    if (it->is_number_unsigned()) {
      dst = it->get<std::uint64_t>();
      return true;
    }
    return false;  // negative, float, bool or anything else (a negative one is out of range anyway)
  };
  Endpoint e;
  e.weight = 100;  // DISC-ETCD-3: a missing weight is 100
  if (!str("service", e.service) || !str("instance_id", e.instance_id) || !str("host", e.host) ||
      !uint("port", e.port, true) || !uint("weight", e.weight, false))
    return kInvalidArgument;
  const std::string_view rest = key.substr(head.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || rest.substr(0, slash) != e.service || rest.substr(slash + 1) != e.instance_id)
    return kInvalidArgument;
  if (!valid(e)) return kInvalidArgument;
  out = std::move(e);
  return kOk;
}

}  // namespace fp::discovery
