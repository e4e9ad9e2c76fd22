// Small helpers shared by fp-server and fp-load: option parsing and address resolution.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fp::cli {

// --name value / --name=value / --flag options; anything else is an error.
class Args {
 public:
  Args(int argc, char** argv, std::vector<std::string> flags, std::vector<std::string> valued)
      : prog_(argc > 0 ? argv[0] : "?") {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        help_ = true;
        continue;
      }
      if (a.rfind("--", 0) != 0) die("unexpected argument '" + a + "'");
      std::string name = a.substr(2);
      std::optional<std::string> value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      if (contains(flags, name)) {
        if (value) die("--" + name + " takes no value");
        values_[name] = "1";
      } else if (contains(valued, name)) {
        if (!value) {
          if (i + 1 >= argc) die("--" + name + " needs a value");
          value = argv[++i];
        }
        values_[name] = *value;
      } else {
        die("unknown option --" + name);
      }
    }
  }

  [[nodiscard]] bool help() const { return help_; }
  [[nodiscard]] bool has(const std::string& name) const { return values_.count(name) != 0; }
  [[nodiscard]] std::string str(const std::string& name, const std::string& def = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second;
  }
  template <class T>
  T num(const std::string& name, T def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    T v{};
    const std::string& s = it->second;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) die("--" + name + ": not a number: '" + s + "'");
    return v;
  }
  [[noreturn]] void die(const std::string& msg) const {
    std::fprintf(stderr, "%s: %s\n", prog_.c_str(), msg.c_str());
    std::exit(2);
  }

 private:
  static bool contains(const std::vector<std::string>& v, const std::string& s) {
    for (const auto& x : v)
      if (x == s) return true;
    return false;
  }
  std::string prog_;
  bool help_ = false;
  std::map<std::string, std::string> values_;
};

struct HostPort {
  std::string host;
  std::string port;
};

// "host:port", "[v6]:port".
inline std::optional<HostPort> split_host_port(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') return std::nullopt;
    return HostPort{std::string(s.substr(1, close - 1)), std::string(s.substr(close + 2))};
  }
  auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return HostPort{std::string(s.substr(0, colon)), std::string(s.substr(colon + 1))};
}

// Resolves to one socket address (numeric hosts and names such as localhost).
inline bool resolve(const HostPort& hp, bool passive, sockaddr_storage& out, socklen_t& len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  if (getaddrinfo(hp.host.empty() ? nullptr : hp.host.c_str(), hp.port.c_str(), &hints, &res) != 0 || !res)
    return false;
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

inline int port_of(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
}

}  // namespace fp::cli
