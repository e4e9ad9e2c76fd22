#include "report.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace fp::load {

namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += ch;
    }
  }
  return o;
}

}  // namespace

int report(const Report& rep, const Options& opt, const std::string& protocol) {
  const Result& total = rep.total;
  const double secs = rep.secs;
  const bool receive = opt.mode == Mode::Receive;
  const std::uint64_t msgs = receive ? total.sent : total.verified;
  const std::uint64_t bytes = receive ? total.sent * opt.payload : total.verified_bytes;
  const double msgs_per_s = secs > 0 ? static_cast<double>(msgs) / secs : 0;
  const double mb_per_s = secs > 0 ? static_cast<double>(bytes) / secs / 1e6 : 0;
  // latencies in microseconds: one decimal for people, integers in the JSON (the contract)
  const double lat_ns[5] = {total.latency.quantile(0.50), total.latency.quantile(0.90), total.latency.quantile(0.99),
                            total.latency.quantile(0.999), static_cast<double>(total.latency.max())};
  double lat_us[5];
  long long lat_int[5];
  for (int i = 0; i < 5; ++i) {
    lat_us[i] = std::round(lat_ns[i] / 100.0) / 10.0;
    lat_int[i] = std::llround(lat_ns[i] / 1000.0);
  }

  bool ok = total.errors == 0 && !total.fatal;
  if (!receive) ok = ok && total.verified == total.sent;
  const bool streams = opt.mode == Mode::Stream;
  // --requests counts streams in stream mode: every one must have completed
  if (opt.requests) ok = ok && (streams ? total.streams : total.sent) == *opt.requests;
  const double streams_per_s = secs > 0 ? static_cast<double>(total.streams) / secs : 0;

  std::printf("fp-load (cpp) %s %s: %d connection(s), window %zu, payload %zu B\n", protocol.c_str(),
              mode_name(opt.mode), opt.connections, opt.window, opt.payload);
  std::printf("  sent %" PRIu64 ", received %" PRIu64 ", verified %" PRIu64 ", errors %" PRIu64 ", missing %" PRIu64 "\n",
              total.sent, total.received, total.verified, total.errors,
              receive ? std::uint64_t{0} : total.sent - std::min(total.sent, total.received));
  std::printf("  %.3f s, %.1f msg/s, %.2f MB/s\n", secs, msgs_per_s, mb_per_s);
  if (streams) std::printf("  streams completed %" PRIu64 ", %.1f streams/s\n", total.streams, streams_per_s);
  std::printf("  latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", lat_us[0], lat_us[1], lat_us[2],
              lat_us[3], lat_us[4]);
  for (const auto& d : rep.details) std::printf("  error: %s\n", d.c_str());
  std::printf("%s\n", ok ? "OK" : "FAILED");
  std::fflush(stdout);

  if (!opt.json.empty()) {
    std::FILE* f = std::fopen(opt.json.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "fp-load: cannot write %s: %s\n", opt.json.c_str(), std::strerror(errno));
      return 1;
    }
    std::string details = "[";
    for (std::size_t i = 0; i < rep.details.size(); ++i) {
      if (i) details += ", ";
      details += "\"" + json_escape(rep.details[i]) + "\"";
    }
    details += "]";
    std::fprintf(f,
                 "{\"implementation\": \"cpp\", \"protocol\": \"%s\", \"codec\": %s, \"mode\": \"%s\", "
                 "\"variant\": \"%s\", \"connections\": %d, \"window\": %zu, \"payload\": %zu, \"requests_sent\": %" PRIu64
                 ", \"replies_received\": %" PRIu64 ", \"replies_verified\": %" PRIu64 ", \"errors\": %" PRIu64
                 ", \"error_details\": %s, \"duration_s\": %.6f, \"msgs_per_s\": %.1f, \"mb_per_s\": %.3f, "
                 "\"streams_completed\": %" PRIu64 ", \"streams_per_s\": %.1f, "
                 "\"latency_us\": {\"p50\": %lld, \"p90\": %lld, \"p99\": %lld, \"p999\": %lld, \"max\": %lld}}\n",
                 protocol.c_str(), opt.codec_json.c_str(), mode_name(opt.mode), json_escape(opt.variant_name).c_str(),
                 opt.connections, opt.window,
                 opt.payload, total.sent, total.received, total.verified, total.errors, details.c_str(), secs,
                 msgs_per_s, mb_per_s, total.streams, streams_per_s, lat_int[0], lat_int[1], lat_int[2], lat_int[3], lat_int[4]);
    std::fclose(f);
  }
  return ok ? 0 : 1;
}

}  // namespace fp::load
