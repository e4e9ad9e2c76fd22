#include "cli.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "frameproof/registry.hpp"

namespace fp::load {

namespace {

std::string usage() {
  return "usage: fp-load (--codec JSON | --protocol " + fp::cli::protocol_choices() + ") --connect HOST:PORT\n"
         "               [--connections N] (--requests N | --duration SECONDS) [--payload BYTES]\n"
         "               [--mode per-packet|pipelined|batched|receive|stream] [--window W] [--batch N]\n"
         "               [--timeout-ms MS] [--json FILE] [--variant NAME] [--frames-per-stream F]\n"
         "  defaults: --connections 1, --payload 32, --mode per-packet, --timeout-ms 5000;\n"
         "  --window: 1 per-packet (no other value), 32 pipelined, 256 receive (requests per batch),\n"
         "            1 stream (DATA frames unanswered at a time)\n"
         "  --mode batched: each connection writes --batch N requests at once and verifies all N replies\n"
         "            before the next batch (default N: the protocol's default batch, standard 255,\n"
         "            length-field 128, rpc/websocket 256); the JSON's window is N\n"
         "  --variant: the kind of request (rpc: unary|client-stream|server-stream|bidi; others: default)\n"
         "  --mode stream (rpc): --requests counts streams of --frames-per-stream DATA frames (default 16)\n";
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  fp::cli::Args args(argc, argv, usage(), {},
                     {"codec", "protocol", "connect", "connections", "requests", "duration", "payload", "mode",
                      "window", "batch", "timeout-ms", "json", "variant", "frames-per-stream"});
  CommandLine cl{fp::cli::codec_option(args), {}};
  Options& opt = cl.opt;
  opt.codec_json = cl.codec.json;
  if (!args.has("connect")) args.die("--connect HOST:PORT is required");
  opt.connect = args.str("connect");
  auto hp = fp::cli::split_host_port(args.str("connect"));
  if (!hp || !fp::cli::resolve(*hp, false, opt.addr, opt.addr_len)) args.die("--connect: cannot resolve");
  opt.connections = args.num<int>("connections", 1);
  if (opt.connections < 1) args.die("--connections must be at least 1");
  if (args.has("requests") == args.has("duration")) args.die("give exactly one of --requests and --duration");
  if (args.has("requests")) opt.requests = args.num<std::uint64_t>("requests", 0);
  else opt.duration_s = args.seconds("duration");
  opt.payload = args.num<std::size_t>("payload", 32);
  const std::string mode = args.str("mode", "per-packet");
  if (mode == "per-packet") opt.mode = Mode::PerPacket;
  else if (mode == "pipelined") opt.mode = Mode::Pipelined;
  else if (mode == "batched") opt.mode = Mode::Batched;
  else if (mode == "receive") opt.mode = Mode::Receive;
  else if (mode == "stream") opt.mode = Mode::Stream;
  else args.die("--mode must be per-packet, pipelined, batched, receive or stream");
  if (opt.mode == Mode::Batched && args.has("window")) args.die("--window is not used in batched mode (--batch N)");
  if (opt.mode != Mode::Batched && args.has("batch")) args.die("--batch needs --mode batched");
  opt.frames_per_stream = args.num<std::size_t>("frames-per-stream", 16);
  if (args.has("frames-per-stream") && opt.mode != Mode::Stream) args.die("--frames-per-stream needs --mode stream");
  opt.window = args.num<std::size_t>(
      "window", opt.mode == Mode::Pipelined ? 32 : opt.mode == Mode::Receive ? 256 : 1);
  if (opt.mode == Mode::PerPacket && opt.window != 1) args.die("--window must be 1 in per-packet mode");
  if (opt.window < 1) args.die("--window must be at least 1");
  opt.timeout_ms = args.num<std::uint64_t>("timeout-ms", 5000);
  opt.json = args.str("json");
  // what depends on the protocol: its variants, streams, the largest payload and window, the batch
  std::visit(
      [&](const auto& proto) {
        using P = std::decay_t<decltype(proto)>;
        const std::vector<std::string_view> variants = P::variants();
        opt.variant_name = args.str("variant", std::string(variants.front()));
        const auto it = std::find(variants.begin(), variants.end(), opt.variant_name);
        if (it == variants.end()) {
          std::string names;
          for (auto v : variants) names += (names.empty() ? "" : ", ") + std::string(v);
          args.die("--variant: " + std::string(P::kName) + " has the variants " + names);
        }
        opt.variant = static_cast<std::size_t>(it - variants.begin());
        if (opt.mode == Mode::Stream && !P::kStreams) args.die("--mode stream: " + std::string(P::kName) + " has no streams");
        // what one request can carry: rpc's body holds the call's names too (max_request_payload)
        const std::uint64_t most = [&] {
          if constexpr (requires { proto.max_request_payload(); }) return proto.max_request_payload();
          else return proto.max_payload();
        }();
        if (opt.payload > most)
          args.die("--payload is above what the protocol can carry in one request (" + std::to_string(most) + " bytes)");
        if (opt.mode == Mode::Pipelined && opt.window > P::Client::kMaxWindow)
          args.die("--window must be at most " + std::to_string(P::Client::kMaxWindow) + " for " + std::string(P::kName));
        if (opt.mode == Mode::Batched) {  // the batch is the window of the report
          opt.window = args.num<std::size_t>("batch", P::kDefaultBatch);
          if (opt.window < 1) args.die("--batch must be at least 1");
          if (opt.window > P::Client::kMaxWindow)
            args.die("--batch must be at most " + std::to_string(P::Client::kMaxWindow) + " for " + std::string(P::kName));
        }
      },
      cl.codec.protocol);
  return cl;
}

}  // namespace fp::load
