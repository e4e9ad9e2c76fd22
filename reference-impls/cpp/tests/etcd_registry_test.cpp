// The registry on etcd (spec/discovery.md §8, DISC-ETCD-1..7) against a private etcd (Debian's
// etcd-server) on 127.0.0.1 with a temporary data dir, one per test; skipped where there is no
// etcd. The suite's script (discovery_etcd_checks.py) covers the keys, values, leases and events
// of a plain run; these tests cover what it cannot: a lost lease, etcd stopping and restarting
// under a registry, unwatch, close vs abandon.
#include "frameproof/etcd_registry.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "../src/etcd_gateway.hpp"

namespace d = fp::discovery;
namespace gw = fp::discovery::etcd_gw;
using namespace std::chrono_literals;

namespace {

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

std::string etcd_binary() {
  for (const char* p : {"/usr/bin/etcd", "/usr/local/bin/etcd"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

bool within(std::chrono::milliseconds limit, const std::function<bool()>& pred) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

// etcd on 127.0.0.1; stop() and start() again keep the data (a restart).
class LocalEtcd {
 public:
  LocalEtcd() : client_(free_port()), peer_(free_port()) {
    char tmpl[] = "/tmp/fp-etcd-cpp-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~LocalEtcd() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_); }

  bool start() {
    const std::string c = "http://127.0.0.1:" + std::to_string(client_), p = "http://127.0.0.1:" + std::to_string(peer_);
    const std::string bin = etcd_binary(), data = dir_ + "/data", log = dir_ + "/etcd.log", cluster = "fp=" + p;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl(bin.c_str(), bin.c_str(), "--name", "fp", "--data-dir", data.c_str(), "--listen-client-urls", c.c_str(),
              "--advertise-client-urls", c.c_str(), "--listen-peer-urls", p.c_str(), "--initial-advertise-peer-urls",
              p.c_str(), "--initial-cluster", cluster.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    gw::Gateway g(endpoint());
    return within(20s, [&] {
      return g.post("/v3/kv/range", {{"key", gw::b64("/")}}, gw::Clock::now() + 500ms).ok();
    });
  }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGTERM);
    int st;
    const bool gone = within(10s, [&] { return ::waitpid(pid_, &st, WNOHANG) == pid_; });
    if (!gone) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
    }
    pid_ = -1;
  }

 private:
  int client_, peer_;
  std::string dir_;
  pid_t pid_ = -1;
};

d::Endpoint ep(std::string id, std::uint64_t port = 1, std::string svc = "svc.a") {
  return {std::move(svc), std::move(id), "10.0.0.1", port, 1};
}

std::vector<std::string> ids(const std::vector<d::Endpoint>& l) {
  std::vector<std::string> out;
  for (const auto& e : l) out.push_back(e.instance_id);
  return out;
}

struct Events {
  std::mutex mu;
  std::vector<std::pair<d::EventType, d::Endpoint>> got;
  d::Callback cb() {
    return [this](d::EventType t, const d::Endpoint& e) {
      std::lock_guard g(mu);
      got.emplace_back(t, e);
    };
  }
  std::vector<std::pair<d::EventType, d::Endpoint>> snapshot() {
    std::lock_guard g(mu);
    return got;
  }
};

class EtcdRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (etcd_binary().empty()) GTEST_SKIP() << "etcd is not installed (Debian: etcd-server)";
    etcd_ = std::make_unique<LocalEtcd>();
    ASSERT_TRUE(etcd_->start()) << "etcd did not start";
    gw_ = std::make_unique<gw::Gateway>(etcd_->endpoint());
  }
  d::EtcdConfig cfg(std::string prefix, int ttl_s = 10, std::chrono::milliseconds timeout = 2000ms) {
    d::EtcdConfig c;
    c.endpoint = etcd_->endpoint();
    c.prefix = std::move(prefix);
    c.lease_ttl = std::chrono::seconds(ttl_s);
    c.request_timeout = timeout;
    return c;
  }
  // every kv under `key` as etcd stores it (key, value, lease decoded)
  nlohmann::json range(const std::string& key) {
    const gw::Reply r = gw_->post("/v3/kv/range", {{"key", gw::b64(key)}, {"range_end", gw::b64(gw::prefix_end(key))}},
                                  gw::Clock::now() + 2s);
    return r.ok() && r.body.contains("kvs") ? r.body["kvs"] : nlohmann::json::array();
  }
  std::unique_ptr<LocalEtcd> etcd_;
  std::unique_ptr<gw::Gateway> gw_;
};

}  // namespace

TEST(EtcdGateway, Base64AndPrefixEnd) {
  std::string out;
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    ASSERT_TRUE(gw::unb64(gw::b64(s), out));
    EXPECT_EQ(out, s);
  }
  EXPECT_EQ(gw::b64("/a"), "L2E=");
  EXPECT_FALSE(gw::unb64("abc", out));
  EXPECT_EQ(gw::prefix_end("/p/s/"), "/p/s0");
  EXPECT_EQ(gw::prefix_end("a\xff"), "b");
  EXPECT_THROW(d::EtcdRegistry(d::EtcdConfig{"127.0.0.1:1", "/bad", 10s, 1000ms}), std::invalid_argument);
}

// DISC-ETCD-1,2,4,5: keys, values, one lease with the TTL, list order by create revision,
// replacement in place, NOT_FOUND, invalid names.
TEST_F(EtcdRegistryTest, KeysValuesLeaseAndOrder) {
  d::EtcdRegistry r(cfg("fp-test/keys", 3));
  EXPECT_EQ(r.register_instance(ep("i1", 7001)), d::kOk);
  EXPECT_EQ(r.register_instance(ep("i0", 7000)), d::kOk);
  EXPECT_EQ(r.register_instance(ep("x", 1, "svc.b")), d::kOk);
  EXPECT_EQ(r.register_instance(ep("i1", 7009)), d::kOk);  // replaced, keeps its place
  std::vector<d::Endpoint> l;
  ASSERT_EQ(r.discover("svc.a", l), d::kOk);
  EXPECT_EQ(ids(l), (std::vector<std::string>{"i1", "i0"}));
  EXPECT_EQ(l[0].port, 7009u);
  EXPECT_EQ(r.deregister("svc.a", "i0"), d::kOk);
  EXPECT_EQ(r.deregister("svc.a", "i0"), d::kNotFound);
  EXPECT_EQ(r.deregister("svc.none", "i0"), d::kNotFound);
  EXPECT_EQ(r.register_instance(ep("bad/id")), d::kInvalidArgument);
  EXPECT_EQ(r.discover("bad/svc", l), d::kInvalidArgument);
  ASSERT_EQ(r.discover("svc.none", l), d::kOk);
  EXPECT_TRUE(l.empty());

  const auto kvs = range("/fp-test/keys/");
  ASSERT_EQ(kvs.size(), 2u);
  std::string key, value;
  ASSERT_TRUE(gw::unb64(kvs[0]["key"].get<std::string>(), key));
  ASSERT_TRUE(gw::unb64(kvs[0]["value"].get<std::string>(), value));
  EXPECT_EQ(key, "/fp-test/keys/svc.a/i1");
  EXPECT_EQ(value, R"({"service":"svc.a","instance_id":"i1","host":"10.0.0.1","port":7009,"weight":1})");
  EXPECT_EQ(kvs[0]["lease"], kvs[1]["lease"]);
  const gw::Reply ttl = gw_->post("/v3/lease/timetolive", {{"ID", kvs[0]["lease"]}}, gw::Clock::now() + 2s);
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(gw::int_of(ttl.body, "grantedTTL"), 3);
  // keep-alives: the keys outlive the TTL
  std::this_thread::sleep_for(4500ms);
  EXPECT_EQ(range("/fp-test/keys/").size(), 2u);
  r.close();  // revokes the lease: the keys go at once
  EXPECT_EQ(range("/fp-test/keys/").size(), 0u);
}

// DISC-ETCD-6: ADDED, UPDATED, REMOVED (with the registered endpoint), in revision order, on the
// registry's thread; no replay; other services' changes not reported; unwatch stops the events.
TEST_F(EtcdRegistryTest, WatchEvents) {
  d::EtcdRegistry r(cfg("fp-test/watch"));
  ASSERT_EQ(r.register_instance(ep("old")), d::kOk);
  Events a, b;
  std::uint64_t ha = 0, hb = 0;
  ASSERT_EQ(r.watch("svc.a", a.cb(), ha), d::kOk);
  ASSERT_EQ(r.watch("svc.b", b.cb(), hb), d::kOk);
  EXPECT_NE(ha, hb);
  ASSERT_EQ(r.register_instance(ep("i0", 1)), d::kOk);
  ASSERT_EQ(r.register_instance(ep("i0", 2)), d::kOk);
  ASSERT_EQ(r.register_instance(ep("z", 1, "svc.b")), d::kOk);
  ASSERT_EQ(r.deregister("svc.a", "i0"), d::kOk);
  ASSERT_TRUE(r.wait_delivered(3000ms, hb));  // one watcher caught up
  EXPECT_EQ(b.snapshot().size(), 1u);
  ASSERT_TRUE(r.wait_delivered(3000ms));
  const auto got = a.snapshot();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], std::make_pair(d::EventType::Added, ep("i0", 1)));
  EXPECT_EQ(got[1], std::make_pair(d::EventType::Updated, ep("i0", 2)));
  EXPECT_EQ(got[2], std::make_pair(d::EventType::Removed, ep("i0", 2)));
  EXPECT_EQ(b.snapshot().size(), 1u);
  EXPECT_EQ(r.unwatch(ha), d::kOk);
  EXPECT_EQ(r.unwatch(ha), d::kNotFound);
  ASSERT_EQ(r.register_instance(ep("i1")), d::kOk);
  ASSERT_TRUE(r.wait_delivered(3000ms));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(a.snapshot().size(), 3u);
}

// A callback may call the registry (and unwatch itself) without deadlock (DISC-WATCH-3/5).
TEST_F(EtcdRegistryTest, CallbackCallsTheRegistry) {
  d::EtcdRegistry r(cfg("fp-test/reentrant"));
  std::uint64_t h = 0;
  std::atomic<int> calls{0};
  std::atomic<d::Code> inner{d::kInternalError};
  ASSERT_EQ(r.watch("svc.a", [&](d::EventType, const d::Endpoint&) {
    ++calls;
    std::vector<d::Endpoint> l;
    inner = r.discover("svc.a", l);
    r.unwatch(h);
  }, h), d::kOk);
  ASSERT_EQ(r.register_instance(ep("i0")), d::kOk);
  ASSERT_TRUE(within(3s, [&] { return calls == 1; }));
  ASSERT_EQ(r.register_instance(ep("i1")), d::kOk);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(inner, d::kOk);
}

// DISC-ETCD-5: abandoned (a crash), the keys go with the lease; another registry's watcher sees
// REMOVED.
TEST_F(EtcdRegistryTest, AbandonedKeysExpire) {
  d::EtcdRegistry other(cfg("fp-test/crash"));
  Events ev;
  std::uint64_t h = 0;
  ASSERT_EQ(other.watch("svc.a", ev.cb(), h), d::kOk);
  {
    d::EtcdRegistry r(cfg("fp-test/crash", 2));
    ASSERT_EQ(r.register_instance(ep("i0")), d::kOk);
    r.abandon();
  }
  EXPECT_EQ(range("/fp-test/crash/").size(), 1u);
  EXPECT_TRUE(within(4s, [&] { return range("/fp-test/crash/").empty(); }));
  EXPECT_TRUE(within(2s, [&] { return ev.snapshot().size() == 2; }));
  const auto got = ev.snapshot();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], std::make_pair(d::EventType::Removed, ep("i0")));
}

// DISC-ETCD-7: a lease etcd forgot is replaced and the instances written again under the new one.
TEST_F(EtcdRegistryTest, LostLeaseIsReplaced) {
  d::EtcdRegistry r(cfg("fp-test/lease", 2));
  ASSERT_EQ(r.register_instance(ep("i0")), d::kOk);
  const auto kvs = range("/fp-test/lease/");
  ASSERT_EQ(kvs.size(), 1u);
  ASSERT_TRUE(gw_->post("/v3/lease/revoke", {{"ID", kvs[0]["lease"]}}, gw::Clock::now() + 2s).ok());
  std::vector<d::Endpoint> l;
  ASSERT_EQ(r.discover("svc.a", l), d::kOk);
  EXPECT_TRUE(l.empty());
  EXPECT_TRUE(within(4s, [&] { return r.discover("svc.a", l) == d::kOk && ids(l) == std::vector<std::string>{"i0"}; }));
  const auto again = range("/fp-test/lease/");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0]["lease"], kvs[0]["lease"]);
}

// DISC-ETCD-7: CONNECTION_ERROR within the request timeout while etcd is away; after it is back,
// operations succeed and the watch resumes, no event twice in a row.
TEST_F(EtcdRegistryTest, EtcdRestarts) {
  d::EtcdRegistry r(cfg("fp-test/restart", 2, 1000ms));
  Events ev;
  std::uint64_t h = 0;
  ASSERT_EQ(r.register_instance(ep("i0")), d::kOk);
  ASSERT_EQ(r.watch("svc.a", ev.cb(), h), d::kOk);
  etcd_->stop();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(r.register_instance(ep("i1")), d::kConnectionError);
  std::vector<d::Endpoint> l;
  EXPECT_EQ(r.discover("svc.a", l), d::kConnectionError);
  std::uint64_t h2 = 0;
  EXPECT_EQ(r.watch("svc.a", ev.cb(), h2), d::kConnectionError);
  EXPECT_EQ(r.deregister("svc.a", "i9"), d::kConnectionError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4500ms);
  ASSERT_TRUE(etcd_->start());
  EXPECT_TRUE(within(10s, [&] { return r.register_instance(ep("i2")) == d::kOk; }));
  EXPECT_TRUE(within(10s, [&] {
    if (r.discover("svc.a", l) != d::kOk) return false;
    const auto v = ids(l);
    return std::find(v.begin(), v.end(), "i0") != v.end() && std::find(v.begin(), v.end(), "i2") != v.end();
  }));
  EXPECT_TRUE(within(10s, [&] {
    const auto got = ev.snapshot();
    return std::find(got.begin(), got.end(), std::make_pair(d::EventType::Added, ep("i2"))) != got.end();
  }));
  const auto got = ev.snapshot();
  for (std::size_t i = 1; i < got.size(); ++i) EXPECT_FALSE(got[i] == got[i - 1]) << "event " << i << " twice";
}

// DISC-ETCD-7: no etcd at all: CONNECTION_ERROR, within the request timeout.
TEST(EtcdRegistryDown, ConnectionErrorWithinTheTimeout) {
  d::EtcdConfig c;
  c.endpoint = "127.0.0.1:" + std::to_string(free_port());
  c.prefix = "fp-test/down";
  c.request_timeout = 500ms;
  d::EtcdRegistry r(c);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<d::Endpoint> l;
  std::uint64_t h = 0;
  EXPECT_EQ(r.register_instance(ep("i0")), d::kConnectionError);
  EXPECT_EQ(r.discover("svc.a", l), d::kConnectionError);
  EXPECT_EQ(r.watch("svc.a", [](d::EventType, const d::Endpoint&) {}, h), d::kConnectionError);
  EXPECT_EQ(r.deregister("svc.a", "i0"), d::kConnectionError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2500ms);
  // selectors over it answer the registry's error
  d::Selector s(r, "svc.a", d::SelectorKind::RoundRobin, 1);
  d::Endpoint e;
  EXPECT_EQ(s.select(e), d::kConnectionError);
}
