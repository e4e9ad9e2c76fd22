// Small helpers shared by fp-server and fp-load: option parsing (usage errors exit 2, the
// --codec / --protocol pair) and address resolution.
#pragma once

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frameproof/registry.hpp"

namespace fp::cli {

// "standard|length-field": the registered protocol names, for usage texts.
inline std::string protocol_choices() {
  std::string s;
  for (std::string_view n : protocol_names()) s += (s.empty() ? "" : "|") + std::string(n);
  return s;
}

// --name value / --name=value / --flag options; anything else is a usage error: one line
// "usage error: ..." and the usage on stderr, exit status 2. --help / -h: the usage on stdout,
// exit 0.
class Args {
 public:
  Args(int argc, char** argv, std::string usage, std::vector<std::string> flags, std::vector<std::string> valued)
      : usage_(std::move(usage)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        std::fputs(usage_.c_str(), stdout);
        std::exit(0);
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
  // A number >= 0 with a fraction (seconds).
  double seconds(const std::string& name) const {
    const std::string s = str(name);
    double v = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !(v >= 0) || v > 1e9) die("--" + name + ": not a number of seconds: '" + s + "'");
    return v;
  }
  [[noreturn]] void die(const std::string& msg) const {
    std::fprintf(stderr, "usage error: %s\n%s", msg.c_str(), usage_.c_str());
    std::exit(2);
  }

 private:
  static bool contains(const std::vector<std::string>& v, const std::string& s) {
    for (const auto& x : v)
      if (x == s) return true;
    return false;
  }
  std::string usage_;
  std::map<std::string, std::string> values_;
};

// The protocol of a program: --codec JSON or --protocol NAME (short for {"protocol": NAME}),
// exactly one. The configuration must be valid and supported.
struct CodecOption {
  AnyProtocol protocol;
  std::string json;  // the codec object as given (key order kept), compact
};

inline CodecOption codec_option(const Args& args) {
  if (args.has("codec") == args.has("protocol")) args.die("give exactly one of --codec JSON and --protocol NAME");
  const std::string flag = args.has("codec") ? "--codec" : "--protocol";
  try {
    nlohmann::ordered_json j;
    if (args.has("codec")) {
      try {
        j = nlohmann::ordered_json::parse(args.str("codec"));
      } catch (const nlohmann::json::parse_error& e) {
        args.die("--codec: not JSON: " + std::string(e.what()));
      }
    } else {
      j["protocol"] = args.str("protocol");
    }
    CodecOption c{parse_codec(j), j.dump()};
    if (auto e = validate(c.protocol)) args.die(flag + ": " + e->requirement + ": " + e->message);
    if (auto why = unsupported(c.protocol)) args.die(flag + ": " + *why);
    return c;
  } catch (const UnknownProtocol& e) {
    args.die(flag + ": " + e.what() + " (registered: " + protocol_choices() + ")");
  } catch (const CodecError& e) {
    args.die(flag + ": " + e.what());
  }
}

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
