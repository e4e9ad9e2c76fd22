// fp-load: load client for fp-server and every other echo server (reference-impls/README.md).
//
// One thread per connection, each with a non-blocking socket driven by poll(), so a thread never
// blocks writing while the server waits for it to read. Generic over the registry's protocols:
// every reply is verified through the protocol's client matcher and decoder.
//   cli.cpp         the command line (usage, options checked against the protocol)
//   run.hpp         the threads of a run, one connection class per mode, the results summed
//   connection.hpp  one connection's life: connect, opening handshake, the mode, closing handshake
//   requests.hpp    the request loop of per_packet.hpp, pipelined.hpp, batched.hpp, receive.hpp
//   stream.hpp      --mode stream
//   report.cpp      the summary on stdout and the JSON report
#include <signal.h>

#include <string>
#include <variant>

#include "cli.hpp"
#include "report.hpp"
#include "run.hpp"

int main(int argc, char** argv) {
  const fp::load::CommandLine cl = fp::load::parse_command_line(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  const fp::load::Report rep =
      std::visit([&](const auto& proto) { return fp::load::run(proto, cl.opt); }, cl.codec.protocol);
  return fp::load::report(rep, cl.opt, std::string(fp::name_of(cl.codec.protocol)));
}
