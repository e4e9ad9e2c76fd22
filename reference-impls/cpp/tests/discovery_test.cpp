// rpc's service registry (spec/discovery.md): registry semantics, watch order and callbacks
// outside the lock, the four selectors, threads, the etcd mapping.
#include "frameproof/discovery.hpp"

#include <gtest/gtest.h>

#include <map>
#include <thread>

namespace d = fp::discovery;

namespace {

d::Endpoint ep(std::string id, std::uint64_t weight = 100, std::string svc = "echo") {
  return {std::move(svc), std::move(id), "127.0.0.1", 7000, weight};
}

std::vector<std::string> ids(const std::vector<d::Endpoint>& l) {
  std::vector<std::string> out;
  for (const auto& e : l) out.push_back(e.instance_id);
  return out;
}

struct Seen {
  int watcher;
  d::EventType type;
  std::string id;
  bool operator==(const Seen&) const = default;
};

}  // namespace

TEST(Discovery, RegisterReplacesInPlaceDeregisterAndDiscover) {
  d::Registry r;
  std::vector<d::Endpoint> l;
  EXPECT_EQ(r.discover("echo", l), d::kOk);  // DISC-REG-5: unknown service, OK and empty
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(r.register_instance(ep("a")), d::kOk);
  EXPECT_EQ(r.register_instance(ep("b")), d::kOk);
  auto a2 = ep("a", 7);
  a2.port = 9;
  EXPECT_EQ(r.register_instance(a2), d::kOk);  // DISC-REG-2: replaced, keeps its position
  r.discover("echo", l);
  ASSERT_EQ(ids(l), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l[0], a2);
  EXPECT_EQ(r.deregister("echo", "a"), d::kOk);
  EXPECT_EQ(r.deregister("echo", "a"), d::kNotFound);  // DISC-REG-4
  EXPECT_EQ(r.deregister("other", "b"), d::kNotFound);
  r.discover("echo", l);
  EXPECT_EQ(ids(l), (std::vector<std::string>{"b"}));
  r.discover("Echo", l);  // DISC-REG-6: byte for byte
  EXPECT_TRUE(l.empty());
}

TEST(Discovery, Validation) {
  d::Registry r;
  std::vector<d::Endpoint> l;
  EXPECT_EQ(r.register_instance(ep("a/b")), d::kInvalidArgument);  // DISC-EP-2
  EXPECT_EQ(r.register_instance(ep("")), d::kInvalidArgument);
  EXPECT_EQ(r.register_instance(ep(std::string(256, 'x'))), d::kInvalidArgument);
  EXPECT_EQ(r.register_instance(ep(std::string(255, 'x'))), d::kOk);
  auto bad = ep("p");
  bad.port = 65536;
  EXPECT_EQ(r.register_instance(bad), d::kInvalidArgument);
  bad = ep("h");
  bad.host = "";
  EXPECT_EQ(r.register_instance(bad), d::kInvalidArgument);
  EXPECT_EQ(r.register_instance(ep("\xff")), d::kInvalidArgument);  // not UTF-8
  EXPECT_EQ(r.discover("", l), d::kInvalidArgument);
  std::uint64_t h;
  EXPECT_EQ(r.watch("a/b", [](auto, const auto&) {}, h), d::kInvalidArgument);
}

TEST(Discovery, EventsInOrderToWatchersInWatchOrderOutsideTheLock) {
  d::Registry r;
  std::vector<Seen> seen;
  std::uint64_t h0, h1, h2;
  // watcher 0 registers from inside its callback (DISC-WATCH-3): no deadlock, and the nested
  // event comes after the current one has reached every watcher (DISC-WATCH-2)
  bool nested = false;
  ASSERT_EQ(r.watch("echo", [&](d::EventType t, const d::Endpoint& e) {
    seen.push_back({0, t, e.instance_id});
    if (!nested) {
      nested = true;
      std::vector<d::Endpoint> l;
      EXPECT_EQ(r.discover("echo", l), d::kOk);
      EXPECT_EQ(r.register_instance(ep("n")), d::kOk);
      EXPECT_EQ(seen.size(), 1u);  // not delivered recursively
    }
  }, h0), d::kOk);
  ASSERT_EQ(r.watch("echo", [&](d::EventType t, const d::Endpoint& e) { seen.push_back({1, t, e.instance_id}); }, h1), d::kOk);
  ASSERT_EQ(r.watch("other", [&](d::EventType t, const d::Endpoint& e) { seen.push_back({2, t, e.instance_id}); }, h2), d::kOk);
  r.register_instance(ep("a"));
  const std::vector<Seen> want{{0, d::EventType::Added, "a"}, {1, d::EventType::Added, "a"},
                               {0, d::EventType::Added, "n"}, {1, d::EventType::Added, "n"}};
  EXPECT_EQ(seen, want);  // all delivered before register returned (DISC-WATCH-4)
  seen.clear();
  r.register_instance(ep("a"));
  r.deregister("echo", "a");
  EXPECT_EQ(seen, (std::vector<Seen>{{0, d::EventType::Updated, "a"}, {1, d::EventType::Updated, "a"},
                                     {0, d::EventType::Removed, "a"}, {1, d::EventType::Removed, "a"}}));
  seen.clear();
  EXPECT_EQ(r.deregister("echo", "zzz"), d::kNotFound);  // a failed operation: no event
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(r.unwatch(h0), d::kOk);
  EXPECT_EQ(r.unwatch(h0), d::kNotFound);  // DISC-WATCH-5
  r.register_instance(ep("b"));
  EXPECT_EQ(seen, (std::vector<Seen>{{1, d::EventType::Added, "b"}}));
}

TEST(Discovery, UnwatchFromInsideTheCallbackStopsTheOthersToo) {
  d::Registry r;
  std::vector<Seen> seen;
  std::uint64_t h0 = 0, h1 = 0;
  r.watch("echo", [&](d::EventType t, const d::Endpoint& e) {
    seen.push_back({0, t, e.instance_id});
    r.unwatch(h1);  // the second watcher is not called for this event any more
  }, h0);
  r.watch("echo", [&](d::EventType t, const d::Endpoint& e) { seen.push_back({1, t, e.instance_id}); }, h1);
  r.register_instance(ep("a"));
  EXPECT_EQ(seen, (std::vector<Seen>{{0, d::EventType::Added, "a"}}));
}

TEST(Discovery, RoundRobinAndSmoothWeightedRoundRobin) {
  d::Registry r;
  r.register_instance(ep("a", 5));
  r.register_instance(ep("b", 1));
  r.register_instance(ep("c", 1));
  r.register_instance(ep("z", 0));  // drained: never picked (DISC-SEL-1)
  d::Selector rr(r, "echo", d::SelectorKind::RoundRobin, 0);
  d::Selector wrr(r, "echo", d::SelectorKind::WeightedRoundRobin, 0);
  std::string got_rr, got_wrr;
  d::Endpoint e;
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(rr.select(e), d::kOk);
    got_rr += e.instance_id;
    ASSERT_EQ(wrr.select(e), d::kOk);
    got_wrr += e.instance_id;
  }
  EXPECT_EQ(got_rr, "abcabca");
  EXPECT_EQ(got_wrr, "aabacaa");  // DISC-SEL-3: weights 5, 1, 1
  d::Selector none(r, "nothing", d::SelectorKind::Random, 1);
  EXPECT_EQ(none.select(e), d::kNotFound);
  EXPECT_FALSE(d::selector_kind("least-loaded"));
}

TEST(Discovery, RandomSelectorsSeededAndWithinChiSquare) {
  d::Registry r;
  const std::vector<std::uint64_t> weights{1, 2, 3, 4};
  for (std::size_t i = 0; i < weights.size(); ++i) r.register_instance(ep(std::string(1, 'a' + i), weights[i]));
  for (auto kind : {d::SelectorKind::Random, d::SelectorKind::WeightedRandom}) {
    int passed = 0;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      d::Selector s(r, "echo", kind, seed), same(r, "echo", kind, seed);
      std::map<std::string, double> count;
      d::Endpoint e, e2;
      const int n = 2000 * 4;
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(s.select(e), d::kOk);
        ASSERT_EQ(same.select(e2), d::kOk);
        ASSERT_EQ(e.instance_id, e2.instance_id);  // DISC-SEL-5: same seed, same sequence
        count[e.instance_id] += 1;
      }
      double chi = 0;
      for (std::size_t i = 0; i < weights.size(); ++i) {
        const double expect = kind == d::SelectorKind::Random ? n / 4.0 : n * weights[i] / 10.0;
        const double o = count[std::string(1, 'a' + i)];
        chi += (o - expect) * (o - expect) / expect;
      }
      if (chi < 16.27) ++passed;  // 0.999 quantile, 3 degrees of freedom (DISC-SEL-4)
    }
    EXPECT_GE(passed, 4);
  }
}

TEST(Discovery, SharedBetweenThreads) {
  d::Registry r;
  std::atomic<int> added{0}, removed{0};
  std::uint64_t h;
  r.watch("echo", [&](d::EventType t, const d::Endpoint&) { (t == d::EventType::Added ? added : removed)++; }, h);
  constexpr int kThreads = 8, kRounds = 500;
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::vector<d::Endpoint> l;
      for (int i = 0; i < kRounds; ++i) {
        const std::string id = "c" + std::to_string(t) + "-" + std::to_string(i);
        if (r.register_instance(ep(id, 1)) != d::kOk) ++failures;
        r.discover("echo", l);
        if (std::none_of(l.begin(), l.end(), [&](const d::Endpoint& e) { return e.instance_id == id; })) ++failures;
        if (i % 2 && r.deregister("echo", id) != d::kOk) ++failures;
      }
    });
  for (auto& t : ts) t.join();
  r.deliver();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(added, kThreads * kRounds);
  EXPECT_EQ(removed, kThreads * kRounds / 2);
  std::vector<d::Endpoint> l;
  r.discover("echo", l);
  EXPECT_EQ(l.size(), static_cast<std::size_t>(kThreads * kRounds / 2));
  // DISC-THREAD-2: concurrent round-robin picks over a fixed list are exactly even
  d::Selector rr(r, "echo", d::SelectorKind::RoundRobin, 0);
  std::mutex mu;
  std::map<std::string, int> picks;
  ts.clear();
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&] {
      d::Endpoint e;
      for (std::size_t i = 0; i < l.size(); ++i) {
        rr.select(e);
        std::lock_guard lock(mu);
        ++picks[e.instance_id];
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(picks.size(), l.size());
  for (const auto& [id, n] : picks) EXPECT_EQ(n, kThreads) << id;
}

TEST(Discovery, EtcdMapping) {
  std::string key, value;
  ASSERT_EQ(d::etcd_encode("frameproof/services", {"frameproof.Echo", "echo-1", "127.0.0.1", 7000, 100}, key, value), d::kOk);
  EXPECT_EQ(key, "/frameproof/services/frameproof.Echo/echo-1");
  EXPECT_EQ(value, R"({"service":"frameproof.Echo","instance_id":"echo-1","host":"127.0.0.1","port":7000,"weight":100})");
  d::Endpoint e;
  ASSERT_EQ(d::etcd_decode("frameproof/services", key, value, e), d::kOk);
  EXPECT_EQ(e, (d::Endpoint{"frameproof.Echo", "echo-1", "127.0.0.1", 7000, 100}));
  // DISC-ETCD-3: unknown members ignored, weight defaults to 100; mismatches and bad types skipped
  EXPECT_EQ(d::etcd_decode("p", "/p/s/i", R"({"service":"s","instance_id":"i","host":"h","port":1,"x":[1]})", e), d::kOk);
  EXPECT_EQ(e.weight, 100u);
  EXPECT_EQ(d::etcd_decode("p", "/p/s/j", R"({"service":"s","instance_id":"i","host":"h","port":1})", e), d::kInvalidArgument);
  EXPECT_EQ(d::etcd_decode("p", "/p/s/i", R"({"service":"s","instance_id":"i","host":"h","port":true})", e), d::kInvalidArgument);
  EXPECT_EQ(d::etcd_decode("p", "/p/s/i", R"({"service":"s","instance_id":"i","host":"h","port":1.0})", e), d::kInvalidArgument);
  EXPECT_EQ(d::etcd_decode("p", "/p/s/i", R"({"service":"s","instance_id":"i","host":"h","port":70000})", e), d::kInvalidArgument);
  EXPECT_EQ(d::etcd_decode("p", "/p/s/i", "not json", e), d::kInvalidArgument);
  EXPECT_EQ(d::etcd_decode("/p", "//p/s/i", R"({"service":"s","instance_id":"i","host":"h","port":1})", e), d::kInvalidArgument);
  EXPECT_EQ(d::etcd_encode("p/", {"s", "i", "h", 1, 1}, key, value), d::kInvalidArgument);
}
