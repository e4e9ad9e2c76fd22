// etcd's v3 JSON gateway over libcurl, for the etcd-backed registry (etcd_registry.cpp): unary
// POSTs (/v3/kv/*, /v3/lease/*) bounded by a deadline, and /v3/watch as a stream of JSON lines.
// Keys and values travel base64-encoded (OpenSSL's EVP base64). Private to the registry.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace fp::discovery::etcd_gw {

using Clock = std::chrono::steady_clock;

std::string b64(std::string_view raw);
// false when `text` is not base64
bool unb64(std::string_view text, std::string& out);
// The range end of every key that starts with `key` (etcd's prefix convention).
std::string prefix_end(std::string key);
// An int64 that the gateway writes as a JSON string ("123"), or as a number; `dflt` when absent.
std::int64_t int_of(const nlohmann::json& j, const char* member, std::int64_t dflt = 0);

struct Reply {
  bool reached = false;  // an HTTP answer came before the deadline
  long status = 0;       // its HTTP status
  nlohmann::json body;   // parsed (null when it was not JSON)
  std::string error;     // etcd's message for a non-200 answer, or why nothing came
  bool ok() const { return reached && status == 200 && body.is_object(); }
};

// Unary calls; safe to use from several threads (each call takes an idle curl handle, so that
// connections are reused).
class Gateway {
 public:
  // "host:port", or a cluster's members comma-separated (DISC-ETCD-8): calls go to the current
  // member, and one that refuses or drops the connection makes the next one current.
  explicit Gateway(const std::string& endpoints);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // POSTs `body` to `path`. A failed connection (etcd down or restarting) is retried every 100 ms
  // until `deadline`; the call never outlives it.
  Reply post(const std::string& path, const nlohmann::json& body, Clock::time_point deadline);
  // "http://host:port" of the current member, and its index (for failed()).
  std::string base() const { return bases_[current_.load() % bases_.size()]; }
  std::size_t current() const { return current_.load() % bases_.size(); }
  // The member at `index` failed: the next one is current (unless another call moved on already).
  void failed(std::size_t index);

 private:
  std::vector<std::string> bases_;
  std::atomic<std::size_t> current_{0};
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

// One /v3/watch stream. run() blocks until the stream ends (etcd closed it or went away, the
// line handler said stop) or stop() is called from another thread.
class WatchStream {
 public:
  using OnLine = std::function<bool(const nlohmann::json&)>;  // false: end the stream
  WatchStream();
  ~WatchStream();
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  // connect_timeout bounds the connection only (the stream itself has no end).
  void run(const std::string& url, const nlohmann::json& body, std::chrono::milliseconds connect_timeout,
           const OnLine& on_line);
  void stop();  // thread-safe; run() returns soon after, and every later run() at once
  bool stopped() const { return stopped_.load(); }

 private:
  CURLM* multi_;
  std::atomic<bool> stopped_{false};
};

}  // namespace fp::discovery::etcd_gw
