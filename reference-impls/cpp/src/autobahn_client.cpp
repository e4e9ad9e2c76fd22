// fp-autobahn-client: the Autobahn testsuite's client protocol against its fuzzingserver
// (reference-impls/README.md, impl.json key "autobahn_client"):
//   GET /getCaseCount (one text message: the count), then for each case
//   GET /runCase?case=I&agent=NAME, echoing every text and binary message back (same opcode, same
//   payload) until the server closes, then GET /updateReports?agent=NAME.
// Each connection is the websocket module's echo session (WsSession) in the client role: frames
// in unmasked, replies masked with a fresh key each (WS-MASK-*), pings answered, the close
// handshake (WS-CLOSE-5), protocol errors closed with their code (WS-ERR-1); no message size
// limit below 64 MiB. Exit status 0 when every case ran (the verdicts are Autobahn's), 1 if one
// could not run, 2 usage error.
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

#include "frameproof/websocket.hpp"
#include "net_common.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kLimit = 64ull * 1024 * 1024;
constexpr auto kCloseWait = std::chrono::seconds(5);  // after our close frame: the server closes TCP first

std::string usage() {
  return "usage: fp-autobahn-client --connect HOST:PORT --agent NAME [--cases all|N] [--case-timeout SECONDS]\n"
         "                          [--codec JSON]\n"
         "  --cases N         only the first N cases (default: all)\n"
         "  --codec JSON      a websocket codec; websocket.permessage_deflate true offers permessage-deflate\n"
         "                    on every case's connection (spec/websocket-deflate.md)\n"
         "  --case-timeout S  seconds per case (default 120)\n";
}

// What the session writes, and (for /getCaseCount) the text messages it receives.
struct Out {
  bool collect = false;
  fp::Bytes bytes;
  std::vector<std::string> messages;
  template <class F>
  void frame(const F& f) {
    if (collect && f.opcode == fp::ws::kText && f.fin)
      messages.emplace_back(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
  }
  void reply(fp::ByteView header, fp::ByteView payload, bool essential = false) {
    if (collect && !essential) return;  // messages are kept, not echoed
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
  }
};

class Connection {
 public:
  Connection(const fp::cli::HostPort& hp, std::string hostport, Clock::time_point deadline, bool deflate)
      : hp_(hp), hostport_(std::move(hostport)), deadline_(deadline), deflate_(deflate) {}
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }

  // Runs one connection to `path` to its end; "" or why it failed.
  std::string run(const std::string& path, Out& out) {
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (!fp::cli::resolve(hp_, false, addr, len)) return "cannot resolve " + hostport_;
    fd_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) < 0)
      return "connect failed: " + std::string(std::strerror(errno));
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const fp::WsClientOpening o = fp::WsClientOpening::make(hostport_, path, {}, deflate_);
    std::string request = o.request;
    request.insert(request.size() - 2, "User-Agent: frameproof-cpp-autobahn-client\r\n");
    if (!send_all(fp::ByteView(reinterpret_cast<const std::uint8_t*>(request.data()), request.size())))
      return "cannot send the opening handshake";
    std::string head;
    std::size_t end;
    char buf[4096];
    while ((end = head.find("\r\n\r\n")) == std::string::npos) {
      if (head.size() > 65536) return "handshake answer head over 64 KiB";
      const ssize_t n = recv_some(buf, sizeof buf);
      if (n <= 0) return "connection closed or timed out during the handshake";
      head.append(buf, static_cast<std::size_t>(n));
    }
    std::optional<fp::wsd::Params> agreed;
    if (std::string why = o.check(std::string_view(head).substr(0, end + 4), &agreed); !why.empty()) return why;
    const fp::WebSocket proto(fp::Limits{kLimit}, /*client=*/true, kLimit);
    fp::WsSession session(proto, /*own_role=*/true);
    if (agreed) session.enable_deflate(*agreed);
    fp::ByteView rest(reinterpret_cast<const std::uint8_t*>(head.data()) + end + 4, head.size() - end - 4);
    session.feed(rest, out);
    std::optional<Clock::time_point> closing;
    while (true) {
      if (!out.bytes.empty()) {
        if (!send_all(out.bytes)) break;  // the server may have closed already
        out.bytes.clear();
      }
      if (session.closed() && !closing) closing = Clock::now();
      const auto until = closing ? std::min(deadline_, *closing + kCloseWait) : deadline_;
      if (Clock::now() >= until) {
        if (!closing) return "the server did not end the connection in time";
        break;
      }
      if (session.closed()) {  // wait for the server's FIN, discarding what comes
        const ssize_t n = recv_some(buf, sizeof buf, until);
        if (n == 0 || (n < 0 && errno != EAGAIN)) break;
        continue;
      }
      auto space = session.prepare();
      const ssize_t n = recv_some(reinterpret_cast<char*>(space.data()), space.size(), until);
      if (n > 0) {
        session.commit(static_cast<std::size_t>(n));
        session.process(out);
      } else if (n == 0 || errno != EAGAIN) {
        session.end_of_input();  // the server went away (inside a frame or not)
        break;
      }
    }
    return {};
  }

 private:
  bool send_all(fp::ByteView data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data = data.subspan(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads what is there within the deadline: > 0 bytes, 0 EOF, -1 with errno (EAGAIN: timed out).
  ssize_t recv_some(char* dst, std::size_t cap, std::optional<Clock::time_point> until = std::nullopt) {
    const auto limit = until.value_or(deadline_);
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(limit - Clock::now()).count();
      if (left <= 0) {
        errno = EAGAIN;
        return -1;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (r < 0 && errno != EINTR) return -1;
      if (r <= 0) continue;
      const ssize_t n = ::recv(fd_, dst, cap, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return n;
    }
  }

  fp::cli::HostPort hp_;
  std::string hostport_;
  Clock::time_point deadline_;
  bool deflate_;  // offer permessage-deflate
  int fd_ = -1;
};

std::string url_escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      o += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      o += b;
    }
  }
  return o;
}

std::string run_one(const fp::cli::HostPort& hp, const std::string& hostport, const std::string& path, double secs,
                    Out& out, bool deflate = false) {
  Connection c(hp, hostport, Clock::now() + std::chrono::milliseconds(static_cast<long long>(secs * 1000)), deflate);
  return c.run(path, out);
}

}  // namespace

int main(int argc, char** argv) {
  fp::cli::Args args(argc, argv, usage(), {}, {"connect", "agent", "cases", "case-timeout", "codec"});
  bool deflate = false;
  if (args.has("codec")) {
    const auto c = fp::cli::codec_option(args);
    const auto* ws = std::get_if<fp::WebSocket>(&c.protocol);
    if (!ws) args.die("--codec: a websocket codec is required");
    deflate = ws->endpoint() && ws->endpoint()->permessage_deflate;
  }
  if (!args.has("connect")) args.die("--connect HOST:PORT is required");
  if (!args.has("agent")) args.die("--agent NAME is required");
  const std::string hostport = args.str("connect");
  const auto hp = fp::cli::split_host_port(hostport);
  if (!hp) args.die("--connect: expected HOST:PORT");
  const std::string cases = args.str("cases", "all");
  std::uint64_t limit = UINT64_MAX;
  if (cases != "all") limit = args.num<std::uint64_t>("cases", 0);
  const double case_timeout = args.has("case-timeout") ? args.seconds("case-timeout") : 120.0;
  signal(SIGPIPE, SIG_IGN);
  const std::string agent = url_escape(args.str("agent"));

  Out count_out;
  count_out.collect = true;
  const std::string why = run_one(*hp, hostport, "/getCaseCount", 30, count_out);
  std::uint64_t count = 0;
  try {
    if (!why.empty() || count_out.messages.empty()) throw std::runtime_error(why.empty() ? "no message" : why);
    count = std::stoull(count_out.messages.front());
  } catch (const std::exception& e) {
    std::printf("autobahn client: /getCaseCount failed: %s\n", e.what());
    return 1;
  }
  const std::uint64_t n = std::min(count, limit);
  std::printf("autobahn client: %llu cases offered, running %llu as agent '%s'\n", static_cast<unsigned long long>(count),
              static_cast<unsigned long long>(n), args.str("agent").c_str());
  std::fflush(stdout);
  std::uint64_t failed = 0;
  const auto t0 = Clock::now();
  for (std::uint64_t i = 1; i <= n; ++i) {
    Out out;
    const std::string err =
        run_one(*hp, hostport, "/runCase?case=" + std::to_string(i) + "&agent=" + agent, case_timeout, out, deflate);
    if (!err.empty()) {
      ++failed;
      std::printf("autobahn client: case %llu did not run to its end: %s\n", static_cast<unsigned long long>(i), err.c_str());
      std::fflush(stdout);
    }
  }
  Out upd;
  if (const std::string e = run_one(*hp, hostport, "/updateReports?agent=" + agent, 60, upd); !e.empty()) {
    std::printf("autobahn client: /updateReports failed: %s\n", e.c_str());
    return 1;
  }
  std::printf("autobahn client: %llu of %llu cases ran in %.1f s\n", static_cast<unsigned long long>(n - failed),
              static_cast<unsigned long long>(n), std::chrono::duration<double>(Clock::now() - t0).count());
  return failed ? 1 : 0;
}
