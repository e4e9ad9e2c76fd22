#include "etcd_gateway.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace fp::discovery::etcd_gw {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// The options every request of ours sets: POST of JSON, no proxy, no "Expect: 100-continue",
// no signals (several threads).
curl_slist* json_headers() {
  static curl_slist* headers = [] {
    curl_slist* h = curl_slist_append(nullptr, "Content-Type: application/json");
    return curl_slist_append(h, "Expect:");
  }();
  return headers;
}

void common(CURL* c, const std::string& url, const std::string& body) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, json_headers());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
}

long ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<long>(std::max<std::int64_t>(left, 0));
}

}  // namespace

std::string b64(std::string_view raw) {
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

bool unb64(std::string_view text, std::string& out) {
  out.clear();
  if (text.size() % 4 != 0) return false;
  if (text.empty()) return true;
  out.resize(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return false;
  // EVP_DecodeBlock keeps the bytes the padding stands for: drop them
  std::size_t len = static_cast<std::size_t>(n);
  if (text.back() == '=') --len;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --len;
  out.resize(len);
  return true;
}

std::string prefix_end(std::string key) {
  while (!key.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(key.back());
    if (last < 0xFF) {
      ++last;
      return key;
    }
    key.pop_back();
  }
  return std::string(1, '\0');
}

std::int64_t int_of(const nlohmann::json& j, const char* member, std::int64_t dflt) {
  if (!j.is_object()) return dflt;
  auto it = j.find(member);
  if (it == j.end()) return dflt;
  try {
    if (it->is_string()) return std::stoll(it->get<std::string>());
    if (it->is_number_integer()) return it->get<std::int64_t>();
  } catch (const std::exception&) {
  }
  return dflt;
}

// ---------------------------------------------------------------------------------------------

Gateway::Gateway(const std::string& endpoints) {
  std::size_t at = 0;
  while (at <= endpoints.size()) {
    std::size_t comma = endpoints.find(',', at);
    if (comma == std::string::npos) comma = endpoints.size();
    std::string e = endpoints.substr(at, comma - at);
    e.erase(0, e.find_first_not_of(" \t"));
    e.erase(e.find_last_not_of(" \t") + 1);
    if (!e.empty()) bases_.push_back("http://" + e);
    at = comma + 1;
  }
  if (bases_.empty()) bases_.push_back("http://");  // every call then fails: CONNECTION_ERROR
  global_init();
}

void Gateway::failed(std::size_t index) {
  std::size_t expected = index;
  current_.compare_exchange_strong(expected, (index + 1) % bases_.size());
}

Gateway::~Gateway() {
  for (CURL* c : idle_) curl_easy_cleanup(c);
}

Reply Gateway::post(const std::string& path, const nlohmann::json& body, Clock::time_point deadline) {
  CURL* c = nullptr;
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      c = idle_.back();
      idle_.pop_back();
    }
  }
  if (!c) c = curl_easy_init();
  if (!c) return {false, 0, nullptr, "curl_easy_init failed"};
  Reply r;
  const std::string text = body.dump();
  std::string data;
  for (std::size_t tried = 1;; ++tried) {
    const long left = ms_left(deadline);
    if (left <= 0) break;
    const std::size_t at = current();
    const std::string url = bases_[at] + path;
    curl_easy_reset(c);
    common(c, url, text);
    data.clear();
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &data);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left);
    const CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) {
      r.reached = true;
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
      r.body = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
      if (r.body.is_discarded()) r.body = nullptr;
      if (r.status != 200) {
        r.error = r.body.is_object() ? r.body.value("message", r.body.value("error", data)) : data;
      }
      break;
    }
    r.error = curl_easy_strerror(rc);
    failed(at);
    if (rc == CURLE_OPERATION_TIMEDOUT) break;
    // refused, reset, closed early: this member is away or restarting; the next one at once, and a
    // pause once every member was tried; again until the deadline
    if (tried % bases_.size() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<long>(100, ms_left(deadline))));
  }
  std::lock_guard lock(mu_);
  idle_.push_back(c);
  return r;
}

// ---------------------------------------------------------------------------------------------

WatchStream::WatchStream() : multi_(curl_multi_init()) {
  global_init();
  if (!multi_) throw std::runtime_error("curl_multi_init failed");
}

WatchStream::~WatchStream() { curl_multi_cleanup(multi_); }

void WatchStream::stop() {
  stopped_ = true;
  curl_multi_wakeup(multi_);
}

namespace {

struct LineSink {
  const WatchStream::OnLine* on_line;
  std::string buf;
  bool stop = false;
};

std::size_t on_data(char* data, std::size_t size, std::size_t n, void* user) {
  auto* s = static_cast<LineSink*>(user);
  s->buf.append(data, size * n);
  std::size_t start = 0, nl;
  while (!s->stop && (nl = s->buf.find('\n', start)) != std::string::npos) {
    const std::string_view line(s->buf.data() + start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !(*s->on_line)(j)) s->stop = true;
  }
  s->buf.erase(0, start);
  return s->stop ? 0 : size * n;  // 0 ends the transfer
}

}  // namespace

void WatchStream::run(const std::string& url, const nlohmann::json& body, std::chrono::milliseconds connect_timeout,
                      const OnLine& on_line) {
  if (stopped_) return;
  CURL* c = curl_easy_init();
  if (!c) return;
  LineSink sink{&on_line, {}, false};
  common(c, url, body.dump());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max<std::int64_t>(connect_timeout.count(), 1)));
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_multi_add_handle(multi_, c);
  while (!stopped_) {
    int running = 0;
    if (curl_multi_perform(multi_, &running) != CURLM_OK || running == 0) break;
    curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);  // woken by stop()
  }
  curl_multi_remove_handle(multi_, c);
  curl_easy_cleanup(c);
}

}  // namespace fp::discovery::etcd_gw
