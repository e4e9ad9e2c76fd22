// fp-load's command line (reference-impls/README.md, fp-load): the usage, and the options checked
// against the protocol (a usage error exits 2 with the usage on stderr; --help prints it).
#pragma once

#include "../net_common.hpp"
#include "options.hpp"

namespace fp::load {

struct CommandLine {
  fp::cli::CodecOption codec;  // --codec / --protocol
  Options opt;
};

CommandLine parse_command_line(int argc, char** argv);

}  // namespace fp::load
